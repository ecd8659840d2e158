"""Live nmon (issue 24 item 3): a followed file's snapshot is published after a quiet period, not at
the next ZZZZ line, and exactly once (parsers' flush_open_snapshot, NmonTail)."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from datetime import UTC
from pathlib import Path

import pytest

from fleetperf.ingest.records import Emitted
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import NmonParser
from fleetperf.sources.nmon.source import QUIET_SECONDS, NmonTail

# written for these tests: an nmon header, then snapshots 10 s apart as nmon writes them (ZZZZ first)
HEAD = b"""AAA,progname,nmon
AAA,host,livebox
AAA,interval,10
AAA,date,01-MAR-2026
CPU_ALL,CPU Total livebox,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs
MEM,Memory MB livebox,memtotal,memfree
"""


def snapshot(n: int) -> bytes:
    clock = f"08:00:{10 * (n - 1):02d}"
    return (
        f"ZZZZ,T{n:04d},{clock},01-MAR-2026\n"
        f"CPU_ALL,T{n:04d},{n}.0,1.0,0.0,{99 - n}.0,0.0,,2\n"
        f"MEM,T{n:04d},4096.0,{1000 + n}.0\n"
    ).encode()


T0 = 1772352000000  # 2026-03-01 08:00:00 UTC, the time of T0001

PARSERS: list[str] = ["python"] + (["native"] if native_parser.available() else [])


class Lines:
    """One parser fed as NmonTail feeds it (complete lines), whichever implementation."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        name = "livebox_260301_0800.nmon"
        self.parser = native_parser.NativeNmonParser(name, UTC) if kind == "native" else NmonParser(name, UTC)
        self.offset = self.line_no = 0

    def feed(self, data: bytes) -> list[Emitted]:
        if self.kind == "native":
            return list(self.parser.feed(data))
        out: list[Emitted] = []
        for line in data.splitlines(keepends=True):
            self.line_no += 1
            out += self.parser.feed(line, self.line_no, self.offset)
            self.offset += len(line)
        return out

    def flush(self) -> list[Emitted]:
        return list(self.parser.flush_open_snapshot())

    def finish(self) -> list[Emitted]:
        return list(self.parser.finish())


def published(records: list[Emitted]) -> list[str]:
    """(topic) of each snapshot record; the snapshot each came from is its position in the list."""
    return [e.topic_key for e in records if e.topic_key in ("cpu_samples", "nmon_snapshots")]


def times(records: list[Emitted]) -> list[int]:
    """ts of the nmon_snapshots records (the Python parser's dicts; the scanner's bytes are decoded)."""
    out = []
    for e in records:
        if e.topic_key != "nmon_snapshots":
            continue
        if e.encoded is None:
            out.append(e.record["ts"])
        else:
            out.append(_decode_ts(e.encoded))
    return out


def _decode_ts(avro: bytes) -> int:
    import io
    import json

    from fastavro import parse_schema, schemaless_reader

    from fleetperf import config

    schema = parse_schema(json.loads(config.load().topic("nmon_snapshots").schema_text()))
    ts = schemaless_reader(io.BytesIO(avro), schema)["ts"]  # type: ignore[index]
    return round(ts.timestamp() * 1000)  # timestamp-millis comes back as a datetime


@pytest.mark.parametrize("kind", PARSERS)
def test_flush_publishes_the_open_snapshot_once_and_the_next_zzzz_does_not_again(kind: str) -> None:
    p = Lines(kind)
    assert published(p.feed(HEAD + snapshot(1))) == []  # complete, but only a quiet period or T0002 says so
    first = p.flush()
    assert published(first) == ["cpu_samples", "nmon_snapshots"]
    assert times(first) == [T0]
    assert published(p.flush()) == []  # a second quiet period: nothing is open
    assert published(p.feed(snapshot(2))) == []  # T0002's ZZZZ finds T0001 gone: not published again
    second = p.flush()
    assert times(second) == [T0 + 10_000]
    rest = p.feed(snapshot(3)) + p.finish()
    assert times(rest) == [T0 + 20_000]
    assert not [e for e in first + second + rest if e.topic_key == "dead_letters"]


@pytest.mark.parametrize("kind", PARSERS)
def test_without_quiet_flushes_the_snapshot_waits_for_the_next_zzzz_as_before(kind: str) -> None:
    p = Lines(kind)
    assert published(p.feed(HEAD + snapshot(1))) == []
    assert times(p.feed(snapshot(2))) == [T0]
    assert times(p.finish()) == [T0 + 10_000]


@pytest.mark.parametrize("kind", PARSERS)
def test_a_snapshot_without_its_zzzz_line_yet_is_not_flushed(kind: str) -> None:
    # writers that put ZZZZ after the data: the data alone is not a snapshot yet
    p = Lines(kind)
    p.feed(HEAD + snapshot(1))
    p.flush()
    p.feed(b"CPU_ALL,T0002,5.0,1.0,0.0,94.0,0.0,,2\n")
    assert p.flush() == []
    assert times(p.feed(b"ZZZZ,T0002,08:00:10,01-MAR-2026\n")) == []
    assert times(p.flush()) == [T0 + 10_000]


@pytest.mark.parametrize("kind", PARSERS)
def test_a_line_of_a_flushed_snapshot_that_comes_late_is_a_dead_letter_not_a_second_publication(kind: str) -> None:
    p = Lines(kind)
    p.feed(HEAD + snapshot(1))
    assert times(p.flush()) == [T0]
    late = p.feed(b"MEM,T0001,4096.0,999.0\n") + p.feed(snapshot(2)) + p.finish()
    assert times(late) == [T0 + 10_000]
    [dead] = [e for e in late if e.topic_key == "dead_letters"]
    assert "T0001" in dead.record["error"] and "without a valid ZZZZ" in dead.record["error"]


