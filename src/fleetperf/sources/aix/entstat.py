"""Parser for AIX `entstat -d entN` / `entstat -all entN` text (seed 000 L12820-13060, L17416).

The output is one block per adapter, each starting with `ETHERNET STATISTICS (entN) :`. Inside,
statistics are printed in two columns, Transmit on the left and Receive on the right; a line that
starts in the right column (e.g. `                 Bad Packets: 0`) is a Receive value. An
EtherChannel / 802.3ad adapter adds aggregation lines (status, hash mode, LACPDU counters), and
each member adds `IEEE 802.3ad Port Statistics` with Actor and Partner state. Counters stay exact
integers below 2^63 (Avro long); a counter that is not one is a Problem (a dead letter naming the
line) and is left out, the rest of the output is read. `Name: value` pairs are found by a linear
scan (`pairs`), not a backtracking regex: a 10 MB line without ':' takes milliseconds."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import NamedTuple

from fleetperf.sources.aix.errors import MAX_LINE, CommandOutputError, Problem, counter, numbered

_BLOCK = re.compile(r"^\s*ETHERNET STATISTICS \(([A-Za-z0-9_]{1,32})\)\s*:")
# the line before a port's LACP state keys (leading and trailing space aside)
_STATE_HEADERS = {"Actor State:": "Actor", "Partner State:": "Partner"}
_MAX_TEXT = 200  # longest text value kept (device type, LACP state)


class Pair(NamedTuple):
    """`Name: value` on a line: the name, where it starts, the value's first word."""

    key: str
    start: int
    value: str


# At each position: a pair (name from a letter, possessive: the run of name characters is tried
# once) with the characters up to the next letter after its value, else the whole run of name
# characters from a letter (no later start inside it can reach another colon), else the characters
# up to the next letter (no name starts there). Every character
# is consumed once and looked at a bounded number of times: linear, unlike the lazy pattern
# `([A-Za-z][A-Za-z0-9 /()\-.]*?):\s+(\S+)` this replaces (quadratic on a long line without ':').
_SCAN = re.compile(r"([A-Za-z][A-Za-z0-9 /()\-.]*+):\s+(\S+)[^A-Za-z]*|[A-Za-z][A-Za-z0-9 /()\-.]*+|[^A-Za-z]+")


def pairs(line: str) -> list[Pair]:
    """Every `Name: value` of a line, left to right, as the pattern above finds them: a name is a
    letter then letters, digits, spaces and / ( ) - . up to a colon; the value is the first word
    after the colon and at least one space."""
    return [Pair(m[1], m.start(1), m[2]) for m in _SCAN.finditer(line) if m[1] is not None]


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
    problems: list[Problem] = field(default_factory=list)
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


def parse(text: str) -> EntstatReport:
    """The output's adapters; raises CommandOutputError on the first problem (strict reading, for
    tests and callers that want all or nothing). `read` is the forgiving one."""
    report = read(text)
    if report.problems:
        p = report.problems[0]
        raise CommandOutputError(p.line, p.message, p.raw)
    return report


