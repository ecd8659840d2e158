"""Issue 22: every attack of the review, repeated here, is refused.

The SQL endpoint runs in-process on the session's chDB data path (chDB opens one path per process),
so the attacks go over real HTTP to the real handler and the real engine. Superset's SQL Lab API
itself is exercised in tests/integration/test_security_superset.py (it needs the whole stack);
here: the SQLAlchemy URI Superset is given, and the engine it opens, refuse the same statements."""

from __future__ import annotations

import http.client
import importlib.util
import json
import os
import socket
import stat
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy
import yaml

from fleetperf import config
from fleetperf.cli import sql_client
from fleetperf.config import PACKAGE_ROOT, REPO_ROOT
from fleetperf.stack import install
from fleetperf.stack.local import JAVA_OPENS, LocalStack, jvm_options
from fleetperf.warehouse import clickhouse, credentials, query_server, superset_setup
from fleetperf.warehouse.clickhouse import migrate
from tests.providers import free_port

DB = "security_test"


def _settings(state: Path, port: int, **extra: str) -> config.Settings:
    return config.load(
        {
            "FLEETPERF__STATE__DIR": str(state),
            "FLEETPERF__CLICKHOUSE__DATABASE": DB,
            "FLEETPERF__WAREHOUSE__QUERY_PORT": str(port),
            # small limits, so the limit tests are quick
            "FLEETPERF__CLICKHOUSE__READ_MAX_SECONDS": "3",
            "FLEETPERF__CLICKHOUSE__READ_MAX_RESULT_ROWS": "100000",
            **extra,
        }
    )


@pytest.fixture(scope="module")
def warehouse(embedded_path: Path) -> Iterator[config.Settings]:
    port = free_port()
    s = _settings(embedded_path, port)
    ch, _ = migrate(s)
    server = query_server.serve("127.0.0.1", port, ch, DB, lambda: {"batches": 0}, settings=s)
    yield s
    server.shutdown()
    server.server_close()


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    path = tmp_path / "victim.txt"
    path.write_text("secret-content\n")
    return path


def _post(
    s: config.Settings,
    body: str | bytes,
    token: str | None = "read",
    ctype: str | None = "application/sql",
    host: str | None = None,
    path: str = "/query",
    extra: dict[str, str] | None = None,
) -> tuple[int, Any]:
    headers = {"Host": f"127.0.0.1:{s['warehouse']['query_port']}" if host is None else host}
    if token == "read":
        headers["Authorization"] = f"Bearer {credentials.sql_token(s)}"
    elif token == "admin":
        headers["Authorization"] = f"Bearer {credentials.admin_token(s)}"
    elif token is not None:
        headers["Authorization"] = f"Bearer {token}"
    if ctype:
        headers["Content-Type"] = ctype
    headers.update(extra or {})
    conn = http.client.HTTPConnection("127.0.0.1", s["warehouse"]["query_port"], timeout=60)
    try:
        conn.request("POST", path, body=body.encode() if isinstance(body, str) else body, headers=headers)
        response = conn.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        conn.close()


def _table_exists(s: config.Settings, name: str) -> bool:
    code, body = _post(s, f"EXISTS TABLE {name}")
    assert code == 200, body
    return body["rows"] == [[1]]


# --- the endpoint: who may talk to it ---------------------------------------------------------
def test_endpoint_answers_a_select_with_the_token(warehouse: config.Settings) -> None:
    code, body = _post(warehouse, "SELECT count() > 0 AS migrated FROM schema_migrations")
    assert (code, body["columns"], body["rows"]) == (200, ["migrated"], [[True]])


def test_cross_site_text_plain_post_without_token_is_refused(warehouse: config.Settings) -> None:
    # what a web page in a local browser can send without a CORS preflight
    code, body = _post(warehouse, "SELECT 1", token=None, ctype="text/plain")
    assert code == 401
    code, _ = _post(warehouse, "SELECT 1", token=None, ctype="application/x-www-form-urlencoded")
    assert code == 401
    # even with the token a simple content type does not do
    code, body = _post(warehouse, "SELECT 1", ctype="text/plain")
    assert code == 415
    # a request a browser marks as cross-origin is refused whatever it carries
    code, body = _post(warehouse, "SELECT 1", extra={"Origin": "http://evil.example"})
    assert code == 403
    # no preflight is ever granted
    conn = http.client.HTTPConnection("127.0.0.1", warehouse["warehouse"]["query_port"], timeout=10)
    conn.request("OPTIONS", "/query", headers={"Origin": "http://evil.example"})
    response = conn.getresponse()
    assert response.status == 405 and response.getheader("Access-Control-Allow-Origin") is None
    conn.close()


