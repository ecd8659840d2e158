"""Ad-hoc SQL against the warehouse: through the warehouse's SQL endpoint when ClickHouse is
embedded (only that process may open chDB), straight to the server otherwise."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any

from core.config import Settings


class QueryError(RuntimeError):
    pass


def query(settings: Settings, sql: str) -> tuple[list[str], list[list[Any]]]:
    if not settings.embedded_clickhouse:
        from warehouse.clickhouse import client

        result = client(settings, settings["clickhouse"]["database"]).query(sql)
        return list(result.column_names), [list(r) for r in result.result_rows]
    request = urllib.request.Request(f"{settings.query_url}/query", data=sql.encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        raise QueryError(json.load(exc).get("error", str(exc))) from None
    except OSError as exc:
        raise QueryError(f"warehouse not reachable at {settings.query_url} ({exc}); is the stack up?") from None
    return body["columns"], body["rows"]


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
