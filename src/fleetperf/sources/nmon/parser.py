"""Streaming nmon parser: every section of AIX topas_nmon and Linux nmon files.

nmon writes a header line per section (`CPU_ALL,CPU Total host,User%,...`) and then one data
line per snapshot (`CPU_ALL,T0001,...`); the snapshot's time comes from its `ZZZZ,T0001,...`
line, which some writers put after the data. A snapshot is therefore complete when the next
ZZZZ line arrives (or the file ends cleanly, with an end of line), which keeps memory to about
two snapshots whatever the file size.

Per completed snapshot the parser yields an `nmon_snapshots` record (every value of every
section) and a typed `cpu_samples` record (CPU_ALL + LPAR, what the Flink job needs); once per
file a `host_configs` record (AAA and BBB* text, parsed into host attributes).

Bad input never stops the file and is never silent: see "Bad input" in README.md. The native
scanner (native_parser.py, native/src/lib.rs) must give the same records and dead letters.
"""

from __future__ import annotations

import math
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta, tzinfo
from pathlib import Path

from fleetperf.ingest import validate
from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.nmon import layout, sniff
from fleetperf.sources.nmon.host_config import HostConfigBuilder

SOURCE = "nmon"
# bounds (configurable per parser): beyond them a dead letter, and the file goes on
DEFAULT_MAX_LINE = 1 << 20  # bytes of one line
# bytes of the data lines of one snapshot: real ones stay below 2 MiB (thousands of disks, a TOP of
# thousands of processes); the Python parser holds ~10x this in objects until it passes the bound
DEFAULT_MAX_SNAPSHOT = 16 << 20
MAX_TAG_CHARS = 10  # "T" + 9 digits; nmon counts up to T99999999 at most
RAW_KEPT = 1024  # bytes of an over-long line kept in its dead letter
CHUNK = 1 << 20
DATE_ORDERS = ("dmy", "mdy")
CUT_LINE = (
    "last line has no end of line (file cut short, or still being written): not read; "
    "the snapshot it belongs to waits for the rest"
)
# a clock going back by more than this between dateless ZZZZ lines is the next day; less is a clock
# step (NTP), not a day
_ROLLOVER = 12 * 3600

_TAG = re.compile(rb"^[A-Z][A-Za-z0-9_+\-]*$")
# Linux nmon's per-CPU utilisation (-U). nmon 16n (Debian's 16n+debian-1) numbers the header lines
# from 1 (CPUUTIL001,CPU Util Stats CPU1 ...) and the data lines from 0: its CPUUTIL000 line holds
# CPU 1's figures, CPUUTIL001 CPU 2's. Seen in files that nmon wrote here (2 CPUs, several runs):
# each CPUUTILk data line is nearest the CPU(k+1) line of its snapshot (User%, Sys%, Idle%, Steal%;
# within 0.1 on an idle CPU, 1-2 points on a busy one: nmon computes the two apart). Read as named,
# CPU 2's figures were published under CPU 1's header and CPU 1's were a dead letter; so a file
# whose CPUUTIL data start at 000 has each CPUUTILk data line read with the header CPUUTIL(k+1)
# (NmonParser.shift_cpuutil; tests/integration/test_nmon_recorded.py).
_CPUUTIL = re.compile(rb"CPUUTIL(\d{3})\Z")
SHIFTED = "shifted"  # control(): the line's headers were re-keyed, read it again
_MONTHS = {
    m: i
    for i, m in enumerate(["JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC"], start=1)
}
_DATE_MON = re.compile(r"^(\d{1,2})[-/ ]([A-Za-z]{3})[-/ ](\d{4}|\d{2})$")
_DATE_MON_FIRST = re.compile(r"^([A-Za-z]{3})[-/ ](\d{1,2}),?[-/ ](\d{4}|\d{2})$")  # Mar 3 2011
_DATE_YMD = re.compile(r"^(\d{4})([-/.])(\d{1,2})\2(\d{1,2})$")
_DATE_NUM = re.compile(r"^(\d{1,2})([-/.])(\d{1,2})\2(\d{4}|\d{2})$")
_NUMERIC_DAY = re.compile(rb"^\d{1,4}[/.]\d{1,2}[/.]\d{2,4}$")  # a ZZZZ date as 03/04/11 or 2011/04/03
_FILE_DATE = re.compile(r"_(\d{2})(\d{2})(\d{2})_\d{4}")  # nmon's default name: host_YYMMDD_HHMM.nmon


class LineError(ValueError):
    pass


class FileRejectedError(LineError):
    """The file as a whole cannot be read (not nmon, no usable date): one dead letter, then nothing."""