def test_wrong_token_is_refused(warehouse: config.Settings) -> None:
    assert _post(warehouse, "SELECT 1", token="not-the-token")[0] == 401
    assert _post(warehouse, "SELECT 1", token="")[0] == 401


def test_wrong_host_header_is_refused_dns_rebinding(warehouse: config.Settings) -> None:
    port = warehouse["warehouse"]["query_port"]
    code, body = _post(warehouse, "SELECT 1", host=f"rebind.evil.example:{port}")
    assert code == 403 and "Host" in body["error"]
    assert _post(warehouse, "SELECT 1", host="")[0] == 403
    assert _post(warehouse, "SELECT 1", host=f"localhost:{port}")[0] == 200
    assert _post(warehouse, "SELECT 1", host=f"[::1]:{port}")[0] == 200


def test_configured_host_name_is_accepted(embedded_path: Path) -> None:
    s = _settings(embedded_path, 1, FLEETPERF__WAREHOUSE__ALLOWED_HOSTS="warehouse.internal, Other.Example")
    assert {"warehouse.internal", "other.example", "127.0.0.1"} <= query_server.allowed_hosts(s)
    assert "evil.example" not in query_server.allowed_hosts(s)


def test_rollup_rebuild_needs_the_admin_token(warehouse: config.Settings) -> None:
    path = "/rollups/rebuild?from=2024-01-01&to=2024-01-01"
    assert _post(warehouse, "", path=path, token=None, ctype=None)[0] == 401
    assert _post(warehouse, "", path=path, token="read", ctype=None)[0] == 401
    code, body = _post(warehouse, "", path=path, token="admin", ctype=None)
    assert code == 200 and set(body) == {"metrics_hourly", "metrics_daily"}


def test_oversized_statement_is_refused(warehouse: config.Settings) -> None:
    code, body = _post(warehouse, "SELECT 1 " + " " * clickhouse.MAX_STATEMENT_BYTES)
    assert code == 413


def test_tokens_are_0600_in_a_0700_directory(warehouse: config.Settings) -> None:
    folder = warehouse.state_dir / "secrets"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert stat.S_IMODE(warehouse.state_dir.stat().st_mode) == 0o700
    for name in ("sql_token", "admin_token"):
        assert stat.S_IMODE((folder / name).stat().st_mode) == 0o600
    assert credentials.sql_token(warehouse) != credentials.admin_token(warehouse)
    assert len(credentials.sql_token(warehouse)) >= 40


def test_a_secret_written_wider_is_narrowed_on_read(tmp_path: Path) -> None:
    s = config.load({"FLEETPERF__STATE__DIR": str(tmp_path / "state")})
    credentials.sql_token(s, create=True)
    path = s.state_dir / "secrets" / "sql_token"
    path.chmod(0o644)
    credentials.sql_token(s)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


