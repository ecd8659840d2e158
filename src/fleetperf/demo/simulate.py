"""Synthetic fleet: realistic nmon files (Linux nmon 16 with Steal%, AIX topas_nmon with LPAR) for
N hosts over a time range, seedable, one file per host and day as nmon's daily rotation writes."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path

LPAR_HEADER = (
    "PhysicalCPU,virtualCPUs,logicalCPUs,poolCPUs,entitled,weight,PoolIdle,usedAllCPU%,usedPoolCPU%,"
    "SharedCPU,Capped,EC_User%,EC_Sys%,EC_Wait%,EC_Idle%,VP_User%,VP_Sys%,VP_Wait%,VP_Idle%,Folded,Pool_id"
)


@dataclass
class Host:
    name: str
    aix: bool
    cpus: int
    base_busy: float
    entitled: float = 0.0
    virtual_cpus: int = 0
    serial: str = ""
    lpar_id: int = 0
    steal_bias: float = 0.0
    machine: str = "9009-42A"  # POWER machine type-model (AAA,MachineType): with the serial, the frame


@dataclass(frozen=True)
class Fault:
    """An injected anomaly: from `start` for `minutes`, the host's steal (Linux) or busy % is forced."""

    host: str
    start: datetime
    minutes: float
    steal: float | None = None
    busy: float | None = None

    def active(self, host: str, ts: datetime) -> bool:
        return host == self.host and self.start <= ts < self.start + timedelta(minutes=self.minutes)

    @classmethod
    def parse(cls, text: str, fleet_start: datetime) -> Fault:
        """'HOST@MINUTE+MINUTES:steal=30' or ':busy=95' (MINUTE from the fleet's start)."""
        try:
            where, what = text.split(":", 1)
            host, span = where.split("@", 1)
            first, length = span.split("+", 1)
            key, value = what.split("=", 1)
            if key not in ("steal", "busy"):
                raise ValueError(key)
            return cls(host, fleet_start + timedelta(minutes=float(first)), float(length), **{key: float(value)})
        except ValueError as exc:
            raise ValueError(f"fault {text!r}: expected HOST@MINUTE+MINUTES:steal=N or :busy=N") from exc


def make_fleet(hosts: int, rng: random.Random) -> list[Host]:
    fleet = []
    for i in range(hosts):
        if i % 3 == 2:
            ent = rng.choice([0.5, 1.0, 1.3, 2.0, 4.0])
            vps = max(1, math.ceil(ent * rng.choice([1.5, 2, 3])))
            fleet.append(
                Host(
                    f"aixlpar{i:03d}",
                    True,
                    vps * 4,
                    rng.uniform(20, 70),
                    ent,
                    vps,
                    f"02{rng.randrange(16**5):05X}",
                    1 + i % 40,
                )
            )
        else:
            fleet.append(
                Host(
                    f"linux{i:03d}",
                    False,
                    rng.choice([2, 4, 8, 16]),
                    rng.uniform(10, 60),
                    steal_bias=rng.choice([0.0, 0.0, 0.5, 2.0, 8.0]),
                )
            )
    return fleet


def _day_tag(ts: datetime) -> str:
    return ts.strftime("%d-%b-%Y").upper()


def _header(h: Host, first: datetime, interval: int, count: int) -> list[str]:
    lines = [
        f"AAA,progname,{'topas_nmon' if h.aix else 'nmon'}",
        f"AAA,command,{'topas_nmon' if h.aix else 'nmon'} -f -s {interval} -c {count}",
        f"AAA,version,{'TOPAS-NMON' if h.aix else '16g'}",
        f"AAA,host,{h.name}",
        "AAA,user,root",
        f"AAA,time,{first:%H:%M.%S}",
        f"AAA,date,{_day_tag(first)}",
        f"AAA,interval,{interval}",
        f"AAA,snapshots,{count}",
        f"AAA,cpus,{h.cpus}",
    ]
    if h.aix:
        lines += [
            "AAA,AIX,7.2.5.0",
            f"AAA,SerialNumber,{h.serial}",
            f"AAA,LPARNumberName,{h.lpar_id},{h.name}",
            f"AAA,MachineType,IBM,{h.machine}",
            f"CPU_ALL,CPU Total {h.name},User%,Sys%,Wait%,Idle%,Busy,PhysicalCPUs",
            f"LPAR,Logical Partition {h.name},{LPAR_HEADER}",
        ]
    else:
        lines += [
            "AAA,OS,Linux,5.14.0-427.el9.s390x,#1 SMP,s390x",
            f"CPU_ALL,CPU Total {h.name},User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs",
        ]
    lines.append(f"MEM,Memory MB {h.name},memtotal,memfree")
    return lines


