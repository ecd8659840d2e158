"""The nmon parser with its per-line work in native code (sources/nmon/native/, Rust).

Same records as `NmonParser`, byte for byte once Avro-encoded (tests/unit/test_nmon_native.py),
several times faster: the scanner turns data lines into encoded rows; every other line comes
back here to `NmonParser.control` (configuration text, AAA/BBB*, in one call per run of such lines
to its `HostConfigBuilder`), so headers, times and host configuration are decided by one piece of
code. The records of a snapshot (nmon_snapshots, cpu_samples) leave the scanner
already encoded (`Emitted.encoded`, `Emitted.record` then empty), written field by field after
plans compiled below from the topics' .avsc files; a schema the plans cannot express makes
`available()` false and the collector uses the Python parser. Host configuration and dead
letters stay dicts.

For `fleetperf parse` (`topics` given) the scanner writes those two records as the command's JSON
lines instead (`Lines`, ASCII bytes, one object per fed chunk): the text Python's json.JSONEncoder(allow_nan=False)
gives for the record the Avro path decodes to, byte for byte (tests/unit/test_nmon_native.py).
Python renders what it is cheap to render once (topic, key, field names, identity, section heads),
the scanner the rows and numbers.

Fed chunks of any size rather than lines: line splitting is part of what the scanner saves.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterable, Iterator
from datetime import UTC, datetime, tzinfo
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

from fleetperf import config
from fleetperf.ingest import validate
from fleetperf.ingest.records import Emitted, EncodedRun, RunRecord, dead_letter
from fleetperf.sources.nmon import layout, sniff
from fleetperf.sources.nmon.parser import (
    CUT_LINE,
    DEFAULT_MAX_LINE,
    DEFAULT_MAX_SNAPSHOT,
    RAW_KEPT,
    SHIFTED,
    SOURCE,
    FileRejectedError,
    LineError,
    NmonParser,
    position,
    read_chunks,
)

try:
    import fleetperf_nmon_scan as _native
except ImportError:  # built by ./fleetperf from sources/nmon/native; absent without a Rust toolchain
    _native = None

CHUNK = 1 << 20
# `parse`'s encoder (cli/commands/parse.py): the same settings, so what Python renders matches it
_to_json = json.JSONEncoder(allow_nan=False).encode
_SLOTS = {name: i for i, name in enumerate(layout.CPU_SAMPLE_FIELDS)}


# what a record field can come from, besides the snapshot's own time, tag, rows and cpu slots
_CONTEXT_STR = ("host_id", "hostname", "source", "origin_file")
_CONTEXT_DOUBLE = ("interval_s",)
# the NmonRow the scanner writes: (name, type) of each field, in order
_ROW_FIELDS = [
    ("section", "string"),
    ("entities", {"type": "array", "items": "string"}),
    ("metrics", {"type": "array", "items": "string"}),
    ("values", {"type": "array", "items": ["null", "double"]}),
    ("labels", {"type": "map", "values": "string"}),
]


class UnsupportedSchemaError(ValueError):
    pass


class Lines(NamedTuple):
    """`count` messages of `topic_key` already written as `fleetperf parse`'s JSON lines, ASCII
    bytes (as the sysstat source's Lines: parse writes `text` to stdout's binary layer as it is
    and counts `count`)."""

    text: bytes
    count: int
    topic_key: str


def lines_available() -> bool:
    """The scanner can also write `parse`'s JSON lines (a build older than that cannot)."""
    return available() and hasattr(_native, "json_str")


def available() -> bool:
    """The scanner is built and can write the current schemas; FLEETPERF_NMON_PARSER=python turns
    it off (to compare, or to rule it out)."""
    if os.environ.get("FLEETPERF_NMON_PARSER") == "python":
        return False
    if _native is None or len(layout.CPU_SAMPLE_FIELDS) > _native.CPU_SLOTS:
        return False
    try:
        _plans()
    except UnsupportedSchemaError:
        return False
    return True


@cache
def _plans() -> tuple[list[tuple[str, int]], list[tuple[str, int]]]:
    settings = config.load()
    return tuple(_plan(json.loads(settings.topic(key).schema_text())) for key in ("nmon_snapshots", "cpu_samples"))


@cache
def _field_names() -> tuple[list[str], list[str]]:
    settings = config.load()
    return tuple(list(settings.topic(key).field_names) for key in ("nmon_snapshots", "cpu_samples"))


