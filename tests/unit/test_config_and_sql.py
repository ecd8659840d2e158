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


def test_jvm_options_reach_the_local_stacks_broker_and_job_and_can_be_emptied() -> None:
    from fleetperf.stack.local import LocalStack

    shipped = config.load({})
    assert shipped["kafka"]["jvm_options"] == shipped["flink"]["jvm_options"] == "-XX:TieredStopAtLevel=1"
    stack = LocalStack(shipped)
    for argv in (stack.kafka().argv, stack.flink().argv):
        assert argv[:3] == ["java", argv[1], "-XX:TieredStopAtLevel=1"] and argv[1].startswith("-Xmx")
    # "" = the JVM's defaults (C2 back); several options split on spaces
    plain = LocalStack(
        config.load({"FLEETPERF__KAFKA__JVM_OPTIONS": "", "FLEETPERF__FLINK__JVM_OPTIONS": "-XX:+UseSerialGC -Xss1m"})
    )
    assert not [a for a in plain.kafka().argv if a.startswith("-XX:")]
    assert plain.flink().argv[2:4] == ["-XX:+UseSerialGC", "-Xss1m"]