@dataclass
class _Snapshot:
    tag: bytes
    first_line: int
    first_offset: int
    rows: list[dict[str, object]] = field(default_factory=list)
    cpu: dict[str, float | int | None] = field(default_factory=dict)
    ts: int | None = None  # epoch ms of its ZZZZ line
    lines: int = 0  # data lines
    size: int = 0  # bytes of its data lines
    overflow: bool = False  # larger than max_snapshot: rows dropped, lines only counted


def _looks_like_tag(tag: bytes) -> bool:
    return len(tag) > 1 and tag[0] == 84 and tag[1:].isdigit()  # b"T0001"


def _is_snapshot_tag(tag: bytes) -> bool:
    return 1 < len(tag) <= MAX_TAG_CHARS and tag[0] == 84 and tag[1:].isdigit()


def two_digit_year(year: int) -> int:
    return 2000 + year if year < 70 else 1900 + year


def _clock_seconds(text: bytes) -> int | None:
    """HH:MM:SS, or AAA,time's HH:MM.SS; None if not a time of day."""
    m = re.fullmatch(rb"\s*(\d{1,2}):(\d{1,2})[:.](\d{1,2})\s*", text)
    if not m:
        return None
    h, mi, s = (int(g) for g in m.groups())
    return h * 3600 + mi * 60 + s if h < 24 and mi < 60 and s < 60 else None


_FROM_AAA = "ZZZZ lines carry no date and AAA,date"


def start_date(text: str, file_name: str, order: str | None, what: str = _FROM_AAA) -> date:
    """The day of the first snapshot from AAA,date (classic nmon: ZZZZ lines without a date).
    Day and month order comes from the date itself (a number above 12), else the file name
    (host_YYMMDD_HHMM.nmon), else `order`; otherwise FileRejectedError says so."""
    text = text.strip()
    if m := _DATE_MON.match(text) or _DATE_MON_FIRST.match(text):
        day_text, month_text = (m.group(1), m.group(2)) if m.re is _DATE_MON else (m.group(2), m.group(1))
        month = _MONTHS.get(month_text.upper())
        year = int(m.group(3)) if len(m.group(3)) == 4 else two_digit_year(int(m.group(3)))
        candidates = [(year, month, int(day_text))] if month else []
    elif m := _DATE_YMD.match(text):
        candidates = [(int(m.group(1)), int(m.group(3)), int(m.group(4)))]
    elif m := _DATE_NUM.match(text):
        a, b = int(m.group(1)), int(m.group(3))
        year = int(m.group(4)) if len(m.group(4)) == 4 else two_digit_year(int(m.group(4)))
        candidates = [(year, b, a), (year, a, b)]  # dmy, mdy
    else:
        candidates = []
    days = {}
    for order_name, (y, mo, d) in zip(DATE_ORDERS, candidates, strict=False):
        try:
            days.setdefault(date(y, mo, d), []).append(order_name)
        except ValueError:
            pass
    if not days:
        raise FileRejectedError(
            f"{what} {text!r} is not a date this reader knows "
            "(DD-MON-YYYY, DD/MM/YY, MM/DD/YY, YYYY-MM-DD): the file is not read"
        )
    if len(days) == 1:
        return next(iter(days))
    named = _FILE_DATE.search(Path(file_name).name)
    if named:
        yy, mm, dd = (int(g) for g in named.groups())
        try:
            from_name = date(two_digit_year(yy), mm, dd)
        except ValueError:
            from_name = None
        if from_name in days:
            return from_name
    if order in DATE_ORDERS:
        return next(d for d, orders in days.items() if order in orders)
    dmy, mdy = sorted(days, key=lambda d: DATE_ORDERS.index(days[d][0]))
    raise FileRejectedError(
        f"{what} {text!r} can be {dmy:%d %b %Y} (day/month) or "
        f"{mdy:%d %b %Y} (month/day); nothing in the file tells which (no day above 12, no "
        "host_YYMMDD_HHMM file name): the file is not read; pass date_order 'dmy' or 'mdy' (--date-order)"
    )


