"""Issue 22 against the running stack: Superset's SQL Lab API, its login, and the SQL endpoint as
started by the warehouse process. (The same refusals are unit-tested in-process in
tests/unit/test_security.py; here they go through Superset's own request path.)"""

from __future__ import annotations

import secrets
import socket
from pathlib import Path
from typing import Any

import pytest
import requests

from fleetperf.cli.sql_client import QueryError, query
from fleetperf.config import Settings
from fleetperf.warehouse.credentials import superset_admin_password

pytestmark = pytest.mark.integration


def _session(stack: Settings, password: str) -> requests.Session:
    base = stack.superset_url
    session = requests.Session()
    login = session.post(
        f"{base}/api/v1/security/login",
        json={"username": stack["superset"]["admin_user"], "password": password, "provider": "db"},
        timeout=30,
    )
    login.raise_for_status()
    session.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
    csrf = session.get(f"{base}/api/v1/security/csrf_token/", timeout=30).json()["result"]
    session.headers.update({"X-CSRFToken": csrf, "Referer": base})
    return session


@pytest.fixture(scope="module")
def sqllab(stack: Settings) -> tuple[requests.Session, int]:
    session = _session(stack, superset_admin_password(stack))
    databases = session.get(f"{stack.superset_url}/api/v1/database/", timeout=30).json()["result"]
    database_id = next(d["id"] for d in databases if d["database_name"] == "fleetperf")
    return session, database_id


def _execute(stack: Settings, sqllab: tuple[requests.Session, int], sql: str) -> tuple[int, Any]:
    session, database_id = sqllab
    response = session.post(
        f"{stack.superset_url}/api/v1/sqllab/execute/",
        json={
            "database_id": database_id,
            "sql": sql,
            "runAsync": False,
            "schema": stack["clickhouse"]["database"],
            "tab": "security test",
            "client_id": secrets.token_hex(5),
        },
        timeout=120,
    )
    try:
        return response.status_code, response.json()
    except ValueError:
        return response.status_code, response.text


def test_default_admin_password_is_refused(stack: Settings) -> None:
    response = requests.post(
        f"{stack.superset_url}/api/v1/security/login",
        json={"username": "admin", "password": "admin", "provider": "db"},
        timeout=30,
    )
    assert response.status_code == 401


def test_superset_database_uses_the_read_only_dialect(stack: Settings, sqllab: tuple[requests.Session, int]) -> None:
    session, database_id = sqllab
    info = session.get(f"{stack.superset_url}/api/v1/database/{database_id}", timeout=30).json()["result"]
    assert (info["backend"], info["driver"]) == ("clickhousedb", "fleetperf")  # clickhousedb+fleetperf://


def test_sqllab_runs_a_select(stack: Settings, sqllab: tuple[requests.Session, int]) -> None:
    code, body = _execute(stack, sqllab, "SELECT count() AS n FROM schema_migrations")
    assert code == 200, body
    assert body["data"][0]["n"] > 0


@pytest.mark.parametrize(
    "sql",
    [
        "SELECT * FROM file('/etc/passwd', 'LineAsString')",
        "SELECT file('/etc/passwd')",
        "SELECT 1 INTO OUTFILE '{marker}'",
        "INSERT INTO FUNCTION file('{marker}', 'LineAsString') SELECT 'x'",
        "DROP TABLE schema_migrations",
        "CREATE TABLE attacker (x Int8) ENGINE = Memory",
    ],
)
def test_sqllab_refuses(stack: Settings, sqllab: tuple[requests.Session, int], tmp_path: Path, sql: str) -> None:
    marker = tmp_path / "written-by-sqllab"
    code, body = _execute(stack, sqllab, sql.format(marker=marker))
    assert code != 200 or not isinstance(body, dict) or body.get("status") != "success", body
    assert "root:" not in str(body)
    assert not marker.exists()
    _, rows = query(stack, "EXISTS TABLE schema_migrations")
    assert rows == [[1]]


def test_sqllab_url_makes_no_outbound_request(stack: Settings, sqllab: tuple[requests.Session, int]) -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(2.0)
    port = listener.getsockname()[1]
    code, body = _execute(stack, sqllab, f"SELECT * FROM url('http://127.0.0.1:{port}/leak', 'LineAsString')")
    assert code != 200 or not isinstance(body, dict) or body.get("status") != "success", body
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_endpoint_of_the_running_warehouse_refuses_without_token_and_foreign_host(stack: Settings) -> None:
    url = f"{stack.query_url}/query"
    assert requests.post(url, data="SELECT 1", headers={"Content-Type": "text/plain"}, timeout=30).status_code == 401
    headers = {"Host": "rebind.evil.example", "Content-Type": "application/sql"}
    assert requests.post(url, data="SELECT 1", headers=headers, timeout=30).status_code == 403
    with pytest.raises(QueryError):
        query(stack, "SELECT * FROM file('/etc/passwd', 'LineAsString')")


def test_superset_sends_security_headers(stack: Settings) -> None:
    response = requests.get(f"{stack.superset_url}/login/", timeout=30)
    assert "content-security-policy" in {k.lower() for k in response.headers}
    assert response.headers.get("X-Frame-Options") or "frame-ancestors" in response.headers.get(
        "Content-Security-Policy", ""
    )
    # the browser may reach this server only: Superset's default policy lets its page load a
    # tracking pixel (apachesuperset.gateway.scarf.sh) and tiles/maps from third parties
    policy = response.headers["Content-Security-Policy"]
    sources = {s for d in policy.split(";") for s in d.split()[1:]}
    assert not [s for s in sources if "." in s or s.startswith("http")], policy
