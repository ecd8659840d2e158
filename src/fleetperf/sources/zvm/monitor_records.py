"""Decoded CP monitor records -> Avro records.

Only values read from fields IBM's text confirms are published unless the user opts in to the
unverified ones (`Options.unverified`, CLI `--zvm-unverified`; see monitor_layouts and README.md).
Sample data of an interval precede its interval-end record (MRMTREND); at each interval end:
- `zvm_guest_samples`: per guest, its virtual processors' total and virtual CPU time (complement-
  form timers, deltas per virtual CPU summed: `cpu_deltas.GuestCpuDeltas`); sessions from the
  logon/logoff records (domain 4 records 1 and 2) and from users missing from an interval. The
  MRUSEACT timer offsets are not confirmed by IBM's text: without the opt-in no guest sample is
  published (counted as withheld);
- `zvm_system_samples`: processors' emulation time (PFXPRBTM, counts down) summed as virtual CPU
  seconds, logged-on and dormant users (MRSYTUSR), users in the dispatch list (MRSYTSCG), paging
  slots allocated and the paging/spooling "90 percent full" counts (MRSYTASG), all from IBM-quoted
  rows; busy % and total CPU seconds need the wait time (PFXTOTWT, unverified: only with the opt-in);
- for Linux guests with APPLDATA OS (MRAPLSDT header offsets unverified: only with the opt-in):
  `cpu_samples` (the guest's CPU line, steal included, for the Flink job's steal_pct) and per-CPU
  `sysstat_samples` rows (section cpu-load-all, source 'appldata'). A torn APPLDATA record (sync
  counters differ: Linux updated it while CP copied it) is a dead letter, not a sample.
Damage, lengths no z/VM level has, and guest intervals that cannot be computed are dead letters.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path

from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.sysstat.rates import cpu as sar_cpu
from fleetperf.sources.sysstat.rates import cpu_line
from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm.cpu_deltas import CPU_TIMER_SHIFT, GuestCpuCounters, GuestCpuDeltas
from fleetperf.sources.zvm.monitor import Damage, MonRecord, read_any

SOURCE = "zvm-monitor"
WITHHELD_GUEST_CPU = "withheld: MRUSEACT VMDTTIME/VMDVTIME offsets unverified (use --zvm-unverified)"
SLOTS_TOO_LARGE = "MRSYTASG paging slots total x'FFFFFFFF' (too large for IBM's 32-bit field): published as null"
SLOTS_32BIT_FULL = 0xFFFFFFFF
# System counts of an interval, by record: our layout field names, which are also the
# zvm_system_samples columns (schemas/zvm_system_sample.avsc names IBM's field and offset of each)
SYSTEM_COUNTS: dict[tuple[int, int], tuple[str, ...]] = {
    (0, 8): ("users_dormant",),
    (0, 10): ("users_in_dispatch_list",),
    (0, 6): ("paging_slots_total", "paging_90pct_full_count", "spool_90pct_full_count"),
}


@dataclass(frozen=True)
class Options:
    system: str | None = None  # z/VM system name; default: MRMTRSYS's system id (unverified), else "ZVM"
    unverified: bool = False  # also decode and publish fields IBM's text did not confirm


def _seconds(units: int) -> float:
    return (units >> CPU_TIMER_SHIFT) / 1e6


# MRSYTPRP's timers and their direction, from the table once: a scan of its fields per timer read
# was 0.09 of 6.6 profiled s on the 20 MB ZVMA set
_SYTPRP_DIRECTION = {f.name: f.direction for f in lay.LAYOUTS[(0, 2)].fields}


def _timer_delta(layout_field: str, earlier: int, later: int) -> int | None:
    """Units used between two readings of an MRSYTPRP timer, in the direction the table gives."""
    delta = earlier - later if _SYTPRP_DIRECTION[layout_field] == "down" else later - earlier
    return delta if delta >= 0 else None


class Collector:
    def __init__(self, origin: str, options: Options) -> None:
        self.origin = origin
        self.name = Path(origin).name or origin
        self.system = options.system
        self.unverified = options.unverified
        self.guests = GuestCpuDeltas()
        self.users: dict[str, dict[int, tuple[int, int]]] = {}  # userid -> vcpu -> (total, virtual) this interval
        self.cpus: dict[int, dict] = {}  # processor -> counters of this interval
        self.prev_cpus: dict[int, dict] = {}
        self.prev_end: int | None = None
        self.users_logged: int | None = None
        self.system_counts: dict[str, int | None] = {}  # zvm_system_samples column -> value of this interval
        self.linux: dict[str, dict] = {}  # userid -> last APPLDATA OS sample
        # userid -> that sample's CPUs as sysstat counters: the next interval's base, converted once
        # rather than again as `before` (half of _as_sysstat's 0.30 of 6.6 profiled s on the 20 MB ZVMA set)
        self.linux_sysstat: dict[str, dict[int, dict[str, int]]] = {}
        self.appl: dict[str, tuple[dict, int]] = {}  # this interval's APPLDATA OS per guest
        self.counts: dict[str, int] = {}

    @property
    def zvm_system(self) -> str:
        return self.system or "ZVM"

    def _count(self, key: str) -> None:
        self.counts[key] = self.counts.get(key, 0) + 1

    def feed(self, item: MonRecord | Damage) -> Iterator[Emitted]:
        if isinstance(item, Damage):
            yield dead_letter(SOURCE, self.origin, 0, item.offset, item.message, item.raw)
            return
        key = (item.domain, item.record)
        f = item.fields or {}
        if not item.known:
            return
        if key == (1, 4) and not self.system and f.get("system_id"):
            self.system = f["system_id"]
        elif key == (4, 1):
            self.guests.logon(self.zvm_system, f["userid"])
        elif key == (4, 2):
            self.guests.logoff(self.zvm_system, f["userid"])
            self.users.pop(f["userid"], None)  # values of this interval before the logoff end with it
        elif key == (4, 3):
            if "total_cpu_time" not in f:
                self._count(WITHHELD_GUEST_CPU)
                return
            vcpus = self.users.setdefault(f["userid"], {})
            if f["vcpu_address"] in vcpus:
                yield dead_letter(SOURCE, self.origin, 0, item.offset,
                                  f"MRUSEACT of {f['userid']} virtual CPU {f['vcpu_address']} twice in one interval;"
                                  " the later one is kept", "")  # fmt: skip
            vcpus[f["vcpu_address"]] = (f["total_cpu_time"], f["virtual_cpu_time"])
        elif key == (0, 2):
            self.cpus[f["cpu_address"]] = f
        elif key in SYSTEM_COUNTS:
            if key == (0, 8):
                self.users_logged = f["users_logged"]
            for name in SYSTEM_COUNTS[key]:
                value = f.get(name)
                if name == "paging_slots_total" and value == SLOTS_32BIT_FULL:
                    self._count(SLOTS_TOO_LARGE)
                    value = None
                self.system_counts[name] = value
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
        if self.unverified:  # without the opt-in MRUSEACT carries no timers and no guest sample is made
            users = sorted(self.users.items())
            guests = [GuestCpuCounters(self.zvm_system, user, ts, vcpus, origin) for user, vcpus in users]
            yield from self.guests.interval(self.zvm_system, ts, guests)
            for r in self.guests.refused:
                why = f"guest {r.userid}, interval ending {r.ts} (epoch ms): {r.reason}"
                yield dead_letter(SOURCE, self.origin, 0, end.offset, why, "")
            self.guests.refused.clear()
        yield from self._system(ts, origin, end.offset)
        for user, (sample, offset) in sorted(self.appl.items()):
            yield from self._linux(user, sample, ts, offset)
        self.users, self.cpus, self.appl, self.users_logged, self.system_counts = {}, {}, {}, None, {}

    def _system(self, ts: int, origin: str, offset: int) -> Iterator[Emitted]:
        cpus, prev, prev_end = self.cpus, self.prev_cpus, self.prev_end
        self.prev_cpus, self.prev_end = cpus, ts
        if prev_end is None or ts <= prev_end:
            return
        interval_s = (ts - prev_end) / 1000
        busy = virtual = 0.0
        counted = 0
        with_wait = bool(cpus) and all("wait_time" in c for c in cpus.values())
        for cpu, c in sorted(cpus.items()):
            p = prev.get(cpu)
            if p is None:
                continue  # a processor varied on in this interval: no base yet
            dv = _timer_delta("problem_state_time", p["problem_state_time"], c["problem_state_time"])
            dw = _timer_delta("wait_time", p["wait_time"], c["wait_time"]) if with_wait else 0
            if dv is None or dw is None:
                yield dead_letter(SOURCE, self.origin, 0, offset,
                                  f"processor {cpu}: a CPU timer moved against its direction in the interval ending"
                                  f" {ts}; the processor is left out of it", "")  # fmt: skip
                continue
            counted += 1
            virtual += _seconds(dv)
            busy += max(interval_s - _seconds(dw), 0.0)
        if not counted and self.users_logged is None and not any(v is not None for v in self.system_counts.values()):
            return
        record = {
            "zvm_system": self.zvm_system,
            "ts": ts,
            "interval_s": interval_s,
            "source": SOURCE,
            "busy_pct": busy / (counted * interval_s) * 100 if counted and with_wait else None,
            "online_cpus": counted or None,
            "tv_ratio_reported": None,
            "capture_ratio": None,
            "total_cpu_s": busy if counted and with_wait else None,
            "virtual_cpu_s": virtual if counted else None,
            "users_logged": self.users_logged,
            "users_active": None,
            "users_in_elist": None,
            "io_rate": None,
            "dasd_resp_ms": None,
            "paging_xstore_rate": None,
            "paging_dasd_rate": None,
            **{name: self.system_counts.get(name) for names in SYSTEM_COUNTS.values() for name in names},
            "origin": origin,
        }
        yield Emitted("zvm_system_samples", record, key=self.zvm_system)

    def _linux(self, user: str, sample: dict, ts: int, offset: int) -> Iterator[Emitted]:
        before = self.linux.get(user)
        self.linux[user] = sample | {"ts": ts}
        cur = _as_sysstat(sample["cpus"])
        prev = self.linux_sysstat.get(user, {})  # `before`'s CPUs, converted when it was the sample
        self.linux_sysstat[user] = cur
        if before is None or ts <= before["ts"]:
            return
        host = f"{self.zvm_system}/{user}"
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


_APPL_NAMES = tuple(_APPL_TO_SYSSTAT)
_SYSSTAT_NAMES = tuple(_APPL_TO_SYSSTAT.values())
_appl_counters = itemgetter(*_APPL_NAMES)


def _as_sysstat(cpus: list[dict]) -> dict[int, dict[str, int]]:
    out: dict[int, dict[str, int]] = {}
    for i, c in enumerate(cpus):
        try:  # every counter there (per-CPU entries of 32 bytes or more): one itemgetter, not 8 gets
            counters = dict(zip(_SYSSTAT_NAMES, _appl_counters(c), strict=True))
        except KeyError:  # an entry too short for steal: what it lacks counts 0
            counters = {s: c.get(a, 0) for a, s in _APPL_TO_SYSSTAT.items()}
        out[c.get("cpu_id", i)] = counters
    return out


def records_of_bytes(data: bytes, origin: str, options: Options) -> tuple[Iterator[Emitted], dict[str, int]]:
    reader, items = read_any(data, options.unverified)
    collector = Collector(origin, options)

    def emitted() -> Iterator[Emitted]:
        for item in items:
            yield from collector.feed(item)
        for key, n in collector.counts.items():  # what the collector withheld, beside the reader's counts
            reader.counts[key] = reader.counts.get(key, 0) + n

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
