from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from fleetperf.demo.simulate import simulate
from fleetperf.ingest.ledger import Ledger
from fleetperf.sources.nmon.parser import parse_file


def test_simulation_is_seeded_and_rotates_daily(tmp_path: Path) -> None:
    a = simulate(tmp_path / "a", 3, datetime(2026, 1, 1, 23, 0), timedelta(hours=2), 30, seed=5)
    b = simulate(tmp_path / "b", 3, datetime(2026, 1, 1, 23, 0), timedelta(hours=2), 30, seed=5)
    assert [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b, strict=True))
    assert len(a) == 6  # 3 hosts x 2 days
    emitted = [e for p in a for e in parse_file(p)]
    assert not [e for e in emitted if e.topic_key == "dead_letters"]
    records = [e for e in emitted if e.topic_key == "cpu_samples"]
    assert len(records) == 3 * 2 * 3600 // 30
    assert len([e for e in emitted if e.topic_key == "nmon_snapshots"]) == len(records)
    aix = [e.record for e in records if e.record["physc"] is not None]
    assert aix and all(r["entitled"] > 0 and r["steal_pct"] is None for r in aix)


def test_ledger_keeps_a_growing_file_and_forgets_a_replaced_one(tmp_path: Path) -> None:
    f = tmp_path / "x.nmon"
    f.write_text("AAA,host,x\n")
    ledger = Ledger(tmp_path / "ledger.sqlite")
    progress = ledger.get(f)
    assert progress.last_snapshot == 0 and not progress.complete
    progress.last_snapshot, progress.complete, progress.size = 7, True, f.stat().st_size
    ledger.save(f, progress)
    with open(f, "a") as handle:
        handle.write("ZZZZ,T0001,00:00:01,01-JAN-2024\n" * 3000)  # grows past the 64 KiB head
    grown = ledger.get(f)
    assert grown.last_snapshot == 7 and grown.size != f.stat().st_size
    ledger.save(f, grown)
    assert ledger.get(f).last_snapshot == 7
    f.write_text("AAA,host,y\n")  # replaced by another file of the same name
    assert ledger.get(f).last_snapshot == 0
