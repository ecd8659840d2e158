"""nmon files (AIX, Linux; plain or gzip): snapshots as nmon wrote them. The native scanner (Rust,
native/) reads batch files in chunks; without it, and for one line at a time, the Python parser."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from fleetperf.ingest.records import Emitted, EncodedRun
from fleetperf.sources.base import TZ, FileRejectedError, Option, Reading, Source, Tail, open_file, tz_of
from fleetperf.sources.nmon import native_parser, sniff
from fleetperf.sources.nmon.parser import CUT_LINE, DATE_ORDERS, NmonParser, read_chunks

DATE_ORDER = Option(
    ("--date-order",),
    {
        "choices": DATE_ORDERS,
        "default": None,
        "dest": "date_order",
        "help": "classic nmon (ZZZZ lines without a date) whose AAA,date does not tell day from month "
        "(03/04/11) and whose file name is not host_YYMMDD_HHMM.nmon: dmy or mdy",
    },
)


# nmon writes a snapshot in one burst (its ZZZZ line and every section's line within milliseconds)
# and then nothing until the next interval: a file quiet this long after a complete line holds
# complete snapshots only
QUIET_SECONDS = 2.0
QUIET = Option(
    ("--nmon-quiet",),
    {
        "type": float,
        "default": QUIET_SECONDS,
        "dest": "nmon_quiet",
        "help": f"following nmon: publish a snapshot once the file has not grown for this many seconds after "
        f"its last complete line, not at the next ZZZZ line (default {QUIET_SECONDS:g}; negative: at the next ZZZZ)",
    },
)


class NmonSource(Source):
    name = "nmon"
    summary = "nmon files of AIX and Linux (.nmon, .nmon.gz), recognised by their AAA header lines"
    sample_topic = "nmon_snapshots"
    sample_word = "snapshots"
    name_hints = ("*.nmon", "*.nmon.gz")
    article = "an"
    options = (TZ, DATE_ORDER, QUIET)
    lines_to_fd = True  # read_lines can write its Lines to parse's stdout itself (out_fd)

    def notice(self) -> str | None:
        if native_parser.available():
            return None
        return "native nmon scanner not built (no cargo?); nmon goes through the slower Python parser"

    def sniff(self, head: bytes, path: Path) -> bool:
        # nmon starts every file with its AAA block (AAA,progname / AAA,command ...), some writers
        # after a UTF-8 byte order mark; the parsers apply the same rule (sniff.py)
        return sniff.sniff(head)

    def read(
        self, path: Path, opts: argparse.Namespace, reading: Reading | None = None
    ) -> Iterator[Emitted | EncodedRun]:
        """Every record of the file; with `reading.runs` and the native scanner, the snapshots'
        records come as EncodedRun items (the ingest pipeline's fast path)."""
        return self._read(path, opts, reading, None)

    def read_lines(
        self, path: Path, opts: argparse.Namespace, topics: dict[str, str], out_fd: int | None = None
    ) -> Iterator[Emitted | native_parser.Lines]:
        """As `read`, for `fleetperf parse` (topics: topic key -> the name each message carries):
        with the native scanner the nmon_snapshots and cpu_samples come as Lines, their JSON lines
        written by the scanner (a 42 MB AIX file: 7.7-9.6 CPU s when parse decoded the Avro and
        encoded it again in Python, 0.4 s now; README.md, Speed); host configuration and dead
        letters stay records. Without the scanner, `read`'s records. out_fd: the scanner writes
        the lines there itself (NativeNmonParser), 7 % less CPU than a bytes object per chunk."""
        if not native_parser.lines_available():
            return self._read(path, opts, None, None)
        return self._read(path, opts, None, topics, out_fd)

    def _read(
        self,
        path: Path,
        opts: argparse.Namespace,
        reading: Reading | None,
        topics: dict[str, str] | None,
        out_fd: int | None = None,
    ) -> Iterator[Emitted | EncodedRun | native_parser.Lines]:
        # both parsers take chunks cut anywhere and bound what they hold (a line, a snapshot), so
        # no line of the file is ever read whole into memory; a damaged gzip stream ends the file
        # like a cut (one dead letter)
        tz, order = tz_of(opts), getattr(opts, "date_order", None)
        if native_parser.available():
            parser: native_parser.NativeNmonParser | NmonParser = native_parser.NativeNmonParser(
                str(path), tz, date_order=order, topics=topics, out_fd=out_fd, runs=reading is not None and reading.runs
            )
        else:
            parser = NmonParser(str(path), tz, date_order=order)
        for chunk in read_chunks(path, native_parser.CHUNK):
            if isinstance(chunk, str):
                yield from parser.damaged(chunk)
                break
            yield from parser.feed_chunk(chunk)
        # a file nmon may still be writing keeps its last snapshot for the next run (resume by
        # byte) when that snapshot has fewer sections than the one before it (nmon writes a
        # snapshot's sections in one burst); its unfinished last line is no damage then
        growing = reading is not None and reading.growing and _last_snapshot_short(path)
        if reading is not None and (growing or _ends_inside_a_line(path)):
            reading.held_back = True  # the parsers keep that snapshot for a later run: not done
        for emitted in parser.finish(complete_tail=not growing):
            if not (growing and emitted.topic_key == "dead_letters" and emitted.record["error"] == CUT_LINE):
                yield emitted
        if parser.rejected is not None:  # e.g. day/month order unknown: not recorded as done
            raise FileRejectedError(parser.rejected, reported=True)

    def tail(self, path: Path, opts: argparse.Namespace) -> Tail:
        return NmonTail(path, opts)


TAIL_BYTES = 4 << 20  # enough for two snapshots of any host we know (TOP lines included)


def _ends_inside_a_line(path: Path) -> bool:
    with open(path, "rb") as handle:
        if handle.read(2) == b"\x1f\x8b":
            return False
        size = handle.seek(0, 2)
        if size == 0:
            return False
        handle.seek(size - 1)
        return handle.read(1) != b"\n"


def _last_snapshot_short(path: Path) -> bool:
    """True if the file's last snapshot holds fewer sections than the one before it, judged on
    its last TAIL_BYTES (a plain file; a .gz being written is not a case nmon makes). Only those
    two snapshots' lines are split: splitting every line of the tail was 0.25 of 1.9 CPU-s of a
    backfill of 40 freshly copied 1.2 MB AIX files (py-spy), every file of a fresh copy counting as
    possibly still written."""
    with open(path, "rb") as handle:
        if handle.read(2) == b"\x1f\x8b":
            return False
        size = handle.seek(0, 2)
        handle.seek(max(0, size - TAIL_BYTES))
        tail = handle.read()
    last = _zzzz_line_before(tail, len(tail))
    before = _zzzz_line_before(tail, last) if last > 0 else -1
    if before < 0:
        return False

    def tags(start: int, end: int) -> set[bytes]:  # sections of the lines after the ZZZZ line at start
        return {line.split(b",", 1)[0] for line in tail[start:end].split(b"\n")[1:] if line.strip()}

    return tags(last, len(tail)) < tags(before, last)


def _zzzz_line_before(data: bytes, end: int) -> int:
    """Where the last line that starts with ZZZZ, and starts before `end`, starts; -1 if none."""
    at = data.rfind(b"\nZZZZ,", 0, end + 4)  # the b"\n" at most at end - 2: the line starts before end
    if at >= 0:
        return at + 1
    return 0 if end > 0 and data.startswith(b"ZZZZ,") else -1


TAIL_CHUNK = 4 << 20  # bytes read at a time from a followed file


class NmonTail(Tail):
    """Complete lines only. A snapshot is published when the file has been quiet for `nmon_quiet`
    seconds (QUIET_SECONDS; measured from the file's modification time, i.e. nmon's last write)
    after a complete line, or when the next ZZZZ line shows it complete, whichever comes first: a
    live snapshot reaches Kafka seconds after nmon wrote it, not one interval later. A flushed
    snapshot is gone from the parser, so its next ZZZZ does not publish it again; a data line of it
    that nmon writes only after the quiet period is a dead letter (no ZZZZ of its own), so the
    quiet period must exceed the longest pause nmon makes inside a snapshot (milliseconds).

    Followed, each cpu sample carries the stream's watermark promise (fleetperf/ingest/watermark.py:
    its time + AAA,interval - 1 s), so the Flink job closes a window as soon as the window's last
    snapshot is published, about quiet + poll + one checkpoint after the window end; without the
    promise it waited for the first snapshot `out_of_orderness_seconds` past the end (stream-jobs/
    README.md), i.e. ceil(allowance / I) * I seconds more."""

    def __init__(self, path: Path, opts: argparse.Namespace, clock: Callable[[], float] = time.time) -> None:
        self.path = path
        tz = tz_of(opts)
        self.native = native_parser.NativeNmonParser(str(path), tz) if native_parser.available() else None
        self.lines = NmonParser(str(path), tz)
        self.read_to = 0  # bytes handed to the parser; it keeps an unfinished last line itself
        self.ends_line = True  # the bytes read so far end with a complete line
        self.quiet = float(getattr(opts, "nmon_quiet", QUIET_SECONDS))
        self.clock = clock  # wall clock, compared with the file's modification time
        self.unflushed = False  # complete lines read since the last quiet flush

    @property
    def host_id(self) -> str | None:
        return (self.native or self.lines).host_id

    def poll(self) -> Iterator[Emitted]:
        parser = self.native or self.lines
        # Read in bounded chunks, cut anywhere: both parsers carry an unfinished line to the next
        # chunk and dead-letter one longer than max_line, so neither a large backlog nor a line
        # that never ends grows memory (before, the whole rest of the file and any unfinished
        # line were held at once).
        with open_file(self.path) as handle:
            handle.seek(self.read_to)
            while chunk := handle.read(TAIL_CHUNK):
                self.read_to += len(chunk)
                self.ends_line = chunk.endswith(b"\n")
                self.unflushed = self.unflushed or b"\n" in chunk
                yield from parser.feed_chunk(chunk)
        # after the read: a write since then makes the file look busy, never quiet too early
        modified = self.path.stat().st_mtime
        if self.unflushed and self.ends_line and 0 <= self.quiet <= self.clock() - modified:
            # quiet after complete lines: what the parser holds open is complete
            self.unflushed = False
            yield from parser.flush_open_snapshot()

    def finish(self) -> Iterator[Emitted]:
        yield from (self.native or self.lines).finish()
