"""`sql`, `rollups`, `stats`: questions to the warehouse."""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from typing import Any

from fleetperf import config
from fleetperf.cli.common import EPILOG

# a statement may end in ClickHouse's own FORMAT clause (the CLI asks the engine for rows, so the
# clause is taken off and the rows are printed in that format here)
_FORMAT = re.compile(r"\s+FORMAT\s+([A-Za-z]+)\s*;?\s*$", re.I)
FORMATS = {
    "tsv": "tsv",
    "tabseparated": "tsv",
    "tabseparatedwithnames": "tsv",
    "tsvwithnames": "tsv",
    "json": "json",
    "jsoneachrow": "json",
    "csv": "csv",
    "csvwithnames": "csv",
    "vertical": "vertical",
    "pretty": "pretty",
    "prettycompact": "pretty",
}


def split_format(statement: str) -> tuple[str, str | None]:
    """The statement without a trailing FORMAT clause, and that format's name (lower case)."""
    m = _FORMAT.search(statement)
    return (statement[: m.start()], m.group(1).lower()) if m else (statement, None)


def render(columns: list[str], rows: list[list[Any]], fmt: str) -> str:
    def text(v: Any) -> str:  # noqa: ANN401
        return "" if v is None else str(v)

    if fmt == "json":
        return "".join(json.dumps(dict(zip(columns, row, strict=True)), default=str) + "\n" for row in rows)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([text(v) for v in row] for row in rows)
        return out.getvalue()
    if fmt == "vertical":
        width = max((len(c) for c in columns), default=0)
        blocks = [
            f"Row {n}:\n" + "".join(f"{c:>{width}}: {text(v)}\n" for c, v in zip(columns, row, strict=True))
            for n, row in enumerate(rows, start=1)
        ]
        return "\n".join(blocks)
    if fmt == "pretty":
        cells = [columns, *([text(v) for v in row] for row in rows)]
        widths = [max(len(r[i]) for r in cells) for i in range(len(columns))]
        return "".join("  ".join(v.ljust(w) for v, w in zip(r, widths, strict=True)).rstrip() + "\n" for r in cells)
    return "\t".join(columns) + "\n" + "".join("\t".join(text(v) for v in row) + "\n" for row in rows)


def cmd_sql(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import QueryError, query

    statement, named = split_format(args.statement)
    fmt = args.format
    if named is not None:
        if named not in FORMATS:
            print(f"error: FORMAT {named}: this CLI prints {', '.join(sorted(FORMATS))}", file=sys.stderr)
            return 1
        fmt = FORMATS[named]
    try:
        columns, rows = query(s, statement)
    except QueryError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(columns, rows, fmt))
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
    sql.add_argument(
        "--format",
        choices=sorted(set(FORMATS.values())),
        default="tsv",
        help="how rows are printed (a trailing FORMAT clause of the statement does the same)",
    )
    help_ = "recompute the hourly and daily rollups of a date range from the base table"
    roll = sub.add_parser("rollups", help=help_, description=help_, epilog=EPILOG)
    roll.set_defaults(func=cmd_rollups)
    roll.add_argument("action", choices=["rebuild"])
    roll.add_argument("--from", dest="first", required=True, help="first day, YYYY-MM-DD")
    roll.add_argument("--to", dest="last", required=True, help="last day, YYYY-MM-DD (inclusive)")
    help_ = "the sink's counters: rows written per table, batches, errors, consumer lag"
    sub.add_parser("stats", help=help_, description=help_, epilog=EPILOG).set_defaults(func=cmd_stats)
