"""Parser for `hpmstat -r -g <group> <seconds>` text (AIX 6.1/7.x, seed 000 L8254-8392).

Counter lines are `NAME (description) : value`; derived lines are `[flags] label : value [unit]`.
Indentation and blank lines vary between saved copies and are ignored. Counters stay exact
integers (64-bit); a counter line whose value is not an integer is an error naming the line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fleetperf.sources.aix.errors import CommandOutputError

_COUNTER = re.compile(r"^(PM_[A-Z0-9_]+)\s*\((.*)\)\s*:\s*(\S+)\s*$")
_DERIVED = re.compile(r"^\[([^\]]*)\]\s*(.+?)\s*:\s*(\S+)\s*(.*)$")
_FIELD = re.compile(
    r"^(Execution time \(wall clock time\)|Counting duration|Group|Counting mode|Normalization base)"
    r"\s*:\s*(.+?)\s*$"
)
_SECONDS = re.compile(r"^([0-9.]+)\s*seconds?$")


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


def parse(text: str) -> list[HpmSample]:
    """One HpmSample per report (a report starts at 'Execution time' or at 'Group:' after counters)."""
    samples: list[HpmSample] = []
    current: HpmSample | None = None
    derived_group = ""
    for line_no, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("u=Unverified"):
            continue
        m = _FIELD.match(line)
        if m:
            key, value = m.groups()
            starts_report = key.startswith("Execution time") or (
                key == "Group" and current is not None and current.counters
            )
            if current is None or starts_report and (current.counters or current.wall_s is not None):
                current = HpmSample(first_line=line_no)
                samples.append(current)
            _set_field(current, key, value, line_no, raw)
            continue
        if current is None:
            continue  # text before the first report (e.g. the command line)
        if line.startswith("PM_"):
            m = _COUNTER.match(line)
            if not m or not m.group(3).isdigit():
                raise CommandOutputError(line_no, "counter line without an integer value", raw)
            current.counters[m.group(1)] = int(m.group(3))
            current.descriptions[m.group(1)] = m.group(2).strip()
            continue
        if line.startswith("Derived metric group:"):
            derived_group = line.split(":", 1)[1].strip()
            continue
        m = _DERIVED.match(line)
        if m:
            try:
                current.derived[f"{derived_group}/{m.group(2)}"] = float(m.group(3))
            except ValueError:
                raise CommandOutputError(line_no, "derived metric without a number", raw) from None
            continue
        raise CommandOutputError(line_no, "unrecognised hpmstat line", raw)
    if not samples:
        raise CommandOutputError(0, "no hpmstat report found", text[:120])
    for sample in samples:
        if not sample.counters:
            raise CommandOutputError(sample.first_line, "report without counters", "")
    return samples


def _set_field(sample: HpmSample, key: str, value: str, line_no: int, raw: str) -> None:
    if key == "Group":
        if not value.isdigit():
            raise CommandOutputError(line_no, "group is not a number", raw)
        sample.group = int(value)
    elif key == "Counting mode":
        sample.counting_mode = value
    elif key in ("Counting duration", "Execution time (wall clock time)"):
        m = _SECONDS.match(value)
        if not m:
            raise CommandOutputError(line_no, f"{key} is not in seconds", raw)
        if key == "Counting duration":
            sample.duration_s = float(m.group(1))
        else:
            sample.wall_s = float(m.group(1))
