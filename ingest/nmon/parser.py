"""Streaming nmon parser: AAA metadata, ZZZZ timing, CPU_ALL and LPAR snapshots -> CpuSample records.

nmon writes a header line per section (`CPU_ALL,CPU Total host,User%,...`) and then one data
line per snapshot (`CPU_ALL,T0001,...`); the snapshot's time comes from its `ZZZZ,T0001,...`
line, which some writers put after the data. A snapshot is therefore complete when the next
ZZZZ line arrives, which keeps memory to about two snapshots whatever the file size.
"""

from __future__ import annotations

import gzip
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, tzinfo
from pathlib import Path
from typing import IO

from ingest.records import Emitted, dead_letter

SOURCE = "nmon"
_TAG = re.compile(rb"^[A-Z][A-Za-z0-9_+\-]*$")
_SNAPSHOT = re.compile(r"^T\d+$")

# nmon column -> CpuSample field; header names are stripped of trailing blanks first
CPU_ALL_COLUMNS = {
    "User%": "user_pct",
    "Sys%": "sys_pct",
    "Wait%": "wait_pct",
    "Idle%": "idle_pct",
    "Steal%": "steal_pct",
    "CPUs": "cpus",
    "PhysicalCPUs": "cpus",
}
LPAR_COLUMNS = {"PhysicalCPU": "physc", "entitled": "entitled", "virtualCPUs": "virtual_cpus"}
INT_FIELDS = {"cpus", "virtual_cpus"}
SECTIONS = {"CPU_ALL": CPU_ALL_COLUMNS, "LPAR": LPAR_COLUMNS}


class LineError(ValueError):
    pass


@dataclass
class _Snapshot:
    values: dict[str, float | int | None] = field(default_factory=dict)
    first_line: int = 0
    first_offset: int = 0
    ts: datetime | None = None


def _number(text: str, name: str) -> float | int | None:
    text = text.strip()
    if text == "":
        return None
    try:
        return int(float(text)) if name in INT_FIELDS else float(text)
    except ValueError:
        raise LineError(f"{name}: not a number: {text!r}") from None


class NmonParser:
    """Feed it the lines of one nmon file; it yields Emitted records as snapshots complete."""

    def __init__(self, file_name: str, tz: tzinfo = UTC) -> None:
        self.file_name = file_name
        self.tz = tz
        self.meta: dict[str, str] = {}
        self.lpar_number: str | None = None
        self.headers: dict[str, list[int | None]] = {}  # section -> field index per column
        self.header_fields: dict[str, list[str]] = {}
        self.snapshots: dict[str, _Snapshot] = {}
        self.lines = 0
        self.errors = 0
        self.snapshots_emitted = 0

    # identity -----------------------------------------------------------------------------
    @property
    def hostname(self) -> str:
        return self.meta.get("host") or self.meta.get("runname") or Path(self.file_name).stem

    @property
    def host_id(self) -> str:
        serial = self.meta.get("SerialNumber")
        if serial and self.lpar_number:
            return f"{serial}-{self.lpar_number}"
        return self.hostname

    @property
    def interval_s(self) -> float:
        try:
            return float(self.meta.get("interval", "0"))
        except ValueError:
            return 0.0

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
                self.errors += 1
                yield dead_letter(
                    SOURCE,
                    self.file_name,
                    snap.first_line,
                    snap.first_offset,
                    f"snapshot {tag} has data but no ZZZZ time line (file cut short?)",
                    tag,
                )
            elif snap.values:
                yield self._record(tag, snap)

    def _line(self, line: bytes, line_no: int, offset: int) -> Iterator[Emitted]:
        tag_bytes, _, rest_bytes = line.partition(b",")
        if b"\x00" in line or not _TAG.match(tag_bytes):
            raise LineError("not an nmon line (no section tag)")
        tag = tag_bytes.decode("ascii")
        if tag == "AAA":
            self._aaa(rest_bytes.decode("utf-8", "replace"))
            return
        if tag == "ZZZZ":
            yield from self._zzzz(rest_bytes.decode("utf-8", "replace"), line_no)
            return
        columns = SECTIONS.get(tag)
        if columns is None:
            return
        fields = rest_bytes.decode("utf-8", "replace").split(",")
        if not _SNAPSHOT.match(fields[0]):
            self._header(tag, fields[1:], columns)
            return
        index = self.headers.get(tag)
        if index is None:
            raise LineError(f"{tag} data before its header line")
        names = self.header_fields[tag]
        snap = self.snapshots.get(fields[0])
        if snap is None:
            snap = self.snapshots[fields[0]] = _Snapshot(first_line=line_no, first_offset=offset)
        values = fields[1:]
        parsed = {}
        for pos, name in zip(index, names, strict=True):
            if pos is None:
                continue
            parsed[name] = _number(values[pos], name) if pos < len(values) else None
        snap.values.update(parsed)

    def _aaa(self, rest: str) -> None:
        key, _, value = rest.partition(",")
        if key == "LPARNumberName":
            self.lpar_number = value.split(",")[0].strip()
        self.meta[key.strip()] = value.strip()

    def _header(self, tag: str, names: list[str], columns: dict[str, str]) -> None:
        wanted = {column: pos for pos, column in enumerate(n.strip() for n in names) if column in columns}
        self.headers[tag] = list(wanted.values())
        self.header_fields[tag] = [columns[c] for c in wanted]

    def _zzzz(self, rest: str, line_no: int) -> Iterator[Emitted]:
        parts = rest.split(",")
        if len(parts) < 3 or not _SNAPSHOT.match(parts[0]):
            raise LineError("ZZZZ line needs Tnnnn,HH:MM:SS,DD-MON-YYYY")
        tag, clock, day = parts[0], parts[1].strip(), parts[2].strip()
        try:
            naive = datetime.strptime(f"{day} {clock}", "%d-%b-%Y %H:%M:%S")
        except ValueError:
            raise LineError(f"ZZZZ {tag}: bad time {clock!r} {day!r}") from None
        snap = self.snapshots.setdefault(tag, _Snapshot(first_line=line_no))
        snap.ts = naive.replace(tzinfo=self.tz)
        # every snapshot before this one has seen all its lines now
        number = _tag_number(tag)
        for done in [t for t in self.snapshots if _tag_number(t) < number]:
            earlier = self.snapshots.pop(done)
            if earlier.ts is not None and earlier.values:
                yield self._record(done, earlier)

    def _record(self, tag: str, snap: _Snapshot) -> Emitted:
        self.snapshots_emitted += 1
        assert snap.ts is not None
        record: dict[str, object] = {
            "host_id": self.host_id,
            "hostname": self.hostname,
            "ts": int(snap.ts.timestamp() * 1000),
            "interval_s": self.interval_s,
            "source": SOURCE,
            "origin_file": self.file_name,
            "origin_snapshot": tag,
        }
        for name in (
            "user_pct",
            "sys_pct",
            "wait_pct",
            "idle_pct",
            "steal_pct",
            "cpus",
            "physc",
            "entitled",
            "virtual_cpus",
        ):
            record[name] = snap.values.get(name)
        return Emitted("cpu_samples", record, key=self.host_id)


def _tag_number(tag: str) -> int:
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