def test_a_half_read_line_stops_the_flush() -> None:
    parser = NmonParser("livebox_260301_0800.nmon", UTC)
    data = HEAD + snapshot(1)
    list(parser.feed_chunk(data[:-5]))  # the last line is cut: the snapshot may not be complete
    assert list(parser.flush_open_snapshot()) == []
    list(parser.feed_chunk(data[-5:]))
    assert times(list(parser.flush_open_snapshot())) == [T0]


# NmonTail: the quiet period on a real file ----------------------------------------------------
class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def _tail(path: Path, clock: Callable[[], float], quiet: float | None = None) -> NmonTail:
    opts = argparse.Namespace(tz="UTC")
    if quiet is not None:
        opts.nmon_quiet = quiet
    return NmonTail(path, opts, clock=clock)


def _write(path: Path, data: bytes, at: float, append: bool = True) -> None:
    with open(path, "ab" if append else "wb") as handle:
        handle.write(data)
    os.utime(path, (at, at))  # nmon's write time, the reference of the quiet period


@pytest.fixture(params=PARSERS)
def parser_kind(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "python":
        monkeypatch.setenv("FLEETPERF_NMON_PARSER", "python")
    return request.param


def test_tail_publishes_a_snapshot_after_the_quiet_period_exactly_once(tmp_path: Path, parser_kind: str) -> None:
    path = tmp_path / "livebox_260301_0800.nmon"
    clock = Clock(1_000_000.0)
    _write(path, HEAD + snapshot(1), clock.now, append=False)
    tail = _tail(path, clock)
    assert (tail.native is not None) == (parser_kind == "native")
    assert published(list(tail.poll())) == []  # just written
    clock.now += QUIET_SECONDS - 0.5
    assert published(list(tail.poll())) == []  # not quiet long enough
    clock.now += 0.5
    first = list(tail.poll())
    assert times(first) == [T0]
    clock.now += 5
    assert published(list(tail.poll())) == []  # quiet on: nothing more to publish

    _write(path, snapshot(2), clock.now)  # the next interval
    assert published(list(tail.poll())) == []  # T0001 is not published again by T0002's ZZZZ
    clock.now += QUIET_SECONDS
    assert times(list(tail.poll())) == [T0 + 10_000]
    assert published(list(tail.finish())) == []


def test_tail_of_a_file_that_is_quiet_already_publishes_its_last_snapshot_at_once(
    tmp_path: Path, parser_kind: str
) -> None:
    path = tmp_path / "livebox_260301_0800.nmon"
    clock = Clock(1_000_000.0)
    _write(path, HEAD + snapshot(1) + snapshot(2), clock.now - 60, append=False)
    assert times(list(_tail(path, clock).poll())) == [T0, T0 + 10_000]


def test_tail_waits_while_a_line_is_half_written(tmp_path: Path, parser_kind: str) -> None:
    path = tmp_path / "livebox_260301_0800.nmon"
    clock = Clock(1_000_000.0)
    data = HEAD + snapshot(1)
    _write(path, data[:-4], clock.now - 60, append=False)  # nmon stopped inside a line (or is slow)
    tail = _tail(path, clock)
    assert published(list(tail.poll())) == []
    _write(path, data[-4:], clock.now)
    clock.now += QUIET_SECONDS
    assert times(list(tail.poll())) == [T0]


def test_tail_with_a_negative_quiet_period_publishes_at_the_next_zzzz(tmp_path: Path, parser_kind: str) -> None:
    path = tmp_path / "livebox_260301_0800.nmon"
    clock = Clock(1_000_000.0)
    _write(path, HEAD + snapshot(1), clock.now - 60, append=False)
    tail = _tail(path, clock, quiet=-1)
    assert published(list(tail.poll())) == []
    _write(path, snapshot(2), clock.now)
    assert times(list(tail.poll())) == [T0]


def test_tail_reads_a_line_that_never_ends_in_bounded_chunks_and_goes_on_after_it(
    tmp_path: Path, parser_kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A followed file that grows by a 9 MB line without an end (a corrupt or hostile writer): the
    tail reads it in TAIL_CHUNK pieces and the parser keeps only max_line of it, so memory stays
    bounded; once the line ends it is one dead letter and the snapshots after it are published."""
    from fleetperf.sources.nmon import source

    reads: list[int] = []
    real_open = source.open_file

    class Counting:
        def __init__(self, handle: object) -> None:
            self.handle = handle

        def __enter__(self) -> Counting:
            self.handle.__enter__()
            return self

        def __exit__(self, *exc: object) -> None:
            self.handle.__exit__(*exc)

        def seek(self, offset: int) -> None:
            self.handle.seek(offset)

        def read(self, size: int = -1) -> bytes:
            assert 0 < size <= source.TAIL_CHUNK  # never "the rest of the file"
            data = self.handle.read(size)
            reads.append(len(data))
            return data

    monkeypatch.setattr(source, "open_file", lambda path: Counting(real_open(path)))
    path = tmp_path / "livebox_260301_0800.nmon"
    clock = Clock(1_000_000.0)
    _write(path, HEAD + snapshot(1), clock.now - 60, append=False)
    tail = _tail(path, clock)
    assert times(list(tail.poll())) == [T0]
    _write(path, b"CPU01,T0002," + b"9" * (9 << 20), clock.now)
    assert published(list(tail.poll())) == []
    assert max(reads) == source.TAIL_CHUNK
    _write(path, b"\n" + snapshot(2), clock.now)
    clock.now += QUIET_SECONDS
    after = list(tail.poll())
    assert times(after) == [T0 + 10_000]
    [dead] = [e for e in after if e.topic_key == "dead_letters"]
    assert "CPU01" in str(dead.record)
