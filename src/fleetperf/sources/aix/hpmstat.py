"""Parser for `hpmstat -r -g <group> <seconds>` text (AIX 6.1/7.x, layout as in seed 000 L8254-8392).

Counter lines are `NAME (description) : value`; derived lines are `[flags] label : value [unit]`.
Indentation and blank lines vary between saved copies and are ignored. Counters stay exact
integers below 2^63 (Avro long). A line that cannot be read, a counter that is not such an integer,
a derived value that is not a finite non-negative number is a Problem (a dead letter naming the
line): that value is left out and the rest of the output is read. Lines are split with plain string
operations, no backtracking regex: time is linear in the input whatever it holds."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fleetperf.ingest import validate
from fleetperf.sources.aix.errors import MAX_LINE, CommandOutputError, Problem, counter, numbered

_FIELDS = {
    "Execution time (wall clock time)",
    "Counting duration",
    "Group",
    "Counting mode",
    "Normalization base",
}
_EVENT = re.compile(r"PM_[A-Z0-9_]+\Z")


@dataclass
class HpmSample:
    group: int | None = None
    counting_mode: str = ""
    wall_s: float | None = None
    duration_s: float | None = None
    counters: dict[str, int] = field(default_factory=dict)
    descriptions: dict[str, str] = field(default_factory=dict)
    derived: dict[str, float] = field(default_factory=dict)
    first_line: int = 0
    first_offset: int = 0


@dataclass
class HpmOutput:
    samples: list[HpmSample]
    problems: list[Problem]


def parse(text: str) -> list[HpmSample]:
    """The reports of an output; raises CommandOutputError on the first problem (strict reading,
    for tests and callers that want all or nothing). `read` is the forgiving one."""
    out = read(text)
    if out.problems:
        p = out.problems[0]
        raise CommandOutputError(p.line, p.message, p.raw)
    return out.samples


def read(text: str) -> HpmOutput:
    """Every report of an output (a report starts at 'Execution time', or at 'Group:' after
    counters) and the problems of its lines. Raises CommandOutputError only when no report is found."""
    samples: list[HpmSample] = []
    problems: list[Problem] = []
    current: HpmSample | None = None
    derived_group = ""
    for line_no, offset, raw in numbered(text):
        why, current, derived_group = _line(raw, line_no, offset, samples, current, derived_group)
        if why:
            problems.append(Problem(line_no, offset, why, raw[:1024]))
    if not samples:
        raise CommandOutputError(0, "no hpmstat report found (no 'Execution time' or 'Group' line)", text[:120])
    kept = []
    for sample in samples:
        if sample.counters:
            kept.append(sample)
        else:
            problems.append(Problem(sample.first_line, sample.first_offset, "report without counters: skipped", ""))
    problems.sort(key=lambda p: p.line)
    return HpmOutput(kept, problems)


def _line(
    raw: str, line_no: int, offset: int, samples: list[HpmSample], current: HpmSample | None, group: str
) -> tuple[str | None, HpmSample | None, str]:
    """One line: (its problem or None, the current report, the current derived metric group)."""
    if len(raw) > MAX_LINE:
        return f"line longer than {MAX_LINE} characters", current, group
    line = raw.strip()
    if not line or line.startswith(("#", "u=Unverified")):
        return None, current, group
    # counter and derived lines (most lines with a value) are told by their first character before
    # the line is split and stripped for a report field, which never starts so (`read` of 15
    # captures, 104,817 lines: 0.18 CPU-s before, 0.16 now)
    if line.startswith("PM_"):
        return (None if current is None else _counter_line(current, line)), current, group
    if line.startswith("["):
        return (None if current is None else _derived_line(current, group, line)), current, group
    key, sep, value = line.partition(":")
    key, value = key.strip(), value.strip()
    if sep and key in _FIELDS:
        starts_report = key.startswith("Execution time") or (
            key == "Group" and current is not None and bool(current.counters)
        )
        if current is None or starts_report and (bool(current.counters) or current.wall_s is not None):
            current = HpmSample(first_line=line_no, first_offset=offset)
            samples.append(current)
        return _set_field(current, key, value), current, group
    if current is None:
        return None, current, group  # text before the first report (e.g. the command line)
    if sep and key == "Derived metric group":
        return None, current, value
    return "unrecognised hpmstat line", current, group


def _counter_line(sample: HpmSample, line: str) -> str | None:
    head, sep, value = line.rpartition(":")
    name, _, description = head.partition("(")
    name = name.strip()
    if not sep or not _EVENT.match(name):
        return "counter line is not 'PM_NAME (description) : value'"
    number = counter(value.strip())
    if isinstance(number, str):
        return f"{name} {number}: left out"
    sample.counters[name] = number
    sample.descriptions[name] = description.rstrip().removesuffix(")").strip()
    return None


def _derived_line(sample: HpmSample, group: str, line: str) -> str | None:
    close = line.find("]")
    label, sep, rest = line[close + 1 :].partition(":") if close > 0 else ("", "", "")
    label = label.strip()
    if not sep or not label:
        return "derived metric line is not '[flags] label : value'"
    token = rest.split(None, 1)[0] if rest.strip() else ""
    name = f"{group}/{label}"
    if not token:
        return f"derived metric {name!r} has no value: left out"
    value = validate.parse_number(token.encode("utf-8", "replace"))
    if isinstance(value, str):
        return f"derived metric {name!r} {value}: left out"
    # hpmstat's derived metrics are rates, ratios and percentages: never negative
    why = validate.out_of_range(value, validate.Kind.NON_NEGATIVE)
    if why:
        return f"derived metric {name!r} {why}: left out"
    sample.derived[name] = value
    return None


def _set_field(sample: HpmSample, key: str, value: str) -> str | None:
    if key == "Group":
        if not (value.isascii() and value.isdigit() and len(value) <= 6):
            return "group is not a number"
        sample.group = int(value)
    elif key == "Counting mode":
        sample.counting_mode = value[:200]
    elif key in ("Counting duration", "Execution time (wall clock time)"):
        number, _, unit = value.partition(" ")
        seconds = validate.parse_number(number.encode("utf-8", "replace")) if number else "empty"
        if unit.strip() not in ("second", "seconds") or isinstance(seconds, str):
            return f"{key} is not in seconds"
        # a counting period is positive and shorter than a year (the counting duration is summed
        # over the CPUs: up to 1024 of them)
        longest = 366 * 86400 * (1024 if key == "Counting duration" else 1)
        if not math.isfinite(seconds) or not 0 < seconds < longest:
            return f"{key} {number} is not a plausible duration"
        if key == "Counting duration":
            sample.duration_s = seconds
        else:
            sample.wall_s = seconds
    return None


_SNIFF = re.compile(rb"^[ \t]*(?:Execution time \(wall clock time\)|Counting duration|Group)[ \t]*:", re.M)


def sniff(head: bytes) -> bool:
    """True if the first bytes of a file look like hpmstat output: a report field line and a PM_
    counter. Linear in `head` (a pattern starting `^\\s*` under re.M would rescan every blank line to
    the end: 64 KiB of newlines took 26 s)."""
    return b"PM_" in head and bool(_SNIFF.search(head))