# --- the endpoint: what it runs ---------------------------------------------------------------
REFUSED = {
    "file() table function": "SELECT * FROM file('{victim}', 'LineAsString')",
    "file() scalar": "SELECT file('{victim}')",
    "file() in IN": "SELECT 1 WHERE 'x' IN file('{victim}', 'LineAsString')",
    "INTO OUTFILE": "SELECT 1 INTO OUTFILE '{victim}.out'",
    "INSERT INTO FUNCTION file": (
        "INSERT INTO FUNCTION file('{victim}', 'LineAsString') SELECT 'owned' SETTINGS engine_file_truncate_on_insert=1"
    ),
    "DROP TABLE": "DROP TABLE schema_migrations",
    "CREATE TABLE": "CREATE TABLE attacker_table (x Int8) ENGINE = Memory",
    "CREATE via engine File": "CREATE TABLE attacker_file (x String) ENGINE = File(LineAsString, '{victim}')",
    "INSERT": "INSERT INTO schema_migrations (version) VALUES ('attacker')",
    "KILL QUERY": "KILL QUERY WHERE 1",
    "SETTINGS readonly=0": "SELECT 1 SETTINGS readonly = 0",
    "SET": "SET readonly = 0",
    "remote()": "SELECT * FROM remote('127.0.0.1:9000', system.one)",
    "s3()": "SELECT * FROM s3('http://127.0.0.1:1/bucket/x.csv', 'CSV', 'a Int8')",
    "mysql()": "SELECT * FROM mysql('127.0.0.1:1', 'd', 't', 'u', 'p')",
    "postgresql()": "SELECT * FROM postgresql('127.0.0.1:1', 'd', 't', 'u', 'p')",
    "executable()": "SELECT * FROM executable('id', 'TSV', 'x String')",
    "hdfs()": "SELECT * FROM hdfs('hdfs://127.0.0.1:1/x', 'TSV', 'x String')",
    "input()": "SELECT * FROM input('x String')",
    "url() in EXPLAIN": "EXPLAIN PIPELINE SELECT * FROM url('http://127.0.0.1:1/', 'LineAsString')",
    "DESCRIBE table function": "DESCRIBE TABLE file('{victim}', 'LineAsString')",
    "two statements": "SELECT 1; DROP TABLE schema_migrations",
    # spellings that must not slip past the statement check
    "backquoted file": "SELECT * FROM `file`('{victim}', 'LineAsString')",
    "upper-case FILE scalar": "SELECT FILE('{victim}')",
    "file() inside view()": "SELECT * FROM view(SELECT * FROM file('{victim}', 'LineAsString'))",
    "file() in a UNION": "SELECT 'a' UNION ALL SELECT * FROM file('{victim}', 'LineAsString')",
    "file() in a CTE": "WITH x AS (SELECT * FROM file('{victim}', 'LineAsString')) SELECT * FROM x",
    "file() in a JOIN": "SELECT * FROM numbers(1) AS n JOIN file('{victim}', 'LineAsString') AS f ON 1",
    "file() hidden by a comment": "SELECT * FROM fi/**/le('{victim}', 'LineAsString')",
    "merge() over other databases": "SELECT * FROM merge('system', '^one$')",
}


@pytest.mark.parametrize("attack", sorted(REFUSED))
def test_endpoint_refuses(warehouse: config.Settings, victim: Path, attack: str) -> None:
    code, body = _post(warehouse, REFUSED[attack].format(victim=victim))
    assert code in (400, 403), body
    assert "secret-content" not in json.dumps(body)
    assert victim.read_text() == "secret-content\n"  # not overwritten
    assert not Path(f"{victim}.out").exists()
    assert _table_exists(warehouse, "schema_migrations")
    assert not _table_exists(warehouse, "attacker_table") and not _table_exists(warehouse, "attacker_file")


def test_url_makes_no_outbound_request(warehouse: config.Settings) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(1.0)
    port = listener.getsockname()[1]
    for sql in (
        f"SELECT * FROM url('http://127.0.0.1:{port}/leak', 'LineAsString')",
        f"SELECT * FROM urlCluster('default', 'http://127.0.0.1:{port}/leak')",
        f"SELECT * FROM remoteSecure('127.0.0.1:{port}', system.one)",
    ):
        code, body = _post(warehouse, sql)
        assert code in (400, 403), body
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_time_and_result_limits(warehouse: config.Settings) -> None:
    t0 = time.monotonic()
    code, body = _post(warehouse, "SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) = 0")
    assert code == 400 and "TIMEOUT" in body["error"].upper()
    assert time.monotonic() - t0 < 30
    code, body = _post(warehouse, "SELECT number FROM numbers(200000)")
    assert code == 400 and "TOO_MANY_ROWS" in body["error"]
    # a query cut short leaves nothing behind for the next one (the handle is renewed)
    for _ in range(3):
        assert _post(warehouse, "SELECT number FROM numbers(200000)")[0] == 400
        code, body = _post(warehouse, "SHOW TABLES")
        assert code == 200 and ["schema_migrations"] in body["rows"], body