class NmonParser:
    """Feed it one nmon file, by lines (`feed`) or chunks cut anywhere (`feed_chunk`), then call
    `finish`; it yields Emitted records as snapshots complete.

    date_order: 'dmy' or 'mdy' for classic files whose AAA,date cannot tell (start_date).
    max_line, max_snapshot: bounds in bytes (DEFAULT_MAX_LINE, DEFAULT_MAX_SNAPSHOT).
    resume_from: a `resume_offset` of an earlier run over the same file: everything about bytes
    before it (published then) is read again for headers and identity but not yielded.
    """

    def __init__(
        self,
        file_name: str,
        tz: tzinfo = UTC,
        *,
        date_order: str | None = None,
        max_line: int = DEFAULT_MAX_LINE,
        max_snapshot: int = DEFAULT_MAX_SNAPSHOT,
        resume_from: int = 0,
    ) -> None:
        if date_order not in (None, *DATE_ORDERS):
            raise ValueError(f"date_order must be one of {DATE_ORDERS}, not {date_order!r}")
        self.file_name = file_name
        self.tz = tz
        self.date_order = date_order
        self.max_line = max_line
        self.max_snapshot = max_snapshot
        self.resume_from = resume_from
        self.config = HostConfigBuilder()
        self.headers: dict[bytes, layout.Header] = {}  # by the tag of the data lines they describe
        self.cpuutil_shifted = False  # CPUUTIL data numbered from 0, headers from 1 (_CPUUTIL)
        self.rekeyed: set[bytes] = set()  # the header keys the shift changed (for the native scanner)
        # headers (id) whose data lines had values past their last column, reported once a header:
        # the AIX corpus file has two such sections, a dead letter on each of their lines was 15 k
        # of them per 42 MB and 0.6x the speed of `parse nmon`
        self.beyond_reported: set[int] = set()
        self.snapshots: dict[bytes, _Snapshot] = {}
        self.lines = 0
        self.errors = 0
        self.snapshots_emitted = 0
        self.values_emitted = 0
        self.config_emitted = False
        self.first_ts: datetime | None = None
        self.started = False  # a non-blank line was seen (and it was AAA,)
        self.rejected: str | None = None  # why the whole file is not read
        self.cut_offset: int | None = None  # the file ended inside a line starting here
        self.position = 0  # bytes of complete lines fed
        self.seen_ts: dict[int, tuple[bytes, int]] = {}  # time -> (tag, line) of published snapshots
        # classic nmon (ZZZZ without a date): AAA,date / AAA,time and the day reached so far
        self.aaa_date: str | None = None
        self.aaa_time: int | None = None
        self._day: date | None = None
        self._clock = 0
        self._last_ms: int | None = None  # the last ZZZZ time read (here), for _unfolded
        # feed_chunk's partial line, or the over-long line being skipped (its head, its length)
        self._carry = b""
        self._skipping: tuple[bytes, int] | None = None

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

    @property
    def resume_offset(self) -> int:
        """Byte offset before which every line is accounted for by what was yielded so far (a
        published snapshot, a dead letter, a header); a later run over the grown file passes it as
        `resume_from`. 0 while the file is rejected (a re-run with other options reads it all)."""
        if self.rejected:
            return 0
        end = self.position if self.cut_offset is None else self.cut_offset
        return min([end, *(s.first_offset for s in self.snapshots.values())])

    # feeding ------------------------------------------------------------------------------
    def feed_chunk(self, chunk: bytes) -> Iterator[Emitted]:
        """The next bytes of the file, cut anywhere (memory stays bounded by max_line)."""
        return self._out(self._chunk(chunk))

    def _chunk(self, chunk: bytes) -> Iterator[tuple[int, Emitted]]:
        data, start = self._carry + chunk, 0
        self._carry = b""
        while True:
            end = data.find(b"\n", start)
            if end < 0:
                break
            if self._skipping is not None:
                head, length = self._skipping
                self._skipping = None
                head += data[start:end][: RAW_KEPT - len(head)]
                yield from self._long(head, length + end - start, True, self.lines + 1, self.position)
            elif items := self._feed(data[start : end + 1], self.lines + 1, self.position):
                yield from items
            start = end + 1
        rest = data[start:]
        if self._skipping is not None:
            # the dead letter keeps the line's first RAW_KEPT bytes, however the chunks fell
            head, length = self._skipping
            self._skipping = (head + rest[: RAW_KEPT - len(head)], length + len(rest))
        elif len(rest) > self.max_line:
            self._skipping = (rest[:RAW_KEPT], len(rest))
        else:
            self._carry = rest

    def feed(self, raw: bytes, line_no: int, offset: int) -> Iterator[Emitted]:
        """One line as read from the file (with its end of line; the last one may lack it)."""
        return self._out(self._feed(raw, line_no, offset))

    def _feed(self, raw: bytes, line_no: int, offset: int) -> list[tuple[int, Emitted]] | tuple[()]:
        """What one line makes (a plain function, not a generator: most lines make nothing and
        this is the Python parser's hot path)."""
        if self.rejected:
            return ()
        self.lines = line_no
        complete = raw.endswith(b"\n")
        if complete:
            self.position = offset + len(raw)
        if len(raw) - complete > self.max_line:
            head = raw[: len(raw) - complete][:RAW_KEPT]
            return list(self._long(head, len(raw) - complete, complete, line_no, offset))
        line = raw.rstrip(b"\r\n")
        if not line.strip():
            return ()
        if not self.started:
            line = line.removeprefix(sniff.BOM)
            if not sniff.first_line_ok(line):
                return list(self._reject(sniff.NOT_NMON, line_no, offset, line))
            self.started = True
        if not complete:
            self.cut_offset = offset
            return [(offset, dead_letter(SOURCE, self.file_name, line_no, offset, CUT_LINE, line))]
        try:
            return self._line(line, line_no, offset, len(raw))
        except FileRejectedError as exc:
            return list(self._reject(str(exc), line_no, offset, line))
        except LineError as exc:
            return [(offset, dead_letter(SOURCE, self.file_name, line_no, offset, str(exc), line))]

    def _long(
        self, head: bytes, length: int, complete: bool, line_no: int, offset: int
    ) -> Iterator[tuple[int, Emitted]]:
        """A line longer than max_line: a dead letter with its first bytes; the file goes on."""
        if self.rejected:
            return
        self.lines = line_no
        if complete:
            self.position = offset + length + 1
        else:
            self.cut_offset = offset  # the file ends inside it
        message = f"line longer than {self.max_line} bytes ({length} bytes): skipped"
        yield offset, dead_letter(SOURCE, self.file_name, line_no, offset, message, head)

    def damaged(self, reason: str) -> Iterator[Emitted]:
        """The file cannot be read on (a damaged gzip stream): like a cut, with the reason."""
        return self._out(self._damaged(reason))

    def _damaged(self, reason: str) -> Iterator[tuple[int, Emitted]]:
        self._carry, self._skipping = b"", None
        if self.rejected:
            return
        self.cut_offset = self.position
        yield self.position, dead_letter(SOURCE, self.file_name, self.lines + 1, self.position, reason, b"")

    def _reject(self, reason: str, line_no: int, offset: int, raw: bytes) -> Iterator[tuple[int, Emitted]]:
        self.rejected = reason
        self.snapshots.clear()
        yield offset, dead_letter(SOURCE, self.file_name, line_no, offset, reason, raw[:RAW_KEPT])

    def finish(self, complete_tail: bool = True) -> Iterator[Emitted]:
        """The end of the file. complete_tail=False: the file may still grow (nmon may still be
        writing it), so its last snapshot is not taken as complete; it stays for a later run
        (resume_offset points at it), as after a cut last line."""
        return self._out(self._finish(complete_tail))

    def _finish(self, complete_tail: bool = True) -> Iterator[tuple[int, Emitted]]:
        if self._skipping is not None:
            head, length = self._skipping
            self._skipping = None
            yield from self._long(head, length, False, self.lines + 1, self.position)
        elif self._carry:
            carry, self._carry = self._carry, b""
            yield from self._feed(carry, self.lines + 1, self.position)  # a list
        if self.rejected:
            return
        if not self.started:
            yield from self._reject(sniff.EMPTY, 1, 0, b"")
            return
        if self.cut_offset is None and complete_tail:
            # a clean end: every open snapshot is complete
            for tag in sorted(self.snapshots, key=_tag_number):
                yield from self._close(self.snapshots.pop(tag))
        if not self.config_emitted and self.first_ts is not None:
            yield 0, self.config_record()

    def flush_open_snapshot(self) -> Iterator[Emitted]:
        """A live file whose writer has been quiet (nmon writes a snapshot in one burst): the open
        snapshots that have their ZZZZ time and data lines are complete, so they are published now
        rather than when the next ZZZZ line arrives, which then finds them gone. A data line of a
        flushed snapshot that still comes has no open ZZZZ: a dead letter when it closes. Nothing
        while a line is half-read (feed_chunk) or the file is rejected or cut."""
        return self._out(self._flush_open())

    def _flush_open(self) -> Iterator[tuple[int, Emitted]]:
        if self.rejected or self.cut_offset is not None or self._carry or self._skipping is not None:
            return
        done = [t for t, s in self.snapshots.items() if s.ts is not None and s.lines]
        for tag in sorted(done, key=_tag_number):
            yield from self._close(self.snapshots.pop(tag))

    def _out(self, items: Iterator[tuple[int, Emitted]]) -> Iterator[Emitted]:
        """Counts what leaves; holds back what an earlier run published (resume_from)."""
        for position, emitted in items:
            if position < self.resume_from:
                continue
            if emitted.topic_key == "dead_letters":
                self.errors += 1
            elif emitted.topic_key == "nmon_snapshots":
                self.snapshots_emitted += 1
                self.values_emitted += emitted.values
            yield emitted

    def _line(self, line: bytes, line_no: int, offset: int, size: int) -> list[tuple[int, Emitted]] | tuple[()]:
        tag, _, rest = line.partition(b",")
        header = self.headers.get(tag)
        if header is not None:
            fields = rest.split(b",")
            if _is_snapshot_tag(fields[0]):
                self._data(header, fields[0], fields[1:], line_no, offset, size)
                return ()
            if header.top and len(fields) > 1 and _is_snapshot_tag(fields[1]):
                # TOP,<PID>,T0001,...: the process id comes before the snapshot tag
                self._data(header, fields[1], [fields[0], *fields[2:]], line_no, offset, size)
                return ()
        result = self.control(tag, rest, line)
        if isinstance(result, tuple):
            return list(self._zzzz(*result, line_no, offset))
        if result == SHIFTED:
            return self._line(line, line_no, offset, size)  # its header is there now
        return ()

    def control(self, tag: bytes, rest: bytes, line: bytes) -> layout.Header | tuple[bytes, datetime] | str | None:
        """Every line that is not data of a known section: a new header, a snapshot's time
        (ZZZZ), configuration text (AAA, BBB*) or an error. Shared with the native scanner."""
        if b"\x00" in line or not _TAG.match(tag):
            raise LineError("not an nmon line (no section tag)")
        if tag == b"ZZZZ":
            parts = rest.split(b",")
            snap = parts[0]
            if _looks_like_tag(snap) and not _is_snapshot_tag(snap):
                raise LineError(f"ZZZZ: snapshot tag too long ({len(snap)} characters)")
            if len(parts) < 2 or not _is_snapshot_tag(snap):
                raise LineError("ZZZZ line needs Tnnnn,HH:MM:SS[,DD-MON-YYYY]")
            day = parts[2].strip() if len(parts) > 2 else b""
            clock = parts[1].strip()
            return snap, self._time(clock, day, snap) if day else self._dateless(clock, snap)
        if tag == b"AAA" or tag.startswith(b"BBB"):
            if tag == b"AAA":
                self.note_aaa(rest)
            self.config.add(tag.decode(), rest.decode("utf-8", "replace"))
            return None
        fields = rest.split(b",")
        first = fields[0]
        if _looks_like_tag(first) and not _is_snapshot_tag(first):
            raise LineError(f"{tag.decode()}: snapshot tag too long ({len(first)} characters)")
        if tag in self.headers and first[:1] == b"T" and first[1:2].isdigit():
            # a damaged data line, not a new header for the section
            raise LineError(f"{tag.decode()}: bad snapshot tag {first[: MAX_TAG_CHARS + 2]!r}")
        if _is_snapshot_tag(first) or (tag == b"TOP" and len(fields) > 1 and _is_snapshot_tag(fields[1])):
            if self.shift_cpuutil(tag):
                return SHIFTED
            raise LineError(f"{tag.decode()} data before its header line")
        if tag == b"TOP" and len(fields) < 3:
            return None  # "TOP,%CPU Utilisation": a title, the column header follows
        header = layout.header(tag.decode(), [f.decode("utf-8", "replace") for f in fields[1:]])
        self._set_header(self.data_tag(tag), header)
        return header

    def _set_header(self, key: bytes, header: layout.Header | None) -> None:
        """The header of the data lines tagged `key` (None: none); one it replaces is forgotten
        (its id may be a new header's later)."""
        old = self.headers.pop(key, None)
        if old is not None:
            self.beyond_reported.discard(id(old))
        if header is not None:
            self.headers[key] = header

    def data_tag(self, tag: bytes) -> bytes:
        """The tag of the data lines a header line of `tag` describes: itself, but CPUUTIL(k+1)'s
        header describes the CPUUTILk lines of a file that numbers them from 0 (_CPUUTIL)."""
        if self.cpuutil_shifted and (m := _CPUUTIL.match(tag)) and int(m[1]) > 0:
            return b"CPUUTIL%03d" % (int(m[1]) - 1)
        return tag

    def shift_cpuutil(self, tag: bytes) -> bool:
        """A CPUUTILk data line without a header while CPUUTIL(k+1)'s header is there: nmon 16n's
        numbering (_CPUUTIL). Re-keys the CPUUTIL headers read so far (each k+1 to k; the first
        data line is CPUUTIL000, before any other, so none was read with the wrong header) and
        those still to come (data_tag). Once per file."""
        m = _CPUUTIL.match(tag)
        if self.cpuutil_shifted or m is None or b"CPUUTIL%03d" % (int(m[1]) + 1) not in self.headers:
            return False
        self.cpuutil_shifted = True
        moved = {t: self.headers[t] for t in self.headers if _CPUUTIL.match(t)}
        for t in moved:
            self._set_header(t, None)
        for t, header in moved.items():
            if self.data_tag(t) != t:
                self._set_header(self.data_tag(t), header)
        self.rekeyed = set(moved) | {self.data_tag(t) for t in moved}
        return True

    def note_aaa(self, rest: bytes) -> None:
        """AAA,date and AAA,time: where classic nmon's dateless ZZZZ times start."""
        key, _, value = rest.partition(b",")
        key = key.strip()
        if key == b"date":
            self.aaa_date = value.strip().decode("utf-8", "replace")
            self._day = None  # a new run of nmon (spliced files): its own start
        elif key == b"time":
            self.aaa_time = _clock_seconds(value)

    def _data(
        self, header: layout.Header, tag: bytes, values: list[bytes], line_no: int, offset: int, size: int
    ) -> None:
        snap = self.snapshots.get(tag)
        if snap is None:
            snap = self.snapshots[tag] = _Snapshot(tag, line_no, offset)
        snap.lines += 1
        snap.size += size
        if snap.overflow or snap.size > self.max_snapshot:
            # beyond the bound its rows are dropped and its lines only counted: one dead letter when it closes
            snap.overflow, snap.rows, snap.cpu = True, [], {}
            return
        width = header.width
        if header.rest is not None:
            values = header.cells(values)
        # cells past the header's last column have no name to go out under: not published, and
        # the first such line of a header a dead letter that says so (the AIX corpus file's
        # JFSFILE lines carry 31 values under a header of 9 file systems; unreported before)
        beyond = 0
        if len(values) > width and id(header) not in self.beyond_reported:
            beyond = sum(1 for cell in values[width:] if cell.strip())
            if beyond:
                self.beyond_reported.add(id(header))
        if len(values) < width:
            values = values + [b""] * (width - len(values))
        labels = {header.columns[i]: values[i].decode("utf-8", "replace").strip() for i in header.text}
        problems: list[str] = []
        numbers = _plain_numbers(header, values)
        if numbers is None:
            numbers = _checked_numbers(header, values, labels, problems)
        entities = header.entities
        if header.entity_from_labels:
            entity = " ".join(labels.get(c, "") for c in header.entity_from_labels).strip()
            entities = [entity]  # also when every column is text (Linux UARG): the labels' key
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
        if problems or beyond:
            raise LineError(row_problems(header, problems, beyond))

    def _zzzz(self, tag: bytes, ts: datetime, line_no: int, offset: int) -> Iterator[tuple[int, Emitted]]:
        if self.first_ts is None:
            self.first_ts = ts
        if not self.config_emitted:
            yield offset, self.config_record()
        yield from self.zzzz_snapshots(tag, int(ts.timestamp() * 1000), line_no, offset)

    def zzzz_snapshots(self, tag: bytes, ts_ms: int, line_no: int, offset: int) -> Iterator[tuple[int, Emitted]]:
        # every other open snapshot has seen all its lines now (also when nmon restarted at T0001)
        for other in [t for t in self.snapshots if t != tag]:
            yield from self._close(self.snapshots.pop(other))
        snap = self.snapshots.get(tag)
        if snap is not None and snap.ts is not None:  # a second ZZZZ line for the open snapshot
            yield from self._close(self.snapshots.pop(tag))
            snap = None
        if snap is None:
            snap = self.snapshots[tag] = _Snapshot(tag, line_no, offset)
        snap.ts = ts_ms

    def _time(self, clock: bytes, day: bytes, tag: bytes) -> datetime:
        if _NUMERIC_DAY.match(day):
            return self._numeric_day_time(clock, day, tag)
        try:
            d, mon, y = day.split(b"-")
            hh, mm, ss = clock.split(b":")
            year = int(y) if len(y.strip()) != 2 else two_digit_year(int(y))
            if not validate.year_plausible(year):
                raise LineError(f"ZZZZ {tag.decode()}: time {clock!r} {day!r} outside 1990..now+1 day")
            naive = datetime(year, _MONTHS[mon.decode().upper()], int(d), int(hh), int(mm), int(ss))
        except (ValueError, KeyError, UnicodeDecodeError) as exc:
            if isinstance(exc, LineError):
                raise
            raise LineError(f"ZZZZ {tag.decode()}: bad time {clock!r} {day!r}") from None
        return self._plausible(naive.replace(tzinfo=self.tz), tag)

    def _numeric_day_time(self, clock: bytes, day: bytes, tag: bytes) -> datetime:
        """A ZZZZ date written with numbers (03/04/11): day/month order as for AAA,date; FileRejectedError
        (one message for the file) if nothing tells."""
        seconds = _clock_seconds(clock)
        if seconds is None or b"." in clock:
            raise LineError(f"ZZZZ {tag.decode()}: bad time {clock!r} {day!r}")
        when = start_date(day.decode("ascii"), self.file_name, self.date_order, what=f"ZZZZ {tag.decode()} date")
        if not validate.year_plausible(when.year):
            raise LineError(f"ZZZZ {tag.decode()}: time {clock!r} {day!r} outside 1990..now+1 day")
        naive = datetime(when.year, when.month, when.day) + timedelta(seconds=seconds)
        return self._plausible(naive.replace(tzinfo=self.tz), tag)

    def _dateless(self, clock: bytes, tag: bytes) -> datetime:
        """Classic nmon (v8-v12, AIX 5.x/6.1, old Linux): `ZZZZ,T0001,00:00:04`. The day starts at
        AAA,date (the next day if the clock is more than 12 h before AAA,time) and moves on when
        the clock goes back by more than 12 h. Dated ZZZZ lines do not move it."""
        seconds = _clock_seconds(clock)
        if seconds is None or b"." in clock:
            raise LineError(f"ZZZZ {tag.decode()}: bad time {clock!r}")
        if self._day is None:
            day = start_date(self.aaa_date, self.file_name, self.date_order) if self.aaa_date else self._named_day()
            if not validate.year_plausible(day.year):
                raise LineError(f"ZZZZ {tag.decode()}: day {day} (from AAA,date) outside 1990..now+1 day")
            if self.aaa_time is not None and seconds < self.aaa_time - _ROLLOVER:
                day += timedelta(days=1)
        else:
            day = self._day + timedelta(days=1) if seconds < self._clock - _ROLLOVER else self._day
        self._day, self._clock = day, seconds
        naive = datetime(day.year, day.month, day.day) + timedelta(seconds=seconds)
        return self._plausible(naive.replace(tzinfo=self.tz), tag)

    def _named_day(self) -> date:
        """No AAA,date line: nmon's own file name (host_YYMMDD_HHMM.nmon) tells the start day."""
        named = _FILE_DATE.search(Path(self.file_name).name)
        if named:
            yy, mm, dd = (int(g) for g in named.groups())
            try:
                return date(two_digit_year(yy), mm, dd)
            except ValueError:
                pass
        raise FileRejectedError(
            "ZZZZ lines carry no date and there is no AAA,date line (nor a host_YYMMDD_HHMM file name): "
            "the file is not read"
        )

    def _plausible(self, ts: datetime, tag: bytes) -> datetime:
        if self.tz is not UTC:
            ts = self._unfolded(ts)
        ms = int(ts.timestamp() * 1000)
        why = validate.timestamp_problem(ms)
        if why:
            raise LineError(f"ZZZZ {tag.decode()}: time {ts:%Y-%m-%d %H:%M:%S} {why}")
        self._last_ms = ms
        return ts

    def _unfolded(self, ts: datetime) -> datetime:
        """A local time the clock shows twice (--tz with summer time: 02:00-02:59 again when it
        ends) is its first showing, unless the snapshot before was already at or past that
        instant: then it is the second. Read as the first both times, the hour after the change
        had the times of the hour before, and its snapshots were dead letters ("has the time of
        snapshot ...")."""
        later = ts.replace(fold=1)
        if self._last_ms is None or later.utcoffset() == ts.utcoffset():
            return ts
        first, second = ts.timestamp() * 1000, later.timestamp() * 1000
        return later if first <= self._last_ms < second else ts

    def _close(self, snap: _Snapshot) -> Iterator[tuple[int, Emitted]]:
        """A snapshot that will get no more lines: published, or a dead letter saying why not."""
        name = snap.tag.decode()
        if snap.overflow:
            message = (
                f"snapshot {name} larger than {self.max_snapshot} bytes ({snap.lines} data lines, "
                f"{snap.size} bytes): not published"
            )
        elif snap.ts is None:
            if not snap.lines:
                return
            message = f"snapshot {name}: {snap.lines} data lines without a valid ZZZZ time line: not published"
        elif not snap.rows:
            return
        elif snap.ts in self.seen_ts:
            other, line = self.seen_ts[snap.ts]
            message = (
                f"snapshot {name} has the time of snapshot {other.decode()} (line {line}) of this file "
                "(nmon restarted, or files spliced?): not published"
            )
        else:
            self.seen_ts[snap.ts] = (snap.tag, snap.first_line)
            yield from self._emit(snap)
            return
        yield (
            snap.first_offset,
            dead_letter(SOURCE, self.file_name, snap.first_line, snap.first_offset, message, snap.tag),
        )

    def _emit(self, snap: _Snapshot) -> Iterator[tuple[int, Emitted]]:
        assert snap.ts is not None
        values = sum(len(r["values"]) for r in snap.rows)  # type: ignore[misc,arg-type]
        head = self.snapshot_head(snap.tag, snap.ts)
        # the record's position for resuming (sources/base.py: increasing in file order): the byte
        # after which the snapshot starts, not its tag number, which starts again in spliced files
        number = position(snap.first_offset)
        if snap.cpu:
            cpu = Emitted("cpu_samples", self.cpu_sample(head, snap.cpu), key=self.host_id, snapshot=number)
            yield snap.first_offset, cpu
        record = {**head, "rows": snap.rows}
        yield snap.first_offset, Emitted("nmon_snapshots", record, key=self.host_id, snapshot=number, values=values)

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


