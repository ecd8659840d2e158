from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

from ingest.ledger import Ledger
from ingest.nmon.parser import parse_file
from ingest.nmon.simulate import simulate


def test_simulation_is_seeded_and_rotates_daily(tmp_path: Path) -> None:
    a = simulate(tmp_path / "a", 3, datetime(2026, 1, 1, 23, 0), timedelta(hours=2), 30, seed=5)
    b = simulate(tmp_path / "b", 3, datetime(2026, 1, 1, 23, 0), timedelta(hours=2), 30, seed=5)
    assert [p.name for p in a] == [p.name for p in b]
    assert all(x.read_bytes() == y.read_bytes() for x, y in zip(a, b, strict=True))
    assert len(a) == 6  # 3 hosts x 2 days
    records = [e for p in a for e in parse_file(p)]
    assert all(e.topic_key == "cpu_samples" for e in records)
    assert len(records) == 3 * 2 * 3600 // 30
    aix = [e.record for e in records if e.record["physc"] is not None]
    assert aix and all(r["entitled"] > 0 and r["steal_pct"] is None for r in aix)


def test_ledger_knows_published_files_until_they_change(tmp_path: Path) -> None:
    f = tmp_path / "x.nmon"
    f.write_text("AAA,host,x\n")
    ledger = Ledger(tmp_path / "ledger.sqlite")
    assert not ledger.already_published(f)
    ledger.record(f, 1, 0)
    assert ledger.already_published(f)
    with open(f, "a") as handle:
        handle.write("ZZZZ,T0001,00:00:01,01-JAN-2024\n")
    assert not ledger.already_published(f)