def _lines_spec(topics: dict[str, str]) -> tuple[tuple[str, list[str]], ...]:
    """What `parse` prints around each record, rendered once: `{"topic": ..., "key": ` and, per
    field of the plan, the text before its value (`, "value": {"host_id": `, `, "hostname": `)."""
    spec = []
    for key, names in zip(("nmon_snapshots", "cpu_samples"), _field_names(), strict=True):
        head = f'{{"topic": {_to_json(topics[key])}, "key": '
        keys = [(', "value": {' if i == 0 else ", ") + f"{_to_json(name)}: " for i, name in enumerate(names)]
        spec.append((head, keys))
    return tuple(spec)


def _json_double(value: float) -> str | None:
    """A double as parse prints it (the Avro double read back: a float), None if it cannot."""
    try:
        return _to_json(float(value))
    except ValueError:  # non-finite: parse never prints it as a value
        return None


def _plan(schema: dict[str, Any]) -> list[tuple[str, int]]:
    """The scanner's recipe for a record: (kind, index) per field, in the schema's order."""
    plan = []
    for f in schema["fields"]:
        name, kind = f["name"], f["type"]
        base = kind.get("type") if isinstance(kind, dict) else kind
        if name in _CONTEXT_STR and kind == "string":
            plan.append(("context_str", _CONTEXT_STR.index(name)))
        elif name in _CONTEXT_DOUBLE and kind == "double":
            plan.append(("context_double", _CONTEXT_DOUBLE.index(name)))
        elif name == "ts" and base == "long":
            plan.append(("ts", 0))
        elif name == "origin_snapshot" and kind == "string":
            plan.append(("tag", 0))
        elif (
            name == "rows"
            and base == "array"
            and [(r["name"], r["type"]) for r in kind["items"]["fields"]] == _ROW_FIELDS
        ):
            plan.append(("rows", 0))
        elif name in _SLOTS and kind == ["null", "double"]:
            plan.append(("cpu_double", _SLOTS[name]))
        elif name in _SLOTS and kind == ["null", "int"]:
            plan.append(("cpu_int", _SLOTS[name]))
        else:
            raise UnsupportedSchemaError(f"{schema['name']}.{name}: {kind} is not a field the native scanner writes")
    return plan