_PERCENT_MAX = 100 + validate.PERCENT_TOLERANCE
_SMALL_COUNT_MAX = float(validate.MAX_INT32)


def _plain_numbers(header: layout.Header, values: list[bytes]) -> list[float | None] | None:
    """The numbers of a data line in one go when every cell is a plain valid number or empty (the
    usual line), else None: then each cell goes through ingest/validate.py with its reason."""
    joined = b",".join(values)
    if (
        not values
        or b"_" in joined
        or len(joined) > validate.MAX_NUMBER_CHARS
        and max(map(len, values)) > validate.MAX_NUMBER_CHARS
    ):
        return None
    try:
        numbers = [float(values[i]) if values[i].strip() else None for i in header.numeric]
    except ValueError:
        return None
    present = [v for v in numbers if v is not None]
    # NaN or ±Infinity make the sum so (a finite overflow too: the slow path then finds nothing)
    if not present or not -math.inf < sum(present) < math.inf:
        return numbers if not present else None
    signed = header.signed
    if signed:
        if len(signed) == len(numbers):
            if min(present) < 0:
                return None
        else:
            for p in signed:
                value = numbers[p]
                if value is not None and value < 0:
                    return None
    # plain loops: most headers have no such column, and a generator per line costs more
    for p in header.percent:
        value = numbers[p]
        if value is not None and value > _PERCENT_MAX:
            return None
    for p in header.small_counts:
        value = numbers[p]
        if value is not None and value > _SMALL_COUNT_MAX:
            return None
    return numbers