def test_read_only_statements_still_run(warehouse: config.Settings) -> None:
    for sql in (
        "SHOW TABLES",
        "DESCRIBE TABLE schema_migrations",
        "SHOW CREATE TABLE schema_migrations",
        f"EXISTS TABLE {DB}.schema_migrations",
        "SELECT format('{}-{}', 1, 2), number FROM numbers(3)",
        "WITH v AS (SELECT version FROM schema_migrations) SELECT count() FROM v",
        "EXPLAIN SELECT * FROM schema_migrations",
    ):
        code, body = _post(warehouse, sql)
        assert code == 200, (sql, body)


# --- fleetperf sql ----------------------------------------------------------------------------
def test_fleetperf_sql_sends_the_token_and_is_refused_like_the_endpoint(
    warehouse: config.Settings, victim: Path
) -> None:
    assert sql_client.query(warehouse, "SELECT 1 AS one") == (["one"], [[1]])
    with pytest.raises(sql_client.QueryError, match="file"):
        sql_client.query(warehouse, f"SELECT * FROM file('{victim}', 'LineAsString')")
    assert sql_client.warehouse_call(warehouse, "/stats") == {"batches": 0}


def test_fleetperf_sql_with_the_endpoint_down_stays_read_only(warehouse: config.Settings, victim: Path) -> None:
    down = _settings(warehouse.state_dir, free_port())  # same data path and token, nobody listening
    assert sql_client.query(down, "SELECT count() > 0 FROM schema_migrations")[1] == [[True]]
    for attack in ("file() table function", "file() scalar", "INSERT INTO FUNCTION file", "DROP TABLE", "CREATE TABLE"):
        with pytest.raises(sql_client.QueryError) as refused:
            sql_client.query(down, REFUSED[attack].format(victim=victim))
        assert "secret-content" not in str(refused.value)
    assert victim.read_text() == "secret-content\n"
    assert _table_exists(warehouse, "schema_migrations")
    assert not _table_exists(warehouse, "attacker_table")


def test_read_client_refuses_inserts_and_setting_changes(warehouse: config.Settings) -> None:
    reader = clickhouse.read_client(warehouse)
    with pytest.raises(clickhouse.ReadOnlyError):
        reader.insert("schema_migrations", [["attacker"]], column_names=["version"])
    with pytest.raises(clickhouse.ReadOnlyError):
        reader.command("DROP TABLE schema_migrations")
    with pytest.raises(Exception, match="READONLY|readonly"):
        reader.query("SELECT 1", settings={"readonly": 0})


# --- Superset's connection --------------------------------------------------------------------
def test_superset_uri_goes_through_the_read_only_dialect(warehouse: config.Settings, victim: Path) -> None:
    uri = clickhouse.sqlalchemy_uri(warehouse)
    assert uri.startswith("clickhousedb+fleetperf:///security_test?")
    assert "max_execution_time=3" in uri and "interface=" not in uri
    engine = sqlalchemy.create_engine(uri)
    with engine.connect() as conn:
        assert conn.execute(sqlalchemy.text("SELECT count() > 0 FROM schema_migrations")).scalar() == 1
        for attack in ("file() table function", "file() scalar", "INTO OUTFILE", "DROP TABLE", "CREATE TABLE"):
            with pytest.raises(Exception, match="read-only|READONLY"):
                conn.execute(sqlalchemy.text(REFUSED[attack].format(victim=victim)))
    # Superset's metadata calls (schemas, tables, columns) still work on the restricted path
    inspector = sqlalchemy.inspect(engine)
    assert DB in inspector.get_schema_names()
    assert "schema_migrations" in inspector.get_table_names(schema=DB)
    assert [c["name"] for c in inspector.get_columns("schema_migrations", schema=DB)] == ["version", "applied_at"]
    # SQL Lab runs statements on a raw DB-API cursor: the same refusal
    raw = engine.raw_connection()
    try:
        with pytest.raises(clickhouse.ReadOnlyError):
            raw.cursor().execute(f"SELECT * FROM file('{victim}', 'LineAsString')")
        with pytest.raises(clickhouse.ReadOnlyError):
            raw.cursor().execute(REFUSED["INSERT INTO FUNCTION file"].format(victim=victim))
    finally:
        raw.close()
    engine.dispose()
    assert victim.read_text() == "secret-content\n"


