"""The demo fleet: every source fleetperf reads, for two sites with POWER frames, IBM Z CPCs and x86
hosts, over days of history at a fixed interval, seeded (same arguments, same bytes), with one
injected fault per platform that the flag rules of `config/flag-rules.properties` must catch.

| site  | what | source files |
|-------|------|--------------|
| north | POWER frame 9009-42A 02A1B3C: LPARs aixn01, aixn02 | nmon (topas_nmon), aixn01 also hpmstat, entstat |
| south | POWER frame 9080-M9S 02D4E5F: LPARs aixs01, aixs02 | nmon, aixs01 also hpmstat, entstat |
| north | CPC 2964 0A1B2C: z/VM ZVMA, Linux guests LNXA01-03 (+ TCPIP) | CP monitor MONWRITE files (APPLDATA OS) |
| south | CPC 3906 0D4E5F: z/VM ZVMB, guests LNXB01-03 | Toolkit FCX225, FCX162 per guest, FCX126 |
| both  | Linux guests lnxn01 (ZVMA), lnxs01 (ZVMB) | nmon 16 with Steal% |
| both  | x86 hosts webn01, webs01 with an 802.3ad bond | sadc files, /proc/net/bonding/bond0 |

Faults (`FAULTS`): CPU steal on z/VM guests (nmon and APPLDATA) and on an x86 host (sadc), T/V on a
z/VM guest (FCX162), SLB misses (hpmstat), LACP hash skew and a member out of sync (entstat),
entitlement over-use (nmon LPAR). Each is a `FaultWindow`: what the records show in it and the rule
it must raise; `tests/unit/test_simulate_fleet.py` reads the files back with the project's own
sources and checks the figures cross the rules' thresholds for the rules' durations.

entstat prints one capture per run (two in one file cannot be told apart), so every capture is a
file; only the last `entstat_days` days get them (576 files a host for 2 days at 5 minutes)."""

from __future__ import annotations

import math
import os
import random
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from fleetperf.demo import monwrite, texts
from fleetperf.demo.sadc import HZ, SadcWriter
from fleetperf.demo.simulate import Fault, Host, write_fleet
from fleetperf.sources.sysstat import layouts as sa
from fleetperf.sources.zvm.monitor import unix_us_to_tod

if TYPE_CHECKING:
    from fleetperf.config import Settings
    from fleetperf.ingest.publish import Summary
    from fleetperf.kafka_avro import AvroProducer


@dataclass(frozen=True)
class Batch:
    """Files the pipeline reads with the same source options (`ingest.publish.source_options`)."""

    label: str
    paths: tuple[Path, ...]
    options: tuple[tuple[str, object], ...] = ()

    def kwargs(self) -> dict[str, object]:
        return dict(self.options)


@dataclass(frozen=True)
class FaultWindow:
    """An injected fault: the entity and metric it shows in, from `start` for `minutes`, the rule of
    config/flag-rules.properties it must raise, and the platform it stands for."""

    platform: str
    source: str
    entity_id: str
    metric: str
    rule: str
    start: datetime
    minutes: int

    @property
    def end(self) -> datetime:
        return self.start + timedelta(minutes=self.minutes)

    def holds(self, ts: datetime) -> bool:
        return self.start < ts <= self.end  # a sample ending at ts measured the interval before it


@dataclass
class Fleet:
    out: Path
    batches: list[Batch] = field(default_factory=list)
    faults: list[FaultWindow] = field(default_factory=list)
    inventory: Path | None = None

    @property
    def files(self) -> list[Path]:
        return [p for b in self.batches for p in b.paths]


SITES = {"north": "DC North", "south": "DC South"}
FRAMES = {"north": ("02A1B3C", "9009-42A"), "south": ("02D4E5F", "9080-M9S")}
CPCS = {"ZVMA": ("north", "2964", "0A1B2C"), "ZVMB": ("south", "3906", "0D4E5F")}