def _checked_numbers(
    header: layout.Header, values: list[bytes], labels: dict[str, str], problems: list[str]
) -> list[float | None]:
    """Cell by cell (ingest/validate.py): a value that cannot be published is null with its reason
    in `problems` (known sections) or kept as a label (sections we do not know)."""
    numbers: list[float | None] = []
    for kind, i in zip(header.kinds, header.numeric, strict=True):
        raw = values[i]
        text = raw.strip()
        if not text or validate.no_value(text, kind):
            numbers.append(None)
            continue
        value = validate.parse_number(text)
        why = value if isinstance(value, str) else validate.out_of_range(value, kind)
        if why is None:
            numbers.append(value)  # type: ignore[arg-type]
            continue
        numbers.append(None)
        if header.strict:
            problems.append(f"{header.section} {header.columns[i]}: {why}: {raw[:40]!r}")
        else:
            # a section we do not know may carry text anywhere: keep it as a label
            labels[header.columns[i]] = raw.decode("utf-8", "replace").strip()
    return numbers


def position(first_offset: int) -> int:
    """Emitted.snapshot of a snapshot's records: its first byte offset + 1 (never 0). Skipping
    records with Emitted.snapshot <= resume_offset is what resume_from does."""
    return first_offset + 1


def _tag_number(tag: bytes) -> int:
    return int(tag[1:])


