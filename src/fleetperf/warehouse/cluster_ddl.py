"""The ClickHouse cluster flavour of the migrations: Replicated*MergeTree tables (`<name>_local`,
one per shard replica, coordinated by ClickHouse Keeper), a Distributed table under each original
name (so the sink, the views and Superset keep using the same names), views and materialized views
ON CLUSTER. Materialized views read and write the `_local` tables: an insert through a Distributed
table lands on one shard, whose own rollup view then aggregates it there.

Generated from the same sql/NNN_*.sql as the single-node schema: the migrations are applied to a
throw-away embedded engine (chDB, in a child process: one data path per process), and the final
CREATE statement of every table and view is rewritten. So a fresh cluster gets the schema the
migrations end in, not their history (no re-key copies, no EXCHANGE). Every generated statement is
then parsed by the engine's own parser (no server can run here, so this checks syntax, not Keeper
paths or macros).

    python -m fleetperf.warehouse.cluster_ddl [--cluster NAME] [--database DB] > cluster.sql
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from fleetperf.config import PACKAGE_ROOT, SQL_DIR

_CREATE = re.compile(
    r"CREATE\s+(?:OR\s+REPLACE\s+)?(MATERIALIZED\s+VIEW|VIEW|TABLE)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)", re.I
)
REPLICATED_SETTING = {"non_replicated_deduplication_window": "replicated_deduplication_window"}


def _balanced(text: str, start: int) -> int:
    """Index just past the parenthesis group opening at text[start] (quotes respected)."""
    depth, i, quote = 0, start, ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'`\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise ValueError(f"unbalanced parentheses in {text[:200]!r}")


def creation_order(sql_dir: Path = SQL_DIR) -> list[str]:
    """Names of tables and views in the order of their LAST CREATE in the migrations: a view replaced
    later may read objects created after its first version."""
    last: dict[str, int] = {}
    n = 0
    for path in sorted(sql_dir.glob("[0-9][0-9][0-9]_*.sql")):
        for match in _CREATE.finditer(path.read_text()):
            last[match.group(2)] = n
            n += 1
    return sorted(last, key=last.__getitem__)


def _first_order_column(tail: str) -> str:
    match = re.search(r"\bORDER BY\s+", tail)
    if match is None:
        return "rand()"
    rest = tail[match.end() :]
    if rest.startswith("("):
        inner = rest[1 : _balanced(rest, 0) - 1]
        first = inner.split(",")[0].strip()
    else:
        first = re.split(r"\s|,", rest, maxsplit=1)[0]
    return f"cityHash64({first})"


def _table_head(create: str, database: str) -> tuple[str, str, int]:
    """Name, column list (with its parentheses) and where the list ends, of a final CREATE TABLE."""
    head = re.match(rf"CREATE TABLE {re.escape(database)}\.(\w+)\s*", create)
    if head is None:
        raise ValueError(f"not a CREATE TABLE of {database}: {create[:120]!r}")
    cols_end = _balanced(create, head.end())
    return head.group(1), create[head.end() : cols_end], cols_end


def table_ddl(create: str, database: str, cluster: str) -> list[str]:
    """One final `CREATE TABLE db.t (...) ENGINE = XMergeTree(args) tail` -> the replicated local
    table and the Distributed table under the original name. Rows are sharded by the first sorting
    key column (host_id for the samples), so rows one ReplacingMergeTree key describes meet on one
    shard and replace each other there."""
    name, columns, cols_end = _table_head(create, database)
    engine = re.match(r"\s*ENGINE = (\w+)", create[cols_end:])
    if engine is None or not engine.group(1).endswith("MergeTree"):
        raise ValueError(f"{name}: not a MergeTree table")
    pos = cols_end + engine.end()
    args = ""
    if pos < len(create) and create[pos] == "(":
        end = _balanced(create, pos)
        args = create[pos + 1 : end - 1].strip()
        pos = end
    tail = create[pos:].strip()
    for old, new in REPLICATED_SETTING.items():
        tail = re.sub(rf"\b{old}\b", new, tail)
    local = f"{name}_local"
    keeper = f"'/clickhouse/tables/{{shard}}/{database}/{local}', '{{replica}}'"
    engine_args = f"{keeper}, {args}" if args else keeper
    on = f"ON CLUSTER '{cluster}'"
    return [
        f"CREATE TABLE IF NOT EXISTS {database}.{local} {on} {columns} "
        f"ENGINE = Replicated{engine.group(1)}({engine_args}) {tail}",
        f"CREATE TABLE IF NOT EXISTS {database}.{name} {on} AS {database}.{local} "
        f"ENGINE = Distributed('{cluster}', '{database}', '{local}', {_first_order_column(tail)})",
    ]


def null_table_ddl(create: str, database: str, cluster: str) -> list[str]:
    """A Null-engine input table (it keeps nothing; only its materialized views see an insert) ->
    a Null `_local` table per shard and a Distributed table under the original name, sharded by
    host_id (entity_id for Flink's windows) like the MergeTree tables, so the views on each shard
    write the rows of the hosts that shard holds."""
    name, columns, cols_end = _table_head(create, database)
    if not re.match(r"\s*ENGINE = `?Null`?", create[cols_end:]):
        raise ValueError(f"{name}: not a Null table")
    # sharded as the table its view writes (table_ddl: the first sorting key column), so a
    # window's early and final rows meet on one shard and replace each other there
    key = next((k for k in ("host_id", "entity_id") if re.search(rf"`{k}`", columns)), None)
    shard = f"cityHash64({key})" if key else "rand()"
    local, on = f"{name}_local", f"ON CLUSTER '{cluster}'"
    return [
        f"CREATE TABLE IF NOT EXISTS {database}.{local} {on} {columns} ENGINE = Null",
        f"CREATE TABLE IF NOT EXISTS {database}.{name} {on} AS {database}.{local} "
        f"ENGINE = Distributed('{cluster}', '{database}', '{local}', {shard})",
    ]


def view_ddl(create: str, database: str, cluster: str, local_tables: set[str]) -> str:
    """Views ON CLUSTER; a materialized view reads from and writes to the shard's `_local` tables
    (it fires on the inserts a shard receives, and a Distributed table never stores rows)."""
    match = re.match(rf"CREATE (MATERIALIZED VIEW|VIEW) {re.escape(database)}\.(\w+)\s*", create)
    if match is None:
        raise ValueError(f"not a CREATE VIEW of {database}: {create[:120]!r}")
    kind, name, body = match.group(1), match.group(2), create[match.end() :]
    on = f"ON CLUSTER '{cluster}'"
    if kind == "VIEW":
        return f"CREATE OR REPLACE VIEW {database}.{name} {on} {body}"
    for table in local_tables:
        body = re.sub(rf"\b{re.escape(database)}\.{table}\b", f"{database}.{table}_local", body)
    return f"CREATE MATERIALIZED VIEW IF NOT EXISTS {database}.{name} {on} {body}"


def _final_schema_here(path: str, database: str) -> list[dict[str, str]]:
    """In this process: apply every migration to a fresh embedded engine at `path`, return the
    final CREATE of each object."""
    import clickhouse_connect

    from fleetperf.warehouse.clickhouse import statements

    boot = clickhouse_connect.get_client(interface="chdb", path=path)
    boot.command(f"CREATE DATABASE IF NOT EXISTS {database}")
    ch = clickhouse_connect.get_client(interface="chdb", path=path, database=database)
    for sql in sorted(SQL_DIR.glob("[0-9][0-9][0-9]_*.sql")):
        for stmt in statements(sql.read_text()):
            ch.command(stmt)
    rows = ch.query(
        "SELECT name, engine, create_table_query FROM system.tables WHERE database = {db:String}",
        parameters={"db": database},
    ).result_rows
    return [{"name": r[0], "engine": r[1], "create": r[2]} for r in rows]


def _parse_here(path: str, stmts: list[str]) -> list[str]:
    """In this process: the engine's parser on each statement; the errors (empty = all parse)."""
    import clickhouse_connect

    ch = clickhouse_connect.get_client(interface="chdb", path=path)
    errors = []
    for stmt in stmts:
        try:
            ch.query("SELECT parseQueryToJSON({q:String})", parameters={"q": stmt})
        except Exception as exc:  # noqa: BLE001 - report every statement the parser rejects
            errors.append(f"{stmt[:160]}...: {str(exc).splitlines()[0][:300]}")
    return errors


def _child(mode: str, payload: dict[str, object]) -> object:
    """Runs the chDB part in a child process with its own throw-away data path."""
    with tempfile.TemporaryDirectory(prefix="fleetperf-cluster-ddl-") as tmp:
        payload = {**payload, "path": tmp}
        result = subprocess.run(
            [sys.executable, "-m", "fleetperf.warehouse.cluster_ddl", f"--child-{mode}"],
            input=json.dumps(payload),
            capture_output=True,
            text=True,
            timeout=300,
            # the child imports this package however the parent found it (pytest's pythonpath too)
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [str(PACKAGE_ROOT.parent), os.environ.get("PYTHONPATH")])),
            },
        )
    if result.returncode != 0:
        raise RuntimeError(f"cluster DDL child ({mode}) failed:\n{result.stderr[-3000:]}")
    return json.loads(result.stdout)


