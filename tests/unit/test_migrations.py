"""The migrations on the real embedded engine (chDB): they apply, and applying twice changes nothing."""

from __future__ import annotations

from pathlib import Path

from core import config
from tests.conftest import embedded_settings
from warehouse.clickhouse import migrate


def test_migrations_apply_twice_without_change(embedded_path: Path) -> None:
    settings = embedded_settings(embedded_path, "migrations_test")
    ch, ran = migrate(settings)
    assert ran == sorted(p.stem for p in config.SQL_DIR.glob("[0-9][0-9][0-9]_*.sql"))
    tables = ch.query(
        "SELECT name, create_table_query FROM system.tables WHERE database = 'migrations_test'"
    ).result_rows
    ch2, again = migrate(settings)
    assert again == []
    assert (
        ch2.query("SELECT name, create_table_query FROM system.tables WHERE database = 'migrations_test'").result_rows
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
