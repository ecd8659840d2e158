"""Kafka topics and Confluent-wire-format Avro (magic byte + schema id) through the registry."""

from __future__ import annotations

import fcntl
import json
import logging
import os
import struct
import time
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from fleetperf import avro_plan
from fleetperf.config import Settings, Topic, producer_properties
from fleetperf.registry_rest import RegistryError, RegistryRest

if TYPE_CHECKING:  # imported where records are read back: 0.4 s that a producer never needs (registry_rest)
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroDeserializer

log = logging.getLogger("fleetperf.kafka")


def _secret_file(path: str) -> str:
    return Path(path).read_text().strip()


def kafka_client_config(settings: Settings) -> dict[str, Any]:
    """librdkafka settings every client of ours shares: the brokers and, from [kafka], TLS/SASL
    (security_protocol, sasl_mechanism, sasl_username, sasl_password_file, ssl_ca_location)."""
    k = settings["kafka"]
    conf: dict[str, Any] = {"bootstrap.servers": settings.bootstrap}
    protocol = str(k.get("security_protocol") or "PLAINTEXT").upper()
    if protocol != "PLAINTEXT":
        conf["security.protocol"] = protocol
    if k.get("sasl_mechanism"):
        conf["sasl.mechanism"] = k["sasl_mechanism"]
        conf["sasl.username"] = k.get("sasl_username", "")
        conf["sasl.password"] = _secret_file(k["sasl_password_file"]) if k.get("sasl_password_file") else ""
    if k.get("ssl_ca_location"):
        conf["ssl.ca.location"] = k["ssl_ca_location"]
    return conf


def registry_config(settings: Settings) -> dict[str, Any]:
    """Schema registry client settings: [registry] url (overrides host/port, e.g. https), basic
    auth with the password from a file, the CA of its certificate."""
    r = settings["registry"]
    conf: dict[str, Any] = {"url": r.get("url") or settings.registry_url}
    if r.get("basic_auth_user"):
        password = _secret_file(r["basic_auth_password_file"]) if r.get("basic_auth_password_file") else ""
        conf["basic.auth.user.info"] = f"{r['basic_auth_user']}:{password}"
    if r.get("ssl_ca_location"):
        conf["ssl.ca.location"] = r["ssl_ca_location"]
    return conf


def registry_client(settings: Settings) -> SchemaRegistryClient:
    """The library's client, for reading records back (the sink, deserializers, tests)."""
    from confluent_kafka.schema_registry import SchemaRegistryClient

    return SchemaRegistryClient(registry_config(settings))


def registry_rest(settings: Settings) -> RegistryRest:
    """The calls producers make (register, compatibility), without the library's import cost."""
    return RegistryRest(registry_config(settings))


