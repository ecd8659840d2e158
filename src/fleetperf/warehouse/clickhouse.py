"""ClickHouse access for embedded chDB or a real server, the read-only path every reader takes, and
the ordered, idempotent migrations of sql/.

Two kinds of client:
- `client()`: full rights, for the process that owns the warehouse (migrations, the sink, the
  rollup rebuild behind the admin token).
- `read_client()` and Superset's `clickhousedb+fleetperf://` URI: what the SQL endpoint, `fleetperf
  sql` and SQL Lab use. On the embedded engine (chDB 4.4, ClickHouse 26.9, measured in
  tests/unit/test_security.py): the session gets size/time/result limits and then `readonly = 1`,
  which the engine enforces (no INSERT/DDL/KILL-free writes, no setting changes, and the table
  functions that reach files, URLs and other servers refuse to run). Two things readonly=1 does NOT
  stop in chDB: `SELECT ... INTO OUTFILE` writes a file and the scalar `file()` reads one (chDB has
  no user_files_path confinement). So every statement is first parsed by the engine's own parser
  (`parseQueryToJSON`) and refused unless it is a SELECT/SHOW/EXPLAIN (or a plain DESCRIBE/EXISTS/
  SHOW CREATE of a named table), has no INTO OUTFILE, and calls no table function outside a short
  list of generators (numbers, values, view, ...). On a real server the read client uses the
  configured read-only user (least privilege: its grants reach neither files nor URLs) with
  readonly=1 and the same limits on every request.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode, urlparse

import clickhouse_connect
from clickhouse_connect.driver.client import Client
from sqlalchemy.dialects import registry as _sqlalchemy_registry

from fleetperf.config import SQL_DIR, Settings

# Superset's driver name for the restricted path (registered below, implemented by ReadOnlyDialect).
READ_ONLY_SCHEME = "clickhousedb+fleetperf"
# Table functions a read-only statement may call: generators that reach nothing outside the query.
SAFE_TABLE_FUNCTIONS = frozenset(
    {"numbers", "numbers_mt", "zeros", "zeros_mt", "values", "view", "generate_series", "generateseries", "null"}
)
# Names that are both a scalar and a table function: the scalar is harmless and useful, the table
# function is refused by readonly=1 (measured).
SCALAR_TOO = frozenset({"format"})
# Refused whatever the engine lists: scalar file() reads a file; catboostEvaluate loads a library;
# the rest are the table functions that reach outside (a floor in case system.table_functions
# cannot be read).
ALWAYS_DENIED = frozenset(
    {
        "file", "catboostevaluate", "url", "urlcluster", "filecluster", "s3", "s3cluster", "gcs", "cosn", "oss",
        "remote", "remotesecure", "cluster", "clusterallreplicas", "mysql", "postgresql", "mongodb", "redis",
        "sqlite", "odbc", "jdbc", "hdfs", "hdfscluster", "executable", "input", "azureblobstorage",
        "azureblobstoragecluster", "dictionary", "merge", "python", "fuzzquery", "fuzzjson", "loop",
        "iceberg", "icebergs3", "iceberglocal", "deltalake", "hudi", "ytsaurus", "arrowflight", "mergetreeindex",
    }
)  # fmt: skip
# Statement kinds a reader may run (parseQueryToJSON's node types).
READ_STATEMENTS = frozenset({"SelectWithUnionQuery", "SelectIntersectExceptQuery", "SelectQuery", "ShowTablesQuery"})
_IDENT = r"(?:[A-Za-z_][A-Za-z0-9_]*|`[^`\\\n]+`|\"[^\"\\\n]+\")"
# DESCRIBE/EXISTS/SHOW CREATE have no JSON form: accepted only for a plain [db.]name.
_PLAIN_META = re.compile(
    rf"\s*(?:DESCRIBE|DESC|EXISTS|SHOW\s+CREATE)(?:\s+(?:TEMPORARY\s+)?(?:TABLE|VIEW|DATABASE|DICTIONARY))?"
    rf"\s+{_IDENT}(?:\.{_IDENT})?(?:\s+FORMAT\s+[A-Za-z]+)?\s*;?\s*",
    re.I,
)
MAX_STATEMENT_BYTES = 256 * 1024


class ReadOnlyError(ValueError):
    """A statement the read-only path does not run (the message says why)."""


def read_limits(settings: Settings) -> dict[str, Any]:
    """Session settings of every read-only client, from [clickhouse] (defaults where unset)."""
    c = settings["clickhouse"]
    return {
        "max_execution_time": int(c.get("read_max_seconds", 120)),
        "max_result_rows": int(c.get("read_max_result_rows", 5_000_000)),
        "max_result_bytes": int(c.get("read_max_result_mb", 1024)) * 2**20,
        "result_overflow_mode": "throw",
        "max_memory_usage": int(c.get("read_max_memory_mb", 2048)) * 2**20,
        "max_query_size": MAX_STATEMENT_BYTES,
    }


class Guard:
    """Checks a statement with the engine's own parser before a read-only client runs it."""

    def __init__(self, parser: Client) -> None:
        self._parser = parser
        self._lock = threading.Lock()
        try:
            listed = {str(r[0]).lower() for r in parser.query("SELECT name FROM system.table_functions").result_rows}
        except Exception:  # noqa: BLE001 - fall back to the static floor
            listed = set()
        self.denied = ((listed | ALWAYS_DENIED) - SAFE_TABLE_FUNCTIONS - SCALAR_TOO) | {"file"}

    def check(self, sql: str | bytes) -> None:
        text = sql.decode() if isinstance(sql, bytes) else sql
        if len(text.encode()) > MAX_STATEMENT_BYTES:
            raise ReadOnlyError(f"statement longer than {MAX_STATEMENT_BYTES} bytes")
        if _PLAIN_META.fullmatch(text):
            return
        try:
            with self._lock:
                tree = json.loads(
                    self._parser.query("SELECT parseQueryToJSON({q:String})", parameters={"q": text}).result_rows[0][0]
                )
        except ReadOnlyError:
            raise
        except Exception as exc:  # noqa: BLE001 - a statement the parser rejects or cannot express
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise ReadOnlyError(f"not a read-only statement the warehouse runs: {first[:300]}") from None
        kind = tree.get("type")
        if kind == "ExplainQuery":
            kind = (tree.get("query") or {}).get("type")
        if kind not in READ_STATEMENTS:
            raise ReadOnlyError(f"read-only: {tree.get('type')} statements are refused (SELECT, SHOW, EXPLAIN run)")
        self._walk(tree)

    def _walk(self, node: Any) -> None:
        if isinstance(node, list):
            for item in node:
                self._walk(item)
            return
        if not isinstance(node, dict):
            return
        if "out_file" in node or node.get("is_into_outfile_with_stdout"):
            raise ReadOnlyError("read-only: INTO OUTFILE is refused")
        if node.get("type") == "Function" and str(node.get("name", "")).lower() in self.denied:
            raise ReadOnlyError(f"read-only: {node['name']}() reaches outside the warehouse and is refused")
        for key, value in node.items():
            if key == "table_function" and str(value.get("name", "")).lower() not in SAFE_TABLE_FUNCTIONS | SCALAR_TOO:
                raise ReadOnlyError(f"read-only: table function {value.get('name')}() is refused")
            self._walk(value)


