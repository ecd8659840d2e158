"""Decoded CP monitor records -> Avro records.

Sample data of an interval precede its interval-end record (MRMTREND); at each interval end:
- `zvm_guest_samples`: per guest, its virtual processors' total and virtual CPU time summed and
  turned into interval deltas (`cpu_deltas.GuestCpuDeltas`: first sample = base, logoff/logon
  resets); the Flink job makes T/V and CP overhead of them as of the Toolkit's reports;
- `zvm_system_samples`: processors' busy time (interval minus wait) and emulation time, summed:
  busy %, total and virtual CPU seconds (system T/V);
- for Linux guests with APPLDATA OS: `cpu_samples` (the guest's CPU line, steal included, for
  the Flink job's steal_pct) and per-CPU `sysstat_samples` rows (section cpu-load-all, source
  'appldata'), so per-CPU steal is in the same view as sadc's. A torn APPLDATA record (sync
  counters differ: Linux updated it while CP copied it) is a dead letter, not a sample.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.sysstat.rates import cpu as sar_cpu
from fleetperf.sources.sysstat.rates import cpu_line
from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm.cpu_deltas import CPU_TIMER_SHIFT, GuestCpuCounters, GuestCpuDeltas
from fleetperf.sources.zvm.monitor import Damage, MonRecord, read_any

SOURCE = "zvm-monitor"


@dataclass(frozen=True)
class Options:
    system: str | None = None  # z/VM system name; default: MRMTRSYS's system id, else "ZVM"


def _seconds(units: int) -> float:
    return (units >> CPU_TIMER_SHIFT) / 1e6


class Collector:
    def __init__(self, origin: str, options: Options) -> None:
        self.origin = origin
        self.name = Path(origin).name or origin
        self.system = options.system
        self.guests = GuestCpuDeltas()
        self.users: dict[str, list[int]] = {}  # userid -> [total, virtual] of this interval
        self.cpus: dict[int, dict] = {}  # processor -> counters of this interval
        self.prev_cpus: dict[int, dict] = {}
        self.prev_end: int | None = None
        self.linux: dict[str, dict] = {}  # userid -> last APPLDATA OS sample
        self.appl: dict[str, tuple[dict, int]] = {}  # this interval's APPLDATA OS per guest

    @property
    def zvm_system(self) -> str:
        return self.system or "ZVM"

    def feed(self, item: MonRecord | Damage) -> Iterator[Emitted]:
        if isinstance(item, Damage):
            yield dead_letter(SOURCE, self.origin, 0, item.offset, item.message, item.raw)
            return
        key = (item.domain, item.record)
        if key == (1, 4) and not self.system and item.fields and item.fields["system_id"]:
            self.system = item.fields["system_id"]
        elif key == (4, 3):
            f = item.fields or {}
            acc = self.users.setdefault(f["userid"], [0, 0])
            acc[0] += f["total_cpu_time"]
            acc[1] += f["virtual_cpu_time"]
        elif key == (0, 2):
            self.cpus[item.fields["cpu_address"]] = item.fields  # type: ignore[index]
        elif key == (10, 2) and item.appldata is not None:
            yield from self._appldata(item)
        elif key == (1, 11):
            yield from self._interval_end(item)

    def _appldata(self, item: MonRecord) -> Iterator[Emitted]:
        a = item.appldata or {}
        user = (item.fields or {}).get("userid", "?")
        if "error" in a:
            yield dead_letter(SOURCE, self.origin, 0, item.offset, f"APPLDATA OS of {user}: {a['error']}", "")
        elif a["sync_count_1"] != a["sync_count_2"]:
            yield dead_letter(
                SOURCE, self.origin, 0, item.offset,
                f"APPLDATA OS of {user} torn (sync counters {a['sync_count_1']} != {a['sync_count_2']}):"
                " Linux updated it while CP copied it; sample skipped", "",
            )  # fmt: skip
        else:
            self.appl[user] = (a, item.offset)

    def _interval_end(self, end: MonRecord) -> Iterator[Emitted]:
        ts = end.unix_us // 1000
        origin = f"{self.name}@{end.offset}"
        for user, (total, virtual) in sorted(self.users.items()):
            yield from self.guests.feed(GuestCpuCounters(self.zvm_system, user, ts, total, virtual, origin))
        yield from self._system(ts, origin)
        for user, (sample, offset) in sorted(self.appl.items()):
            yield from self._linux(user, sample, ts, offset)
        self.users, self.cpus, self.appl = {}, {}, {}

    def _system(self, ts: int, origin: str) -> Iterator[Emitted]:
        cpus, prev, prev_end = self.cpus, self.prev_cpus, self.prev_end
        self.prev_cpus, self.prev_end = cpus, ts
        if not cpus or prev_end is None or ts <= prev_end:
            return
        interval_s = (ts - prev_end) / 1000
        busy = virtual = 0.0
        counted = 0
        for cpu, c in cpus.items():
            p = prev.get(cpu)
            if p is None or c["wait_time"] < p["wait_time"]:
                continue  # a processor varied on in this interval, or counters restarted
            counted += 1
            busy += max(interval_s - _seconds(c["wait_time"] - p["wait_time"]), 0.0)
            virtual += _seconds(c["problem_state_time"] - p["problem_state_time"])
        if not counted:
            return
        record = {
            "zvm_system": self.zvm_system,
            "ts": ts,
            "interval_s": interval_s,
            "source": SOURCE,
            "busy_pct": busy / (counted * interval_s) * 100,
            "online_cpus": counted,
            "tv_ratio_reported": None,
            "capture_ratio": None,
            "total_cpu_s": busy,
            "virtual_cpu_s": virtual,
            "users_logged": None,
            "users_active": None,
            "users_in_elist": None,
            "io_rate": None,
            "dasd_resp_ms": None,
            "paging_xstore_rate": None,
            "paging_dasd_rate": None,
            "origin": origin,
        }
        yield Emitted("zvm_system_samples", record, key=self.zvm_system)

    def _linux(self, user: str, sample: dict, ts: int, offset: int) -> Iterator[Emitted]:
        before = self.linux.get(user)
        self.linux[user] = sample | {"ts": ts}
        if before is None or ts <= before["ts"]:
            return
        host = f"{self.zvm_system}/{user}"
        cur, prev = _as_sysstat(sample["cpus"]), _as_sysstat(before["cpus"])
        ids = sorted(set(cur) & set(prev))  # a CPU new since the last sample has no interval yet
        if not ids:
            return
        # sar's own arithmetic (per-CPU jiffies, 32-bit wrap, "all" as the sum of the online CPUs);
        # item 0 is sar's "all" slot, computed from the CPUs
        names = {"all": "all"} | {str(n): str(cpu_id) for n, cpu_id in enumerate(ids)}
        rows = [(names[item], values) for item, values in sar_cpu([{}] + [cur[i] for i in ids],
                                                                   [{}] + [prev[i] for i in ids])]  # fmt: skip
        common = {
            "host_id": host,
            "hostname": user.lower(),
            "ts": ts,
            "interval_s": (ts - before["ts"]) / 1000,
            "source": "appldata",
            "sysstat_version": "appldata-os",
            "steal_trusted": True,
            "origin_file": self.name,
            "origin_offset": offset,
        }
        for item, values in rows:
            yield Emitted("sysstat_samples", common | {"section": "cpu-load-all", "item": item, "metrics": values},
                          key=host)  # fmt: skip
        all_cpu = dict(rows)["all"]
        yield Emitted(
            "cpu_samples",
            {
                "host_id": host,
                "hostname": user.lower(),
                "ts": ts,
                "interval_s": common["interval_s"],
                "source": "appldata",
                **cpu_line(all_cpu),
                "cpus": len(ids),
                "physc": None,
                "entitled": None,
                "virtual_cpus": None,
                "origin_file": self.name,
                "origin_snapshot": f"offset {offset}",
            },
            key=host,
        )


# APPLDATA OS per-CPU counters under sysstat's names, so sar's arithmetic applies unchanged
_APPL_TO_SYSSTAT = {"user": "user", "nice": "nice", "system": "sys", "idle": "idle", "irq": "hardirq",
                    "softirq": "softirq", "iowait": "iowait", "steal": "steal"}  # fmt: skip


def _as_sysstat(cpus: list[dict]) -> dict[int, dict[str, int]]:
    return {c.get("cpu_id", i): {s: c.get(a, 0) for a, s in _APPL_TO_SYSSTAT.items()} for i, c in enumerate(cpus)}


def records_of_bytes(data: bytes, origin: str, options: Options) -> tuple[Iterator[Emitted], dict[str, int]]:
    reader, items = read_any(data)
    collector = Collector(origin, options)

    def emitted() -> Iterator[Emitted]:
        for item in items:
            yield from collector.feed(item)

    return emitted(), reader.counts


def sniff(path: Path) -> bool:
    """CP monitor data: a monreader capture, or a MONWRITE file whose first frames hold domain 1
    (monitor configuration) records, which every monitor data set begins with."""
    from fleetperf.sources.zvm.monitor import looks_like_monreader

    try:
        with open(path, "rb") as handle:
            head = handle.read(2 * lay.FRAME_SIZE)
    except OSError:
        return False
    if looks_like_monreader(head):
        return True
    for start in (0, lay.FRAME_SIZE):
        if len(head) >= start + lay.HEADER_SIZE:
            length, zeros, domain = (
                int.from_bytes(head[start : start + 2], "big"),
                head[start + 2 : start + 4],
                head[start + 4],
            )
            if zeros == b"\0\0" and domain == 1 and lay.HEADER_SIZE <= length <= lay.FRAME_SIZE:
                return True
    return False


def records_of_file(path: Path, options: Options) -> Iterator[Emitted]:
    records, _ = records_of_bytes(path.read_bytes(), str(path), options)
    yield from records