def test_superset_connections_reuse_restricted_clients_that_stay_restricted(
    warehouse: config.Settings, victim: Path
) -> None:
    """Superset opens and closes a connection per chart query (NullPool): the restricted client
    goes back to a bounded idle list and the next connection gets it, still read-only."""
    engine = sqlalchemy.create_engine(clickhouse.sqlalchemy_uri(warehouse), poolclass=sqlalchemy.pool.NullPool)
    clients = []
    for _ in range(3):
        raw = engine.raw_connection()
        try:
            clients.append(raw.driver_connection.client)
            with pytest.raises(clickhouse.ReadOnlyError):
                raw.cursor().execute(REFUSED["INSERT INTO FUNCTION file"].format(victim=victim))
            with pytest.raises(Exception, match="READONLY|readonly"):
                raw.cursor().execute("SELECT 1 SETTINGS readonly = 0")
            cur = raw.cursor()
            cur.execute("SELECT count() > 0 FROM schema_migrations")
            assert cur.fetchall() == [(1,)]
        finally:
            raw.close()
    assert clients[0] is clients[1] is clients[2]  # one client, handed on
    # a query stopped by the read limits (max_execution_time 3 s here) leaves the client usable
    raw = engine.raw_connection()
    try:
        with pytest.raises(Exception, match="TIMEOUT|[Tt]imeout"):
            raw.cursor().execute("SELECT count() FROM numbers(100000000000) WHERE sipHash64(number) = 0")
    finally:
        raw.close()
    raw = engine.raw_connection()
    try:
        assert raw.driver_connection.client is clients[0]
        cur = raw.cursor()
        cur.execute("SELECT 42")
        assert cur.fetchall() == [(42,)]
    finally:
        raw.close()
    # two at once are two clients; a bounded number waits for the next connection
    first, second = engine.raw_connection(), engine.raw_connection()
    assert first.driver_connection.client is not second.driver_connection.client
    both = (first.driver_connection.client, second.driver_connection.client)
    pool = clickhouse._IDLE_CLIENTS
    keep, pool.keep = pool.keep, 1
    try:
        first.close()
        second.close()
        # this engine's idle list: one of the two kept, the other closed
        idle = next(clients for clients in pool._idle.values() if any(c in clients for c in both))
        assert len(idle) == 1 and idle[0] in both
    finally:
        pool.keep = keep
    engine.dispose()
    assert victim.read_text() == "secret-content\n"


def test_superset_connection_mutator_reroutes_any_embedded_uri(warehouse: config.Settings) -> None:
    for text in (
        f"clickhousedb://?interface=chdb&path={warehouse.chdb_path}",
        f"clickhousedb+connect:///{DB}?interface=chdb&path={warehouse.chdb_path}",
    ):
        url, params = clickhouse.superset_connection_mutator(sqlalchemy.engine.make_url(text), {}, "admin", None, None)
        assert url.drivername == "clickhousedb+fleetperf" and "interface" not in url.query
    server = sqlalchemy.engine.make_url("clickhousedb://reader:pw@ch.example:8443/fleetperf")
    assert clickhouse.superset_connection_mutator(server, {})[0] == server


def test_superset_uri_on_a_server_uses_the_read_user_and_readonly(tmp_path: Path) -> None:
    (tmp_path / "read_pw").write_text("s3cret/pw\n")
    s = config.load(
        {
            "FLEETPERF__CLICKHOUSE__URL": "https://writer@ch.example:8443",
            "FLEETPERF__CLICKHOUSE__READ_URL": "https://reader@ch.example:8443",
            "FLEETPERF__CLICKHOUSE__READ_PASSWORD_FILE": str(tmp_path / "read_pw"),
        }
    )
    url = sqlalchemy.engine.make_url(clickhouse.sqlalchemy_uri(s))
    assert (url.username, url.password, url.host, url.port) == ("reader", "s3cret/pw", "ch.example", 8443)
    assert url.query["readonly"] == "1" and url.query["secure"] == "true"


