"""bench/live_latency.py --file replays a real nmon file live: what it writes must be the same
snapshots as the file's, as the collector reads them, only as another host, at the replay's times
and interval. The oracle is our parser on the original file (itself checked against the corpus and
the seeds elsewhere); a replay that dropped, reordered or renamed a line, or left a tag or the
interval unchanged, gives other records."""

from __future__ import annotations

import gzip
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetperf.sources.nmon.parser import NmonParser

ROOT = Path(__file__).resolve().parents[2]
TESTDATA = ROOT / "src" / "fleetperf" / "sources" / "nmon" / "testdata"
sys.path.insert(0, str(ROOT / "bench"))

from live_latency import Replay, Run, closable_windows, gaps  # noqa: E402


def records(path: Path) -> list[Any]:
    parser = NmonParser(str(path), UTC)
    return [*parser.feed_chunk(path.read_bytes()), *parser.finish()]


def by_topic(out: list[Any], topic: str) -> list[dict]:
    return [e.record for e in out if e.topic_key == topic]


# (file, snapshots with data in it): an AIX topas_nmon file with TOP lines (the PID before the tag),
# a classic AIX nmon file without dates in its ZZZZ lines, a Linux file whose last ZZZZ has no data
@pytest.mark.parametrize(
    ("name", "snapshots"),
    [("powerlpar_topas.nmon", 3), ("aix53lpar_110313_2355.nmon", 6), ("linuxvm_nmon16.nmon", 4)],
)
def test_replay_writes_the_files_snapshots_as_a_new_host(tmp_path: Path, name: str, snapshots: int) -> None:
    source = TESTDATA / name
    original = records(source)
    snaps = by_topic(original, "nmon_snapshots")
    assert len(snaps) == snapshots
    replay = Replay(source, 10, serial="LIVEBENCH1", hostname="livebench-1")
    assert replay.host not in {r["host_id"] for r in snaps}
    assert len(replay.snapshots) == snapshots  # the empty last ZZZZ of the Linux file is left out

    start = datetime(2026, 11, 30, 23, 59, 30, tzinfo=UTC)  # the replay passes midnight
    count = 2 * snapshots + 1  # from the first snapshot again, twice
    path = tmp_path / f"{replay.host}_261130_2359.nmon"
    path.write_bytes(
        replay.header_bytes(start)
        + b"".join(replay.snapshot(n, start + timedelta(seconds=10 * n)) for n in range(1, count + 1))
    )
    out = records(path)
    assert not [e for e in out if e.topic_key == "dead_letters"]
    got = by_topic(out, "nmon_snapshots")
    assert len(got) == count
    for n, record in enumerate(got, start=1):
        want = snaps[(n - 1) % snapshots]
        assert record["host_id"] == replay.host
        assert record["ts"] == int((start + timedelta(seconds=10 * n)).timestamp() * 1000)
        assert record["interval_s"] == 10
        assert record["origin_snapshot"] == f"T{n:04d}"
        assert record["rows"] == want["rows"]
    cpu, want_cpu = by_topic(out, "cpu_samples"), by_topic(original, "cpu_samples")
    assert len(cpu) == count
    same = ("user_pct", "sys_pct", "wait_pct", "idle_pct", "steal_pct", "cpus", "physc", "entitled")
    for n, record in enumerate(cpu, start=1):
        assert {k: record[k] for k in same} == {k: want_cpu[(n - 1) % snapshots][k] for k in same}
    (config,) = by_topic(out, "host_configs")
    assert config["attributes"]["AAA/interval"] == "10"
    assert config["attributes"]["AAA/date"] == "30-NOV-2026"


def test_a_file_without_snapshots_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "empty.nmon"
    path.write_text("AAA,progname,nmon\nAAA,host,x\n")
    with pytest.raises(SystemExit, match="no ZZZZ line"):
        Replay(path, 10, serial="S", hostname="y")


def test_a_gzip_file_with_bytes_beyond_ascii_replays_byte_for_byte(tmp_path: Path) -> None:
    # nmon writes process names as it finds them: a Latin-1 byte in a TOP command must come back as
    # the same byte, so the replay's labels are what the original file gives
    data = (TESTDATA / "powerlpar_topas.nmon").read_bytes().replace(b",oracle,", b",oracl\xe9,")
    assert b"\xe9" in data
    plain = tmp_path / "latin.nmon"
    plain.write_bytes(data)
    packed = tmp_path / "latin.nmon.gz"
    packed.write_bytes(gzip.compress(data))
    replay = Replay(packed, 10, serial="LIVEBENCH2", hostname="livebench-2")
    start = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
    path = tmp_path / "replayed.nmon"
    path.write_bytes(
        replay.header_bytes(start) + b"".join(replay.snapshot(n, start + timedelta(seconds=10 * n)) for n in (1, 2, 3))
    )
    assert b",oracl\xe9," in path.read_bytes()
    got = [r["rows"] for r in by_topic(records(path), "nmon_snapshots")]
    assert got == [r["rows"] for r in by_topic(records(plain), "nmon_snapshots")]


def _run(mode: str, seconds: list[int]) -> Run:
    run = Run(mode, "h")
    run.written = {1_800_000_000_000 + s * 1000: 0.0 for s in seconds}  # 1_800_000_000_000: a minute's start
    return run


@pytest.mark.parametrize(
    ("mode", "seconds", "ends"),
    [
        # ours: snapshots on multiples of the interval from the run's first; a window closes on the
        # snapshot at its end with a promise (its promise end + 9 s), at end + 10 s without
        ("quiet", list(range(0, 130, 10)), [60, 120]),
        ("nopromise", list(range(0, 130, 10)), [60]),
        # real nmon starts when started (--nmon): at :03, its window's last snapshot at :53 promises
        # :53 + 9 s >= the end; a window the run did not see from its start is not closable
        ("quiet", list(range(3, 130, 10)), [120]),
        ("nopromise", list(range(3, 130, 10)), []),  # :123 is short of 120 + 5 s
        ("nopromise", list(range(3, 140, 10)), [120]),
        ("quiet", list(range(3, 120, 10)), [120]),
        ("nopromise", list(range(3, 120, 10)), []),
    ],
)
def test_closable_windows_of_aligned_and_unaligned_runs(mode: str, seconds: list[int], ends: list[int]) -> None:
    start = 1_800_000_000_000
    assert start % 60_000 == 0
    got = closable_windows(_run(mode, seconds), interval=10, out_of_orderness=5)
    assert sorted(got) == [start + e * 1000 for e in ends]


def test_gaps_count_the_zzzz_gaps() -> None:
    assert gaps(_run("quiet", [0, 10, 20, 29, 40])) == "9 s x1, 10 s x2, 11 s x1"
