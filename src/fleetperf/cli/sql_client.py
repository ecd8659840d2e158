"""Ad-hoc SQL against the warehouse: through the warehouse's SQL endpoint when ClickHouse is
embedded (only that process may open chDB), straight to the server otherwise."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from fleetperf.config import Settings


class QueryError(RuntimeError):
    pass


def query(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    if not settings.embedded_clickhouse:
        from fleetperf.warehouse.clickhouse import client

        result = client(settings, settings["clickhouse"]["database"]).query(sql)
        return list(result.column_names), [list(r) for r in result.result_rows]
    request = urllib.request.Request(f"{settings.query_url}/query", data=sql.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        raise QueryError(json.load(exc).get("error", str(exc))) from None
    except OSError:
        return _query_embedded_directly(settings, sql)
    return body["columns"], body["rows"]


def _query_embedded_directly(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    """No warehouse process answers: open the embedded data path here (only one process may)."""
    from fleetperf.warehouse.clickhouse import client

    if not settings.chdb_path.exists():
        raise QueryError(
            f"no warehouse at {settings.query_url} and no data under {settings.chdb_path}; "
            "start the stack with ./fleetperf up"
        )
    try:
        result = client(settings, settings["clickhouse"]["database"]).query(sql)
    except Exception as exc:  # noqa: BLE001 - chDB reports the lock like any other error
        if "lock" in str(exc).lower():
            raise QueryError(
                f"the embedded ClickHouse data path {settings.chdb_path} is held by another process, but the "
                f"warehouse SQL endpoint {settings.query_url} does not answer: is the warehouse still starting? "
                "Check ./fleetperf status, or stop that process"
            ) from None
        raise QueryError(str(exc)) from None
    return list(result.column_names), [list(r) for r in result.result_rows]


def warehouse_call(settings: Settings, path: str, method: str = "GET") -> Any:
    request = urllib.request.Request(f"{settings.query_url}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)
    except urllib.error.HTTPError as exc:
        raise QueryError(json.load(exc).get("error", str(exc))) from None
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
