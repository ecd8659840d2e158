from __future__ import annotations

from pathlib import Path

from fleetperf import config
from fleetperf.warehouse.clickhouse import statements


def test_environment_overrides_keep_types() -> None:
    s = config.load(
        {
            "FLEETPERF__KAFKA__PORT": "29092",
            "FLEETPERF__STATE__DIR": "/tmp/x",
            "FLEETPERF__WAREHOUSE__BATCH_SECONDS": "0.5",
        }
    )
    assert s["kafka"]["port"] == 29092
    assert s.bootstrap == "127.0.0.1:29092"
    assert s.state_dir == Path("/tmp/x")
    assert s["warehouse"]["batch_seconds"] == 0.5


def test_every_topic_has_a_schema_and_a_table_in_sql() -> None:
    s = config.load({})
    ddl = "\n".join(p.read_text() for p in config.SQL_DIR.glob("*.sql"))
    for topic in s.topics.values():
        assert topic.schema_path.exists()
        assert f"CREATE TABLE IF NOT EXISTS {topic.table}" in ddl
        assert topic.subject == f"{topic.name}-value"


def test_statement_split_ignores_comments() -> None:
    sql = "-- a; comment\nCREATE TABLE a (x Int8) ENGINE = Memory;\n\nSELECT 'x;y';\n"
    assert statements(sql) == ["CREATE TABLE a (x Int8) ENGINE = Memory", "SELECT 'x;y'"]