def read(text: str) -> EntstatReport:
    """Every adapter block of an output, with the problems of its lines (report.problems). Raises
    CommandOutputError only when there is no adapter block at all."""
    # Each line is looked at with plain string tests before any pattern (a block header starts with
    # "ETHERNET", a state header is one of two exact lines, a line without ':' holds no pair) and
    # its pairs are found once. Per line, the closure made for `problem`, the two regex matches, a
    # set of its characters and a second `pairs` scan in the aggregate step took 0.42 CPU-s for
    # 577 captures (106,168 lines); now 0.23.
    report = EntstatReport()
    adapter: Adapter | None = None
    state_target: dict[str, str] | None = None
    in_table = False

    def problem(where: tuple[int, int, str], message: str) -> None:
        line_no, offset, raw = where
        report.problems.append(Problem(line_no, offset, message, raw[:1024]))

    for where in numbered(text):
        raw = where[2]
        if len(raw) > MAX_LINE:
            problem(where, f"line longer than {MAX_LINE} characters")
            continue
        line = raw.rstrip()
        stripped = line.lstrip()  # line.strip(); `\s` of the patterns is str.isspace, as strip's
        m = _BLOCK.match(line) if stripped.startswith("ETHERNET STATISTICS (") else None
        if m:
            state_target, in_table = None, False
            if m.group(1) in report.adapters:
                # two captures in one file (or a block repeated): its counters would silently
                # replace the first block's, and this output gives no time of its own for them
                problem(where, f"second block for {m.group(1)} (two captures in one file?): its lines are skipped")
                adapter = None
                continue
            adapter = report.adapters[m.group(1)] = Adapter(m.group(1))
            continue
        if adapter is None or not stripped.strip("-=."):  # nothing, or a rule of - = .
            continue
        if stripped.startswith("Transmit Statistics:"):
            in_table = True
            continue
        state = _STATE_HEADERS.get(stripped)
        if state is not None:
            state_target = adapter.actor_state if state == "Actor" else adapter.partner_state
            continue
        key, sep, value = stripped.partition(":")
        key = key.rstrip()  # stripped has no leading space
        if state_target is not None and sep and key in _STATE_KEYS:
            state_target[key] = value.strip()[:_MAX_TEXT]
            continue
        state_target = None
        if stripped.startswith(_AGGREGATE_STARTS):
            _aggregate_field(report, stripped)
            continue
        found = pairs(line) if sep else []  # a pair needs a ':'
        if not adapter.actor_state and report.aggregation_status is not None:
            aggregate = _aggregate_lacp(report, found)
            if isinstance(aggregate, str):
                problem(where, aggregate)
            if aggregate:
                continue
        if not found:
            in_table = in_table and not stripped.endswith(":")  # a new titled section ends the table
            continue
        if key in _LACP_COUNTERS and adapter.actor_state:
            number = counter(value.strip())
            if isinstance(number, str):
                problem(where, f"{key} {number}: left out")
            else:
                adapter.lacp[key] = number
            continue
        if not in_table and not any(p.key.strip() in _TABLE_COUNTERS for p in found):
            if key == "Device Type":
                adapter.device_type = value.strip()[:_MAX_TEXT]
            if len(adapter.info) < 256:
                adapter.info.setdefault(key[:_MAX_TEXT], value.strip()[:_MAX_TEXT])
            continue
        for pm in found:
            # two columns: Transmit left, Receive right; a lone value indented to the right is Receive
            receive = pm is not found[0] or pm.start >= _RIGHT_COLUMN
            name = pm.key.strip()
            if len(name) > _MAX_TEXT:
                problem(where, "statistic name too long: left out")
                continue
            number = counter(pm.value)
            if isinstance(number, str):
                if name in _TABLE_COUNTERS:
                    problem(where, f"{name} {number}: left out")
                continue  # e.g. "Max Packets on S/W Transmit Queue: 0" is fine, text values are not counters
            (adapter.receive if receive else adapter.transmit)[name] = number
    if not report.adapters:
        raise CommandOutputError(0, "no 'ETHERNET STATISTICS (entN)' block found", text[:120])
    report.problems.sort(key=lambda p: p.line)
    agg = report.aggregation
    if agg is not None:
        for name, a in report.adapters.items():
            if a is not agg:
                a.aggregation = agg.name
                agg.members.append(name)
    return report


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


# Aggregation-level fields of the EtherChannel block (they are not Transmit/Receive pairs): the
# line's start -> the report's attribute
_AGGREGATE_FIELDS = {
    "Aggregation status:": "aggregation_status",
    "Hash mode:": "hash_mode",
    "Operating mode:": "operating_mode",
}
_AGGREGATE_STARTS = tuple(_AGGREGATE_FIELDS)


def _aggregate_field(report: EntstatReport, stripped: str) -> None:
    """Sets the aggregation field the line starts with (one of _AGGREGATE_STARTS)."""
    start = next(s for s in _AGGREGATE_STARTS if stripped.startswith(s))
    setattr(report, _AGGREGATE_FIELDS[start], stripped.split(":", 1)[1].strip()[:_MAX_TEXT])


def _aggregate_lacp(report: EntstatReport, found: list[Pair]) -> bool | str:
    """The aggregation's LACPDU counters, on the lines after its status and before any member's
    Actor State: True if the line held one (or the LACPDU interval), a message if one was not a
    counter (left out), False if the line is something else."""
    aggregate: bool | str = False
    for pm in found:
        key = pm.key.strip()
        if key.startswith("LACPDU Interval"):
            aggregate = aggregate or True
            continue
        if key in _LACP_COUNTERS:
            number = counter(pm.value)
            if isinstance(number, str):
                aggregate = f"{key} {number}: left out"
            else:
                report.aggregate_lacp[key] = number
                aggregate = aggregate or True
    return aggregate
