"""`sql`, `rollups`, `stats`: questions to the warehouse."""

from __future__ import annotations

import argparse
import json
import sys

from fleetperf import config
from fleetperf.cli.common import EPILOG


def cmd_sql(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import QueryError, query

    try:
        columns, rows = query(s, args.statement)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if args.format == "json":
        for row in rows:
            print(json.dumps(dict(zip(columns, row, strict=True)), default=str))
    else:
        print("\t".join(columns))
        for row in rows:
            print("\t".join("" if v is None else str(v) for v in row))
    return 0


def cmd_rollups(args: argparse.Namespace, s: config.Settings) -> int:
    from datetime import date

    from fleetperf.cli.sql_client import QueryError, warehouse_call

    first, last = date.fromisoformat(args.first), date.fromisoformat(args.last)
    try:
        if s.embedded_clickhouse:
            written = warehouse_call(s, f"/rollups/rebuild?from={first}&to={last}", method="POST")
        else:
            from fleetperf.warehouse.clickhouse import client
            from fleetperf.warehouse.rollups import rebuild

            db = s["clickhouse"]["database"]
            written = rebuild(client(s, db), db, first, last)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"rebuilt {first}..{last}: " + ", ".join(f"{t} {n} rows" for t, n in written.items()))
    return 0


def cmd_stats(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import QueryError, warehouse_call

    try:
        print(json.dumps(warehouse_call(s, "/stats"), indent=2))
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "run one SQL statement against the warehouse (read-only)"
    sql = sub.add_parser("sql", help=help_, description=help_, epilog=EPILOG)
    sql.set_defaults(func=cmd_sql)
    sql.add_argument("statement")
    sql.add_argument("--format", choices=["tsv", "json"], default="tsv")
    help_ = "recompute the hourly and daily rollups of a date range from the base table"
    roll = sub.add_parser("rollups", help=help_, description=help_, epilog=EPILOG)
    roll.set_defaults(func=cmd_rollups)
    roll.add_argument("action", choices=["rebuild"])
    roll.add_argument("--from", dest="first", required=True, help="first day, YYYY-MM-DD")
    roll.add_argument("--to", dest="last", required=True, help="last day, YYYY-MM-DD (inclusive)")
    help_ = "the sink's counters: rows written per table, batches, errors, consumer lag"
    sub.add_parser("stats", help=help_, description=help_, epilog=EPILOG).set_defaults(func=cmd_stats)