class _GuardedBackend:
    """chDB backend of a read-only client: every statement passes the Guard, inserts never run.

    After an engine error the handle is replaced by a fresh one with the same session settings:
    a query cut short by a limit (timeout, result size) can leave bytes of its output on the chDB
    handle, which the next query then reads as its own ("unrecognized data found in stream", seen
    once in three runs of tests/unit/test_security.py)."""

    def __init__(self, inner: Any, guard: Guard, session: dict[str, str]) -> None:  # noqa: ANN401
        object.__setattr__(self, "_inner", inner)
        object.__setattr__(self, "_guard", guard)
        object.__setattr__(self, "_session", session)

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self._inner, name)

    def __setattr__(self, name: str, value: Any) -> None:  # noqa: ANN401
        setattr(self._inner, name, value)

    def _renew(self) -> None:
        from clickhouse_connect.driver._backend.chdb_backend import ChdbBackend

        old = self._inner
        fresh = ChdbBackend(connection_string=old.connection_string)
        fresh.show_clickhouse_errors = old.show_clickhouse_errors
        for key, value in self._session.items():  # limits first, readonly last (dict order)
            fresh.set_client_setting(key, value)
        object.__setattr__(self, "_inner", fresh)
        try:
            old.close()
        except Exception:  # noqa: BLE001 - the old handle is discarded either way
            pass

    def _run(self, sql: Any, call: Any, *args: Any) -> Any:  # noqa: ANN401
        self._guard.check(sql)
        try:
            return call(*args)
        except ReadOnlyError:
            raise
        except Exception:
            self._renew()
            raise

    def execute_query(self, context: Any, runtime: Any, prepped_query: Any) -> Any:  # noqa: ANN401
        return self._run(context.final_query, self._inner.execute_query, context, runtime, prepped_query)

    def execute_command(self, bound_cmd: Any, bind_params: Any, data: Any, *rest: Any) -> Any:  # noqa: ANN401
        if data:
            raise ReadOnlyError("read-only: statements with data are refused")
        return self._run(bound_cmd, self._inner.execute_command, bound_cmd, bind_params, data, *rest)

    def execute_raw_query(self, final_query: Any, *rest: Any) -> Any:  # noqa: ANN401
        return self._run(final_query, self._inner.execute_raw_query, final_query, *rest)

    def execute_raw_stream(self, final_query: Any, *rest: Any) -> Any:  # noqa: ANN401
        return self._run(final_query, self._inner.execute_raw_stream, final_query, *rest)

    def execute_data_insert(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        raise ReadOnlyError("read-only: inserts are refused")

    def execute_raw_insert(self, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN401
        raise ReadOnlyError("read-only: inserts are refused")

    def set_client_setting(self, key: str, value: str) -> None:
        raise ReadOnlyError(f"read-only: setting {key} cannot change")


_GUARDS: dict[str, Guard] = {}
_GUARDS_LOCK = threading.Lock()


def _guard_for(path: str) -> Guard:
    """One parser handle per data path and process (it only ever parses)."""
    with _GUARDS_LOCK:
        guard = _GUARDS.get(path)
        if guard is None:
            parser = clickhouse_connect.get_client(interface="chdb", path=path)
            parser.set_client_setting("readonly", 1)
            guard = _GUARDS[path] = Guard(parser)
        return guard


def restricted_chdb(path: str | Path, database: str | None, limits: dict[str, Any]) -> Client:
    """A chDB client that can only read: limits first, then readonly=1 (after it nothing can
    change a setting), then the Guard in front of every statement."""
    ch = clickhouse_connect.get_client(interface="chdb", path=str(path), database=database)
    session = {**{k: str(v) for k, v in limits.items()}, "readonly": "1"}
    for key, value in session.items():
        ch.set_client_setting(key, value)
    ch._backend = _GuardedBackend(ch._backend, _guard_for(str(path)), session)  # noqa: SLF001 - chDB's one seam
    return ch


def _password(url_password: str | None, password_file: str) -> str:
    """A password from a file (compose/Kubernetes secrets) wins over one in the URL."""
    if password_file:
        return Path(password_file).read_text().strip()
    return url_password or ""


def _server_client(settings: Settings, url: str, password_file: str, database: str | None, **extra: Any) -> Client:
    c = settings["clickhouse"]
    parsed = urlparse(url)
    tls = parsed.scheme == "https"
    kwargs: dict[str, Any] = {}
    if tls and c.get("ca_cert"):
        kwargs["ca_cert"] = c["ca_cert"]
    return clickhouse_connect.get_client(
        host=parsed.hostname,
        port=parsed.port or (8443 if tls else 8123),
        username=parsed.username or "default",
        password=_password(parsed.password, password_file),
        database=database or "default",
        interface="https" if tls else "http",
        **kwargs,
        **extra,
    )


def client(settings: Settings, database: str | None = None) -> Client:
    """Full rights: the warehouse owner (migrations, sink, admin rollup rebuild)."""
    c = settings["clickhouse"]
    if c["url"] == "chdb":
        settings.chdb_path.mkdir(parents=True, exist_ok=True)
        return clickhouse_connect.get_client(interface="chdb", path=str(settings.chdb_path), database=database)
    return _server_client(settings, c["url"], c.get("password_file", ""), database)


def _read_url(settings: Settings) -> tuple[str, str]:
    c = settings["clickhouse"]
    if c.get("read_url"):
        return c["read_url"], c.get("read_password_file", "")
    return c["url"], c.get("password_file", "")


def read_client(settings: Settings) -> Client:
    """Read-only: the SQL endpoint and `fleetperf sql` (see the module doc)."""
    database = settings["clickhouse"]["database"]
    limits = read_limits(settings)
    if settings.embedded_clickhouse:
        return restricted_chdb(settings.chdb_path, database, limits)
    url, password_file = _read_url(settings)
    ch = _server_client(settings, url, password_file, database)
    current = ch.server_settings.get("readonly")
    if current is None or str(current.value) == "0":
        # a user that may still write: limits, then readonly=1, ride on every request and the
        # server enforces them. A read-only user's profile already fixes both (and refuses changes).
        for key, value in limits.items():
            ch.set_client_setting(key, value)
        ch.set_client_setting("readonly", 1)
    return ch


def sqlalchemy_uri(settings: Settings) -> str:
    """The URI Superset uses for the same database: always the read-only path."""
    db = settings["clickhouse"]["database"]
    if settings.embedded_clickhouse:
        limits = {k: v for k, v in read_limits(settings).items() if k != "max_query_size"}
        return f"{READ_ONLY_SCHEME}:///{db}?" + urlencode({"path": str(settings.chdb_path), **limits})
    url, password_file = _read_url(settings)
    parsed = urlparse(url)
    password = _password(parsed.password, password_file)
    auth = f"{quote(parsed.username or 'default', safe='')}:{quote(password, safe='')}@"
    tls = parsed.scheme == "https"
    # only readonly=1: the read user's settings profile carries the limits and refuses changes
    # (SECURITY.md); with the writer's URL the readonly=1 still holds on every request
    query = {"readonly": 1, **({"secure": "true"} if tls else {})}
    return f"clickhousedb://{auth}{parsed.hostname}:{parsed.port or (8443 if tls else 8123)}/{db}?" + urlencode(query)


# --- Superset's restricted dialect ------------------------------------------------------------
def _dbapi_connection(ch: Client, release: Any = None) -> Any:  # noqa: ANN401 - clickhouse_connect's DB-API Connection
    """release(client): called by close() instead of closing the client (a pool's return)."""
    from clickhouse_connect.dbapi.connection import Connection

    conn = Connection.__new__(Connection)  # its __init__ would open an unrestricted client
    conn.client = ch
    conn.timezone = ch.server_tz
    if release is not None:
        conn.close = lambda: release(ch)
    return conn


class _IdleClients:
    """Restricted chDB clients kept for the next connection. Superset opens a connection for every
    chart query and closes it (NullPool, an engine per query), and a chDB client's start reads the
    server's settings: 10 % of a chart-data request's samples (py-spy, bench/dashboards.py). A
    client is one session that can only read (readonly=1: no SET, no temporary table), so the next
    connection gets it as the first one left it. At most `keep` wait per path, database and limits."""

    def __init__(self, keep: int = 16) -> None:
        self.keep = keep
        self._idle: dict[tuple[Any, ...], list[Client]] = {}
        self._lock = threading.Lock()

    def connection(self, path: str, database: str | None, limits: dict[str, Any]) -> Any:  # noqa: ANN401
        key = (path, database, tuple(sorted((k, str(v)) for k, v in limits.items())))
        with self._lock:
            idle = self._idle.get(key)
            ch = idle.pop() if idle else None
        if ch is None:
            ch = restricted_chdb(path, database, limits)

        def release(client: Client) -> None:
            with self._lock:
                idle = self._idle.setdefault(key, [])
                if len(idle) < self.keep:
                    idle.append(client)
                    return
            client.close()

        return _dbapi_connection(ch, release)


_IDLE_CLIENTS = _IdleClients()


def _dialect_class() -> type:
    from clickhouse_connect.cc_sqlalchemy.dialect import ClickHouseDialect

    class ReadOnlyDialect(ClickHouseDialect):
        """`clickhousedb+fleetperf:///<db>?path=<chdb path>&<limits>`: every connection Superset
        opens (charts, SQL Lab, metadata) is a restricted_chdb client."""

        driver = "fleetperf"
        supports_statement_cache = False

        def create_connect_args(self, url: Any) -> tuple[list[Any], dict[str, Any]]:  # noqa: ANN401
            query = dict(url.query)
            path = query.pop("path", None)
            if not path:
                raise ReadOnlyError(f"{READ_ONLY_SCHEME} needs ?path=<chDB data path>")
            limits = {k: query[k] for k in ("max_execution_time", "max_result_rows", "max_result_bytes",
                                            "result_overflow_mode", "max_memory_usage") if k in query}  # fmt: skip
            return [], {"path": path, "database": url.database, "limits": limits}

        def connect(self, *cargs: Any, **cparams: Any) -> Any:  # noqa: ANN401
            limits = {"max_query_size": MAX_STATEMENT_BYTES, **cparams["limits"]}
            return _IDLE_CLIENTS.connection(cparams["path"], cparams["database"], limits)

    return ReadOnlyDialect


def __getattr__(name: str) -> Any:  # noqa: ANN401 - SQLAlchemy's registry loads the class by name
    if name == "ReadOnlyDialect":
        return _dialect_class()
    raise AttributeError(name)


_sqlalchemy_registry.register("clickhousedb.fleetperf", __name__, "ReadOnlyDialect")


def statements(sql: str) -> list[str]:
    """Splits a migration file on ';' at line ends; comments are dropped."""
    body = "\n".join(line for line in sql.splitlines() if not line.lstrip().startswith("--"))
    return [s.strip() for s in re.split(r";\s*$", body, flags=re.M) if s.strip()]


def migrate(settings: Settings) -> tuple[Client, list[str]]:
    """Creates the database and applies sql/NNN_*.sql not yet recorded; returns the client and what ran."""
    db = settings["clickhouse"]["database"]
    bootstrap = client(settings)
    bootstrap.command(f"CREATE DATABASE IF NOT EXISTS {db}")
    ch = client(settings, db)
    ch.command(
        "CREATE TABLE IF NOT EXISTS schema_migrations (version String, applied_at DateTime64(3, 'UTC') "
        "DEFAULT now64(3)) ENGINE = ReplacingMergeTree ORDER BY version"
    )
    done = {row[0] for row in ch.query("SELECT version FROM schema_migrations").result_rows}
    ran = []
    for path in sorted(SQL_DIR.glob("[0-9][0-9][0-9]_*.sql")):
        if path.stem in done:
            continue
        for stmt in statements(path.read_text()):
            ch.command(stmt)
        ch.insert("schema_migrations", [[path.stem]], column_names=["version"])
        ran.append(path.stem)
    return ch, ran


def superset_connection_mutator(uri: Any, params: dict[str, Any], *_: Any) -> tuple[Any, dict[str, Any]]:  # noqa: ANN401
    """Superset's DB_CONNECTION_MUTATOR: a ClickHouse URI on the embedded engine (interface=chdb or
    a path parameter) is sent through the read-only dialect whatever driver it names."""
    if uri.get_backend_name() == "clickhousedb" and uri.get_driver_name() != "fleetperf":
        query = dict(uri.query)
        if query.get("interface") == "chdb" or "path" in query or str(query.get("dsn", "")).startswith("chdb"):
            query.pop("interface", None)
            if "path" not in query and str(query.get("dsn", "")).startswith("chdb://"):
                query["path"] = query["dsn"][len("chdb://") :]
            query.pop("dsn", None)
            uri = uri.set(drivername=READ_ONLY_SCHEME, query=query)
    return uri, params
