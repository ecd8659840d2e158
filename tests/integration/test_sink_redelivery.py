"""The sink against real Kafka and the real engine: loading every topic twice (forced redelivery
through a second consumer group) leaves identical row counts and sums."""

from __future__ import annotations

import os
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf import config
from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.warehouse.clickhouse import migrate
from fleetperf.warehouse.sink import Sink

pytestmark = pytest.mark.integration

# sums in Decimal: a float sum depends on the order rows are read in, which a replay changes. Only
# this test's day (no other test writes 2026-05-01): the stack is shared by the suite and the Flink
# job may finalise another test's windows meanwhile (test_sink_durability.py says when).
DAY = "2026-05-01"
CHECKS = {
    "cpu_samples_v": ("count(), sum(toDecimal128(user_pct, 6)), sum(toDecimal128(ifNull(steal_pct, 0), 6))", "ts"),
    "nmon_values_v": ("count(), sum(toDecimal128(ifNull(value, 0), 6))", "ts"),
    "host_configs FINAL": ("count()", "ts"),
    "derived_metrics_v": ("count(), sum(toDecimal128(value, 9))", "window_start"),
}


def _totals(ch) -> dict[str, list]:  # noqa: ANN001
    return {
        view: ch.query(f"SELECT {expr} FROM {view} WHERE toDate({column}) = toDate('{DAY}')").result_rows
        for view, (expr, column) in CHECKS.items()
    }


def _drain(settings: Settings, ch, group: str) -> dict[str, int]:  # noqa: ANN001
    env = {
        **os.environ,
        "FLEETPERF__WAREHOUSE__GROUP_ID": group,
        "FLEETPERF__STATE__DIR": str(settings.state_dir),
        "FLEETPERF__CLICKHOUSE__DATABASE": settings["clickhouse"]["database"],
    }
    sink = Sink(config.load(env), ch)
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    idle_rounds, last = 0, -1
    while idle_rounds < 4:  # until the consumer has caught up and nothing more arrives
        threading.Event().wait(1.5)
        written = sum(sink.rows_written.values())
        caught_up = sink.caught_up
        idle_rounds = idle_rounds + 1 if written == last and caught_up else 0
        last = written
    sink.stop()
    thread.join(timeout=30)
    assert sink.undecodable == 0 and sink.insert_errors == 0
    return dict(sink.rows_written)


def test_forced_redelivery_changes_no_count_and_no_sum(stack: Settings, embedded_path: Path, tmp_path: Path) -> None:
    files = simulate(
        tmp_path, hosts=3, start=datetime(2026, 5, 1, 12, 0), duration=timedelta(minutes=15), interval=10, seed=5
    )
    assert ingest(stack, [str(f) for f in files], UTC, progress=False).errors == 0
    env = {**os.environ, "FLEETPERF__STATE__DIR": str(embedded_path), "FLEETPERF__CLICKHOUSE__DATABASE": "redelivery"}
    local = config.load(env)
    ch, _ = migrate(local)
    first = _drain(local, ch, "redelivery-first")
    # nmon snapshots go to the engine whole (sql/017): counted as snapshots fed to nmon_snapshots_in
    assert first["cpu_samples"] >= 270 and first["nmon_snapshots_in"] > 0
    totals = _totals(ch)
    assert totals["cpu_samples_v"][0][0] >= 270
    second = _drain(local, ch, "redelivery-second")  # every message of every topic once more
    assert second["cpu_samples"] == first["cpu_samples"]
    assert second["nmon_snapshots_in"] == first["nmon_snapshots_in"]
    assert _totals(ch) == totals
