"""Recompute rollups from the deduplicated base table.

The hourly and daily rollups are fed by materialized views (sql/005), which see every insert: a
final window delivered twice is counted twice there. `rebuild` recomputes whole days from
derived_metrics FINAL with the materialized views' own SELECT (read back from ClickHouse, so the
rollup definition stays in one place: the migration)."""

from __future__ import annotations

from datetime import date, timedelta

from clickhouse_connect.driver.client import Client

# materialized view -> (target table, its time column)
ROLLUPS = {"metrics_hourly_mv": ("metrics_hourly", "hour"), "metrics_daily_mv": ("metrics_daily", "day")}


def rebuild(ch: Client, database: str, first_day: date, last_day: date) -> dict[str, int]:
    lo, hi = first_day.isoformat(), (last_day + timedelta(days=1)).isoformat()
    written = {}
    for view, (target, column) in ROLLUPS.items():
        rows = ch.query(
            "SELECT as_select FROM system.tables WHERE database = {db:String} AND name = {name:String}",
            parameters={"db": database, "name": view},
        ).result_rows
        if not rows:
            raise RuntimeError(f"materialized view {database}.{view} not found; migrations applied?")
        source = f"FROM {database}.derived_metrics "
        if source not in rows[0][0]:
            raise RuntimeError(f"{view} does not read {database}.derived_metrics as expected: {rows[0][0]}")
        select = rows[0][0].replace(
            source,
            f"FROM (SELECT * FROM {database}.derived_metrics FINAL "
            f"WHERE window_start >= toDateTime('{lo}', 'UTC') AND window_start < toDateTime('{hi}', 'UTC')) ",
        )
        ch.command(
            f"ALTER TABLE {database}.{target} DELETE WHERE {column} >= toDateTime('{lo}', 'UTC') "
            f"AND {column} < toDateTime('{hi}', 'UTC') SETTINGS mutations_sync = 2"
        )
        ch.command(f"INSERT INTO {database}.{target} {select}")
        written[target] = int(
            ch.query(
                f"SELECT count() FROM {database}.{target} WHERE {column} >= toDateTime('{lo}', 'UTC') "
                f"AND {column} < toDateTime('{hi}', 'UTC')"
            ).result_rows[0][0]
        )
    return written
