"""Recompute rollups from the deduplicated base table.

The hourly and daily rollups are fed by materialized views (sql/005), which see every insert. A
batch the sink replays after a crash is dropped by ClickHouse with its views' share (insert
deduplication tokens, sql/014, README "Sink durability"), so the rollups stay exact without a
rebuild. What the tokens do not cover is counted twice until a rebuild: a window Flink emits again
as a new record (an at-least-once job restart), a replay older than the deduplication window.
`rebuild` recomputes whole days from derived_metrics FINAL with the materialized views' own SELECT
(read back from ClickHouse, so the rollup definition stays in one place: the migration)."""

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
        # the rollup tables deduplicate inserts (sql/014): a rebuild of the same days makes the same
        # blocks as the last one, which would be dropped as duplicates after the DELETE above
        ch.command(f"INSERT INTO {database}.{target} {select}", settings={"insert_deduplicate": 0})
        written[target] = int(
            ch.query(
                f"SELECT count() FROM {database}.{target} WHERE {column} >= toDateTime('{lo}', 'UTC') "
                f"AND {column} < toDateTime('{hi}', 'UTC')"
            ).result_rows[0][0]
        )
    return written