def ensure_topics(settings: Settings, topics: Iterable[Topic] | None = None) -> None:
    admin = AdminClient(kafka_client_config(settings))
    wanted = list(topics or settings.topics.values())
    futures = admin.create_topics(
        [
            # every broker holds a copy, up to 3 (cluster mode: min.insync.replicas 2 of 3)
            NewTopic(
                t.name,
                num_partitions=settings["kafka"]["partitions"],
                replication_factor=min(3, settings.kafka_brokers),
            )
            for t in wanted
        ],
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
    client = registry_rest(settings)
    ids = {}
    for topic in settings.topics.values():
        client.set_compatibility(topic.subject, settings["registry"]["compatibility"])
        ids[topic.subject] = register_with_retry(client, topic, REGISTRY_WAIT_S)[0]
    return ids


def register_with_retry(client: RegistryRest, topic: Topic, wait_s: float) -> tuple[int, int]:
    """(schema id, retries) of a topic's value schema. Retried for up to wait_s: connection errors
    and 5xx (the registry away or restarting), and Apicurio's 409 "already exists": seen once for a
    subject registered long before, right after a restart (kafkasql storage) while the stack's
    start registered the same subjects (tests/integration/test_faults.py, registry case;
    docs/faults.md F4); a later attempt returns the existing id. Other 4xx (an incompatible
    schema, credentials) are raised at once."""
    started = time.monotonic()
    delay, waits = 1.0, 0
    while True:
        try:
            return client.register_schema(topic.subject, topic.schema_text()), waits
        except RegistryError as exc:
            status = exc.http_status_code
            conflict = status == 409 and "already exists" in str(exc)
            if status is not None and 0 < status < 500 and not conflict:
                raise
            error: Exception = exc
        except Exception as exc:  # noqa: BLE001 - connection refused, timeouts: the registry is away
            error = exc
        waited = time.monotonic() - started
        if waited >= wait_s:
            raise RuntimeError(
                f"schema registry unreachable for {waited:.0f}s registering {topic.subject}: {error!r}"
            ) from error
        if waits == 0:
            log.warning("schema registry: %r registering %s; retrying up to %.0fs", error, topic.subject, wait_s)
        waits += 1
        time.sleep(min(delay, max(0.1, wait_s - waited)))
        delay = min(delay * 2, 10.0)


class AvroProducer:
    """Produces records of the configured topics as Confluent-framed Avro: magic byte 0, the
    schema's registry id (big-endian), the Avro body. Each topic's schema is registered under
    '<topic>-value' on first use, as the Confluent serializer's auto-registration does; the body is
    written by the schema's compiled encoder (avro_plan.py: fastavro's bytes in 0.3-0.7 of its time
    on the collectors' records; fastavro itself cost a fifth of the serializer's per-call
    bookkeeping), which matters at tens of thousands of records a second."""

    def __init__(
        self, settings: Settings, spool_dir: str | Path | None = None, spool_max_mb: int = 256, **conf: Any
    ) -> None:
        """spool_dir: where records wait on disk while Kafka is unreachable (DiskSpool; off when
        None). A live collector that cannot wait (monreader) or must keep collecting passes one."""
        self.settings = settings
        self._deliveries = _Deliveries()
        self.errors = self._deliveries.errors  # permanent failures since the last flush()
        self._spool = DiskSpool(Path(spool_dir), spool_max_mb * 2**20) if spool_dir is not None else None
        self._spooling = self._spool is not None and bool(self._spool.segments())  # a previous run's
        self._next_probe = 0.0
        self.spooled = 0
        self._spool_closed = False
        if self._spool is not None:
            # a record moves to disk once Kafka has been away this long (librdkafka's default is 5 min)
            conf.setdefault("message.timeout.ms", SPOOL_AFTER_MS)
        client = registry_rest(settings)
        base = {
            **kafka_client_config(settings),
            "enable.idempotence": True,
            **producer_properties(settings),  # batching, as the Flink job's sinks
            # a backfill parses faster than a broker may take it: bound the queue (librdkafka's
            # default is 1 GiB) so memory stays flat; produce() then waits for deliveries
            "queue.buffering.max.kbytes": 16384,
            # only failures come back to Python: a callback per acknowledged record costs as much
            # as producing it
            "delivery.report.only.error": True,
            "on_delivery": self._deliveries,
        }
        base.update(conf)
        self._producer = Producer(base)
        self._client = client
        self._frames: dict[str, tuple[str, bytes, Any]] = {}
        self._unpolled = 0
        self.retried = 0
        self.registry_wait_s = REGISTRY_WAIT_S
        self.registry_waits = 0

    def _frame(self, topic_key: str) -> tuple[str, bytes, Any]:
        """Topic name, Confluent frame header, the schema's encoder (avro_plan.writer)."""
        frame = self._frames.get(topic_key)
        if frame is None:
            topic = self.settings.topic(topic_key)
            schema_id = self._register(topic)
            encode = avro_plan.writer(json.loads(topic.schema_text()))
            frame = self._frames[topic_key] = (topic.name, b"\0" + schema_id.to_bytes(4, "big"), encode)
        return frame

    def _register(self, topic: Topic) -> int:
        """A registry that went away mid-run is waited for (register_with_retry): a topic first
        used then (the first dead letter of a backfill, a new kind of file under --follow) must not
        end the run. Whether the registry is there at all is checked before a run starts
        (cli.common.check_stack), so a stack that was never up still fails at once."""
        schema_id, waits = register_with_retry(self._client, topic, self.registry_wait_s)
        self.registry_waits += waits
        return schema_id

    def send(self, topic_key: str, record: dict[str, Any], key: str | None = None, headers: Any = None) -> None:
        name, header, encode = self._frame(topic_key)
        self._produce(name, header + encode(record), key, headers)

    def send_encoded(self, topic_key: str, avro: bytes, key: str | None = None, headers: Any = None) -> None:
        """A record already Avro-encoded with the topic's schema (the native nmon scanner)."""
        name, header, _ = self._frame(topic_key)
        self._produce(name, header + avro, key, headers)

    def _produce(self, topic: str, value: bytes, key: str | bytes | None, headers: Any = None) -> None:  # noqa: ANN401
        if self._deliveries.retry:  # failed deliveries first: they re-enter the bounded queue (or the spool)
            self._requeue()
        if self._spooling:
            self._drain_if_back()
            # while older records wait on disk, new ones queue behind them (order kept, no blocking)
            if self._spooling and self._spool.append(topic, key, value, headers):
                self.spooled += 1
                return
        self._put(topic, value, key, headers)

    def _requeue(self) -> None:
        """Records whose delivery failed with a retriable error (the broker unreachable longer
        than message.timeout.ms, not enough in-sync replicas...) are produced again. Taken one at a
        time: a BufferError inside _put polls, and that poll may add to the list."""
        retry = self._deliveries.retry
        while retry:
            topic, key, value, headers = retry.pop(0)
            self.retried += 1
            if self._spool is not None and self._spool.append(topic, key, value, headers):
                self._spooling = True
                self.spooled += 1
                continue
            self._put(topic, value, key, headers)  # no spool, or a full one: wait in the bounded queue

    def _drain_if_back(self, force: bool = False) -> None:
        """While spooling: every SPOOL_PROBE_S ask a broker for metadata; once one answers, produce
        the spool's segments in order and delete each once Kafka has acknowledged all of it. A
        segment that fails half-way stays (its records may arrive twice: at least once)."""
        now = time.monotonic()
        if not force and now < self._next_probe:
            return
        self._next_probe = now + SPOOL_PROBE_S
        try:
            if not self._producer.list_topics(timeout=2).brokers:
                return
        except KafkaException:
            return
        self._spool.close_writer()
        for segment in self._spool.segments():
            for topic, key, value, headers in self._spool.read(segment):
                self._put(topic, value, key, headers)
            if self._producer.flush(SPOOL_DRAIN_TIMEOUT_S) or self._deliveries.retry:
                log.warning("Kafka went away again while the spool drained; %s stays", segment.name)
                return
            self._spool.remove(segment)
        self._spooling = False
        log.warning("spool drained: Kafka has every record again")

    def _put(self, topic: str, value: bytes, key: str | bytes | None, headers: Any = None) -> None:  # noqa: ANN401
        """headers: Kafka headers (e.g. the end-of-stream marker's), kept on a retry as well."""
        while True:
            try:
                if headers:  # rare (end-of-stream markers): a delivery report carries no headers
                    self._producer.produce(
                        topic, value=value, key=key, headers=headers, on_delivery=self._deliveries.keeping(headers)
                    )
                else:
                    self._producer.produce(topic, value=value, key=key)
                break
            except BufferError:
                self._producer.poll(0.1)
        # delivery reports are served in batches: a poll per record costs more than the produce
        self._unpolled += 1
        if self._unpolled >= 64:
            self._producer.poll(0)
            self._unpolled = 0

    def close(self) -> None:
        """Releases the spool directory (its records stay on disk for the next producer)."""
        if self._spool is not None and not self._spool_closed:
            self._spool.close()
            self._spool_closed = True

    def flush(self, timeout: float | None = 60.0) -> None:
        """Waits until every record is acknowledged, producing again those whose delivery failed
        with a retriable error. Raises for what is still in flight at the timeout (those records
        stay queued and are still delivered later) and for permanent failures since the last
        flush; either way the error list starts empty again, so one failure does not end a
        long-running `--follow` or `collect`. timeout=None waits as long as Kafka is away (a
        warning a minute), for a caller that must not go on before its records are in Kafka."""
        started = time.monotonic()
        deadline = None if timeout is None else started + timeout
        warned = started
        if self._spooling:
            self._drain_if_back(force=True)
        while True:
            left = 1.0 if deadline is None else max(0.0, min(1.0, deadline - time.monotonic()))
            remaining = self._producer.flush(left)
            if self._deliveries.retry:
                self._requeue()
                remaining = len(self._producer)
            if not remaining or (deadline is not None and time.monotonic() >= deadline):
                break
            if time.monotonic() - warned >= 60:
                warned = time.monotonic()
                log.warning(
                    "Kafka has not acknowledged %d records for %.0fs; still trying", remaining, warned - started
                )
        if self._spool is not None:
            if self._deliveries.retry:
                self._requeue()
            self._spool.sync()  # what waits on disk survives a crash from here on
            if self._spooling:
                log.warning("Kafka unreachable: %d bytes of records wait in %s", self._spool.bytes, self._spool.dir)
        failed = list(self.errors)
        self.errors.clear()
        if failed:
            raise RuntimeError(f"delivery failed permanently for {len(failed)} records: {failed[:3]}")
        if remaining:
            raise RuntimeError(f"{remaining} records not delivered within {timeout}s (still queued, retrying)")


def spooling_producer(settings: Settings, command: str) -> AvroProducer:
    """A producer for a live collector: records that Kafka cannot take wait in
    <state>/spool/<command> (see [kafka] spool_max_mb) instead of stopping the collector."""
    spool = settings.state_dir / "spool" / command
    return AvroProducer(settings, spool_dir=spool, spool_max_mb=int(settings["kafka"].get("spool_max_mb", 256)))


# How long a producer waits for a registry that went away mid-run before it gives up (a restart of
# Apicurio takes ~20 s here; the fault suite stops it for 60 s).
REGISTRY_WAIT_S = 300.0
SPOOL_AFTER_MS = 30_000
SPOOL_PROBE_S = 5.0
SPOOL_DRAIN_TIMEOUT_S = 60.0
SPOOL_SEGMENT_BYTES = 16 * 2**20
_FRAME = struct.Struct(">II")  # body length, CRC32 of the body


class DiskSpool:
    """Records Kafka could not take yet, in order, on local disk: append-only segment files
    (<time_ns>.spool) of frames [length, CRC32, body]; the body holds topic, key, headers and
    value. Bounded: append() refuses a record once the segments hold max_bytes (the producer then
    waits in librdkafka's bounded queue instead: nothing is dropped). One process per directory
    (flock on .lock); the next process that opens the directory drains what a crashed one left.
    A frame cut short by a crash ends that segment's reading (the record was never acknowledged
    to the caller: flush() syncs before it returns)."""

    def __init__(self, directory: Path, max_bytes: int) -> None:
        self.dir = directory
        self.dir.mkdir(parents=True, exist_ok=True)
        self.max_bytes = max_bytes
        self._lock = open(self.dir / ".lock", "a+b")  # noqa: SIM115 - held for the spool's life
        try:
            fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            self._lock.close()
            raise RuntimeError(f"spool {self.dir} is in use by another process") from None
        self._writer: Any = None
        self.bytes = sum(p.stat().st_size for p in self.segments())

    def segments(self) -> list[Path]:
        return sorted(self.dir.glob("*.spool"))

    def append(self, topic: str, key: Any, value: bytes, headers: Any) -> bool:  # noqa: ANN401
        body = _spool_body(topic, key, value, headers)
        if self.bytes + _FRAME.size + len(body) > self.max_bytes:
            return False
        if self._writer is None or self._writer.tell() >= SPOOL_SEGMENT_BYTES:
            self.close_writer()
            self._writer = open(self.dir / f"{time.time_ns():020d}.spool", "ab")  # noqa: SIM115
        self._writer.write(_FRAME.pack(len(body), zlib.crc32(body)) + body)
        self.bytes += _FRAME.size + len(body)
        return True

    def sync(self) -> None:
        if self._writer is not None:
            self._writer.flush()
            os.fsync(self._writer.fileno())

    def close_writer(self) -> None:
        if self._writer is not None:
            self.sync()
            self._writer.close()
            self._writer = None

    def read(self, segment: Path) -> Iterator[tuple[str, bytes | None, bytes, list[tuple[str, bytes]] | None]]:
        data = segment.read_bytes()
        at = 0
        while at + _FRAME.size <= len(data):
            size, crc = _FRAME.unpack_from(data, at)
            body = data[at + _FRAME.size : at + _FRAME.size + size]
            if len(body) < size or zlib.crc32(body) != crc:
                log.warning("spool %s: frame at byte %d cut short or damaged; the rest is skipped", segment, at)
                return
            yield _spool_record(body)
            at += _FRAME.size + size

    def remove(self, segment: Path) -> None:
        self.bytes -= segment.stat().st_size
        segment.unlink()

    def close(self) -> None:
        """Synced, and the directory free for the next process."""
        self.close_writer()
        self._lock.close()


def _spool_body(topic: str, key: Any, value: bytes, headers: Any) -> bytes:  # noqa: ANN401
    def blob(b: Any) -> bytes:  # noqa: ANN401 - None -> -1
        if b is None:
            return struct.pack(">i", -1)
        raw = b.encode() if isinstance(b, str) else bytes(b)
        return struct.pack(">i", len(raw)) + raw

    items = list(headers.items() if isinstance(headers, dict) else headers or [])
    out = [blob(topic), blob(key), struct.pack(">i", len(items) if headers is not None else -1)]
    for name, v in items:
        out += [blob(name), blob(v)]
    out.append(blob(value))
    return b"".join(out)


def _spool_record(body: bytes) -> tuple[str, bytes | None, bytes, list[tuple[str, bytes]] | None]:
    at = 0

    def blob() -> bytes | None:
        nonlocal at
        (size,) = struct.unpack_from(">i", body, at)
        at += 4
        if size < 0:
            return None
        at += size
        return body[at - size : at]

    topic = (blob() or b"").decode()
    key = blob()
    (count,) = struct.unpack_from(">i", body, at)
    at += 4
    headers = None if count < 0 else [((blob() or b"").decode(), blob()) for _ in range(count)]
    return topic, key, blob() or b"", headers


# Errors a new attempt can cure, beyond those librdkafka flags retriable itself: its own timeouts
# once a broker was unreachable longer than message.timeout.ms, and a cluster short of replicas.
RETRIABLE_CODES = frozenset(
    {
        KafkaError._MSG_TIMED_OUT,
        KafkaError._TIMED_OUT,
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError.REQUEST_TIMED_OUT,
        KafkaError.NOT_ENOUGH_REPLICAS,
        KafkaError.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
        KafkaError.LEADER_NOT_AVAILABLE,
        KafkaError.NOT_LEADER_FOR_PARTITION,
    }
)


def retriable(err: KafkaError) -> bool:
    """A fatal error (the idempotent producer's state is lost) is never retried here."""
    return not err.fatal() and (err.retriable() or err.code() in RETRIABLE_CODES)


class _Deliveries:
    """The delivery callback (only failures arrive: delivery.report.only.error). It holds two
    lists, not the AvroProducer: a bound method would make a cycle (producer -> callback ->
    producer) that only the cyclic collector frees, and until then librdkafka's threads live on
    and keep reconnecting. Retriable failures keep the record to produce it again; the rest are
    reported by the next flush()."""

    __slots__ = ("errors", "retry")

    def __init__(self) -> None:
        self.errors: list[str] = []
        self.retry: list[tuple[str, bytes | None, bytes, Any]] = []

    def __call__(self, err: KafkaError | None, msg: Any, headers: Any = None) -> None:  # noqa: ANN401
        if err is None:
            return
        if retriable(err):
            self.retry.append((msg.topic(), msg.key(), msg.value(), headers))
        else:
            self.errors.append(f"{msg.topic()}: {err}")

    def keeping(self, headers: Any) -> Any:  # noqa: ANN401
        """The callback of one record with headers: librdkafka's report of a failed delivery
        does not give them back (measured: msg.headers() is None), a retry must send them."""
        return lambda err, msg: self(err, msg, headers)


def deserializers(settings: Settings) -> dict[str, AvroDeserializer]:
    """Topic name -> deserializer that reads the writer schema by id from the registry."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer

    client = registry_client(settings)
    return {t.name: AvroDeserializer(client) for t in settings.topics.values()}
