"""ClickHouse access for embedded chDB or a real server, and the ordered, idempotent migrations of sql/."""

from __future__ import annotations

import re
from urllib.parse import urlparse

import clickhouse_connect
from clickhouse_connect.driver.client import Client

from fleetperf.config import SQL_DIR, Settings


def client(settings: Settings, database: str | None = None) -> Client:
    url = settings["clickhouse"]["url"]
    if url == "chdb":
        settings.chdb_path.mkdir(parents=True, exist_ok=True)
        return clickhouse_connect.get_client(interface="chdb", path=str(settings.chdb_path), database=database)
    parsed = urlparse(url)
    return clickhouse_connect.get_client(
        host=parsed.hostname,
        port=parsed.port or 8123,
        username=parsed.username or "default",
        password=parsed.password or "",
        database=database or "default",
        interface="https" if parsed.scheme == "https" else "http",
    )


def sqlalchemy_uri(settings: Settings) -> str:
    """The URI Superset uses for the same database."""
    db = settings["clickhouse"]["database"]
    url = settings["clickhouse"]["url"]
    if url == "chdb":
        return f"clickhousedb:///{db}?interface=chdb&path={settings.chdb_path}"
    parsed = urlparse(url)
    auth = f"{parsed.username or 'default'}:{parsed.password or ''}@"
    return f"clickhousedb://{auth}{parsed.hostname}:{parsed.port or 8123}/{db}"


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
