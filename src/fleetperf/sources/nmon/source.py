"""nmon files (AIX, Linux; plain or gzip): snapshots as nmon wrote them. The native scanner (Rust,
native/) reads batch files in chunks; without it, and for one line at a time, the Python parser."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path

from fleetperf.ingest.records import Emitted
from fleetperf.sources.base import TZ, Source, Tail, tz_of
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import NmonParser, open_binary


class NmonSource(Source):
    name = "nmon"
    summary = "nmon files of AIX and Linux (.nmon, .nmon.gz), recognised by their AAA header lines"
    sample_topic = "nmon_snapshots"
    sample_word = "snapshots"
    name_hints = ("*.nmon", "*.nmon.gz")
    options = (TZ,)

    def sniff(self, head: bytes, path: Path) -> bool:
        # nmon starts every file with its AAA block (AAA,progname / AAA,command ...), some writers
        # after a UTF-8 byte order mark
        return head.removeprefix(b"\xef\xbb\xbf").startswith(b"AAA,")

    def read(self, path: Path, opts: argparse.Namespace) -> Iterator[Emitted]:
        tz = tz_of(opts)
        if native_parser.available():
            parser = native_parser.NativeNmonParser(str(path), tz)
            with open_binary(path) as handle:
                while chunk := handle.read(native_parser.CHUNK):
                    yield from parser.feed(chunk)
            yield from parser.finish()
            return
        lines = NmonParser(str(path), tz)
        offset = 0
        with open_binary(path) as handle:
            for line_no, raw in enumerate(handle, start=1):
                yield from lines.feed(raw, line_no, offset)
                offset += len(raw)
        yield from lines.finish()

    def tail(self, path: Path, opts: argparse.Namespace) -> Tail:
        return NmonTail(path, opts)


class NmonTail(Tail):
    """Complete lines only; a snapshot is published when the next ZZZZ line shows it complete."""

    def __init__(self, path: Path, opts: argparse.Namespace) -> None:
        self.path = path
        tz = tz_of(opts)
        self.native = native_parser.NativeNmonParser(str(path), tz) if native_parser.available() else None
        self.lines = NmonParser(str(path), tz)
        self.offset = 0  # bytes of complete lines read
        self.line_no = 0
        self.partial = b""

    @property
    def host_id(self) -> str | None:
        return (self.native or self.lines).host_id

    def poll(self) -> Iterator[Emitted]:
        with open_binary(self.path) as handle:
            handle.seek(self.offset + len(self.partial))
            data = self.partial + handle.read()
        cut = data.rfind(b"\n") + 1
        complete, self.partial = data[:cut], data[cut:]  # an incomplete last line waits for the rest
        if self.native is not None:
            yield from self.native.feed(complete)
            self.offset += len(complete)
            return
        for line in complete.split(b"\n")[:-1]:
            self.line_no += 1
            raw = line + b"\n"
            yield from self.lines.feed(raw, self.line_no, self.offset)
            self.offset += len(raw)

    def finish(self) -> Iterator[Emitted]:
        yield from (self.native or self.lines).finish()
