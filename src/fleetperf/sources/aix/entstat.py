"""Parser for AIX `entstat -d entN` / `entstat -all entN` text (seed 000 L12820-13060, L17416).

The output is one block per adapter, each starting with `ETHERNET STATISTICS (entN) :`. Inside,
statistics are printed in two columns, Transmit on the left and Receive on the right; a line that
starts in the right column (e.g. `                 Bad Packets: 0`) is a Receive value. An
EtherChannel / 802.3ad adapter adds aggregation lines (status, hash mode, LACPDU counters), and
each member adds `IEEE 802.3ad Port Statistics` with Actor and Partner state. Counters stay exact
integers; a statistics line that cannot be read is an error naming the line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleetperf.sources.aix.errors import CommandOutputError

_BLOCK = re.compile(r"^\s*ETHERNET STATISTICS \((\w+)\)\s*:")
_PAIR = re.compile(r"([A-Za-z][A-Za-z0-9 /()\-.]*?):\s+(\S+)")
_STATE_HEADER = re.compile(r"^\s*(Actor|Partner) State:\s*$")


@dataclass
class Adapter:
    name: str
    device_type: str = ""
    transmit: dict[str, int] = field(default_factory=dict)
    receive: dict[str, int] = field(default_factory=dict)
    info: dict[str, str] = field(default_factory=dict)
    actor_state: dict[str, str] = field(default_factory=dict)
    partner_state: dict[str, str] = field(default_factory=dict)
    lacp: dict[str, int] = field(default_factory=dict)
    members: list[str] = field(default_factory=list)
    aggregation: str | None = None  # the EtherChannel this adapter is a member of


@dataclass
class EntstatReport:
    adapters: dict[str, Adapter] = field(default_factory=dict)
    aggregation_status: str | None = None
    hash_mode: str | None = None
    operating_mode: str | None = None
    aggregate_lacp: dict[str, int] = field(default_factory=dict)

    @property
    def aggregation(self) -> Adapter | None:
        return next(
            (
                a
                for a in self.adapters.values()
                if "Link Aggregation" in a.device_type or "EtherChannel" in a.device_type
            ),
            None,
        )


def _int(text: str) -> int | None:
    return int(text) if text.isdigit() else None


def parse(text: str) -> EntstatReport:
    report = EntstatReport()
    adapter: Adapter | None = None
    state_target: dict[str, str] | None = None
    in_table = False
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        stripped = line.strip()
        m = _BLOCK.match(line)
        if m:
            adapter = report.adapters.setdefault(m.group(1), Adapter(m.group(1)))
            state_target, in_table = None, False
            continue
        if adapter is None or not stripped or set(stripped) <= {"-", "=", "."}:
            continue
        if stripped.startswith("Transmit Statistics:"):
            in_table = True
            continue
        sm = _STATE_HEADER.match(line)
        if sm:
            state_target = adapter.actor_state if sm.group(1) == "Actor" else adapter.partner_state
            continue
        key, sep, value = stripped.partition(":")
        if state_target is not None and sep and key.strip() in _STATE_KEYS:
            state_target[key.strip()] = value.strip()
            continue
        state_target = None
        if _aggregate_line(report, adapter, stripped):
            continue
        pairs = list(_PAIR.finditer(line))
        if not pairs:
            in_table = in_table and not stripped.endswith(":")  # a new titled section ends the table
            continue
        if key.strip() in _LACP_COUNTERS and adapter.actor_state:
            adapter.lacp[key.strip()] = _counter(value.strip(), line_no, raw)
            continue
        if not in_table and not any(p.group(1).strip() in _TABLE_COUNTERS for p in pairs):
            if key.strip() == "Device Type":
                adapter.device_type = value.strip()
            adapter.info.setdefault(key.strip(), value.strip())
            continue
        for pm in pairs:
            # two columns: Transmit left, Receive right; a lone value indented to the right is Receive
            receive = pm is not pairs[0] or pm.start(1) >= _RIGHT_COLUMN
            name = pm.group(1).strip()
            number = _int(pm.group(2))
            if number is None:
                if name in _TABLE_COUNTERS:
                    raise CommandOutputError(line_no, f"{name} is not a counter", raw)
                continue  # e.g. "Max Packets on S/W Transmit Queue: 0" is fine, text values are not counters
            (adapter.receive if receive else adapter.transmit)[name] = number
    if not report.adapters:
        raise CommandOutputError(0, "no 'ETHERNET STATISTICS (entN)' block found", text[:120])
    agg = report.aggregation
    if agg is not None:
        for name, a in report.adapters.items():
            if a is not agg:
                a.aggregation = agg.name
                agg.members.append(name)
    return report


def _counter(text: str, line_no: int, raw: str) -> int:
    if not text.isdigit():
        raise CommandOutputError(line_no, "counter is not an integer", raw)
    return int(text)


_RIGHT_COLUMN = 20
_TABLE_COUNTERS = {
    "Packets",
    "Bytes",
    "Interrupts",
    "Transmit Errors",
    "Receive Errors",
    "Packets Dropped",
    "Bad Packets",
    "Broadcast Packets",
    "Multicast Packets",
    "No Carrier Sense",
    "CRC Errors",
    "DMA Underrun",
    "DMA Overrun",
    "Lost CTS Errors",
    "Alignment Errors",
    "Max Collision Errors",
    "No Resource Errors",
    "Late Collision Errors",
    "Receive Collision Errors",
    "Deferred",
    "Packet Too Short Errors",
    "SQE Test",
    "Packet Too Long Errors",
    "Timeout Errors",
    "Packets Discarded by Adapter",
    "Single Collision Count",
    "Receiver Start Count",
    "Multiple Collision Count",
    "Current HW Transmit Queue Length",
}
_STATE_KEYS = {
    "LACP activity",
    "LACP timeout",
    "Aggregation",
    "Synchronization",
    "Collecting",
    "Distributing",
    "Defaulted",
    "Expired",
}
_LACP_COUNTERS = {
    "Received LACPDUs",
    "Transmitted LACPDUs",
    "Received marker PDUs",
    "Transmitted marker PDUs",
    "Received marker response PDUs",
    "Transmitted marker response PDUs",
    "Received unknown PDUs",
    "Received illegal PDUs",
}


def _aggregate_line(report: EntstatReport, adapter: Adapter, stripped: str) -> bool:
    """Aggregation-level lines of the EtherChannel block (they are not Transmit/Receive pairs)."""
    if stripped.startswith("Aggregation status:"):
        report.aggregation_status = stripped.split(":", 1)[1].strip()
        return True
    if stripped.startswith("Hash mode:"):
        report.hash_mode = stripped.split(":", 1)[1].strip()
        return True
    if stripped.startswith("Operating mode:"):
        report.operating_mode = stripped.split(":", 1)[1].strip()
        return True
    if not adapter.actor_state and report.aggregation_status is not None:
        found = False
        for pm in _PAIR.finditer(stripped):
            key = pm.group(1).strip()
            if key.startswith("LACPDU Interval"):
                found = True
                continue
            if key in _LACP_COUNTERS and pm.group(2).isdigit():
                report.aggregate_lacp[key] = int(pm.group(2))
                found = True
        return found
    return False
