"""Finds Performance Toolkit report tables in text and reads their rows (layouts in layouts.py).

A table starts at a line carrying all key words of a layout's header; the header lines just above
it must carry every column's header words, else the table is refused with the missing words (a
report level we do not know yet). Rows follow until the text stops looking like rows. What the
report says about itself (FCX title line, "Interval hh:mm:ss-hh:mm:ss, on yyyy/mm/dd", "(SYSTEM)",
"Collected in Partition X", "for User X") is kept as context for the records.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any, TextIO

from fleetperf.sources.base import LineProblem
from fleetperf.sources.perfkit.align import align, tokens_of
from fleetperf.sources.perfkit.layouts import BY_FCX, LAYOUTS, Layout

# prose lines tolerated inside a table before it counts as ended (figure captions, notes)
_END_AFTER = 4
# the longest line read as a possible row; report lines are a few hundred characters
MAX_LINE = 64 * 1024
_HEADER_LINES = 6
_MARKUP = re.compile(r"</?u>|\[|\]\(#\)")
_TITLE = re.compile(r"^\s*(FCX\d{3})\b(.*)$")
_INTERVAL = re.compile(r"(?a)Interval\s+(\d\d:\d\d:\d\d)\s*-\s*(\d\d:\d\d:\d\d)(?:,\s*on\s+(\d{4})/(\d\d)/(\d\d))?")
_DATE = re.compile(r"(?a)\b(\d{4})/(\d\d)/(\d\d)\b")
_SYSTEM = re.compile(r"\(([A-Z0-9$#@]{1,8})\)\s*$")
_SERIAL = re.compile(r"\bSER\s+([0-9A-F]{4,6})\b")
_PARTITION = re.compile(r"Collected in Partition\s+([A-Z0-9$#@]{1,8})\b")
_MODEL = re.compile(r"Processor type and model\s*:\s*([0-9A-Z][0-9A-Z-]{0,15})(?!\S)")
_USER = re.compile(r"Resource Usage Log for User\s+([A-Z0-9$#@_-]{1,8})(?!\S)")
_FIGURE = re.compile(r"[\d.]*\d[\d.]*\Z")
_REPORT_NAMES = {layout.name for layout in LAYOUTS}


@dataclass
class Row:
    kind: str  # "row", "mean" (>>Mean>> line, not an entity) or "continuation" (next CPU of a partition)
    values: dict[str, Any]
    line: int
    offset: int
    ambiguous: list[str] = field(default_factory=list)
    unreadable: list[str] = field(default_factory=list)
    raw: str = ""


Problem = LineProblem  # a line of the report that is not read: a dead letter


@dataclass
class Table:
    layout: Layout
    line: int
    context: dict[str, Any]
    rows: list[Row] = field(default_factory=list)


@dataclass
class Scan:
    path: str
    tables: list[Table] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    unknown_reports: dict[str, int] = field(default_factory=dict)  # FCX number -> line


class _Reader:
    def __init__(self, path: str) -> None:
        self.scan = Scan(path)
        self.context: dict[str, Any] = {}
        self.recent: list[str] = []  # the last lines, for the header above a key line
        self.table: Table | None = None
        self.variants: list[tuple[str, Any]] = []
        self.pending: list[Problem] = []  # lines in a table that are not rows: errors if rows follow
        self.prose = 0

    def feed(self, raw: str, line_no: int, offset: int) -> None:
        text = _MARKUP.sub("", raw.rstrip("\r\n"))
        stripped = text.strip()
        if not stripped or stripped.startswith("```"):
            return
        if self.table is not None and self._row(text, line_no, offset):
            return
        self._context(stripped, line_no, offset)
        layout = _table_start(stripped)
        if layout is not None:
            self._start(layout, stripped, line_no, offset, raw)
        self.recent = (self.recent + [stripped])[-_HEADER_LINES:]

    def _row(self, text: str, line_no: int, offset: int) -> bool:
        assert self.table is not None
        tokens = tokens_of(text)
        for kind, columns in self.variants:
            reading = align(tokens, columns)
            if reading is None:
                continue
            first = reading.values.get(columns[0].field)
            if first == ">>Mean>>":
                kind = "mean"
            if kind == "continuation" and not self.table.rows:
                return True  # CPUs of a partition that began above the excerpt: nothing to attach them to
            for problem in self.pending:
                self.scan.problems.append(problem)
            self.pending.clear()
            self.prose = 0
            self.table.rows.append(
                Row(kind, reading.values, line_no, offset, reading.ambiguous, reading.unreadable, text)
            )
            return True
        self.prose += 1
        if self.prose > _END_AFTER:
            self.table, self.pending = None, []
        elif _looks_like_row(tokens, self.table.layout):
            self.pending.append(
                Problem(line_no, offset, f"{self.table.layout.fcx}: row does not fit the report's columns", text)
            )
        return False

    def _date(self, parts: tuple[str, ...], line: str, line_no: int, offset: int) -> None:
        day = calendar_date(*(int(g) for g in parts))
        if day is None:
            text = "/".join(parts)
            self.scan.problems.append(Problem(line_no, offset, f"date {text} is not a calendar date", line))
            self.context.pop("date", None)
            self.context["bad_date"] = text
        else:
            self.context["date"] = day

    def _context(self, line: str, line_no: int, offset: int) -> None:
        title = _TITLE.match(line)
        if title:
            fcx = title.group(1)
            self.context = {"fcx": fcx, "title_line": line_no}
            if fcx not in BY_FCX:
                self.scan.unknown_reports.setdefault(fcx, line_no)
            system = _SYSTEM.search(line)
            if system and system.group(1) not in _REPORT_NAMES:
                self.context["system"] = system.group(1)
            serial = _SERIAL.search(line)
            if serial:
                self.context["serial"] = serial.group(1)
        interval = _INTERVAL.search(line)
        if interval:
            self.context["interval"] = (interval.group(1), interval.group(2))
            if interval.group(3):
                self._date(interval.group(3, 4, 5), line, line_no, offset)
        elif _TITLE.match(line) and _DATE.search(line):
            found = _DATE.search(line)
            assert found is not None
            self._date(found.groups(), line, line_no, offset)
        for key, pattern in (("collected_in", _PARTITION), ("cpc_model", _MODEL), ("userid", _USER)):
            hit = pattern.search(line)
            if hit:
                self.context[key] = hit.group(1)

    def _start(self, layout: Layout, line: str, line_no: int, offset: int, raw: str) -> None:
        words = {w for text in [*self.recent, line] for w in text.split()}
        missing = [
            " ".join(c.header)
            for c in layout.columns
            if not all(any(alt in words for alt in w.split("|")) for w in c.header)
        ]
        if missing:
            self.scan.problems.append(
                Problem(
                    line_no,
                    offset,
                    f"{layout.fcx} header lacks {', '.join(repr(m) for m in missing)}:"
                    " unknown report level, table skipped",
                    raw,
                )
            )
            self.table = None
            return
        self.table = Table(layout, line_no, dict(self.context))
        self.variants = layout.row_variants()
        self.pending, self.prose = [], 0
        self.scan.tables.append(self.table)


def _table_start(line: str) -> Layout | None:
    words = set(line.split())
    for layout in LAYOUTS:
        if all(k in words for k in layout.key):
            return layout
    return None


def _looks_like_row(tokens: list[str], layout: Layout) -> bool:
    # a line opening with what the key column holds, followed by some figures
    words = [t for t in tokens if t]
    if len(words) < 3 or not layout.columns[0].shape.pattern.match(words[0]):
        return False
    return any(_FIGURE.match(w) for w in words[1:])


def calendar_date(year: int, month: int, day: int) -> date | None:
    """The date, or None for one no calendar has (2024/02/30) or out of the plausible range."""
    if not 1990 <= year <= 2200:
        return None
    try:
        return date(year, month, day)
    except ValueError:
        return None


def scan_lines(path: str, lines: Iterable[str], max_line: int = MAX_LINE) -> Scan:
    return _scan(path, ((raw, len(raw.encode("utf-8", "surrogateescape"))) for raw in lines), max_line)


def _scan(path: str, lines: Iterable[tuple[str, int]], max_line: int) -> Scan:
    reader = _Reader(path)
    offset = 0
    for line_no, (raw, size) in enumerate(lines, start=1):
        if len(raw) > max_line:
            # no report line is this long: not a table row, and not worth the aligner's time
            reader.scan.problems.append(
                Problem(line_no, offset, f"line longer than {max_line} characters, skipped", raw[:200])
            )
        else:
            reader.feed(raw, line_no, offset)
        offset += size
    return reader.scan


def _bounded_lines(handle: TextIO, max_line: int) -> Iterator[tuple[str, int]]:
    """(line, its size in bytes); a line longer than max_line comes as its first max_line + 1
    characters (so the caller sees it is too long) and its rest is read in chunks and dropped:
    memory stays bounded whatever the file holds, byte offsets of the lines after it stay right."""
    while True:
        line = handle.readline(max_line + 1)
        if not line:
            return
        size = len(line.encode("utf-8", "surrogateescape"))
        if len(line) <= max_line or line[-1] in "\r\n":
            yield line, size
            continue
        while True:
            chunk = handle.readline(1 << 20)
            size += len(chunk.encode("utf-8", "surrogateescape"))
            if not chunk or chunk[-1] in "\r\n":
                break
        yield line, size


def scan_file(path: Path, max_line: int = MAX_LINE) -> Scan:
    with open(path, encoding="utf-8", errors="surrogateescape", newline="") as handle:
        return _scan(str(path), _bounded_lines(handle, max_line), max_line)


def sniff(path: Path) -> bool:
    """True if the file holds a report table we know (reads the first 64 KiB)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            head = handle.read(65536)
    except OSError:
        return False
    return any(_table_start(_MARKUP.sub("", line.strip())) for line in head.splitlines())
