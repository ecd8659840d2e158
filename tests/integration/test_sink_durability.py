"""The sink's consumer loop against the real stack (issue 23 item 4): a registry outage while
messages flow dead-letters nothing, commits nothing and every row arrives once the registry is
back; a replay of the whole topic set (the group's offsets reset to the start) leaves every count,
sum and rollup as it was. The oracle is a fault-free sink run into another database."""

from __future__ import annotations

import os
import threading
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition

from fleetperf import config
from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.kafka_avro import kafka_client_config
from fleetperf.stack.local import LocalStack
from fleetperf.warehouse.clickhouse import migrate
from fleetperf.warehouse.sink import Sink

pytestmark = pytest.mark.integration

# This test's data lies on one day no other test writes (its simulated files, 2026-06-01): the
# checks read that day only. The stack is shared by the whole suite, and the Flink job may still
# finalise another test's windows meanwhile (a followed stream that never ended becomes final
# `stream_retain_seconds` after it went quiet): a CI run saw 3 such final windows reach the clean
# sink after the faulty one had stopped, in every rollup of the whole table.
DAY = "2026-06-01"
# What a fault-free run into another database must equal: view -> (expression, time column). Sums
# in Decimal: a float sum depends on the order rows are read in, which batching changes; the
# rollups' averages rounded first for the same reason (merged avg states).
CHECKS: dict[str, tuple[str, str | None]] = {
    "cpu_samples_v": ("count(), sum(toDecimal128(user_pct, 6)), sum(toDecimal128(ifNull(steal_pct, 0), 6))", "ts"),
    "nmon_values_v": ("count(), sum(toDecimal128(ifNull(value, 0), 6))", "ts"),
    "host_configs FINAL": ("count()", "ts"),
    "derived_metrics_v": ("count(), sum(toDecimal128(value, 9))", "window_start"),
    # the rollups are fed by materialized views on every insert: a double insert shows here
    "metrics_hourly_v": (
        "count(), sum(windows), sum(toDecimal128(round(avg_value, 4), 4)), sum(toDecimal128(max_value, 6))",
        "hour",
    ),
    "metrics_daily_v": ("count(), sum(windows), sum(toDecimal128(round(avg_value, 4), 4))", "day"),
    "dead_letters FINAL": ("count()", None),  # the sink's own: none from this test's messages
}
# Within one database a replay must not add a single row, merged or not (the raw tables without
# FINAL: a duplicate stays visible there until a background merge). sink_batches: the ranges that
# begin before the partitions' ends seen when the replay's reference was taken (`_ranges_before`).
RAW: dict[str, tuple[str, str | None]] = {
    "derived_metrics": ("count()", "window_start"),
    "cpu_samples": ("count()", "ts"),
    "nmon_values_raw": ("count()", "ts"),  # sql/033: every stored value, unmerged
    "dead_letters": ("count()", None),
}


def _local(settings: Settings, database: str, group: str, embedded_path: Path) -> Settings:
    env = {
        **os.environ,
        "FLEETPERF__STATE__DIR": str(embedded_path),
        "FLEETPERF__CLICKHOUSE__DATABASE": database,
        "FLEETPERF__WAREHOUSE__GROUP_ID": group,
    }
    return config.load(env)


def _start(local: Settings, ch: Any) -> tuple[Sink, threading.Thread]:  # noqa: ANN401
    sink = Sink(local, ch)
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    return sink, thread


def _until_caught_up(sink: Sink, limit: float = 240) -> None:
    deadline = time.monotonic() + limit
    idle_rounds, last = 0, -1
    while idle_rounds < 4:  # until the consumer has caught up and nothing more arrives
        assert time.monotonic() < deadline, f"sink did not catch up: {sink.stats()}"
        time.sleep(1.5)
        written = sum(sink.rows_written.values())
        caught_up = sink.caught_up
        idle_rounds = idle_rounds + 1 if written == last and caught_up else 0
        last = written


def _stop(sink: Sink, thread: threading.Thread) -> None:
    sink.stop()
    thread.join(timeout=60)
    assert not thread.is_alive()


def _totals(ch: Any, checks: dict[str, tuple[str, str | None]] = CHECKS) -> dict[str, Any]:  # noqa: ANN401
    totals = {}
    for view, (expr, column) in checks.items():
        where = f" WHERE toDate({column}) = toDate('{DAY}')" if column else ""
        totals[view] = ch.query(f"SELECT {expr} FROM {view}{where}").result_rows
    return totals


def _ranges_before(ch: Any, ends: dict[str, int]) -> int:  # noqa: ANN401
    """sink_batches rows (unmerged) of ranges that begin before `ends` ('topic/partition' -> the
    group's committed offset): a replay cuts exactly these again from the table and must add none;
    what lies beyond came later."""
    cond = " OR ".join(
        f"(topic = '{key.rsplit('/', 1)[0]}' AND partition = {key.rsplit('/', 1)[1]} AND first_offset < {end})"
        for key, end in ends.items()
    )
    return int(ch.query(f"SELECT countIf({cond or 'false'}) FROM sink_batches").result_rows[0][0])


def _partitions(settings: Settings) -> list[TopicPartition]:
    probe = Consumer({**kafka_client_config(settings), "group.id": "durability-probe"})
    try:
        meta = probe.list_topics(timeout=30)
        return [
            TopicPartition(t.name, p)
            for t in settings.topics.values()
            for p in (meta.topics[t.name].partitions if t.name in meta.topics else {})
        ]
    finally:
        probe.close()


