"""The migrations on the real embedded engine (chDB): they apply, and applying twice changes nothing."""

from __future__ import annotations

from pathlib import Path

from core import config
from tests.conftest import embedded_settings, table_columns
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


def test_retention_does_not_delete_a_backfill_of_old_data(embedded_path: Path) -> None:
    from datetime import UTC, datetime

    ch, _ = migrate(embedded_settings(embedded_path, "retention_test"))
    old = datetime(2016, 2, 10, 17, 28, 10, tzinfo=UTC)
    ch.insert(
        "nmon_values",
        [["h", old, "CPU", "ALL", "User%", 33.1]],
        column_names=["host_id", "ts", "section", "entity", "metric", "value"],
    )
    ch.insert(
        "derived_metrics",
        [["h", "h", "steal_pct", old, old, 1.0, 1, True, datetime.now(UTC)]],
        column_names=table_columns("derived_metrics"),
    )
    for table in ("nmon_values", "derived_metrics"):
        ch.command(f"OPTIMIZE TABLE {table} FINAL")  # merges apply TTLs
    assert ch.query("SELECT count() FROM nmon_values").result_rows == [(1,)]
    assert ch.query("SELECT count() FROM derived_metrics").result_rows == [(1,)]