class NativeNmonParser:
    """Feed it chunks of one nmon file; it yields Emitted records as snapshots complete. Options
    and `resume_offset` / `rejected` as NmonParser's."""

    def __init__(
        self,
        file_name: str,
        tz: tzinfo = UTC,
        *,
        date_order: str | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        max_snapshot: int = DEFAULT_MAX_SNAPSHOT,
        resume_from: int = 0,
        topics: dict[str, str] | None = None,
        out_fd: int | None = None,
        runs: bool = False,
    ) -> None:
        """topics (topic key -> the name each message carries): write snapshot records as
        `parse`'s JSON lines (Lines) rather than Avro (lines_available()). out_fd (with topics):
        the scanner writes those lines to this fd itself whenever no other record waits before
        them (their Lines then carry b"" and the count); the caller flushes its own buffers for
        that fd before each step of the iterators this parser returns. runs (Avro only): the
        records of consecutive snapshots come as one EncodedRun, in the same order, instead of
        an Emitted each."""
        if _native is None:
            raise RuntimeError("the native nmon scanner is not built (see sources/nmon/README.md)")
        # headers, times, host configuration
        self.lines = NmonParser(file_name, tz, date_order=date_order, max_line=max_line, max_snapshot=max_snapshot)
        limits = (
            max_line,
            max_snapshot,
            validate.MAX_NUMBER_CHARS,
            100 + validate.PERCENT_TOLERANCE,
            RAW_KEPT,
            (sniff.NOT_NMON, sniff.EMPTY, CUT_LINE),
        )
        self.json_lines = topics is not None
        if self.json_lines and not lines_available():
            raise RuntimeError("the native nmon scanner is older than its JSON lines; rebuild it (./fleetperf)")
        lines = _lines_spec(topics) if topics is not None else None
        self.scanner = _native.Scanner(self, *_plans(), limits, lines)
        if out_fd is not None:
            self.scanner.write_lines_to(out_fd)
        self.resume_from = resume_from
        self.runs = runs and not self.json_lines
        self.file_name = file_name
        self.errors = 0
        self.snapshots_emitted = 0
        self.values_emitted = 0
        self._pending_config: Emitted | None = None

    @property
    def host_id(self) -> str:
        return self.lines.host_id

    @property
    def consumed(self) -> int:
        """Bytes of complete lines handed to the scanner so far."""
        return self.scanner.consumed

    @property
    def last_line_offset(self) -> int:
        return self.scanner.last_line_offset

    @property
    def resume_offset(self) -> int:
        """As NmonParser.resume_offset."""
        return self.scanner.resume_offset

    @property
    def rejected(self) -> str | None:
        """Why the whole file is not read (not nmon, empty, no usable date), else None."""
        return self.scanner.rejected

    def feed(self, chunk: bytes) -> Iterator[Emitted | EncodedRun]:
        # a generator: the scanner runs when the caller steps it (parse flushes its own writes
        # to the fd first)
        yield from self._events(self.scanner.feed(chunk))

    feed_chunk = feed  # NmonParser's name for the same thing

    def damaged(self, reason: str) -> Iterator[Emitted | EncodedRun]:
        yield from self._events(self.scanner.damaged(reason))

    def finish(self, complete_tail: bool = True) -> Iterator[Emitted | EncodedRun]:
        """As NmonParser.finish."""
        yield from self._events(self.scanner.finish(self._context(), complete_tail))
        if self.rejected is None and not self.lines.config_emitted and self.lines.first_ts is not None:
            if self.resume_from <= 0:
                yield self.lines.config_record()

    def flush_open_snapshot(self) -> Iterator[Emitted | EncodedRun]:
        """As NmonParser.flush_open_snapshot (a live file gone quiet)."""
        yield from self._events(self.scanner.flush_open(self._context()))

    # called by the scanner for every line that is not data of a known section
    def scan_control(self, tag: bytes, rest: bytes, line: bytes, line_no: int) -> tuple[object, ...] | None:
        try:
            result = self.lines.control(tag, rest, line)
        except FileRejectedError as exc:
            return ("reject", str(exc))
        except LineError as exc:
            return ("error", str(exc))
        if result is None:
            # AAA lines decide identity and interval: the scanner writes them into every record
            return ("context", self._context()) if tag == b"AAA" else None
        if isinstance(result, layout.Header):
            return ("header", _spec(result, self.json_lines), self.lines.data_tag(tag))
        if result == SHIFTED:
            # the CPUUTIL headers re-keyed (NmonParser.shift_cpuutil): the scanner's copy follows
            # (None: no longer a key), then it reads the line again
            headers = self.lines.headers
            return (
                "headers",
                [(t, _spec(headers[t], self.json_lines) if t in headers else None) for t in sorted(self.lines.rekeyed)],
            )
        snap_tag, ts = result
        if self.lines.first_ts is None:
            self.lines.first_ts = ts
        first = not self.lines.config_emitted
        if first:
            self._pending_config = self.lines.config_record()
        return ("zzzz", snap_tag, int(ts.timestamp() * 1000), first, self._context())

    # called by the scanner with the AAA/BBB* lines it collected since its last call to Python
    def scan_config(self, lines: list[tuple[bytes, bytes]]) -> tuple[list[str], list[float]] | None:
        # AAA lines decide identity and interval: the scanner writes them into every record
        if not self.lines.config.add_lines(lines):
            return None
        for tag, rest in lines:
            if tag == b"AAA":
                self.lines.note_aaa(rest)
        return self._context()

    # called by the scanner once per day of ZZZZ times it reads itself
    def scan_day_start(self, year: int, month: int, day: int) -> int | None:
        """Midnight in epoch ms, if the zone's UTC offset is the same all day (then a ZZZZ time is
        midnight + clock, as NmonParser computes it); None sends that day's ZZZZ lines to Python."""
        tz = self.lines.tz
        if not validate.year_plausible(year):
            return None
        start = int(datetime(year, month, day, tzinfo=tz).timestamp() * 1000)
        if start < validate.earliest_ms() or start + 86_400_000 > validate.latest_ms():
            return None  # Python checks the time itself (validate.timestamp_problem)
        hours = (0, 6, 12, 18, 23)
        offsets = {datetime(year, month, day, h, 59 if h == 23 else 0, tzinfo=tz).utcoffset() for h in hours}
        if len(offsets) != 1:
            return None
        return int(datetime(year, month, day, tzinfo=tz).timestamp() * 1000)

    def _context(self) -> tuple[list[str], list[float]] | tuple[list[str], list[float], list[str], list[str | None]]:
        """What the scanner writes into every record; asked whenever AAA lines may have changed it.
        In lines mode also as JSON (None: a double JSON cannot show)."""
        lines = self.lines
        # host_id first: the scanner also takes it as the Kafka key of the snapshot's records
        strings, doubles = [lines.host_id, lines.hostname, SOURCE, self.file_name], [lines.interval_s]
        if not self.json_lines:
            return strings, doubles
        return strings, doubles, [_to_json(s) for s in strings], [_json_double(d) for d in doubles]

    def _events(self, events: Iterable[tuple[Any, ...]]) -> Iterator[Emitted | EncodedRun]:
        if not self.runs:
            for event in events:
                yield from self._event(event)
            return
        run: list[RunRecord] = []
        for event in events:
            if event[0] != "snapshot":
                if run:  # what came before this event goes first
                    yield EncodedRun(run)
                    run = []
                yield from self._event(event)
                continue
            run += self._snapshot_records(event)
        if run:
            yield EncodedRun(run)

    def _snapshot_records(self, event: tuple[Any, ...]) -> list[RunRecord]:
        """The records of a scanner "snapshot" event in their order (its cpu sample first), none
        for a snapshot before resume_from; counted."""
        _, _number, values, snapshot, cpu, first_offset, key = event
        if first_offset < self.resume_from:
            return []
        number = position(first_offset)
        self.snapshots_emitted += 1
        self.values_emitted += values
        records: list[RunRecord] = [] if cpu is None else [("cpu_samples", key, number, cpu, 0)]
        records.append(("nmon_snapshots", key, number, snapshot, values))
        return records

    def _event(self, event: tuple[Any, ...]) -> Iterator[Emitted]:
        kind = event[0]
        if kind == "lines":
            _, text, snapshots, cpus, values = event
            self.snapshots_emitted += snapshots
            self.values_emitted += values
            if snapshots:
                yield Lines(text, snapshots, "nmon_snapshots")
            if cpus:
                yield Lines(b"", cpus, "cpu_samples")  # their lines are in the text above
        elif kind == "nonfinite":
            # a record with a number JSON cannot show: as `parse` meets one (it counts the
            # record, prints nothing of it and reports it)
            _, topic_key, key = event
            yield Emitted(topic_key, {"value": math.nan}, key=key)
        elif kind == "snapshot":
            for topic_key, key, number, encoded, values in self._snapshot_records(event):
                yield Emitted(topic_key, {}, key=key, snapshot=number, encoded=encoded, values=values)
        elif kind == "dead":
            _, line_no, offset, error, raw = event
            if offset < self.resume_from:
                return
            self.errors += 1
            yield dead_letter(SOURCE, self.file_name, line_no, offset, error, raw)
        elif kind == "config":
            assert self._pending_config is not None
            pending, self._pending_config = self._pending_config, None
            if event[1] >= self.resume_from:
                yield pending


def _spec(header: layout.Header, json_lines: bool = False) -> tuple[object, ...]:
    spec = (
        header.section,
        header.columns,
        header.numeric,
        header.text,
        header.entities,
        header.metrics,
        header.strict,
        header.top,
        list(header.entity_from_labels),
        [(_SLOTS[name], pos) for name, pos in header.cpu_fields],
        [int(k) for k in header.kinds],
        -1 if header.rest is None else header.rest,
    )
    if not json_lines:
        return spec
    # lines mode: a row's JSON around its values and labels (NmonRow's field order)
    head = f'{{"section": {_to_json(header.section)}, "entities": '
    metrics = f', "metrics": {_to_json(list(header.metrics))}, "values": ['
    return (*spec, (head, _to_json(list(header.entities)), metrics))


def parse_file(path: Path, tz: tzinfo = UTC, *, date_order: str | None = None) -> Iterator[Emitted]:
    """Every record of one nmon file (plain or gzip) through the native scanner, in file order."""
    parser = NativeNmonParser(str(path), tz, date_order=date_order)
    for chunk in read_chunks(path, CHUNK):
        if isinstance(chunk, str):
            yield from parser.damaged(chunk)
            break
        yield from parser.feed(chunk)
    yield from parser.finish()