def _stamps(start: datetime, end: datetime, interval: int) -> list[datetime]:
    n = int((end - start).total_seconds() // interval)
    return [start + timedelta(seconds=interval * k) for k in range(n + 1)]


def _days(start: datetime, end: datetime) -> Iterator[tuple[datetime, datetime]]:
    """(from, to) per calendar day (UTC): a collector's daily file."""
    day = start
    while day < end:
        nxt = min(end, datetime.combine(day.date() + timedelta(days=1), datetime.min.time(), UTC))
        yield day, nxt
        day = nxt


def _diurnal(ts: datetime, base: float) -> float:
    hour = ts.hour + ts.minute / 60
    return base * (0.6 + 0.4 * math.sin((hour - 8) / 24 * 2 * math.pi))


def _active(faults: list[FaultWindow], rule: str, entity: str, ts: datetime) -> bool:
    return any(f.rule == rule and f.entity_id == entity and f.holds(ts) for f in faults)


def simulate_fleet(out: Path, start: datetime, days: float = 14, interval: int = 300, seed: int = 1,
                   entstat_days: float = 2) -> Fleet:  # fmt: skip
    """Writes the fleet's files under `out` and returns them in batches, with the injected faults.
    `start` is UTC (naive or aware); the history runs `days` from it at `interval` seconds."""
    start = (start if start.tzinfo else start.replace(tzinfo=UTC)).astimezone(UTC)
    start = start.replace(second=0, microsecond=0) - timedelta(minutes=start.minute % (interval // 60 or 1))
    end = start + timedelta(days=days)
    rng = random.Random(seed)
    fleet = Fleet(out)
    fleet.faults = _faults(start, end, interval)
    _nmon(fleet, start, end, interval, rng)
    _sadc(fleet, start, end, interval, rng)
    _aix_commands(fleet, start, end, interval, rng, max(end - timedelta(days=entstat_days), start))
    _monitor(fleet, start, end, interval, rng)
    _toolkit(fleet, start, end, interval, rng)
    fleet.inventory = _inventory(out)
    return fleet


def _faults(start: datetime, end: datetime, interval: int) -> list[FaultWindow]:
    """One fault per platform, in the last third of the history (hourly rollups show it beside
    normal days), each long enough for its rule's minimum windows at this interval."""
    span = end - start

    def at(fraction: float) -> datetime:
        t = start + span * fraction
        return t - timedelta(seconds=(t - start).total_seconds() % interval)

    step = interval / 60
    hour = max(60, math.ceil(8 * step))  # 5 windows (steal) need 25 min at 5 minutes; an hour at most
    serial_n, serial_s = FRAMES["north"][0], FRAMES["south"][0]
    return [
        FaultWindow("zvm-guest", "nmon", "lnxn01", "steal_pct", "steal_high", at(0.70), hour),
        # still going on when the history ends: an open incident (the Fleet overview's "Open incidents")
        FaultWindow("zvm-guest", "nmon", "lnxs01", "steal_pct", "steal_high", at(1.0) - timedelta(minutes=hour), hour),
        FaultWindow("zvm-guest", "zvm", "ZVMA/LNXA02", "steal_pct", "steal_high", at(0.74), hour),
        FaultWindow("linux", "sadc", "webs01", "steal_pct", "steal_high", at(0.78), hour),
        FaultWindow("zvm-guest", "perfkit", "ZVMB/LNXB02", "tv_ratio", "tv_ratio_high", at(0.82), hour),
        FaultWindow("aix", "hpmstat", f"{serial_n}-3", "slb_miss_rate", "slb_miss_high", at(0.86), hour),
        # 60 windows at 1 minute each: 5 h of samples at 5 minutes, 1 h at 1 minute
        FaultWindow("aix", "nmon", f"{serial_s}-6", "entc_pct", "entc_high", at(0.60), math.ceil(66 * step)),
        FaultWindow(
            "aggregation",
            "entstat",
            f"{serial_s}-5|ent8",
            "lacp_hash_skew_tx",
            "lacp_skew_tx",
            at(0.90),
            math.ceil(18 * step),
        ),  # fmt: skip
        FaultWindow(
            "aggregation",
            "entstat",
            f"{serial_n}-3|ent8",
            "lacp_ports_out_of_sync",
            "lacp_not_in_sync",
            at(0.94),
            math.ceil(3 * step),
        ),  # fmt: skip
    ]


# --------------------------------------------------------------------------- nmon


def _nmon(fleet: Fleet, start: datetime, end: datetime, interval: int, rng: random.Random) -> None:
    (sn, mn), (ss, ms) = FRAMES["north"], FRAMES["south"]
    hosts = [
        Host("aixn01", True, 16, 35, 2.0, 4, sn, 3, machine=mn),
        Host("aixn02", True, 8, 25, 1.0, 2, sn, 4, machine=mn),
        Host("aixs01", True, 16, 40, 2.0, 4, ss, 5, machine=ms),
        Host("aixs02", True, 12, 30, 2.0, 3, ss, 6, machine=ms),
        Host("lnxn01", False, 4, 30, steal_bias=0.5),
        Host("lnxs01", False, 4, 45, steal_bias=2.0),
    ]
    faults = []
    for f in fleet.faults:
        if f.source != "nmon":
            continue
        name = next(h.name for h in hosts if f.entity_id in (h.name, f"{h.serial}-{h.lpar_id}"))
        # Fault.active is [start, end) over sample times; a window's sample is timed at its end
        first = (f.start + timedelta(seconds=interval)).replace(tzinfo=None)
        value = {"steal": 32.0} if f.metric == "steal_pct" else {"busy": 97.0}
        faults.append(Fault(name, first, f.minutes, **value))
    files = write_fleet(fleet.out / "nmon", hosts, start.replace(tzinfo=None), end - start, interval, rng,
                        tuple(faults))  # fmt: skip
    fleet.batches.append(Batch("nmon", tuple(files)))


# --------------------------------------------------------------------------- sadc + bonding


def _sadc(fleet: Fleet, start: datetime, end: datetime, interval: int, rng: random.Random) -> None:
    for name, cpus, base in (("webn01", 8, 35.0), ("webs01", 8, 50.0)):
        folder = fleet.out / "linux" / name
        folder.mkdir(parents=True, exist_ok=True)
        jiffies = [dict.fromkeys(sa.CPU_FIELDS, 0) for _ in range(cpus)]
        net = {n: {"rx_packets": 0, "tx_packets": 0, "rx_bytes": 0, "tx_bytes": 0} for n in ("eth0", "eth1")}
        paging = {"pgpgin": 0, "pgpgout": 0, "pgfault": 0, "pgmajfault": 0, "pgfree": 0}
        files = []
        for day_start, day_end in _days(start, end):
            writer = SadcWriter(name, cpus, tuple(net), day_start)
            previous = None
            for ts in _stamps(day_start, day_end, interval):
                if previous is not None:
                    _advance_cpu(jiffies, ts, base, (ts - previous).total_seconds(), rng,
                                 32.0 if _active(fleet.faults, "steal_high", name, ts) else 0.3)  # fmt: skip
                    for i, counters in enumerate(net.values()):
                        moved = int(rng.uniform(800, 1200) * interval * (1.0 if i == 0 else 0.9))
                        counters["rx_packets"] += moved
                        counters["tx_packets"] += moved // 2
                        counters["rx_bytes"] += moved * 700
                        counters["tx_bytes"] += moved * 350
                    for key in paging:
                        paging[key] += int(rng.uniform(10, 200) * interval)
                previous = ts
                total_kb = cpus * 4 * 1024 * 1024
                memory = {"tlmkb": total_kb, "frmkb": int(total_kb * rng.uniform(0.2, 0.3)),
                          "bufkb": 200_000, "camkb": int(total_kb * 0.3), "availablekb": int(total_kb * 0.5),
                          "tlskb": 8 * 1024 * 1024, "frskb": 8 * 1024 * 1024 - 50_000}  # fmt: skip
                queue = {"nr_running": rng.randrange(1, cpus), "nr_threads": 900, "load_avg_1": 150}
                writer.stats(int(ts.timestamp()), [dict(c) for c in jiffies],
                             {sa.A_PAGE: paging, sa.A_MEMORY: memory, sa.A_QUEUE: queue}, net)  # fmt: skip
            path = folder / f"sa{day_start:%Y%m%d}"
            path.write_bytes(writer.data())
            files.append(path)
        # --host-id names the bond's host; the sadc files name theirs (nodename): one command reads both
        fleet.batches.append(Batch(f"sadc {name}", tuple(files), (("host_id", name), ("hostname", name))))
        bond = folder / "bond0"
        bond.write_text(texts.proc_bonding(list(net)))
        fleet.batches.append(Batch(f"bonding {name}", (bond,), (("host_id", name), ("hostname", name))))


def _advance_cpu(jiffies: list[dict[str, int]], ts: datetime, base: float, seconds: float, rng: random.Random,
                 steal: float) -> None:  # fmt: skip
    ticks = round(seconds * HZ)
    for cpu in jiffies:
        busy = min(90.0, max(2.0, _diurnal(ts, base) + rng.gauss(0, 4)))
        st = max(0.0, steal + rng.gauss(0, 1)) if steal > 1 else rng.uniform(0, steal)
        shares = {"user": busy * 0.7, "sys": busy * 0.25, "iowait": busy * 0.05, "steal": st}
        used = 0
        for key, pct in shares.items():
            n = round(ticks * pct / 100)
            cpu[key] += n
            used += n
        cpu["idle"] += max(0, ticks - used)


# --------------------------------------------------------------------------- AIX hpmstat, entstat


def _aix_commands(fleet: Fleet, start: datetime, end: datetime, interval: int, rng: random.Random,
                  entstat_from: datetime) -> None:  # fmt: skip
    for site, lpar, name in (("north", 3, "aixn01"), ("south", 5, "aixs01")):
        host_id = f"{FRAMES[site][0]}-{lpar}"
        who = (("host_id", host_id), ("hostname", name))
        folder = fleet.out / "aix" / name
        folder.mkdir(parents=True, exist_ok=True)
        files = []
        for day_start, day_end in _days(start, end):
            reports = []
            stamps = _stamps(day_start, day_end, interval)
            for ts in stamps[1:]:
                bad = _active(fleet.faults, "slb_miss_high", host_id, ts)
                inst = int(rng.uniform(0.8, 1.2) * 2.5e9 * interval)
                dslb = int(inst * (rng.uniform(1.1, 1.4) if bad else rng.uniform(0.005, 0.03)) / 100)
                ierat, cycles = int(inst * rng.uniform(5e-4, 2e-3)), int(inst * rng.uniform(2.5, 4.0))
                # counting duration: the wall time summed over the 8 logical CPUs counted
                reports.append(texts.HpmCounts(float(interval), interval * 8.0, ierat, dslb, int(inst * 2e-6), inst,
                                               cycles))  # fmt: skip
            if not reports:
                continue
            path = folder / f"hpmstat_{day_start:%Y%m%d}.txt"
            path.write_text(texts.hpmstat(reports))
            os.utime(path, (stamps[-1].timestamp(),) * 2)  # the capture ends with its last report
            files.append(path)
        fleet.batches.append(Batch(f"hpmstat {name}", tuple(files), who))
        fleet.batches.append(Batch(f"entstat {name}", tuple(_entstat(fleet, folder, host_id, entstat_from, end,
                                                                     interval, rng)), who))  # fmt: skip


def _entstat(fleet: Fleet, folder: Path, host_id: str, start: datetime, end: datetime, interval: int,
             rng: random.Random) -> list[Path]:  # fmt: skip
    folder = folder / "entstat"
    folder.mkdir(parents=True, exist_ok=True)
    ports = ["ent0", "ent2", "ent4", "ent6"]
    tx = dict.fromkeys(ports, 10_000_000)
    rx = dict.fromkeys(ports, 12_000_000)
    entity = f"{host_id}|ent8"
    files = []
    previous = None
    for ts in _stamps(start, end, interval):
        skewed = _active(fleet.faults, "lacp_skew_tx", entity, ts)
        out_of_sync = _active(fleet.faults, "lacp_not_in_sync", entity, ts)
        if previous is not None:
            packets = rng.uniform(3000, 6000) * interval
            # seed 000 L6069-6177: hash_mode default left 65 % of the transmit packets on one port
            shares = (0.0266, 0.0369, 0.2818, 0.6547) if skewed else [rng.uniform(0.22, 0.28) for _ in ports]
            norm = sum(shares)
            for port, share in zip(ports, shares, strict=True):
                if out_of_sync and port == "ent2":
                    continue  # a member out of sync carries no traffic
                tx[port] += int(packets * share / norm)
                rx[port] += int(packets * 1.3 * rng.uniform(0.22, 0.28))
        previous = ts
        members = [texts.Port(p, tx[p], rx[p], in_sync=not (out_of_sync and p == "ent2")) for p in ports]
        uptime = int((ts - start).total_seconds()) + 86400 * 40
        path = folder / f"ent8_{ts:%Y%m%d_%H%M}.txt"
        path.write_text(texts.entstat("ent8", "00:14:5e:99:52:c0", uptime, members, uptime // 30))
        os.utime(path, (ts.timestamp(),) * 2)  # the pipeline times a capture by its file's modification
        files.append(path)
    return files


# --------------------------------------------------------------------------- z/VM CP monitor


_SECOND_UNITS = 1_000_000 << 12  # CPU timer: bit 51 = 1 microsecond
TIMER_START = 0x7FFFFFFF_00000000  # timers count down from here (MRSYTPRP PFXPRBTM's starting value)


def _units(seconds: float) -> int:
    return round(seconds * 1_000_000) << 12


def _tod(ts: datetime) -> int:
    return unix_us_to_tod(round(ts.timestamp() * 1_000_000))


def _monitor(fleet: Fleet, start: datetime, end: datetime, interval: int, rng: random.Random) -> None:
    system = "ZVMA"
    guests = {"LNXA01": 30.0, "LNXA02": 45.0, "LNXA03": 20.0, "TCPIP": 2.0}  # mean busy % per virtual CPU
    linux = ("LNXA01", "LNXA02", "LNXA03")
    used = {g: [[0.0, 0.0], [0.0, 0.0]] for g in guests}  # per virtual CPU: total, virtual seconds
    appl = {g: [dict.fromkeys(("user", "nice", "system", "idle", "irq", "softirq", "iowait", "steal"), 0)
                for _ in range(2)] for g in linux}  # fmt: skip
    cpus = {c: [0.0, 0.0] for c in range(4)}  # per processor: emulation (virtual) and wait seconds
    folder = fleet.out / "zvm" / system
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for day_start, day_end in _days(start, end):
        records = [monwrite.record(1, 4, _tod(day_start), {"cp_version": "7.3.0", "system_id": system})]
        previous = None
        for ts in _stamps(day_start, day_end, interval):
            if previous is not None:
                _monitor_interval(fleet, system, ts, (ts - previous).total_seconds(), guests, used, appl, cpus, rng)
            previous = ts
            records += _monitor_records(ts, used, appl, cpus)
        path = folder / f"{system}_{day_start:%Y%m%d}.monwrite"
        path.write_bytes(monwrite.monwrite_file(records))
        files.append(path)
    fleet.batches.append(Batch(f"zvm monitor {system}", tuple(files),
                               (("zvm_system", system), ("zvm_unverified", True))))  # fmt: skip


def _monitor_interval(fleet: Fleet, system: str, ts: datetime, seconds: float, guests: dict[str, float],
                      used: dict, appl: dict, cpus: dict, rng: random.Random) -> None:  # fmt: skip
    virtual_total = 0.0
    for guest, base in guests.items():
        stolen = _active(fleet.faults, "steal_high", f"{system}/{guest}", ts)
        for vcpu in range(2):
            busy = min(95.0, max(0.5, _diurnal(ts, base) + rng.gauss(0, 3))) / 100
            virtual = busy * seconds
            total = virtual * rng.uniform(1.03, 1.12)
            used[guest][vcpu][0] += total
            used[guest][vcpu][1] += virtual
            virtual_total += virtual
            if guest in appl:
                ticks = round(seconds * 100)
                steal = (rng.uniform(0.30, 0.36) if stolen else rng.uniform(0.0, 0.01)) * ticks
                counters = appl[guest][vcpu]
                counters["user"] += round(ticks * busy * 0.75)
                counters["system"] += round(ticks * busy * 0.2)
                counters["iowait"] += round(ticks * busy * 0.05)
                counters["steal"] += round(steal)
                counters["idle"] += max(0, ticks - round(ticks * busy) - round(steal))
    for cpu in cpus.values():
        emulation = virtual_total / len(cpus)
        busy = min(seconds, emulation * rng.uniform(1.08, 1.15))
        cpu[0] += emulation
        cpu[1] += seconds - busy


def _monitor_records(ts: datetime, used: dict, appl: dict, cpus: dict) -> list[bytes]:
    """One interval's sample records (timed a second before its end) and the interval end."""
    tod = _tod(ts - timedelta(seconds=1))
    out = []
    for guest, vcpus in used.items():
        for address, (total, virtual) in enumerate(vcpus):
            out.append(monwrite.record(4, 3, tod, {"userid": guest, "vcpu_address": address,
                                                   "total_cpu_time": TIMER_START - _units(total),
                                                   "virtual_cpu_time": TIMER_START - _units(virtual)}))  # fmt: skip
    for address, (emulation, wait) in cpus.items():
        out.append(monwrite.record(0, 2, tod, {"cpu_address": address,
                                               "problem_state_time": TIMER_START - _units(emulation),
                                               "user_time": TIMER_START - _units(emulation),
                                               "wait_time": TIMER_START - _units(wait)}))  # fmt: skip
    out.append(monwrite.record(0, 8, tod, {"users_logged": 25, "users_dormant": 10}))
    for guest, per_cpu in appl.items():
        out.append(monwrite.appldata_os(guest, tod, [dict(c) for c in per_cpu]))
    out.append(monwrite.record(1, 11, _tod(ts)))
    return out


# --------------------------------------------------------------------------- Toolkit reports


def _toolkit(fleet: Fleet, start: datetime, end: datetime, interval: int, rng: random.Random) -> None:
    system = "ZVMB"
    site, model, serial = CPCS[system]
    guests = {"LNXB01": 35.0, "LNXB02": 25.0, "LNXB03": 50.0}
    folder = fleet.out / "toolkit" / system
    folder.mkdir(parents=True, exist_ok=True)
    files = []
    for day_start, day_end in _days(start, end):
        stamps = _stamps(day_start, day_end, interval)[1:]
        if not stamps:
            continue
        day = day_start.date()
        midnight = datetime.combine(day, datetime.min.time(), UTC)
        system_rows = []
        cpu_s = dict.fromkeys(guests, 0.0)
        for guest, base in guests.items():
            rows = []
            for ts in stamps:
                vcpu = min(1.9, max(0.01, 2 * _diurnal(ts, base) / 100 + rng.gauss(0, 0.02))) * interval
                bad = _active(fleet.faults, "tv_ratio_high", f"{system}/{guest}", ts)
                tcpu = vcpu * (rng.uniform(1.55, 1.7) if bad else rng.uniform(1.03, 1.12))
                cpu_s[guest] += tcpu
                rows.append(texts.GuestRow(texts.hhmmss(ts, midnight), tcpu, vcpu, interval, rng.uniform(50, 900)))
            path = folder / f"fcx162_{guest}_{day:%Y%m%d}.txt"
            path.write_text(texts.fcx162(system, model, serial, guest, day, rows))
            files.append(path)
        for ts in stamps:
            busy = min(98.0, max(3.0, _diurnal(ts, 45.0) + rng.gauss(0, 3)))
            system_rows.append(texts.SystemRow(texts.hhmmss(ts, midnight), busy, rng.uniform(1.05, 1.15),
                                               rng.uniform(0.9, 0.96), 6, 60, rng.randrange(30, 45),
                                               rng.uniform(400, 1500), rng.choice([0.0, 0.0, 0.0, 1.0]),
                                               rng.uniform(10, 300), rng.uniform(5, 60)))  # fmt: skip
        path = folder / f"fcx225_{day:%Y%m%d}.txt"
        path.write_text(texts.fcx225(system, day, system_rows))
        files.append(path)
        files.append(_fcx126(folder, day, stamps[-1], midnight, interval, rng))
    fleet.batches.append(Batch(f"toolkit {system}", tuple(files),
                               (("zvm_system", system), ("cpc", f"{model}-{serial}"))))  # fmt: skip


def _fcx126(folder: Path, day: date, last: datetime, midnight: datetime, interval: int,
            rng: random.Random) -> Path:  # fmt: skip
    """The CPC's partitions over the day's last interval."""
    partitions = [
        texts.Partition("ZVMB", 1, 300, tuple(rng.uniform(30, 60) for _ in range(6)), zvm=True),
        texts.Partition("ZOSP1", 2, 500, tuple(rng.uniform(40, 80) for _ in range(4)), cpu_type="CP"),
        texts.Partition("ZVMT", 3, 100, tuple(rng.uniform(2, 15) for _ in range(2))),
    ]
    path = folder / f"fcx126_{day:%Y%m%d}.txt"
    first = last - timedelta(seconds=interval)
    path.write_text(texts.fcx126("ZVMB", "3906-M04", 16, day, texts.hhmmss(first, midnight),
                                 texts.hhmmss(last, midnight), partitions))  # fmt: skip
    return path


# --------------------------------------------------------------------------- inventory


def _inventory(out: Path) -> Path:
    """Sites and CPCs the files do not carry (`./fleetperf inventory`): hosts and z/VM systems."""
    lines = []

    def host(host_id: str, hostname: str, **attributes: str) -> None:
        lines.append(f'[hosts."{host_id}"]\nhostname = "{hostname}"\n[hosts."{host_id}".attributes]')
        lines.extend(f'{k} = "{v}"' for k, v in attributes.items())
        lines.append("")

    for site, (serial, machine) in FRAMES.items():
        for lpar, name in ((3, "aixn01"), (4, "aixn02")) if site == "north" else ((5, "aixs01"), (6, "aixs02")):
            host(f"{serial}-{lpar}", name, site=site)
        # the LPAR's EtherChannel (entity host|aggregation): on its frame, as nmon names frames
        lpar, name = (3, "aixn01") if site == "north" else (5, "aixs01")
        host(f"{serial}-{lpar}|ent8", f"{name}/ent8", site=site, frame_id=f"{machine}*{serial}", platform="aggregation")
    for system, (site, model, serial) in CPCS.items():
        cpc = f"{model}-{serial}"
        host(system, system, site=site, cpc=cpc, platform="zvm-system")  # a name alone says no platform
        prefix = "LNXA" if system == "ZVMA" else "LNXB"
        for n in (1, 2, 3):
            host(f"{system}/{prefix}0{n}", f"{prefix.lower()}0{n}", site=site, cpc=cpc, zvm_system=system)
        if system == "ZVMA":
            host("ZVMA/TCPIP", "tcpip", site=site, cpc=cpc, zvm_system=system)
        guest = "lnxn01" if system == "ZVMA" else "lnxs01"
        host(guest, guest, site=site, cpc=cpc, zvm_system=system)
    host("webn01", "webn01", site="north")
    host("webs01", "webs01", site="south")
    path = out / "inventory.toml"
    path.write_text("\n".join(lines))
    return path


# --------------------------------------------------------------------------- reading it in


def _flags(options: tuple[tuple[str, object], ...]) -> str:
    out = []
    for key, value in options:
        flag = "--" + key.replace("_", "-")
        out.append(flag if value is True else f"{flag} {value}")
    return " ".join(out)


def ingest_commands(fleet: Fleet) -> list[str]:
    """The commands that read the fleet in: a folder per set of options (a host's AIX command
    captures need its identity, z/VM data its system), then the inventory."""
    roots: dict[Path, tuple[tuple[str, object], ...]] = {}
    for batch in fleet.batches:
        root = Path(os.path.commonpath(batch.paths)) if len(batch.paths) > 1 else batch.paths[0].parent
        if not any(r in root.parents and o == batch.options for r, o in roots.items()):
            roots[root] = batch.options
    lines = [f"./fleetperf ingest {root} {_flags(options)}".rstrip() for root, options in roots.items()]
    if fleet.inventory is not None:
        lines.append(f"./fleetperf inventory {fleet.inventory}")
    return lines


def ingest_fleet(settings: Settings, fleet: Fleet, progress: bool = True,
                 producer: AvroProducer | None = None) -> Summary:  # fmt: skip
    """Publishes every batch with its options, then the inventory; one summary of all."""
    from fleetperf.ingest.aggregations import inventory_records
    from fleetperf.ingest.publish import Summary, ingest, source_options
    from fleetperf.kafka_avro import AvroProducer

    producer = producer or AvroProducer(settings)
    total = Summary()
    for batch in fleet.batches:
        part = ingest(settings, [str(p) for p in batch.paths], UTC, progress=progress, producer=producer,
                      options=source_options(**batch.kwargs()))  # fmt: skip
        for name in ("files", "skipped", "failed", "snapshots", "records", "values", "errors", "bytes", "seconds"):
            setattr(total, name, getattr(total, name) + getattr(part, name))
        total.samples.update(part.samples)
        total.error_lines += part.error_lines
        total.failed_files += part.failed_files
    if fleet.inventory is not None:
        for emitted in inventory_records(fleet.inventory):
            producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    producer.flush()
    return total