def _committed(settings: Settings, group: str, partitions: list[TopicPartition]) -> dict[str, int]:
    consumer = Consumer({**kafka_client_config(settings), "group.id": group, "enable.auto.commit": False})
    try:
        return {f"{tp.topic}/{tp.partition}": tp.offset for tp in consumer.committed(partitions, timeout=30)}
    finally:
        consumer.close()


def _reset_to_start(settings: Settings, group: str, partitions: list[TopicPartition]) -> None:
    """What `kafka-consumer-groups --reset-offsets --to-earliest` does, for an idle group."""
    consumer = Consumer({**kafka_client_config(settings), "group.id": group, "enable.auto.commit": False})
    try:
        start = []
        for tp in partitions:
            low, _high = consumer.get_watermark_offsets(tp, timeout=30)
            start.append(TopicPartition(tp.topic, tp.partition, low))
        consumer.commit(offsets=start, asynchronous=False)
    finally:
        consumer.close()


def _flink_quiet(settings: Settings, partitions: list[TopicPartition], quiet_s: float = 20, limit: float = 240) -> None:
    """Waits until no topic grows for quiet_s: the job has emitted its final windows."""
    probe = Consumer({**kafka_client_config(settings), "group.id": "durability-probe"})
    try:
        deadline = time.monotonic() + limit
        last, since = None, time.monotonic()
        while time.monotonic() - since < quiet_s:
            assert time.monotonic() < deadline, "the Flink job kept emitting"
            marks = [probe.get_watermark_offsets(tp, timeout=30, cached=False)[1] for tp in partitions]
            if marks != last:
                last, since = marks, time.monotonic()
            time.sleep(2)
    finally:
        probe.close()


def test_registry_outage_loses_nothing_and_a_replay_changes_nothing(
    stack: Settings, embedded_path: Path, tmp_path: Path
) -> None:
    local_stack = LocalStack(stack)
    registry = local_stack.registry()
    if registry.pid() is None:
        pytest.skip("the registry is not a local process here (container provider)")
    files = simulate(
        tmp_path, hosts=3, start=datetime(2026, 6, 1, 12, 0), duration=timedelta(minutes=20), interval=10, seed=23
    )
    assert ingest(stack, [str(f) for f in files], UTC, progress=False).errors == 0
    partitions = _partitions(stack)
    _flink_quiet(stack, partitions)

    # the registry goes away before the sink has seen a single schema id
    registry.stop()
    faulty = _local(stack, "durability_fault", "durability-fault", embedded_path)
    ch, _ = migrate(faulty)
    sink, thread = _start(faulty, ch)
    time.sleep(25)
    assert sink.transient_errors >= 1, sink.stats()
    assert sink.undecodable == 0 and sum(sink.rows_written.values()) == 0, sink.stats()
    assert ch.query("SELECT count() FROM dead_letters").result_rows == [(0,)]
    assert all(offset < 0 for offset in _committed(stack, "durability-fault", partitions).values())

    local_stack.start(only=("registry",), echo=lambda line: None)  # same ids: kafkasql storage
    _until_caught_up(sink)
    _stop(sink, thread)
    ends = _committed(stack, "durability-fault", partitions)  # what the faulty run cut and committed
    after_outage, raw, ranges = _totals(ch), _totals(ch, RAW), _ranges_before(ch, ends)

    clean = _local(stack, "durability_clean", "durability-clean", embedded_path)
    clean_ch, _ = migrate(clean)
    clean_sink, clean_thread = _start(clean, clean_ch)
    _until_caught_up(clean_sink)
    _stop(clean_sink, clean_thread)
    assert clean_sink.undecodable == 0
    expected = _totals(clean_ch)
    assert expected["cpu_samples_v"][0][0] >= 360 and expected["metrics_hourly_v"][0][1] > 0
    assert after_outage == expected

    # replay everything: the group starts again at the first offset of every partition
    _reset_to_start(stack, "durability-fault", partitions)
    replay, replay_thread = _start(faulty, ch)
    _until_caught_up(replay)
    _stop(replay, replay_thread)
    assert sum(replay.rows_written.values()) > 0 and replay.replayed_batches > 0, replay.stats()
    assert _totals(ch) == expected
    assert _totals(ch, RAW) == raw
    assert _ranges_before(ch, ends) == ranges


def test_records_spooled_while_kafka_was_away_reach_kafka_through_the_next_producer(
    stack: Settings, tmp_path: Path
) -> None:
    """Issue 23 item 5 with the real broker and registry: a producer that cannot reach Kafka keeps
    its records in the disk spool (flush returns: they are on disk); the next producer with the
    same spool, Kafka reachable, drains them; a reader sees each once."""
    import uuid

    from fleetperf.kafka_avro import AvroProducer
    from tests.integration.kafka_read import read_all

    host = f"spool-{uuid.uuid4().hex[:8]}"
    start = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
    records = [
        {"host_id": host, "hostname": host, "ts": start + timedelta(seconds=10 * i), "interval_s": 10.0,
         "source": "nmon", "user_pct": float(i), "origin_file": "spool-test", "origin_snapshot": f"T{i:04d}"}
        for i in range(5)
    ]  # fmt: skip
    away = AvroProducer(
        stack, spool_dir=tmp_path / "spool", **{"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 500}
    )
    for record in records:
        away.send("cpu_samples", record, key=host)
    away.flush(timeout=30)
    assert away.spooled == 5 and away._spool.bytes > 0 and away.errors == []
    away._spool.close()
    del away

    back = AvroProducer(stack, spool_dir=tmp_path / "spool")
    back.flush(timeout=60)
    assert back._spool.segments() == [] and not back._spooling
    got = [r for r in read_all(stack, "cpu_samples") if r["host_id"] == host]
    assert sorted((r["ts"], r["user_pct"]) for r in got) == [(r["ts"], r["user_pct"]) for r in records]