def generate(cluster: str = "fleetperf", database: str = "fleetperf") -> list[str]:
    """The cluster DDL, in order: database, replicated local + Distributed tables, then views."""
    objects = {o["name"]: o for o in _child("schema", {"database": database})}  # type: ignore[union-attr]
    objects.pop("schema_migrations", None)
    order = [n for n in creation_order() if n in objects]
    order += sorted(set(objects) - set(order))
    merge_tree = {n for n in order if str(objects[n]["engine"]).endswith("MergeTree")}
    null = {n for n in order if objects[n]["engine"] == "Null"}
    out = [f"CREATE DATABASE IF NOT EXISTS {database} ON CLUSTER '{cluster}'"]
    for name in order:
        if name in merge_tree:
            out += table_ddl(str(objects[name]["create"]), database, cluster)
        elif name in null:
            out += null_table_ddl(str(objects[name]["create"]), database, cluster)
    for name in order:
        if name not in merge_tree and name not in null:
            out.append(view_ddl(str(objects[name]["create"]), database, cluster, merge_tree | null))
    return out


def check(stmts: list[str]) -> list[str]:
    """Parser errors of the statements (empty: the engine's parser accepts every one)."""
    return list(_child("parse", {"statements": stmts}))  # type: ignore[arg-type]


def main(argv: list[str] | None = None) -> int:
    args = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    args.add_argument("--cluster", default="fleetperf", help="cluster name in remote_servers (default fleetperf)")
    args.add_argument("--database", default="fleetperf")
    args.add_argument("--child-schema", action="store_true", help=argparse.SUPPRESS)
    args.add_argument("--child-parse", action="store_true", help=argparse.SUPPRESS)
    opts = args.parse_args(argv)
    if opts.child_schema or opts.child_parse:
        payload = json.loads(sys.stdin.read())
        if opts.child_schema:
            print(json.dumps(_final_schema_here(payload["path"], payload["database"])))
        else:
            print(json.dumps(_parse_here(payload["path"], payload["statements"])))
        return 0
    stmts = generate(opts.cluster, opts.database)
    errors = check(stmts)
    for stmt in stmts:
        print(stmt + ";\n")
    if errors:
        print("\n".join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