def read_chunks(path: Path, size: int = CHUNK) -> Iterator[bytes | str]:
    """The file's bytes (gunzipped, at most `size` at a time however well it compresses), then a
    str if its gzip stream is damaged or cut (why). What came before the damage is yielded: gzip's
    own reader raises before handing back the last buffer it decompressed."""
    with open(path, "rb") as handle:
        if handle.read(2) != b"\x1f\x8b":
            handle.seek(0)
            while chunk := handle.read(size):
                yield chunk
            return
        handle.seek(0)
        member = zlib.decompressobj(16 + zlib.MAX_WBITS)
        fed = False
        while packed := handle.read(size):
            data = packed
            while data:
                try:
                    out = member.decompress(data, size)
                except zlib.error as exc:
                    yield f"gzip data damaged ({exc}): the rest of the file is not read"
                    return
                fed = True
                if out:
                    yield out
                if member.eof:  # concatenated gzip members (gzip a >> b) go on
                    data = member.unused_data
                    member, fed = zlib.decompressobj(16 + zlib.MAX_WBITS), False
                else:
                    data = member.unconsumed_tail
        # drain what zlib still holds back, then see whether the stream ended properly
        while fed and not member.eof and (out := member.decompress(b"", size)):
            yield out
        if fed and not member.eof:
            yield "gzip data damaged (it ends before its end marker: cut short?): the rest of the file is not read"


def row_problems(header: layout.Header, problems: list[str], beyond: int) -> str:
    """A data line's dead-letter message: its values published as null, its cells past the header."""
    parts = []
    if problems:
        more = f"; and {len(problems) - 5} more" if len(problems) > 5 else ""
        parts.append("; ".join(problems[:5]) + more + " (published as null)")
    if beyond:
        parts.append(
            f"{header.section}: {beyond} values past the header's {header.width} columns (not published;"
            " later lines of this header alike are not reported again)"
        )
    return "; ".join(parts)


def parse_file(
    path: Path, tz: tzinfo = UTC, parser: NmonParser | None = None, *, date_order: str | None = None
) -> Iterator[Emitted]:
    """Yields every record of one nmon file (plain or gzip), dead letters included, in file order."""
    parser = parser or NmonParser(str(path), tz, date_order=date_order)
    for chunk in read_chunks(path):
        if isinstance(chunk, str):
            yield from parser.damaged(chunk)
            break
        yield from parser.feed_chunk(chunk)
    yield from parser.finish()
