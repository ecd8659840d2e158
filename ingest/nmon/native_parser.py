"""The nmon parser with its per-line work in native code (ingest/nmon/native/, Rust).

Same records as `NmonParser`, byte for byte once Avro-encoded (tests/unit/test_nmon_native.py),
several times faster: the scanner turns data lines into encoded rows; every other line comes
back here to `NmonParser.control`, so headers, times and host configuration are decided by one
piece of code. Snapshot records leave already encoded (`Emitted.encoded`); cpu_samples, host
configuration and dead letters stay dicts.

Fed chunks of any size rather than lines: line splitting is part of what the scanner saves.
"""

from __future__ import annotations

import io
import json
from collections.abc import Iterator
from datetime import UTC, tzinfo
from functools import cache
from pathlib import Path
from typing import Any

from fastavro import parse_schema, schemaless_writer

from core import config
from ingest.nmon import layout
from ingest.nmon.parser import SOURCE, LineError, NmonParser, open_binary
from ingest.records import Emitted, dead_letter

try:
    import fleetperf_nmon_scan as _native
except ImportError:  # built by ./fleetperf from ingest/nmon/native; absent without a Rust toolchain
    _native = None

CHUNK = 1 << 20
_SLOTS = {name: i for i, name in enumerate(layout.CPU_SAMPLE_FIELDS)}


def available() -> bool:
    return _native is not None and len(layout.CPU_SAMPLE_FIELDS) <= _native.CPU_SLOTS


@cache
def _head_schema() -> dict[str, Any]:
    """nmon_snapshots' schema without its last field, the rows the scanner encodes. Avro writes a
    record as its fields one after the other, so head + rows block is the whole record."""
    schema = json.loads(config.load().topic("nmon_snapshots").schema_text())
    if schema["fields"][-1]["name"] != "rows":
        raise RuntimeError("nmon_snapshot.avsc: the native scanner needs 'rows' as the last field")
    return parse_schema({**schema, "name": "NmonSnapshotHead", "fields": schema["fields"][:-1]})


class NativeNmonParser:
    """Feed it chunks of one nmon file; it yields Emitted records as snapshots complete."""

    def __init__(self, file_name: str, tz: tzinfo = UTC) -> None:
        if _native is None:
            raise RuntimeError("the native nmon scanner is not built (see ingest/nmon/README.md)")
        self.lines = NmonParser(file_name, tz)  # headers, times, host configuration
        self.scanner = _native.Scanner(self)
        self.file_name = file_name
        self.errors = 0
        self.snapshots_emitted = 0
        self.values_emitted = 0
        self._pending_config: Emitted | None = None
        self._head_schema = _head_schema()

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

    def feed(self, chunk: bytes) -> Iterator[Emitted]:
        for event in self.scanner.feed(chunk):
            yield from self._event(event)

    def finish(self) -> Iterator[Emitted]:
        for event in self.scanner.finish():
            yield from self._event(event)
        if not self.lines.config_emitted and self.lines.first_ts is not None:
            yield self.lines.config_record()

    # called by the scanner for every line that is not data of a known section
    def scan_control(self, tag: bytes, rest: bytes, line: bytes, line_no: int) -> tuple[object, ...] | None:
        try:
            result = self.lines.control(tag, rest, line)
        except LineError as exc:
            return ("error", str(exc))
        if result is None:
            return None
        if isinstance(result, layout.Header):
            return ("header", _spec(result))
        snap_tag, ts = result
        if self.lines.first_ts is None:
            self.lines.first_ts = ts
        first = not self.lines.config_emitted
        if first:
            self._pending_config = self.lines.config_record()
        return ("zzzz", snap_tag, int(ts.timestamp() * 1000), first)

    def _event(self, event: tuple[Any, ...]) -> Iterator[Emitted]:
        kind = event[0]
        if kind == "snapshot":
            _, number, tag, ts_ms, rows_block, values, cpu = event
            self.snapshots_emitted += 1
            self.values_emitted += values
            head = self.lines.snapshot_head(tag.encode(), ts_ms)
            key = self.lines.host_id
            if cpu is not None:
                fields = {
                    name: (int(v) if v is not None and name in layout.INT_CPU_FIELDS else v)
                    for name, v in zip(layout.CPU_SAMPLE_FIELDS, cpu, strict=False)
                }
                yield Emitted("cpu_samples", NmonParser.cpu_sample(head, fields), key=key, snapshot=number)
            buf = io.BytesIO()
            schemaless_writer(buf, self._head_schema, head)
            buf.write(rows_block)
            yield Emitted("nmon_snapshots", head, key=key, snapshot=number, encoded=buf.getvalue(), values=values)
        elif kind == "dead":
            _, line_no, offset, error, raw = event
            self.errors += 1
            yield dead_letter(SOURCE, self.file_name, line_no, offset, error, raw)
        elif kind == "config":
            assert self._pending_config is not None
            yield self._pending_config
            self._pending_config = None


def _spec(header: layout.Header) -> tuple[object, ...]:
    return (
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
    )


def parse_file(path: Path, tz: tzinfo = UTC) -> Iterator[Emitted]:
    """Every record of one nmon file (plain or gzip) through the native scanner, in file order."""
    parser = NativeNmonParser(str(path), tz)
    with open_binary(path) as handle:
        while chunk := handle.read(CHUNK):
            yield from parser.feed(chunk)
    yield from parser.finish()
