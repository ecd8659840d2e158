"""Streaming nmon parser: every section of AIX topas_nmon and Linux nmon files.

nmon writes a header line per section (`CPU_ALL,CPU Total host,User%,...`) and then one data
line per snapshot (`CPU_ALL,T0001,...`); the snapshot's time comes from its `ZZZZ,T0001,...`
line, which some writers put after the data. A snapshot is therefore complete when the next
ZZZZ line arrives, which keeps memory to about two snapshots whatever the file size.

Per completed snapshot the parser yields an `nmon_snapshots` record (every value of every
section) and a typed `cpu_samples` record (CPU_ALL + LPAR, what the Flink job needs); once per
file a `host_configs` record (AAA and BBB* text, parsed into host attributes).
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO

from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.nmon import layout
from fleetperf.sources.nmon.host_config import HostConfigBuilder

SOURCE = "nmon"
_TAG = re.compile(rb"^[A-Z][A-Za-z0-9_+\-]*$")
_MONTHS = {
    m: i
    for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)
}


class LineError(ValueError):
    pass


@dataclass
class _Snapshot:
    rows: list[dict[str, object]] = field(default_factory=list)
    cpu: dict[str, float | int | None] = field(default_factory=dict)
    first_line: int = 0
    first_offset: int = 0
    ts: datetime | None = None


def _is_snapshot_tag(tag: bytes) -> bool:
    return len(tag) > 1 and tag[0] == 84 and tag[1:].isdigit()  # b"T0001"


def _to_float(text: bytes) -> float | None:
    return float(text) if text.strip() else None


class NmonParser:
    """Feed it the lines of one nmon file; it yields Emitted records as snapshots complete."""

    def __init__(self, file_name: str, tz: tzinfo = UTC) -> None:
        self.file_name = file_name
        self.tz = tz
        self.config = HostConfigBuilder()
        self.headers: dict[bytes, layout.Header] = {}
        self.snapshots: dict[bytes, _Snapshot] = {}
        self.lines = 0
        self.errors = 0
        self.snapshots_emitted = 0
        self.values_emitted = 0
        self.config_emitted = False
        self.first_ts: datetime | None = None

    # identity -----------------------------------------------------------------------------
    @property
    def hostname(self) -> str:
        return self.config.hostname or Path(self.file_name).name.split("_")[0]

    @property
    def host_id(self) -> str:
        return self.config.host_id or self.hostname

    @property
    def interval_s(self) -> float:
        return self.config.interval_s

    # feeding ------------------------------------------------------------------------------
    def feed(self, raw: bytes, line_no: int, offset: int) -> Iterator[Emitted]:
        self.lines += 1
        line = raw.rstrip(b"\r\n")
        if not line.strip():
            return
        try:
            yield from self._line(line, line_no, offset)
        except LineError as exc:
            self.errors += 1
            yield dead_letter(SOURCE, self.file_name, line_no, offset, str(exc), line)

    def finish(self) -> Iterator[Emitted]:
        for tag in sorted(self.snapshots, key=_tag_number):
            snap = self.snapshots.pop(tag)
            if snap.ts is None:
                if snap.rows or snap.cpu:
                    self.errors += 1
                    yield dead_letter(
                        SOURCE,
                        self.file_name,
                        snap.first_line,
                        snap.first_offset,
                        f"snapshot {tag.decode()} has data but no ZZZZ time line (file cut short?)",
                        tag,
                    )
            else:
                yield from self._emit(tag, snap)
        if not self.config_emitted and self.first_ts is not None:
            yield self.config_record()

    def _line(self, line: bytes, line_no: int, offset: int) -> Iterator[Emitted]:
        tag, _, rest = line.partition(b",")
        header = self.headers.get(tag)
        if header is not None:
            fields = rest.split(b",")
            if _is_snapshot_tag(fields[0]):
                self._data(header, fields[0], fields[1:], line_no, offset)
                return
            if header.top and len(fields) > 1 and _is_snapshot_tag(fields[1]):
                # TOP,<PID>,T0001,...: the process id comes before the snapshot tag
                self._data(header, fields[1], [fields[0], *fields[2:]], line_no, offset)
                return
        result = self.control(tag, rest, line)
        if isinstance(result, tuple):
            yield from self._zzzz(*result, line_no)

    def control(self, tag: bytes, rest: bytes, line: bytes) -> layout.Header | tuple[bytes, datetime] | None:
        """Every line that is not data of a known section: a new header, a snapshot's time
        (ZZZZ), configuration text (AAA, BBB*) or an error. Shared with the native scanner."""
        if b"\x00" in line or not _TAG.match(tag):
            raise LineError("not an nmon line (no section tag)")
        if tag == b"ZZZZ":
            parts = rest.split(b",")
            if len(parts) < 3 or not _is_snapshot_tag(parts[0]):
                raise LineError("ZZZZ line needs Tnnnn,HH:MM:SS,DD-MON-YYYY")
            return parts[0], self._time(parts[1].strip(), parts[2].strip(), parts[0])
        if tag == b"AAA" or tag.startswith(b"BBB"):
            self.config.add(tag.decode(), rest.decode("utf-8", "replace"))
            return None
        fields = rest.split(b",")
        if _is_snapshot_tag(fields[0]) or (tag == b"TOP" and len(fields) > 1 and _is_snapshot_tag(fields[1])):
            raise LineError(f"{tag.decode()} data before its header line")
        if tag == b"TOP" and len(fields) < 3:
            return None  # "TOP,%CPU Utilisation": a title, the column header follows
        header = layout.header(tag.decode(), [f.decode("utf-8", "replace") for f in fields[1:]])
        self.headers[tag] = header
        return header

    def _data(self, header: layout.Header, tag: bytes, values: list[bytes], line_no: int, offset: int) -> None:
        snap = self.snapshots.get(tag)
        if snap is None:
            snap = self.snapshots[tag] = _Snapshot(first_line=line_no, first_offset=offset)
        width = header.width
        if len(values) < width:
            values = values + [b""] * (width - len(values))
        labels = {header.columns[i]: values[i].decode("utf-8", "replace").strip() for i in header.text}
        try:
            numbers = [_to_float(values[i]) for i in header.numeric]
        except ValueError:
            bad = [i for i in header.numeric if not _is_number(values[i])]
            if header.strict:
                raise LineError(
                    f"{header.section} {header.columns[bad[0]]}: not a number: {values[bad[0]][:40]!r}"
                ) from None
            # a section we do not know may carry text anywhere: keep it as labels
            for i in bad:
                labels[header.columns[i]] = values[i].decode("utf-8", "replace").strip()
            numbers = [None if i in bad else _to_float(values[i]) for i in header.numeric]
        entities = header.entities
        if header.entity_from_labels:
            entity = " ".join(labels.get(c, "") for c in header.entity_from_labels).strip()
            entities = [entity] if numbers else []
        snap.rows.append(
            {
                "section": header.section,
                "entities": entities,
                "metrics": header.metrics,
                "values": numbers,
                "labels": labels,
            }
        )
        if header.cpu_fields:
            for name, pos in header.cpu_fields:
                value = numbers[pos]
                snap.cpu[name] = int(value) if value is not None and name in layout.INT_CPU_FIELDS else value

    def _zzzz(self, tag: bytes, ts: datetime, line_no: int) -> Iterator[Emitted]:
        snap = self.snapshots.get(tag)
        if snap is None:
            snap = self.snapshots[tag] = _Snapshot(first_line=line_no)
        snap.ts = ts
        if self.first_ts is None:
            self.first_ts = ts
        if not self.config_emitted:
            yield self.config_record()
        # every snapshot before this one has seen all its lines now
        number = _tag_number(tag)
        for done in [t for t in self.snapshots if _tag_number(t) < number]:
            earlier = self.snapshots.pop(done)
            if earlier.ts is not None:
                yield from self._emit(done, earlier)

    def _time(self, clock: bytes, day: bytes, tag: bytes) -> datetime:
        try:
            d, mon, y = day.split(b"-")
            hh, mm, ss = clock.split(b":")
            naive = datetime(int(y), _MONTHS[mon.decode().upper()], int(d), int(hh), int(mm), int(ss))
        except (ValueError, KeyError):
            raise LineError(f"ZZZZ {tag.decode()}: bad time {clock!r} {day!r}") from None
        return naive.replace(tzinfo=self.tz)

    def _emit(self, tag: bytes, snap: _Snapshot) -> Iterator[Emitted]:
        if not snap.rows:
            return
        assert snap.ts is not None
        self.snapshots_emitted += 1
        values = sum(len(r["values"]) for r in snap.rows)  # type: ignore[misc,arg-type]
        self.values_emitted += values
        head = self.snapshot_head(tag, int(snap.ts.timestamp() * 1000))
        number = _tag_number(tag)
        if snap.cpu:
            yield Emitted("cpu_samples", self.cpu_sample(head, snap.cpu), key=self.host_id, snapshot=number)
        yield Emitted("nmon_snapshots", {**head, "rows": snap.rows}, key=self.host_id, snapshot=number, values=values)

    def snapshot_head(self, tag: bytes, ts_ms: int) -> dict[str, object]:
        """The fields of an nmon_snapshots record before its rows."""
        return {
            "host_id": self.host_id,
            "hostname": self.hostname,
            "ts": ts_ms,
            "interval_s": self.interval_s,
            "origin_file": self.file_name,
            "origin_snapshot": tag.decode(),
        }

    @staticmethod
    def cpu_sample(head: dict[str, object], cpu: dict[str, float | int | None]) -> dict[str, object]:
        record = {k: head[k] for k in ("host_id", "hostname", "ts", "interval_s")}
        record["source"] = SOURCE
        record["origin_file"] = head["origin_file"]
        record["origin_snapshot"] = head["origin_snapshot"]
        for name in layout.CPU_SAMPLE_FIELDS:
            record[name] = cpu.get(name)
        return record

    def config_record(self) -> Emitted:
        self.config_emitted = True
        assert self.first_ts is not None
        return Emitted(
            "host_configs",
            {
                "host_id": self.host_id,
                "hostname": self.hostname,
                "ts": int(self.first_ts.timestamp() * 1000),
                "source": SOURCE,
                "origin_file": self.file_name,
                "attributes": self.config.attributes(),
                "config_text": self.config.texts(),
            },
            key=self.host_id,
        )


def _is_number(text: bytes) -> bool:
    try:
        _to_float(text)
    except ValueError:
        return False
    return True


def _tag_number(tag: bytes) -> int:
    return int(tag[1:])


def open_binary(path: Path) -> IO[bytes]:
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


def parse_file(path: Path, tz: tzinfo = UTC, parser: NmonParser | None = None) -> Iterator[Emitted]:
    """Yields every record of one nmon file (plain or gzip), dead letters included, in file order."""
    parser = parser or NmonParser(str(path), tz)
    offset = 0
    with open_binary(path) as handle:
        for line_no, raw in enumerate(handle, start=1):
            yield from parser.feed(raw, line_no, offset)
            offset += len(raw)
    yield from parser.finish()
