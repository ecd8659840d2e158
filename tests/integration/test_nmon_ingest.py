"""nmon collector on the real stack: live tail exactly once, resume after a crash, every section in SQL."""

from __future__ import annotations

import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, wait_stable
from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.ledger import Ledger
from fleetperf.ingest.publish import FilePublisher, Summary, ingest, source_options
from fleetperf.sources import registry
from tests.integration.following import following
from tests.integration.kafka_read import read_all

pytestmark = pytest.mark.integration


def _published_snapshots(settings: Settings, path: Path) -> Counter:
    return Counter(r["origin_snapshot"] for r in read_all(settings, "nmon_snapshots") if r["origin_file"] == str(path))


def test_follow_publishes_each_snapshot_of_a_growing_file_exactly_once(stack: Settings, tmp_path: Path) -> None:
    day1, day2 = simulate(
        tmp_path / "src",
        hosts=1,
        start=datetime(2026, 4, 1, 23, 55),
        duration=timedelta(minutes=10),
        interval=10,
        seed=3,
    )
    text = day1.read_bytes()
    live = tmp_path / "live" / day1.name
    live.parent.mkdir()
    live.write_bytes(b"")

    # nmon writes in uneven pieces, often mid-line; the follower is killed half way and restarted
    chunks = [text[i : i + 997] for i in range(0, len(text), 997)]
    half = len(chunks) // 2
    for part, pieces in ((1, chunks[:half]), (2, chunks[half:])):
        with following(stack, live.parent, poll=0.2, finish_idle=1.0):
            for piece in pieces:
                with open(live, "ab") as handle:
                    handle.write(piece)
                time.sleep(0.05)
            if part == 2:
                # the daily rotation: tomorrow's file appears, today's stops growing and is finished
                (live.parent / day2.name).write_bytes(day2.read_bytes())
                time.sleep(2.5)
            time.sleep(0.6)

    counts = _published_snapshots(stack, live)
    assert len(counts) == 30  # 5 minutes at 10 s on the first day
    assert set(counts.values()) == {1}
    # tomorrow's file is live and went quiet after its last snapshot: that snapshot is published
    # after the quiet period (2 s, `--nmon-quiet`), not held until the next ZZZZ line
    tomorrow = _published_snapshots(stack, live.parent / day2.name)
    assert tomorrow.total() == 30 and set(tomorrow.values()) == {1} and "T0030" in tomorrow


def test_batch_ingest_resumes_after_a_crash_without_duplicates(stack: Settings, tmp_path: Path) -> None:
    [path] = simulate(
        tmp_path, hosts=1, start=datetime(2026, 4, 3, 8, 0), duration=timedelta(minutes=20), interval=10, seed=11
    )
    data = path.read_bytes()
    cut = len(data) * 2 // 3
    # first run dies after two thirds of the file (cut mid-line), after its last checkpoint: the
    # file's first two thirds read by the live reader in 4 KiB steps, then checkpointed
    from fleetperf.kafka_avro import AvroProducer

    nmon = registry.get("nmon")
    before = Summary()
    crashed = FilePublisher(
        path, nmon, AvroProducer(stack), Ledger(stack.state_dir / "ingest-ledger.sqlite"), before, quiet=True
    )
    path.write_bytes(b"")
    tail = nmon.tail(path, source_options(tz="UTC"))
    for start in range(0, cut, 4096):
        with path.open("ab") as handle:
            handle.write(data[start : min(start + 4096, cut)])
        crashed.send_all(tail.poll())
    crashed.checkpoint()
    path.write_bytes(data)
    # positions are byte offsets (a snapshot's first byte + 1): the crashed run got part way
    assert 0 < crashed.progress.last_snapshot < cut
    first = before.snapshots
    assert 0 < first < 120

    rerun = ingest(stack, [str(path)], UTC, progress=False)
    assert rerun.snapshots == 120 - first
    counts = _published_snapshots(stack, path)
    assert len(counts) == 120 and set(counts.values()) == {1}
    assert ingest(stack, [str(path)], UTC, progress=False).skipped == 1