def _load_superset_config(monkeypatch: pytest.MonkeyPatch, state: Path) -> Any:
    from fleetperf.warehouse import main

    monkeypatch.setenv("FLEETPERF__STATE__DIR", str(state))
    monkeypatch.setattr(main, "_SETTINGS", None)
    spec = importlib.util.spec_from_file_location(
        "superset_config_test", PACKAGE_ROOT / "warehouse" / "superset_config.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_superset_config_has_no_constant_secret_and_security_headers_on(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    with pytest.raises(credentials.CredentialError):  # no key yet: Superset does not start
        _load_superset_config(monkeypatch, state)
    s = config.load({"FLEETPERF__STATE__DIR": str(state)})
    key = credentials.superset_secret_key(s, create=True)
    module = _load_superset_config(monkeypatch, state)
    assert module.SECRET_KEY == key and len(key) >= 48
    assert module.TALISMAN_ENABLED is True and module.WTF_CSRF_ENABLED is True
    # the browser may load and call this server only (Superset's default policy allows its page's
    # tracking pixel, apachesuperset.gateway.scarf.sh, and map tiles from third parties)
    policy = module.TALISMAN_CONFIG["content_security_policy"]
    sources = [v for d in policy.values() for v in ([d] if isinstance(d, str) else d)]
    assert sources and not [v for v in sources if "." in v or "//" in v], policy
    assert policy["default-src"] == ["'self'"] and policy["object-src"] == "'none'"
    assert module.DB_CONNECTION_MUTATOR is clickhouse.superset_connection_mutator
    assert stat.S_IMODE((state / "secrets" / "superset_secret_key").stat().st_mode) == 0o600
    assert stat.S_IMODE((state / "superset").stat().st_mode) == 0o700


class _FakeRun:
    """Stands in for subprocess.run in superset_setup: records argv and stdin."""

    def __init__(self) -> None:
        self.calls: list[tuple[list[str], str | None]] = []

    def __call__(self, argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess:
        self.calls.append((list(argv), kwargs.get("input")))
        return subprocess.CompletedProcess(argv, 0, "Success", "")


def test_superset_admin_password_generated_once_stored_0600_never_on_a_command_line(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    state = tmp_path / "state"
    (state / "superset").mkdir(parents=True)
    (state / "superset" / "secret_key").write_text("old world-readable key")  # an earlier version's
    s = config.load({"FLEETPERF__STATE__DIR": str(state)})
    fake = _FakeRun()
    monkeypatch.setattr(superset_setup.subprocess, "run", fake)
    monkeypatch.delenv(credentials.ADMIN_PASSWORD_ENV, raising=False)
    superset_setup.prepare(s, {})
    password = credentials.superset_admin_password(s)
    assert len(password) >= 20 and password != "admin"
    assert stat.S_IMODE(credentials.superset_admin_password_path(s).stat().st_mode) == 0o600
    assert password in capsys.readouterr().out  # shown once
    assert not (state / "superset" / "secret_key").exists()
    assert all(password not in " ".join(argv) for argv, _ in fake.calls)
    assert [json.loads(stdin)["password"] for _, stdin in fake.calls if stdin] == [password]
    # the next start changes nothing and shows nothing
    fake.calls.clear()
    superset_setup.prepare(s, {})
    assert credentials.superset_admin_password(s) == password
    assert not [stdin for _, stdin in fake.calls if stdin] and password not in capsys.readouterr().out
    # the environment wins and is applied
    monkeypatch.setenv(credentials.ADMIN_PASSWORD_ENV, "chosen-by-the-operator")
    superset_setup.prepare(s, {})
    assert credentials.superset_admin_password(s) == "chosen-by-the-operator"
    assert [json.loads(stdin)["password"] for _, stdin in fake.calls if stdin] == ["chosen-by-the-operator"]


def test_no_default_password_in_the_settings() -> None:
    assert "admin_password" not in config.load({})["superset"]


# --- local stack, installer, compose ----------------------------------------------------------
def test_local_broker_does_not_create_topics(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    s = config.load({"FLEETPERF__STATE__DIR": str(tmp_path)})
    monkeypatch.setattr(
        "fleetperf.stack.local.subprocess.run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "x", "")
    )
    stack = LocalStack(s)
    stack._write_kafka_properties()
    props = stack._kafka_properties_path().read_text().splitlines()
    assert "auto.create.topics.enable=false" in props
    assert not [p for p in props if p.startswith("auto.create.topics.enable=") and p.endswith("true")]


def test_apt_installs_only_what_it_was_asked_and_waits_for_dpkgs_lock(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(install, "APT_LOCK_FILE", str(tmp_path / "install.lock"))  # root-only in real use
    ran: list[list[str]] = []
    installed: set[str] = set()

    def run(cmd: list[str], **_: Any) -> subprocess.CompletedProcess:
        ran.append(cmd)
        if cmd[0] == "dpkg-query":  # what dpkg-query -W -f=${Status} prints
            status = "install ok installed" if cmd[-1] in installed else "unknown ok not-installed"
            return subprocess.CompletedProcess(cmd, 0, status, "")
        return subprocess.CompletedProcess(cmd, 0, "", "")

    monkeypatch.setattr(install.subprocess, "run", run)
    monkeypatch.setattr("shutil.which", lambda name: "/usr/bin/apt-get")
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    assert install._apt("the sadc tests need sysstat", "sysstat") is None
    wait = ["-o", f"DPkg::Lock::Timeout={install.APT_LOCK_WAIT_S}"]
    assert ran[1:] == [
        ["apt-get", *wait, "update", "-qq"],
        ["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", "sysstat"],
    ]
    # another run installed what this one waited for: nothing left to do; a part installed: the rest
    installed.add("chromium")
    ran.clear()
    install._apt("the dashboard tests need Chromium", "chromium")
    assert [c[0] for c in ran] == ["dpkg-query"]
    ran.clear()
    install._apt("the dashboard tests need Chromium", "chromium", "chromium-driver")
    assert ran[-1] == ["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", "chromium-driver"]


def test_dpkg_status_is_read_from_dpkg() -> None:
    if not Path("/usr/bin/dpkg-query").exists():
        pytest.skip("not a Debian machine: no dpkg-query")
    assert install._deb_installed("dpkg")
    assert not install._deb_installed("no-such-package-fleetperf")


COMPOSE = REPO_ROOT / "docker-compose.yml"


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def test_compose_matches_the_local_stack(compose: dict[str, Any]) -> None:
    s = config.load({})
    services = compose["services"]
    pom = (PACKAGE_ROOT / "stack" / "downloads" / "kafka-broker.pom.xml").read_text()
    assert f"<artifactId>kafka_2.13</artifactId><version>{s['kafka']['version']}</version>" in pom
    assert services["kafka"]["image"] == f"apache/kafka:{s['kafka']['version']}"
    assert services["registry"]["image"] == f"apicurio/apicurio-registry:{s['registry']['version']}"
    assert services["kafka"]["environment"]["KAFKA_AUTO_CREATE_TOPICS_ENABLE"] == "false"
    # the job's command line is the local stack's (stack/local.py LocalStack.flink): same heap and JVM
    # flags in the same order, the job jar, the one settings file under the state directory
    local = LocalStack(config.load({"FLEETPERF__STATE__DIR": "/var/lib/fleetperf"})).flink().argv
    jar = local.index("-jar")
    command = services["flink-job"]["command"]
    assert len(JAVA_OPENS) == 11
    options = jvm_options(s["flink"])
    assert command[:jar] == local[:jar] == ["java", f"-Xmx{s['flink']['heap']}", *options, *JAVA_OPENS]
    assert command[jar : jar + 2] == ["-jar", "/jobs/fleetperf-stream-jobs.jar"]
    assert command[jar + 2 :] == local[jar + 2 :] == ["--settings", "/var/lib/fleetperf/job-settings.json"]
    # topics and schemas come from config/fleetperf.toml through the project's own code
    text = COMPOSE.read_text()
    assert "ensure_topics(s)" in text and "register_schemas(s)" in text and "write_job_settings()" in text
    assert not [t.name for t in s.topics.values() if t.name in text]


def test_compose_publishes_only_superset_on_the_chosen_address(compose: dict[str, Any]) -> None:
    published = {name: svc["ports"] for name, svc in compose["services"].items() if svc.get("ports")}
    default = {name for name in published if not compose["services"][name].get("profiles")}
    assert default == {"warehouse"}
    assert published["warehouse"] == ["${FLEETPERF_BIND:-127.0.0.1}:18088:18088"]
    for name, ports in published.items():
        for port in ports:
            assert "0.0.0.0" not in str(port)
            address = str(port).replace("${FLEETPERF_BIND:-127.0.0.1}", "127.0.0.1")
            assert address.count(":") == 2, f"{name} publishes {port} without a host address"
            if name != "warehouse":
                assert str(port).startswith("127.0.0.1:"), f"{name}: {port}"
    assert "FLEETPERF__WAREHOUSE__HOST" in compose["services"]["warehouse"]["environment"]
    assert compose["services"]["warehouse"]["environment"]["FLEETPERF__WAREHOUSE__HOST"] == "127.0.0.1"


def test_compose_has_no_literal_secrets(compose: dict[str, Any]) -> None:
    for name, svc in compose["services"].items():
        env = svc.get("environment") or {}
        for key, value in env.items():
            if any(word in key.upper() for word in ("PASSWORD", "SECRET", "TOKEN")) and not key.endswith("_FILE"):
                assert str(value).startswith("${"), f"{name}.{key} is a literal"
            if key.endswith("_URL") and "@" in str(value):
                assert ":" not in str(value).split("//", 1)[1].split("@", 1)[0], f"{name}.{key} carries a password"
        for arg in svc.get("command") or []:
            assert "password" not in str(arg).lower()
    assert set(compose["secrets"]) == {"clickhouse_writer_password", "clickhouse_read_password"}
    assert all(set(spec) == {"environment"} for spec in compose["secrets"].values())


def test_sql_endpoint_is_restricted_by_default_settings() -> None:
    s = config.load({})
    assert s["warehouse"]["host"] == "127.0.0.1" and s["superset"]["host"] == "127.0.0.1"
    assert s["kafka"]["host"] == "127.0.0.1" and s["registry"]["host"] == "127.0.0.1"


def test_threaded_queries_share_the_read_only_handle(warehouse: config.Settings) -> None:
    results: list[int] = []

    def one() -> None:
        results.append(_post(warehouse, "SELECT count() FROM numbers(1000)")[0])

    threads = [threading.Thread(target=one) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 4


def test_kafka_and_registry_clients_take_tls_sasl_and_auth_from_the_settings(tmp_path: Path) -> None:
    from fleetperf.kafka_avro import kafka_client_config, registry_config

    (tmp_path / "kafka_pw").write_text("kafka-secret\n")
    (tmp_path / "registry_pw").write_text("registry-secret\n")
    s = config.load(
        {
            "FLEETPERF__KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
            "FLEETPERF__KAFKA__SASL_MECHANISM": "SCRAM-SHA-512",
            "FLEETPERF__KAFKA__SASL_USERNAME": "ingest",
            "FLEETPERF__KAFKA__SASL_PASSWORD_FILE": str(tmp_path / "kafka_pw"),
            "FLEETPERF__KAFKA__SSL_CA_LOCATION": "/etc/ca.pem",
            "FLEETPERF__REGISTRY__URL": "https://registry.example:8443/apis/ccompat/v7",
            "FLEETPERF__REGISTRY__BASIC_AUTH_USER": "ingest",
            "FLEETPERF__REGISTRY__BASIC_AUTH_PASSWORD_FILE": str(tmp_path / "registry_pw"),
        }
    )
    assert kafka_client_config(s) == {
        "bootstrap.servers": s.bootstrap,
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "ingest",
        "sasl.password": "kafka-secret",
        "ssl.ca.location": "/etc/ca.pem",
    }
    assert registry_config(s) == {
        "url": "https://registry.example:8443/apis/ccompat/v7",
        "basic.auth.user.info": "ingest:registry-secret",
    }
    # the local default stays plain
    assert kafka_client_config(config.load({})) == {"bootstrap.servers": "127.0.0.1:19092"}
    assert registry_config(config.load({})) == {"url": config.load({}).registry_url}
