"""Reads back what was published to a topic, decoded, for exactly-once checks."""

from __future__ import annotations

import time
import uuid
from typing import Any

from confluent_kafka import Consumer
from confluent_kafka.schema_registry.avro import AvroDeserializer
from confluent_kafka.serialization import MessageField, SerializationContext

from fleetperf.config import Settings
from fleetperf.kafka_avro import registry_client


def read_all(settings: Settings, topic_key: str, quiet_seconds: float = 3.0) -> list[dict[str, Any]]:
    topic = settings.topic(topic_key).name
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap,
            "group.id": f"test-{uuid.uuid4()}",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            "isolation.level": "read_committed",  # what the warehouse sink sees
        }
    )
    consumer.subscribe([topic])
    decode = AvroDeserializer(registry_client(settings))
    out: list[dict[str, Any]] = []
    last = time.monotonic()
    try:
        while time.monotonic() - last < quiet_seconds:
            msg = consumer.poll(0.5)
            if msg is None or msg.error():
                continue
            out.append(decode(msg.value(), SerializationContext(topic, MessageField.VALUE)))
            last = time.monotonic()
    finally:
        consumer.close()
    return out


def read_derived(settings: Settings, quiet_seconds: float = 3.0) -> list[dict[str, Any]]:
    """The job's derived metrics in Kafka, one dict per metric (derived_window.avsc records split
    as the warehouse's view splits them, sql/039)."""
    from fleetperf.warehouse.rows import derived_metric_records

    return [m for r in read_all(settings, "derived_windows", quiet_seconds) for m in derived_metric_records(r)]