def test_an_interrupted_backfill_keeps_the_files_kafka_has_and_resumes_after_them(
    stack: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # files are checkpointed together after one flush (PendingCheckpoints): Ctrl-C during the third
    # file still records the first two, and the re-run publishes only the third, each snapshot once
    paths = simulate(
        tmp_path, hosts=3, start=datetime(2026, 4, 5, 8, 0), duration=timedelta(minutes=5), interval=10, seed=13
    )
    assert len(paths) == 3
    import fleetperf.ingest.publish as publish

    real = publish._publish_file
    started: list[Path] = []

    def interrupted(publisher, *args) -> None:  # noqa: ANN001
        started.append(publisher.path)
        if len(started) == 3:
            raise KeyboardInterrupt
        real(publisher, *args)

    monkeypatch.setattr(publish, "_publish_file", interrupted)
    with pytest.raises(KeyboardInterrupt):
        ingest(stack, [str(p) for p in paths], UTC, progress=False)
    ledger = Ledger(stack.state_dir / "ingest-ledger.sqlite")
    assert [ledger.get(p).complete for p in started] == [True, True, False]
    monkeypatch.setattr(publish, "_publish_file", real)

    rerun = ingest(stack, [str(p) for p in paths], UTC, progress=False)
    assert (rerun.skipped, rerun.files, rerun.snapshots) == (2, 1, 30)
    for path in paths:
        counts = _published_snapshots(stack, path)
        assert len(counts) == 30 and set(counts.values()) == {1}, path.name
    assert ingest(stack, [str(p) for p in paths], UTC, progress=False).skipped == 3


def test_without_the_native_scanner_the_python_parser_publishes_the_same(
    stack: Settings, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    [path] = simulate(
        tmp_path, hosts=1, start=datetime(2026, 4, 4, 8, 0), duration=timedelta(minutes=5), interval=10, seed=12
    )
    monkeypatch.setenv("FLEETPERF_NMON_PARSER", "python")
    summary = ingest(stack, [str(path)], UTC, progress=False)
    assert summary.snapshots == 30 and summary.errors == 0
    counts = _published_snapshots(stack, path)
    assert len(counts) == 30 and set(counts.values()) == {1}


def test_every_section_of_the_aix_file_is_queryable(stack: Settings, corpus: Path) -> None:
    aix = corpus / "nmon" / "aix71_aixlpar_nmon2influxdb.nmon"
    summary = ingest(stack, [str(aix)], UTC, progress=False)
    # its JFSFILE and JFSINODE lines carry 22 values past their 9-column headers: a dead letter for
    # each header's first (tests/unit/test_nmon_parser.py), every named value published
    assert summary.errors == 2
    host = "0123456A-6"
    total = wait_stable(
        stack, f"SELECT count() FROM nmon_values_v WHERE host_id = '{host}'", timeout=120, minimum=summary.values
    )
    assert total == summary.values
    t2 = "'2016-02-10 17:33:10'"  # T0002

    def value(section: str, entity: str, metric: str) -> float:
        _, rows = query(
            stack,
            f"SELECT value FROM nmon_values_v WHERE host_id = '{host}' AND ts = {t2} AND "
            f"section = '{section}' AND entity = '{entity}' AND metric = '{metric}'",
        )
        assert len(rows) == 1, (section, entity, metric, rows)
        return rows[0][0]

    # values as written on the T0002 lines of the raw file
    assert value("LPAR", "", "PhysicalCPU") == 1.429
    assert value("CPU", "ALL", "User%") == 33.1
    assert value("CPU", "1", "User%") == pytest.approx(float(_field(aix, "CPU01,T0002", 2)))
    assert value("DISKBUSY", "hdisk1", "DISKBUSY") == 0.7
    assert value("NET", "en0", "read-KB/s") == 2.0
    assert value("IOADAPT", "fcs3", "write-KB/s") == 187.5
    assert value("TOP", "2555992 j2pg", "%CPU") == 9.64
    assert value("POOLS", "", "entitled_pool_capacity") == 14.9
    _, sections = query(stack, f"SELECT count(DISTINCT section) FROM nmon_values_v WHERE host_id = '{host}'")
    assert sections[0][0] >= 40
    wait_stable(stack, f"SELECT count() FROM host_inventory WHERE host_id = '{host}'", timeout=60)
    _, inv = query(
        stack, f"SELECT hostname, frame_id, entitled_capacity, smt_mode FROM host_inventory WHERE host_id = '{host}'"
    )
    assert inv == [["aixlpar", "8205-E6C*0123456A", "1.30", "4"]]
    _, labels = query(
        stack,
        f"SELECT text FROM nmon_labels FINAL WHERE host_id = '{host}' AND section = 'TOP' "
        f"AND entity = '2555992 j2pg' AND label = 'WLMclass' AND ts = {t2}",
    )
    assert labels == [["Unclassified"]]


def _field(path: Path, prefix: str, index: int) -> str:
    for line in path.read_text().splitlines():
        if line.startswith(prefix + ","):
            return line.split(",")[index]
    raise AssertionError(prefix)
