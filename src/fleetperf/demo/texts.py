"""Text outputs of the demo fleet, in the layouts the commands print: z/VM Performance Toolkit reports
(FCX162 USERLOG per guest, FCX225 SYSSUMLOG per system, FCX126 LPAR per CPC), AIX `hpmstat -r -g 10`
and `entstat -d` of an 802.3ad aggregation, and Linux /proc/net/bonding/<bond>.

Layouts as seed 004 shows the Toolkit reports (L3879-3907, L4619-4637, L4141-4256) and seed 000 the
AIX commands (L8254-8334, L12820-13060); the figures are the simulator's. Written from those facts,
not from the readers, so that a reader that drifts from the printed layout fails the demo's test."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, datetime

# --------------------------------------------------------------------------- Toolkit


@dataclass(frozen=True)
class GuestRow:
    end: str  # HH:MM:SS, "24:00:00" for the day's last interval
    tcpu: float
    vcpu: float
    interval_s: float
    io_rate: float = 0.0


def fcx162(system: str, cpc_model: str, serial: str, userid: str, day: date, rows: Iterable[GuestRow]) -> str:
    """FCX162 Resource Usage Log for User, one day of one guest."""
    lines = [
        f"FCX162      CPU {cpc_model}  SER {serial}  Interval 00:00:00 - 24:00:00, on {day:%Y/%m/%d}"
        f"  Perf. Monitor  ({system})",
        "",
        f"Resource Usage Log for User {userid}",
        "",
        "          <----- CPU Load -----> <----- Virtual IO/s ----->",
        "Interval          <-Seconds->    T/V",
        "End Time  %CPU  TCPU  VCPU Ratio Total  DASD Avoid Diag98  UR Pg/s  User Status",
    ]
    for r in rows:
        pct = r.tcpu / r.interval_s * 100
        ratio = r.tcpu / r.vcpu if r.vcpu else 0.0
        lines.append(
            f"{r.end}  {pct:.2f} {r.tcpu:.3f} {r.vcpu:.3f}   {ratio:.1f}   {r.io_rate:.0f}  {r.io_rate:.0f}"
            "    .0    .0  .0  .0  EME,CL3,DIS"
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class SystemRow:
    end: str
    busy: float  # % of the online processors
    tv: float
    capture: float
    online: int
    logged: int
    active: int
    io_rate: float
    elist: float
    xstore: float
    dasd_paging: float


def fcx225(system: str, day: date, rows: Iterable[SystemRow]) -> str:
    """FCX225 SYSSUMLOG: the system by interval (tab-separated, as a copied screen is)."""
    lines = [
        f"FCX225      Run {day:%Y/%m/%d}   SYSSUMLOG  System Performance Summary by Time  ({system})",
        f"Interval 00:00:00 - 24:00:00, on {day:%Y/%m/%d}",
        "",
        "Interval End Time\t<----- CPU ----->\t\t\t\t<--Users-->\t\t<---I/O--->\t\t<Stg>\t<-Paging-->\t\t<Spl",
        "\t<--Ratio-->\t\t\t\tLog- ged\tActiv\tSSCH\tDASD\tUsers\t<-Rate/s-->\t\tPage",
        "\tPct\tCap-\tOn-\tture\t\t\t+RSCH\tResp\tin\tPGIN+\tRead+\t",
        "\tBusy\tT/V\tline\t\t\t\t/s\tmsec\tElist\tPGOUT\tWrite\t/",
    ]
    for r in rows:
        lines.append(
            f"{r.end}\t{r.busy:.1f}\t{r.tv:.2f}\t{r.capture:.4f}\t{r.online:.1f}\t{r.logged}\t{r.active}"
            f"\t{r.io_rate:.1f}\t.8\t{r.elist:.1f}\t{r.xstore:.1f}\t{r.dasd_paging:.1f}\t."
        )
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Partition:
    name: str
    number: int
    weight: int
    busy: tuple[float, ...]  # %Busy of each logical CPU
    cpu_type: str = "IFL"
    zvm: bool = False  # the partition the report was collected in: %Susp, %VMld, %Logld


def fcx126(collected_in: str, model: str, physical: int, day: date, start: str, end: str,
           partitions: Iterable[Partition]) -> str:  # fmt: skip
    """FCX126 LPAR: every partition of the CPC with its logical processors."""
    parts = list(partitions)
    lines = [
        f"FCX126      Run {day:%Y/%m/%d}   LPAR  Logical Partition Activity",
        f"Interval {start} - {end}, on {day:%Y/%m/%d}",
        "",
        f"LPAR Data, Collected in Partition {collected_in}",
        f"Processor type and model : {model}",
        f"Nr. of configured partitions : {len(parts)}",
        f"Nr. of physical processors : {physical}",
        "Dispatch interval (msec) : dynamic",
        "Partition\tNr.\tUpid\t#Proc\tWeight\tWait-C\tCap\t%Load\tCPU\t%Busy\t%Ovhd\t%Susp\t%VMld\t%Logld\tType",
    ]
    for p in parts:
        load = sum(p.busy) / physical
        for cpu, busy in enumerate(p.busy):
            vm = f"\t.3\t{busy * 0.97:.1f}\t{busy * 0.98:.1f}" if p.zvm else "\t\t\t"
            head = f"{p.name}\t{p.number}\t{p.number:02X}\t{len(p.busy)}" if cpu == 0 else "\t\t\t"
            load_cell = f"{load:.1f}" if cpu == 0 else ""
            lines.append(f"{head}\t{p.weight}\tNO\tNO\t{load_cell}\t{cpu}\t{busy:.1f}\t.2{vm}\t{p.cpu_type}")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- AIX


@dataclass(frozen=True)
class HpmCounts:
    wall_s: float
    duration_s: float  # counting duration: the wall time summed over the logical CPUs counted
    ierat: int
    dslb: int
    islb: int
    instructions: int
    cycles: int


def hpmstat(reports: Iterable[HpmCounts]) -> str:
    """`hpmstat -r -g 10 <seconds>` run back to back: one report per interval."""
    out = []
    for r in reports:

        def pct(n: int, r: HpmCounts = r) -> float:
            return 100 * n / r.instructions

        mips = r.instructions / r.duration_s / 1e6
        out += [
            f"Execution time (wall clock time): {r.wall_s:.9f} seconds",
            "Group: 10",
            "Counting mode: user+kernel+hypervisor+runlatch",
            f"Counting duration: {r.duration_s:.9f} seconds",
            f"  PM_IERAT_MISS (IERAT Reloaded  (Miss))                      : {r.ierat:>15}",
            f"  PM_DSLB_MISS (Data SLB misses)                              : {r.dslb:>15}",
            f"  PM_ISLB_MISS (Instruction SLB misses)                       : {r.islb:>15}",
            f"  PM_SLB_MISS (SLB misses)                                    : {r.dslb + r.islb:>15}",
            f"  PM_RUN_INST_CMPL (Run instructions completed)               : {r.instructions:>15}",
            f"  PM_RUN_CYC (Run cycles)                                     : {r.cycles:>15}",
            "",
            "Normalization base: time",
            "",
            "  Derived metric group: Translation",
            "",
            f"  [   ] % DSLB_Miss_Rate per inst                             : {pct(r.dslb):>15.3f} %",
            f"  [   ] IERAT miss rate (%)                                   : {pct(r.ierat):>15.3f} %",
            f"  [   ] % ISLB miss rate per inst                             : {pct(r.islb):>15.3f} %",
            "",
            "  Derived metric group: General",
            "",
            f"  [   ] Run cycles per run instruction                        : {r.cycles / r.instructions:>15.3f}",
            f"  [   ] MIPS                                                  : {mips:>15.3f} MIPS",
            "",
            "u=Unverified c=Caveat R=Redefined m=Interleaved",
            "",
        ]
    return "\n".join(out)


@dataclass(frozen=True)
class Port:
    name: str
    tx_packets: int
    rx_packets: int
    in_sync: bool = True


def _table(tx_packets: int, rx_packets: int, tx_bytes: int, rx_bytes: int) -> list[str]:
    def row(left: str, right: str) -> str:
        return f"{left:<46}{right}"

    return [
        row("Transmit Statistics:", "Receive Statistics:"),
        row("--------------------", "-------------------"),
        row(f"Packets: {tx_packets}", f"Packets: {rx_packets}"),
        row(f"Bytes: {tx_bytes}", f"Bytes: {rx_bytes}"),
        row("Interrupts: 0", f"Interrupts: {rx_packets // 4}"),
        row("Transmit Errors: 0", "Receive Errors: 0"),
        row("Packets Dropped: 0", "Packets Dropped: 0"),
        "",
    ]


def _lacp_state(sync: str) -> list[str]:
    return [
        "                LACP activity: Active",
        "                LACP timeout: Long",
        "                Aggregation: Aggregatable",
        f"                Synchronization: {sync}",
        "                Collecting: Enabled",
        "                Distributing: Enabled",
        "                Defaulted: False",
        "                Expired: False",
    ]


def entstat(aggregation: str, mac: str, uptime_s: int, ports: list[Port], lacpdus: int) -> str:
    """`entstat -d <aggregation>` of an IEEE 802.3ad Link Aggregation and its member ports."""
    days, rest = divmod(uptime_s, 86400)
    hours, rest = divmod(rest, 3600)
    tx, rx = sum(p.tx_packets for p in ports), sum(p.rx_packets for p in ports)
    out = [
        "-------------------------------------------------------------",
        f"ETHERNET STATISTICS ({aggregation}) :",
        "Device Type: IEEE 802.3ad Link Aggregation",
        f"Hardware Address: {mac}",
        f"Elapsed Time: {days} days {hours} hours {rest // 60} minutes {rest % 60} seconds",
        "",
        *_table(tx, rx, tx * 800, rx * 600),
        "=============================================================",
        "Statistics for every adapter in the IEEE 802.3ad Link Aggregation:",
        "------------------------------------------------------------------",
        f"Number of adapters: {len(ports)}",
        "Operating mode: Standard mode (IEEE 802.3ad)",
        "IEEE 802.3ad Link Aggregation Statistics:",
        f"Aggregation status: {'Aggregated' if all(p.in_sync for p in ports) else 'Partially Aggregated'}",
        f"        LACPDU Interval: Long   Received LACPDUs: {lacpdus}",
        f"        Transmitted LACPDUs: {lacpdus + 2}",
        "Hash mode: Source and destination TCP/UDP ports",
    ]
    for n, p in enumerate(ports, start=1):
        sync = "IN_SYNC" if p.in_sync else "OUT_OF_SYNC"
        out += [
            "-------------------------------------------------------------",
            f"ETHERNET STATISTICS ({p.name}) :",
            "Device Type: 2-Port 10/100/1000 Base-TX PCI-X Adapter (14108902)",
            "",
            *_table(p.tx_packets, p.rx_packets, p.tx_packets * 800, p.rx_packets * 600),
            "IEEE 802.3ad Port Statistics:",
            "-----------------------------",
            "        Actor System Priority: 0x8000",
            f"        Actor Port: 0x{n:04X}",
            "        Actor State:",
            *_lacp_state(sync),
            "",
            "        Partner System Priority: 0x007F",
            f"        Partner Port: 0x{n + 2:04X}",
            "        Partner State:",
            *_lacp_state(sync),
            "",
            f"        Received LACPDUs: {lacpdus // len(ports)}",
            f"        Transmitted LACPDUs: {lacpdus // len(ports) + 1}",
        ]
    return "\n".join(out) + "\n"


def proc_bonding(slaves: list[str], up: bool = True) -> str:
    """/proc/net/bonding/<bond> of an 802.3ad bond (Linux bonding driver)."""
    out = [
        "Ethernet Channel Bonding Driver: v5.14.0-427.el9.x86_64",
        "",
        "Bonding Mode: IEEE 802.3ad Dynamic link aggregation",
        "Transmit Hash Policy: layer3+4 (1)",
        f"MII Status: {'up' if up else 'down'}",
        "MII Polling Interval (ms): 100",
        "",
    ]
    for name in slaves:
        out += [f"Slave Interface: {name}", "MII Status: up", "Speed: 10000 Mbps", "Duplex: full",
                "Aggregator ID: 1", ""]  # fmt: skip
    return "\n".join(out)


def hhmmss(ts: datetime, day_start: datetime) -> str:
    """A log row's end time, 24:00:00 for the end of the day (as the Toolkit prints it)."""
    seconds = int((ts - day_start).total_seconds())
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
