"""Ad-hoc SQL against the warehouse: through the warehouse's SQL endpoint when ClickHouse is
embedded (only that process may open chDB), straight to the server otherwise. Every path is
read-only (clickhouse.read_client): the endpoint's token and checks, readonly=1 and the statement
check when the CLI opens the embedded engine itself, the read-only user and readonly=1 on a server."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from fleetperf.config import Settings
from fleetperf.warehouse import credentials


class QueryError(RuntimeError):
    pass


def _token(settings: Settings, admin: bool = False) -> str:
    try:
        return credentials.admin_token(settings) if admin else credentials.sql_token(settings)
    except (credentials.CredentialError, OSError) as exc:
        raise QueryError(f"no warehouse token: {exc}") from None


def _error_of(exc: urllib.error.HTTPError) -> str:
    try:
        return str(json.load(exc).get("error", exc))
    except ValueError:
        return str(exc)


def query(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    if not settings.embedded_clickhouse:
        return _query_read_client(settings, sql)
    try:
        token = _token(settings)
    except QueryError:
        # no token yet: no warehouse has ever started here; the direct path says what is missing
        return _query_embedded_directly(settings, sql)
    request = urllib.request.Request(
        f"{settings.query_url}/query",
        data=sql.encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/sql"},
    )
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        raise QueryError(_error_of(exc)) from None
    except OSError:
        return _query_embedded_directly(settings, sql)
    return body["columns"], body["rows"]


def _query_read_client(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    from fleetperf.warehouse.clickhouse import ReadOnlyError, read_client

    try:
        result = read_client(settings).query(sql)
    except ReadOnlyError as exc:
        raise QueryError(str(exc)) from None
    return list(result.column_names), [list(r) for r in result.result_rows]


def _query_embedded_directly(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    """No warehouse process answers: open the embedded data path here (only one process may),
    with the same read-only restrictions as the endpoint."""
    if not settings.chdb_path.exists():
        raise QueryError(
            f"no warehouse at {settings.query_url} and no data under {settings.chdb_path}; "
            "start the stack with ./fleetperf up"
        )
    try:
        return _query_read_client(settings, sql)
    except QueryError:
        raise
    except Exception as exc:  # noqa: BLE001 - chDB reports the lock like any other error
        if "lock" in str(exc).lower():
            raise QueryError(
                f"the embedded ClickHouse data path {settings.chdb_path} is held by another process, but the "
                f"warehouse SQL endpoint {settings.query_url} does not answer: is the warehouse still starting? "
                "Check ./fleetperf status, or stop that process"
            ) from None
        raise QueryError(str(exc)) from None


def warehouse_call(settings: Settings, path: str, method: str = "GET") -> Any:  # noqa: ANN401
    """A call to the warehouse endpoint; the rollup rebuild (a write) takes the admin token."""
    token = _token(settings, admin=path.startswith("/rollups"))
    request = urllib.request.Request(
        f"{settings.query_url}{path}", method=method, headers={"Authorization": f"Bearer {token}"}
    )
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        raise QueryError(_error_of(exc)) from None
    except OSError as exc:
        raise QueryError(f"warehouse not reachable at {settings.query_url} ({exc}); is the stack up?") from None


def scalar(settings: Settings, sql: str) -> Any:
    return query(settings, sql)[1][0][0]


def wait_stable(settings: Settings, sql: str, timeout: float, settle: float = 6.0, minimum: int = 1) -> int:
    """Polls a count query until it is >= minimum and unchanged for `settle` seconds."""
    deadline = time.monotonic() + timeout
    last, since = -1, time.monotonic()
    while time.monotonic() < deadline:
        try:
            value = int(scalar(settings, sql))
        except QueryError:
            value = -1
        if value != last:
            last, since = value, time.monotonic()
        elif value >= minimum and time.monotonic() - since >= settle:
            return value
        time.sleep(1.0)
    return last
