"""The migrations on the real embedded engine (chDB): they apply, and applying twice changes nothing."""

from __future__ import annotations

from pathlib import Path

from core import config
from warehouse.clickhouse import migrate


def test_migrations_apply_twice_without_change(tmp_path: Path) -> None:
    settings = config.load({"FLEETPERF__STATE__DIR": str(tmp_path)})
    ch, ran = migrate(settings)
    assert ran == sorted(p.stem for p in config.SQL_DIR.glob("[0-9][0-9][0-9]_*.sql"))
    tables = ch.query("SELECT name, create_table_query FROM system.tables WHERE database = 'fleetperf'").result_rows
    ch2, again = migrate(settings)
    assert again == []
    assert (
        ch2.query("SELECT name, create_table_query FROM system.tables WHERE database = 'fleetperf'").result_rows
        == tables
    )
    for view in (
        "cpu_samples_v",
        "derived_metrics_v",
        "host_cpu_minute",
        "nmon_values_v",
        "host_inventory",
        "hpm_rates",
        "link_aggregation_members",
    ):
        ch.query(f"SELECT * FROM {view} LIMIT 1")