def _snapshot(h: Host, tag: str, ts: datetime, rng: random.Random, faults: tuple[Fault, ...] = ()) -> list[str]:
    hour = ts.hour + ts.minute / 60
    busy = h.base_busy * (0.6 + 0.4 * math.sin((hour - 8) / 24 * 2 * math.pi)) + rng.gauss(0, 4)
    fault = next((f for f in faults if f.active(h.name, ts)), None)
    if fault is not None and fault.busy is not None:
        busy = fault.busy + rng.gauss(0, 1)
    busy = min(max(busy, 1.0), 99.0)
    user, sys_ = busy * 0.7, busy * 0.25
    wait = busy * 0.05
    lines = [f"ZZZZ,{tag},{ts:%H:%M:%S},{_day_tag(ts)}"]
    if h.aix:
        idle = max(0.0, 100 - user - sys_ - wait)
        lines.append(f"CPU_ALL,{tag},{user:.1f},{sys_:.1f},{wait:.1f},{idle:.1f},,{h.cpus}")
        physc = min(h.virtual_cpus, max(0.01, h.virtual_cpus * busy / 100 * rng.uniform(0.8, 1.2)))
        ec = physc / h.entitled * 100
        lines.append(
            f"LPAR,{tag},{physc:.3f},{h.virtual_cpus},{h.cpus},16,{h.entitled:.2f},128,{rng.uniform(2, 8):.2f},"
            f"{physc / 16 * 100:.2f},{physc / 16 * 100:.2f},1,0,{ec * 0.7:.2f},{ec * 0.25:.2f},{ec * 0.05:.2f},"
            f"{max(0.0, 100 - ec):.2f},{user:.2f},{sys_:.2f},{wait:.2f},{idle:.2f},0,0"
        )
    else:
        episode = 1.0 if (ts.minute // 10) % 3 == 0 else 0.2
        steal = min(40.0, max(0.0, h.steal_bias * episode * 3 + rng.gauss(0, 0.3) * (h.steal_bias > 0)))
        if fault is not None and fault.steal is not None:
            steal = max(0.0, fault.steal + rng.gauss(0, 1))
        idle = max(0.0, 100 - user - sys_ - wait - steal)
        lines.append(f"CPU_ALL,{tag},{user:.1f},{sys_:.1f},{wait:.1f},{idle:.1f},{steal:.1f},,{h.cpus}")
    lines.append(f"MEM,{tag},{h.cpus * 4096:.1f},{rng.uniform(100, 2000):.1f}")
    return lines


def simulate(
    out_dir: Path,
    hosts: int,
    start: datetime,
    duration: timedelta,
    interval: int,
    seed: int,
    faults: tuple[Fault, ...] = (),
) -> list[Path]:
    """Writes the files and returns their paths. Same arguments, same bytes."""
    rng = random.Random(seed)
    return write_fleet(out_dir, make_fleet(hosts, rng), start, duration, interval, rng, faults)


def write_fleet(
    out_dir: Path,
    fleet: list[Host],
    start: datetime,
    duration: timedelta,
    interval: int,
    rng: random.Random,
    faults: tuple[Fault, ...] = (),
) -> list[Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    end = start + duration
    for host in fleet:
        day_start = start
        while day_start < end:
            day_end = min(end, datetime.combine(day_start.date() + timedelta(days=1), datetime.min.time()))
            count = int((day_end - day_start).total_seconds() // interval)
            if count <= 0:
                break
            stamps = [day_start + timedelta(seconds=interval * (n + 1)) for n in range(count)]
            lines = _header(host, day_start, interval, count)
            for n, ts in enumerate(stamps, start=1):
                lines += _snapshot(host, f"T{n:04d}", ts, rng, faults)
            path = out_dir / f"{host.name}_{day_start:%y%m%d_%H%M}.nmon"
            path.write_text("\n".join(lines) + "\n")
            written.append(path)
            day_start = day_end
    return written
