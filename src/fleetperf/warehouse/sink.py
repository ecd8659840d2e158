"""Kafka -> ClickHouse: consumes every configured topic, decodes Confluent Avro, inserts in batches.

At-least-once: offsets are committed only after the batch is in ClickHouse; the tables'
ReplacingMergeTree keys make a replayed batch harmless, so the effect is exactly-once per row key.
A message that cannot be decoded becomes a dead_letters row naming topic, partition and offset.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from clickhouse_connect.driver.client import Client
from confluent_kafka import Consumer, KafkaError
from confluent_kafka.serialization import MessageField, SerializationContext

from fleetperf.config import Settings
from fleetperf.kafka_avro import deserializers
from fleetperf.warehouse.rows import RowMapper

log = logging.getLogger("fleetperf.sink")


class Sink:
    def __init__(self, settings: Settings, ch: Client) -> None:
        self.s = settings
        self.ch = ch
        self.topics = [t.name for t in settings.topics.values()]
        self.mapper = RowMapper(settings)
        self.columns = self.mapper.columns
        self.rows_written: dict[str, int] = defaultdict(int)
        self.undecodable = 0
        self.insert_errors = 0
        self.batches = 0
        self.lag: dict[str, int] = {}
        self.last_error: str | None = None
        self.stop_event = threading.Event()

    def _consumer(self) -> Consumer:
        consumer = Consumer(
            {
                "bootstrap.servers": self.s.bootstrap,
                "group.id": self.s["warehouse"]["group_id"],
                "auto.offset.reset": "earliest",
                "enable.auto.commit": False,
                "enable.partition.eof": False,
            }
        )
        consumer.subscribe(self.topics)
        return consumer

    def run(self) -> None:
        """Loops until stop(); survives broker and registry outages by retrying."""
        while not self.stop_event.is_set():
            try:
                self._loop()
            except Exception as exc:  # noqa: BLE001 - keep the sink alive, report, retry
                self.last_error = repr(exc)
                log.exception("sink loop failed; retrying in 2s")
                self.stop_event.wait(2)

    def _loop(self) -> None:
        consumer = self._consumer()
        lag_checked = 0.0
        decode = deserializers(self.s)
        batch_rows = self.s["warehouse"]["batch_rows"]
        batch_seconds = self.s["warehouse"]["batch_seconds"]
        try:
            while not self.stop_event.is_set():
                messages = consumer.consume(num_messages=batch_rows, timeout=batch_seconds)
                if time.monotonic() - lag_checked > 10:
                    self._update_lag(consumer)
                    lag_checked = time.monotonic()
                if not messages:
                    continue
                rows: dict[str, list[list[Any]]] = defaultdict(list)
                for msg in messages:
                    if msg.error():
                        if msg.error().code() != KafkaError._PARTITION_EOF:
                            log.warning("consume error: %s", msg.error())
                        continue
                    self._decode_into(msg, decode, rows)
                try:
                    for table, table_rows in rows.items():
                        self.ch.insert(table, table_rows, column_names=self.columns[table])
                        self.rows_written[table] += len(table_rows)
                except Exception:
                    self.insert_errors += 1
                    raise  # offsets stay uncommitted: the batch is consumed again after the retry
                consumer.commit(asynchronous=False)
                self.batches += 1
        finally:
            consumer.close()

    def _decode_into(self, msg: Any, decode: dict[str, Callable], rows: dict[str, list[list[Any]]]) -> None:
        topic = msg.topic()
        try:
            record = decode[topic](msg.value(), SerializationContext(topic, MessageField.VALUE))
            if record is None:
                raise ValueError("empty message")
            for table, row in self.mapper.rows(topic, record):
                rows[table].append(row)
        except Exception as exc:  # noqa: BLE001 - any decode failure is a dead letter, never a stop
            self.undecodable += 1
            raw = msg.value() or b""
            rows["dead_letters"].append(
                [
                    "sink",
                    f"kafka://{topic}/{msg.partition()}",
                    msg.partition(),
                    msg.offset(),
                    f"undecodable message: {exc}",
                    raw[:1024].hex(),
                    datetime.now(UTC),
                ]
            )

    def _update_lag(self, consumer: Consumer) -> None:
        lag = {}
        for tp in consumer.assignment():
            low, high = consumer.get_watermark_offsets(tp, timeout=5, cached=False)
            position = consumer.position([tp])[0].offset
            lag[f"{tp.topic}/{tp.partition}"] = high - (position if position >= 0 else low)
        self.lag = lag

    def stop(self) -> None:
        self.stop_event.set()

    def stats(self) -> dict[str, Any]:
        return {
            "rows_written": dict(self.rows_written),
            "batches": self.batches,
            "undecodable": self.undecodable,
            "insert_errors": self.insert_errors,
            "lag": self.lag,
            "last_error": self.last_error,
        }
