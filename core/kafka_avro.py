"""Kafka topics and Confluent-wire-format Avro (magic byte + schema id) through the registry."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient
from confluent_kafka.schema_registry.avro import AvroDeserializer, AvroSerializer
from confluent_kafka.serialization import MessageField, SerializationContext

from core.config import Settings, Topic


def registry_client(settings: Settings) -> SchemaRegistryClient:
    return SchemaRegistryClient({"url": settings.registry_url})


def ensure_topics(settings: Settings, topics: Iterable[Topic] | None = None) -> None:
    admin = AdminClient({"bootstrap.servers": settings.bootstrap})
    wanted = list(topics or settings.topics.values())
    futures = admin.create_topics(
        [NewTopic(t.name, num_partitions=settings["kafka"]["partitions"], replication_factor=1) for t in wanted],
        request_timeout=30,
    )
    for name, future in futures.items():
        try:
            future.result()
        except KafkaException as exc:
            if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                raise RuntimeError(f"cannot create topic {name}: {exc}") from exc


def register_schemas(settings: Settings) -> dict[str, int]:
    """Register every topic's value schema under '<topic>-value' with the configured compatibility."""
    client = registry_client(settings)
    ids = {}
    for topic in settings.topics.values():
        client.set_compatibility(topic.subject, settings["registry"]["compatibility"])
        ids[topic.subject] = client.register_schema(topic.subject, Schema(topic.schema_text(), "AVRO"))
    return ids


class AvroProducer:
    """Produces dict records of the configured topics as Confluent-framed Avro."""

    def __init__(self, settings: Settings, **conf: Any) -> None:
        self.settings = settings
        client = registry_client(settings)
        self._serializers = {
            key: AvroSerializer(client, topic.schema_text(), conf={"auto.register.schemas": True})
            for key, topic in settings.topics.items()
        }
        base = {
            "bootstrap.servers": settings.bootstrap,
            "enable.idempotence": True,
            "linger.ms": 20,
            "compression.type": "lz4",
            "batch.size": 1_000_000,
        }
        base.update(conf)
        self._producer = Producer(base)
        self._client = client
        self._schema_ids: dict[str, int] = {}
        self.errors: list[str] = []

    def _on_delivery(self, err: KafkaError | None, _msg: Any) -> None:
        if err is not None:
            self.errors.append(str(err))

    def send(self, topic_key: str, record: dict[str, Any], key: str | None = None) -> None:
        topic = self.settings.topic(topic_key)
        value = self._serializers[topic_key](record, SerializationContext(topic.name, MessageField.VALUE))
        self._produce(topic.name, value, key)

    def send_encoded(self, topic_key: str, avro: bytes, key: str | None = None) -> None:
        """A record already Avro-encoded with the topic's schema: only the Confluent frame is added
        (magic byte 0, schema id big-endian), with the id the serializer would use."""
        topic = self.settings.topic(topic_key)
        schema_id = self._schema_ids.get(topic_key)
        if schema_id is None:
            schema_id = self._client.register_schema(topic.subject, Schema(topic.schema_text(), "AVRO"))
            self._schema_ids[topic_key] = schema_id
        self._produce(topic.name, b"\0" + schema_id.to_bytes(4, "big") + avro, key)

    def _produce(self, topic: str, value: bytes, key: str | None) -> None:
        while True:
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=self._on_delivery)
                break
            except BufferError:
                self._producer.poll(0.1)
        self._producer.poll(0)

    def flush(self, timeout: float = 60.0) -> None:
        remaining = self._producer.flush(timeout)
        if remaining:
            raise RuntimeError(f"{remaining} records not delivered within {timeout}s")
        if self.errors:
            raise RuntimeError(f"delivery failed: {self.errors[:3]}")


def deserializers(settings: Settings) -> dict[str, AvroDeserializer]:
    """Topic name -> deserializer that reads the writer schema by id from the registry."""
    client = registry_client(settings)
    return {t.name: AvroDeserializer(client) for t in settings.topics.values()}
