"""Kafka -> ClickHouse: consumes every configured topic, decodes Confluent Avro, inserts in batches.

Nothing is dropped, nothing is counted twice (README.md, "Sink durability"):
- A transient failure (registry unreachable or answering an error other than 404, a ClickHouse
  insert error, a Kafka error) commits nothing: the consumer is closed, the sink waits (1 s
  doubling to 30 s) and starts again from the committed offsets.
- Only a message that can never decode (no Confluent header, a schema id the registry answers 404
  for, an Avro body that does not read, a record that makes no row) becomes a dead letter, with
  its topic, partition, offset and its full key and value in base64.
- Batches are cut per (topic, partition) and each offset range is written to `sink_batches`
  before its rows. Every insert carries the token '<topic>/<partition>/<first>-<last>'. After a
  crash the sink cuts the same ranges again from `sink_batches`, ClickHouse drops the blocks it
  already has (non_replicated_deduplication_window, sql/014), the materialized-view rollups with
  them, and the offsets are committed after the last insert of a range.
- nmon snapshots (hundreds of values each) are not decoded here: their Avro bodies go to the engine
  as one Avro object container per batch (the writer schema from the registry, one container block
  per message), and the views of sql/017 and 033 split them into nmon_sections (one row per host,
  section and snapshot; nmon_values_v explodes them) and nmon_labels. Only when such an
  insert fails does the sink decode each message in Python to find the broken ones (dead letters)
  and insert the rest; when none is broken the failure is transient.
- One batch's inserts run in a writer thread while the consumer thread reads and cuts the next
  batch (chDB releases the GIL during a query; the engine's insert work is what limits a
  backlog, docs/warehouse.md "Backfill speed"). The consumer thread frames a batch's Avro object
  containers when it cuts it, so the writer only inserts. Up to `[warehouse] sink_writers`
  batches are in flight, the first writer thread on the sink's client and each further one on a
  client it opens (the engine runs two inserts side by side), but never two that write the same
  rows: batches that share a table wait for each other, except nmon snapshot batches whose
  (host, snapshot time) keys are disjoint, the keys every nmon table's rows are replaced by (a
  re-ingested snapshot still replaces the older one, in offset order). Offsets are committed by
  the consumer thread in the order the batches were cut, each after its inserts returned; a
  failed insert stops everything behind it (the batches after it finish but are not committed: a
  restart cuts their recorded ranges again and the engine drops what it has).
"""

from __future__ import annotations

import base64
import gc
import hashlib
import io
import json
import logging
import threading
import time
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from clickhouse_connect.driver.client import Client
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from confluent_kafka.schema_registry.error import SchemaRegistryError
from fastavro import parse_schema, schemaless_reader

from fleetperf.avro_plan import encode_long
from fleetperf.config import Settings
from fleetperf.kafka_avro import kafka_client_config, registry_client
from fleetperf.warehouse.clickhouse import client as warehouse_client
from fleetperf.warehouse.rows import RowMapper, nmon_snapshot_in_row

log = logging.getLogger("fleetperf.sink")

# Every insert of the sink: the token decides (not the data hash, which default columns such as
# ingested_at = now64() would change), and the views' targets deduplicate with their source. The
# insert is synchronous: the offset is committed after it, and chDB 4.4 defaults async_insert to 1.
DEDUP_SETTINGS = {
    "insert_deduplicate": 1,
    "deduplicate_blocks_in_dependent_materialized_views": 1,
    "async_insert": 0,
}
# Topics whose records the engine decodes itself: topic key -> the table fed (None: the topic's own
# table, whose columns are the schema's fields: the engine reads each field into its column by
# name, as the Python path's RowMapper makes a row of a record).
# - nmon snapshots, exploded by sql/017's and 033's views. Measured in this process with cProfile
#   (10.6 MB AIX nmon file, 1,870 snapshots, 1.49 M values): fastavro decode 2.0 s, one Python list
#   per value 2.9 s, clickhouse-connect's Native encoding 5.3 s, the engine 1.7 s; the engine
#   reading the Avro itself: about 1 s in all.
# - Flink's derived metrics and the cpu samples: small records, a few per snapshot, that outnumber
#   the snapshots in a fleet's backfill (50 simulated hosts x 48 h at 60 s: 144 k snapshots, 144 k
#   cpu samples, ~620 k derived metrics; py-spy: the sink's Python decode and Native encoding of
#   them were most of its 10-15 CPU-s). 100 k derived metrics into derived_metrics: 1.43-1.62 CPU-s
#   decoded in Python, 0.28-0.34 CPU-s read by the engine (the same rows). Since sql/039 the job
#   writes one record per entity and window (derived_windows, into the Null table whose view makes
#   the derived_metrics rows); derived_metrics, the topic of older jobs, is still read.
# - Flink's anomaly flags: one row per record as the two above; a fleet with anomalies has tens of
#   thousands (the simulated fleet: ~17 k, 0.35 s of the consumer thread decoding them, py-spy).
# - The other collectors' records (sadc, z/VM monitor and Performance Toolkit, hpmstat, entstat,
#   host configurations), one row each as the three above: the whole simulated fleet of every
#   source (`./fleetperf simulate`, 14 days) puts 157 k sysstat samples, 77 k z/VM guest and 24 k
#   system samples beside its 660 k derived metrics. The sink over that backlog (1.0 M messages,
#   bench/sink_backlog.py --ingest ... --runs 4 --against 9a39942, alternated): 15.0 -> 9.5 CPU-s,
#   15.8 -> 9.9 s wall (medians), both writer threads now busy for most of it. (Collectors' dead
#   letters stay in Python: their rows carry the Kafka coordinates beside the record.)
ENGINE_DECODED: dict[str, str | None] = {
    "nmon_snapshots": "nmon_snapshots_in",
    "cpu_samples": None,
    "derived_windows": None,
    "derived_metrics": None,
    "anomaly_flags": None,
    "sysstat_samples": None,
    "zvm_guest_samples": None,
    "zvm_system_samples": None,
    "lpar_samples": None,
    "hpm_samples": None,
    "net_port_samples": None,
    "host_configs": None,
}
# An engine-decoded batch is also cut at this many bytes of Avro: one insert's input is one block
# in the engine (so a broken message fails it before anything is written, sql/017), and ~500
# snapshots per insert measured fastest (64: 2x slower, 1,870: 20 % slower).
BATCH_BYTES = 8_000_000
# Messages one consume() call returns at most (it returns as soon as this many are at hand).
CONSUME_MESSAGES = 1000
# A consume() that waited this long for nothing cuts the free batches at once: the last batch of a
# backlog waited batch_seconds (1 s) before it was cut, a ninth of a 42 MB backfill's 8.8 s. Small
# batches are not cut so unless a backlog just drained (a consume() returned all it asked for): live
# collectors trickle a few records a second with longer gaps, and cutting at every gap would make
# an insert (a new part per table) of nearly every record instead of one a second.
IDLE_CUT_SECONDS = 0.2
IDLE_CUT_MIN_MESSAGES = 100
# Reading an engine-decoded batch: every message one row of one input block (a batch holds at
# most batch_rows messages), and the ReplacingMergeTree rows are not merged while being inserted
# (FINAL and background merges replace them; measured 20-30 % of the insert).
ENGINE_INSERT_SETTINGS = {"max_insert_block_size": 10_000_000, "optimize_on_insert": 0}
# Batch.free_until of a free batch with no recorded range ahead of it
NO_RANGE_AHEAD = 1 << 63
# The nmon snapshot fields a writer schema must begin with for the sink to read a message's key
# (host_id, snapshot time) from its Avro body without decoding it (nmon_snapshot.avsc).
NMON_KEY_FIELDS = (("host_id", "string"), ("hostname", "string"), ("ts", "long/timestamp-millis"))
# Into a topic's own table (ENGINE_DECODED None), as the Python path inserts there:
# - a column the writer schema lacks (a field a later schema version dropped) takes its default,
#   NULL where nullable, as the Python path's row has None there; without it the engine refused
#   every such batch, Python found no message broken, and the sink retried the batch for ever;
# - rows of one insert with the same key are replaced at once (optimize_on_insert, the default):
#   a record Kafka holds twice in one batch (after a broker's SIGKILL mid-ingest) stayed two raw
#   rows until a merge, which tests/integration/test_faults.py counts as doubled (3 of 540 cpu samples).
OWN_TABLE_SETTINGS = {"input_format_avro_allow_missing_fields": 1, "optimize_on_insert": 1}
# The cyclic garbage collector in a process that runs the sink: librdkafka's messages are Python
# objects the collector tracks, a thousand per consume(), and those of a batch live until it is
# committed, so they reach the older generations; every full collection also walked what the
# process had loaded (the warehouse process: Superset's app, 409 k objects). Measured with
# Superset's app loaded as in the warehouse process, 320 k messages (160 MB of Linux nmon as 160
# hosts) through the sink, time inside collections (gc.callbacks, two runs each): 1.29-1.42 s with
# Python's defaults, 0.40-0.52 s with what was loaded frozen (gc.freeze), 0.12-0.15 s with the
# first generation collected every GC_GEN0_THRESHOLD allocations instead of 700 as well; the GIL
# is held meanwhile, so the consumer thread and the writer's Python wait too.
GC_GEN0_THRESHOLD = 10_000
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 30.0
# Recorded ranges read from sink_batches at a time (a replay from far back reads them in pages).
PLAN_PAGE = 1000


def quiet_gc() -> None:
    """For a process that runs the sink, once what it keeps for its life is loaded (the warehouse
    process after Superset's app, `fleetperf sink` after its start): leave that out of every
    future collection and collect the youngest generation less often (GC_GEN0_THRESHOLD). Cycles
    are still collected; garbage only waits a little longer."""
    gc.freeze()
    gen0, gen1, gen2 = gc.get_threshold()
    gc.set_threshold(max(gen0, GC_GEN0_THRESHOLD), gen1, gen2)


class TransientError(Exception):
    """A failure that passes (registry, ClickHouse, Kafka): retry, commit nothing."""


class UndecodableError(Exception):
    """A message no retry will decode: it becomes a dead letter."""


Schema = Any
SchemaFetcher = Callable[[int], Schema]


def registry_fetcher(settings: Settings) -> SchemaFetcher:
    """Schema id -> parsed writer schema from the registry; only a 404 means the id is unknown."""
    client = registry_client(settings)

    def fetch(schema_id: int) -> Schema:
        try:
            schema = client.get_schema(schema_id)
        except SchemaRegistryError as exc:
            if exc.http_status_code == 404:
                raise UndecodableError(f"schema id {schema_id} is unknown to the registry (404)") from exc
            raise TransientError(f"registry answered {exc.http_status_code} for schema id {schema_id}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001 - connection refused, timeouts, TLS: all pass
            raise TransientError(f"registry unreachable fetching schema id {schema_id}: {exc!r}") from exc
        try:
            return parse_schema(json.loads(schema.schema_str))
        except Exception as exc:  # noqa: BLE001 - the registry holds something that is no Avro schema
            raise UndecodableError(f"schema id {schema_id} is not a usable Avro schema: {exc}") from exc

    return fetch


class AvroDecoder:
    """Confluent wire format: magic byte 0, 4-byte big-endian schema id, Avro body. Schemas are
    cached per id (an id's schema never changes), so a registry outage only stops messages whose
    schema this process has not seen yet."""

    def __init__(self, fetch: SchemaFetcher) -> None:
        self._fetch = fetch
        self._schemas: dict[int, Schema] = {}
        self._json: dict[int, bytes] = {}
        # the 5-byte header of every id seen -> the id: one slice and one lookup per message (the
        # checks below cost 2.9 of 9 us per message of a backlog's derived metrics, cProfile);
        # Sink.add_all looks ids up here itself
        self.headers: dict[bytes, int] = {}

    def schema_id(self, value: bytes | None) -> int:
        """The schema id of a Confluent-framed message, its schema fetched (and cached)."""
        if value is not None:
            known = self.headers.get(value[:5])
            if known is not None:
                return known
        if value is None or len(value) < 5:
            size = 0 if value is None else len(value)
            raise UndecodableError(f"{size} bytes: shorter than the 5-byte Confluent header")
        if value[0] != 0:
            raise UndecodableError(f"magic byte {value[0]}, not 0: not Confluent-framed Avro")
        schema_id = int.from_bytes(value[1:5], "big")
        if schema_id not in self._schemas:
            self._schemas[schema_id] = self._fetch(schema_id)
        self.headers[value[:5]] = schema_id  # after the fetch: an unknown id is asked for again
        return schema_id

    def schema_json(self, schema_id: int) -> bytes:
        """The writer schema as Avro JSON, for the header of an object container (fastavro's parsed
        form minus its own '__' keys)."""
        text = self._json.get(schema_id)
        if text is None:
            text = self._json[schema_id] = json.dumps(_plain(self._schemas[schema_id])).encode()
        return text

    def __call__(self, value: bytes | None) -> dict[str, Any]:
        schema_id = self.schema_id(value)
        schema = self._schemas[schema_id]
        try:
            record = schemaless_reader(io.BytesIO(value[5:]), schema, None)
        except Exception as exc:  # noqa: BLE001 - whatever fastavro raises on a broken body
            raise UndecodableError(f"Avro body does not decode with schema id {schema_id}: {exc!r}") from exc
        if not isinstance(record, dict):
            raise UndecodableError(f"schema id {schema_id} decodes to {type(record).__name__}, not a record")
        return record


def _plain(schema: Any) -> Any:  # noqa: ANN401 - a JSON value
    if isinstance(schema, dict):
        return {k: _plain(v) for k, v in schema.items() if not k.startswith("__")}
    if isinstance(schema, list):
        return [_plain(v) for v in schema]
    return schema


# A block's count (1) and the size of a body below SMALL_BODY bytes, looked up, not encoded: 1 of
# 9 us per message of a backlog's derived metrics went into encoding sizes (cProfile).
SMALL_BODY = 4096
_BLOCK_HEADS = [b"\x02" + encode_long(n) for n in range(SMALL_BODY)]


def object_container(schema_json: bytes, bodies: Iterable[bytes | memoryview], skip: int = 0) -> bytes:
    """Avro object container (Avro 1.11 spec, "Object Container Files"): header with the writer
    schema and codec null, then one block per body (count 1, size, body, sync marker). One block
    per message bounds each body as the message did: a short or overlong body cannot take bytes of
    its neighbour, the reader checks the sync marker after every block. `skip`: bytes before each
    body that are left out (5: Confluent-framed messages, their header).

    A small body is copied once, into its block's head (cpu samples, derived metrics: 60-200
    bytes); a large one (an nmon snapshot) goes into the final join as a memoryview, so each of its
    bytes is copied once. Per 100 k derived-metric-sized messages: 174-193 ms with every body a
    memoryview and four join pieces per block, 31-40 ms so (/tmp micro-benchmark, medians of 5;
    py-spy had framing at 1.6 s of the consumer thread's 7 s on a fleet's backlog of 921 k
    messages). Concatenating a large body's pieces first copied every byte four more times: 50 of
    60 ms per 27 MB of nmon snapshots' Avro."""
    sync = hashlib.md5(schema_json).digest()  # noqa: S324 - a marker, not security; fixed per schema
    meta = {b"avro.schema": schema_json, b"avro.codec": b"null"}
    parts: list[bytes | memoryview] = [b"Obj\x01", encode_long(len(meta))]
    for k, v in meta.items():
        parts += (encode_long(len(k)), k, encode_long(len(v)), v)
    parts += (b"\x00", sync)
    heads, append = _BLOCK_HEADS, parts.append
    for body in bodies:
        n = len(body) - skip
        if n < SMALL_BODY:
            append(heads[n] + body[skip:])
        else:
            append(b"\x02" + encode_long(n))
            append(memoryview(body)[skip:])
        append(sync)
    return b"".join(parts)


# An engine-decoded message as a batch keeps it: (table, schema id, offset, value, key). A plain
# tuple of strings, ints and bytes, which the cyclic garbage collector stops tracking, where the
# consumer's Message objects are tracked containers: holding those for a batch's life made every
# collection walk each of them again (a fleet's backfill, 900 k messages: 11 % of the sink's samples
# inside collections, py-spy).
Entry = tuple[str, int, int, bytes, "bytes | str | None"]


@dataclass
class Batch:
    """Messages of one partition, in offset order, and the rows they make."""

    topic: str
    partition: int
    first: int
    recorded_last: int | None  # a range from sink_batches: cut exactly there
    started: float = field(default_factory=time.monotonic)
    last_seen: int = -1
    messages: int = 0
    row_count: int = 0
    rows: dict[str, list[list[Any]]] = field(default_factory=lambda: defaultdict(list))
    # messages the engine decodes (ENGINE_DECODED), in offset order: Entry tuples, not the
    # consumer's Message objects (see Entry)
    engine: list[Entry] = field(default_factory=list)
    engine_bytes: int = 0
    # (table, schema id) -> the group's Avro object container, framed by the consumer thread when
    # the batch is cut (Sink._frame), so the writer thread only runs the engine's inserts
    framed: dict[tuple[str, int], bytes] = field(default_factory=dict)
    # the (host_id, ts) keys of its nmon snapshots, read when another batch is in flight (Sink._conflict)
    nmon_keys: frozenset[bytes] | None = None
    nmon_keys_unknown: bool = False
    # the tables its rows go to, taken when it is cut (the writer adds dead letters to `rows` later)
    tables: frozenset[str] = frozenset()
    # a free batch: the first offset of the next recorded range (Sink.add_all adds the messages
    # before it); a recorded range's batch: -1, every message goes through Sink.add
    free_until: int = -1

    def add_engine(self, entry: Entry) -> None:
        """One engine-decoded message (Sink.add and Sink.add_all both take them in here)."""
        self.engine.append(entry)
        self.engine_bytes += len(entry[3])
        self.messages += 1
        self.row_count += 1
        self.last_seen = entry[2]

    def full(self, batch_rows: int) -> bool:
        """A free batch is cut here: batch_rows messages or rows, or BATCH_BYTES of Avro."""
        return max(self.messages, self.row_count) >= batch_rows or self.engine_bytes >= BATCH_BYTES

    @property
    def last(self) -> int:
        return self.recorded_last if self.recorded_last is not None else self.last_seen

    @property
    def token(self) -> str:
        return f"{self.topic}/{self.partition}/{self.first}-{self.last}"


def _tables(batch: Batch) -> set[str]:
    """The tables a batch's inserts write rows into that another batch's rows may replace (dead
    letters are never replaced: each is its message's own row)."""
    return {t for t in batch.rows if t != "dead_letters"} | {entry[0] for entry in batch.engine}


def _nmon_key(value: bytes) -> bytes | None:
    """host_id and ts of a Confluent-framed nmon snapshot as their Avro bytes (host_id with its
    length, so no two keys run together), read from the body's first fields (NMON_KEY_FIELDS),
    or None when the body is too short or malformed there."""
    pos = 5
    spans = []
    for _ in range(2):  # host_id, hostname: zig-zag varint length, then the bytes
        start, shift, n = pos, 0, 0
        while True:
            if pos >= len(value) or shift > 28:
                return None
            b = value[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if not b & 0x80:
                break
        if n & 1:  # a negative length
            return None
        pos += n >> 1
        spans.append((start, pos))
    start = pos
    while True:  # ts: a zig-zag varint long
        if pos >= len(value) or pos - start > 9:
            return None
        pos += 1
        if not value[pos - 1] & 0x80:
            break
    return value[spans[0][0] : spans[0][1]] + value[start:pos]


def _dead_letter_row(
    topic: str, partition: int, offset: int, key: bytes | str | None, value: bytes | None, reason: str
) -> list[Any]:
    """The dead_letters row of an undecodable message: its coordinates, a preview and every byte."""
    raw = value or b""
    key = key or b""
    return [
        "sink",
        f"kafka://{topic}/{partition}",
        partition,
        offset,
        f"undecodable message: {reason}",
        raw[:1024].hex(),  # a preview; the full bytes are in kafka_value_base64
        datetime.now(UTC),
        topic,
        partition,
        offset,
        base64.b64encode(key if isinstance(key, bytes) else str(key).encode()).decode(),
        base64.b64encode(raw).decode(),
    ]


@dataclass
class _Plan:
    ranges: deque[tuple[int, int]]
    more: bool


class Sink:
    def __init__(
        self,
        settings: Settings,
        ch: Client,
        fetch: SchemaFetcher | None = None,
        engine_decode: bool | Collection[str] = True,
        overlap: bool = True,
        early_handoff: bool = True,
        writers: int | None = None,
        writer_client: Callable[[], Client] | None = None,
    ) -> None:
        """`engine_decode=False` decodes every topic in Python as before sql/017 (nmon snapshots then
        go to nmon_snapshots_in as columns, the views store them as for the engine), a collection
        of topic keys lets the engine decode those of ENGINE_DECODED only; `overlap=False`
        inserts each batch in the consumer thread before reading on (bench/backfill.py measures
        the three in one run); `early_handoff=False` is the hand-over of e65c96c (bench/backfill.py mode
        "after033"): the writer frames the object containers, and the next batch goes to it only
        after the last one's offset is committed. `writers` (default `[warehouse] sink_writers`) is
        how many batches may be in flight; writer threads after the first insert through clients of
        their own (`writer_client`, default a new client of the same database), the first one
        through `ch`."""
        self.s = settings
        self.ch = ch
        self.topics = [t.name for t in settings.topics.values()]
        self.mapper = RowMapper(settings)
        self.columns = self.mapper.columns
        self.nmon_topic = settings.topic("nmon_snapshots").name
        self.engine_tables: dict[str, str] = {}
        # table -> the columns an engine insert names (None: all of them, nmon_snapshots_in): the
        # rest take their defaults (ingested_at), a field of a newer schema that no column has is
        # skipped, as the Python path skips it
        self.engine_columns: dict[str, list[str] | None] = {}
        if engine_decode:
            for t in settings.topics.values():
                if t.key in ENGINE_DECODED and (engine_decode is True or t.key in engine_decode):
                    table = ENGINE_DECODED[t.key] or t.table
                    self.engine_tables[t.name] = table
                    self.engine_columns[table] = None if ENGINE_DECODED[t.key] else self.columns[table]
        self.decode = AvroDecoder(fetch or registry_fetcher(settings))
        self.batch_rows = int(settings["warehouse"]["batch_rows"])
        self.batch_seconds = float(settings["warehouse"]["batch_seconds"])
        self.rows_written: dict[str, int] = defaultdict(int)
        self.undecodable = 0
        self.insert_errors = 0
        self.transient_errors = 0
        self.batches = 0
        self.replayed_batches = 0
        self.lag: dict[str, int] = {}
        # True only while the consumer thread holds nothing uncommitted and has read to the end of
        # every assigned partition. Position-based lag alone is not that: consume() hands over up to
        # batch_rows messages at once, so lag reads 0 long before they are decoded and committed
        # (a CI run saw a test stop waiting with 5 topics' rows still in hand).
        self.caught_up = False
        self.last_error: str | None = None
        self.stop_event = threading.Event()
        self._thread: threading.Thread | None = None
        self._backoff = BACKOFF_FIRST_S
        self._pending: dict[tuple[str, int], Batch] = {}
        self._plans: dict[tuple[str, int], _Plan] = {}
        # the batches being written (their inserts in the writer threads), in the order they were
        # cut, each with the consumer its commit goes to
        self.writers = max(1, int(settings["warehouse"]["sink_writers"] if writers is None else writers))
        self._writer = ThreadPoolExecutor(self.writers, thread_name_prefix="sink-writer") if overlap else None
        self._early_handoff = early_handoff
        self._inflight: deque[tuple[Future[None], Batch, Any]] = deque()
        # each writer thread's client: the first thread takes `ch`, the others open their own
        self._writer_client = writer_client or (lambda: warehouse_client(settings, ch.database))
        self._clients: list[Client] = [ch]
        self._opened: list[Client] = []
        self._clients_lock = threading.Lock()
        self._local = threading.local()
        self._counter_lock = threading.Lock()
        self._nmon_schema_ok: dict[int, bool] = {}

    # --- consumer lifecycle -------------------------------------------------------------------
    def _client_config(self) -> dict[str, Any]:
        """What the consumer and the probe share (the probe is told the ends the consumer reads to)."""
        return {
            **kafka_client_config(self.s),
            "group.id": self.s["warehouse"]["group_id"],
            "enable.auto.commit": False,
            # Flink writes in transactions: only committed records (librdkafka's default, stated)
            "isolation.level": "read_committed",
            "fetch.queue.backoff.ms": int(self.s["warehouse"]["fetch_queue_backoff_ms"]),
        }

    def _consumer(self) -> Consumer:
        consumer = Consumer({**self._client_config(), "auto.offset.reset": "earliest", "enable.partition.eof": False})
        consumer.subscribe(self.topics, on_assign=self._on_assign, on_revoke=self._on_revoke, on_lost=self._on_revoke)
        return consumer

    def _probe(self) -> Consumer:
        """A consumer that never fetches, for the partitions' ends (_update_lag): a watermark query on
        the fetching consumer waits behind its long-poll fetch (fetch.wait.max.ms, 500 ms) on the
        broker connection, 500 ms per partition measured, 6 s for the 12 topics during which the
        loop read nothing; on a consumer without fetches the same query took 0.7-5 ms. The same
        settings, so the end it is told is the same (read_committed: the last stable offset)."""
        return Consumer(self._client_config())

    def _on_assign(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        for tp in partitions:  # another instance may have cut ranges here since we last had it
            self._plans.pop((tp.topic, tp.partition), None)

    def _on_revoke(self, _consumer: Consumer, partitions: list[TopicPartition]) -> None:
        # the batch in flight is committed while this instance still owns its partition; if its
        # insert failed, the next owner cuts the recorded range again and the engine drops what
        # went in (nothing lost, nothing doubled), so the failure is only logged here
        try:
            self._settle()
        except Exception as exc:  # noqa: BLE001
            log.warning("sink: batch in flight at a rebalance not committed: %r", exc)
        for tp in partitions:  # uncommitted: the next owner reads these messages again
            self._pending.pop((tp.topic, tp.partition), None)
            self._plans.pop((tp.topic, tp.partition), None)

    def run(self) -> None:
        """Loops until stop(). Any failure: close the consumer (nothing uncommitted survives), wait
        with a backoff that a successful batch resets, start again from the committed offsets."""
        while not self.stop_event.is_set():
            try:
                self._loop()
            except Exception as exc:  # noqa: BLE001 - keep the sink alive, report, retry
                self.transient_errors += 1
                self.last_error = repr(exc)
                log.warning("sink: %r; nothing committed, retrying in %.0fs", exc, self._backoff)
                self.stop_event.wait(self._backoff)
                self._backoff = min(self._backoff * 2, BACKOFF_MAX_S)

    def _loop(self) -> None:
        self._pending.clear()
        self._plans.clear()  # ranges recorded since the last start lie beyond the committed offsets
        self.lag, self.caught_up = {}, False  # a new consumer: nothing known about its positions
        consumer = self._consumer()
        probe: Consumer | None = None  # opened on the first live lag check (_update_lag)
        lag_checked = 0.0
        want = min(self.batch_rows, CONSUME_MESSAGES)
        backlog = False  # a consume() since the last idle one returned all it asked for
        try:
            while not self.stop_event.is_set():
                # consume() waits for num_messages or the timeout: asking for batch_rows (50,000) held
                # every call of a backlog for the whole second (3 of 4 s of a 10 MB nmon backlog,
                # measured); a batch is still cut by batch_rows, BATCH_BYTES or batch_seconds
                messages = consumer.consume(num_messages=want, timeout=min(self.batch_seconds, IDLE_CUT_SECONDS))
                if messages:
                    self.caught_up = False
                else:  # nothing to read meanwhile: the batch in flight is committed now
                    self._settle()
                # idle: look at the end of every partition every 2 s (a broker round trip), else every 10 s
                idle = not messages and not self._pending and not self._inflight
                if time.monotonic() - lag_checked > (2 if idle and not self.caught_up else 10):
                    # only an idle sink asks the broker, through a consumer that never fetches
                    # (_probe: a round trip per partition, ms); a busy one shows the ends its last
                    # fetches brought
                    if idle and probe is None:
                        probe = self._probe()
                    try:
                        self._update_lag(consumer, probe if idle else None)
                        self.caught_up = idle and bool(self.lag) and all(v == 0 for v in self.lag.values())
                    except KafkaException as exc:  # the lag is not worth a restart of the consumer
                        log.warning("sink: lag check failed (%s); asking again later", exc)
                        self.caught_up = False
                        if probe is not None:  # a new one next time
                            probe.close()
                            probe = None
                    lag_checked = time.monotonic()
                self.add_all(consumer, messages)
                if len(messages) >= want:
                    backlog = True
                self.flush_due(consumer, idle=not messages, idle_min=0 if backlog else IDLE_CUT_MIN_MESSAGES)
                if not messages:
                    backlog = False
            self._settle()  # stopped: the batch in flight is committed before the consumer closes
        finally:
            try:
                self._settle()  # a failure: let the writer finish before a new consumer starts
            except Exception as exc:  # noqa: BLE001 - the loop's own exception is the one reported
                log.debug("sink: batch in flight at the failure: %r", exc)
            self._pending.clear()
            try:
                if probe is not None:
                    probe.close()
            finally:
                consumer.close()

    # --- batching -----------------------------------------------------------------------------
    def add_all(self, consumer: Any, messages: list[Any]) -> None:  # noqa: ANN401 - a Consumer or a test double
        """What one consume() returned, message by message, as add() takes them. An engine-decoded
        message of a known schema id joining a free batch short of the next recorded range is
        added here without add()'s calls (the range lookup, the decode step): on a fleet's backlog
        of 921 k small messages those were 3 of the consumer thread's 7 s (py-spy); everything
        else (errors, a batch's first message, recorded ranges, unknown ids) goes through add()."""
        pending, engine_tables, known = self._pending, self.engine_tables, self.decode.headers
        batch_rows = self.batch_rows
        for msg in messages:
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                if err.fatal():
                    raise KafkaException(err)
                log.warning("consume error (librdkafka retries): %s", err)
                continue
            topic = msg.topic()
            table = engine_tables.get(topic)
            if table is not None:
                batch = pending.get((topic, msg.partition()))
                if batch is not None:
                    offset, value = msg.offset(), msg.value()
                    schema_id = known.get(value[:5]) if value is not None else None
                    if offset < batch.free_until and schema_id is not None:
                        batch.add_engine((table, schema_id, offset, value, msg.key()))
                        if batch.full(batch_rows):
                            self._flush(consumer, batch)
                        continue
            self.add(consumer, msg)

    def add(self, consumer: Any, msg: Any) -> None:  # noqa: ANN401 - a Consumer or a test double
        """One message into its partition's batch; cuts the batch where a recorded range ends."""
        key = (msg.topic(), msg.partition())
        offset = msg.offset()
        batch = self._pending.get(key)
        recorded = self._recorded_range(key, offset)
        if batch is not None:
            if batch.recorded_last is not None:
                if offset > batch.recorded_last:  # the range's tail is gone (retention): cut here
                    self._flush(consumer, batch)
                    batch = None
            elif recorded is not None and recorded[0] <= offset:  # a free batch must not enter a recorded range
                self._flush(consumer, batch)
                batch = None
        if batch is None:
            inside = recorded is not None and recorded[0] <= offset
            batch = Batch(key[0], key[1], recorded[0] if inside else offset, recorded[1] if inside else None)
            if not inside:  # add_all may add to it alone up to the next recorded range
                batch.free_until = recorded[0] if recorded is not None else NO_RANGE_AHEAD
            self._pending[key] = batch
        self._decode_into(msg, batch)
        if batch.recorded_last is not None:
            if offset >= batch.recorded_last:
                self._flush(consumer, batch)
        elif batch.full(self.batch_rows):
            self._flush(consumer, batch)

    def flush_due(self, consumer: Any, force: bool = False, idle: bool = False, idle_min: int = 0) -> None:  # noqa: ANN401
        """Cuts the free batches older than batch_seconds, and when nothing arrived for
        IDLE_CUT_SECONDS (`idle`: a drained backlog or a pause of the source) those of at least
        `idle_min` messages; full ones are cut in add(), recorded ranges end where they were
        recorded. `force` cuts every batch (tests)."""
        now = time.monotonic()
        for batch in list(self._pending.values()):
            due = now - batch.started >= self.batch_seconds or (idle and batch.messages >= idle_min)
            if force or (batch.recorded_last is None and due):
                self._flush(consumer, batch)
        if force:
            self._settle()

    def _recorded_range(self, key: tuple[str, int], offset: int) -> tuple[int, int] | None:
        """The recorded range holding this offset or the next one after it (None: none ahead)."""
        plan = self._plans.get(key)
        while True:
            if plan is None or (plan.more and (not plan.ranges or plan.ranges[-1][1] < offset)):
                plan = self._plans[key] = self._load_plan(key, offset)
            while plan.ranges and plan.ranges[0][1] < offset:
                plan.ranges.popleft()
            if plan.ranges or not plan.more:
                return plan.ranges[0] if plan.ranges else None

    def _load_plan(self, key: tuple[str, int], offset: int) -> _Plan:
        rows = self.ch.query(
            "SELECT first_offset, last_offset FROM sink_batches FINAL WHERE topic = {t:String} AND "
            "partition = {p:Int32} AND last_offset >= {o:Int64} ORDER BY first_offset LIMIT {n:UInt32}",
            parameters={"t": key[0], "p": key[1], "o": offset, "n": PLAN_PAGE},
        ).result_rows
        return _Plan(deque((int(a), int(b)) for a, b in rows), more=len(rows) == PLAN_PAGE)

    def _decode_into(self, msg: Any, batch: Batch) -> None:  # noqa: ANN401
        """Rows of one message, or its dead letter. TransientError raises through (nothing committed)."""
        topic, offset = msg.topic(), msg.offset()
        table = self.engine_tables.get(topic)
        if table is not None:  # the engine decodes it at the flush; here only its header and schema
            value = msg.value()
            try:
                schema_id = self.decode.schema_id(value)
            except UndecodableError as exc:
                with self._counter_lock:
                    self.undecodable += 1
                batch.rows["dead_letters"].append(self._dead_letter(msg, str(exc)))
                batch.messages += 1
                batch.row_count += 1
                batch.last_seen = offset
            else:
                batch.add_engine((table, schema_id, offset, value, msg.key()))
            return
        try:
            record = self.decode(msg.value())
            try:
                produced = list(self.mapper.rows(topic, record, msg.partition(), offset))
            except Exception as exc:  # noqa: BLE001 - a record that decodes but makes no row
                raise UndecodableError(f"decoded but makes no row: {exc!r}") from exc
            if topic == self.nmon_topic:  # stored through the views as the engine path stores it
                produced = [("nmon_snapshots_in", nmon_snapshot_in_row(record))]
        except UndecodableError as exc:
            with self._counter_lock:
                self.undecodable += 1
            produced = [("dead_letters", self._dead_letter(msg, str(exc)))]
        for table, row in produced:
            batch.rows[table].append(row)
        batch.messages += 1
        batch.row_count += len(produced)
        batch.last_seen = offset

    def _dead_letter(self, msg: Any, reason: str) -> list[Any]:  # noqa: ANN401
        return _dead_letter_row(msg.topic(), msg.partition(), msg.offset(), msg.key(), msg.value(), reason)

    def _flush(self, consumer: Any, batch: Batch) -> None:  # noqa: ANN401
        """Hands the batch to a writer once one is free and no batch in flight writes rows it
        writes (the consumer thread reads on meanwhile, and commits the batches before it in the
        order they were cut); without a writer, writes and commits it here."""
        key = (batch.topic, batch.partition)
        self._pending.pop(key, None)
        if batch.messages == 0:
            return
        # framed here, while the batch before it is still being inserted: the writer's Python work
        # (framing: 0.26-0.35 s per 114 MB of Avro, py-spy) is on the critical path of a backlog, the
        # consumer thread mostly waits for the writer (docs/warehouse.md "Backfill speed")
        if self._early_handoff:
            self._frame(batch)
        if self._writer is None:
            self._settle()
            self._write(batch)
            self._commit(consumer, batch)
            return
        if not self._early_handoff:
            self._settle()
        # Waits only while every writer is busy or a batch in flight writes rows this one does
        # (then for the oldest first); the batches it waited for are committed after this one went
        # to a writer: a synchronous commit is a broker round trip the writer waited for (0.07-0.27 s
        # of commits per 42 MB backfill, py-spy). Commits stay in the order the batches were cut,
        # and a commit that fails leaves inserted ranges uncommitted, which a restart cuts again
        # from sink_batches and the engine drops (as after a crash before the commit).
        batch.tables = frozenset(_tables(batch))
        done = []
        while self._inflight and (
            len(self._inflight) >= self.writers or any(self._conflict(b, batch) for _, b, _ in self._inflight)
        ):
            done.append(self._written())
        self._inflight.append((self._writer.submit(self._write, batch), batch, consumer))
        while self._inflight[0][0].done() and self._inflight[0][1] is not batch:
            done.append(self._written())
        try:
            for consumer_of, written in done:
                self._commit(consumer_of, written)
        except BaseException:
            self._drop_inflight()
            raise

    def _written(self) -> tuple[Any, Batch] | None:
        """Waits for the oldest batch in flight: (its consumer, the batch) once its inserts returned,
        or raises their failure (nothing committed, the loop restarts from the committed offsets);
        the batches after a failed one are waited for and dropped uncommitted."""
        if not self._inflight:
            return None
        future, batch, consumer = self._inflight.popleft()
        try:
            future.result()
        except BaseException:
            self._drop_inflight()
            raise
        return consumer, batch

    def _drop_inflight(self) -> None:
        """Waits for every batch still in flight and forgets it uncommitted: a new consumer must not
        start (nor reload the recorded ranges) while a writer still inserts."""
        while self._inflight:
            later = self._inflight.popleft()[0]
            try:
                later.result()
            except Exception as exc:  # noqa: BLE001 - the first failure is the one raised
                log.debug("sink: a batch after a failure: %r", exc)

    def _settle(self) -> None:
        """Waits for every batch in flight and commits each offset after its inserts returned, in
        the order they were cut, or raises the first failure (an insert's or a commit's; nothing
        after it committed, nothing left in flight)."""
        while self._inflight:
            done = self._written()
            if done is not None:
                try:
                    self._commit(*done)
                except BaseException:
                    self._drop_inflight()
                    raise

    def _client(self) -> Client:
        """The calling writer thread's client (the first thread takes the sink's own)."""
        ch = getattr(self._local, "ch", None)
        if ch is None:
            with self._clients_lock:
                if self._clients:
                    ch = self._clients.pop()
                else:
                    ch = self._writer_client()
                    self._opened.append(ch)
            self._local.ch = ch
        return ch

    def _conflict(self, a: Batch, b: Batch) -> bool:
        """Whether two batches write rows that may replace each other, so that the later one must
        be inserted after the earlier (ReplacingMergeTree keeps the row inserted last). Batches of
        different tables never do; nmon snapshot batches only where a (host, snapshot time) is in
        both (the key of nmon_sections' and nmon_labels' rows); any other shared table: always.
        Materialized views fed by two source tables (zvm_entities, sql/030) take keys of their own
        kind from each, so batches of those tables may run side by side."""
        common = a.tables & b.tables
        if not common:
            return False
        if common != {ENGINE_DECODED["nmon_snapshots"]}:
            return True
        keys_a, keys_b = self._nmon_keys(a), self._nmon_keys(b)
        return keys_a is None or keys_b is None or not keys_a.isdisjoint(keys_b)

    def _nmon_keys(self, batch: Batch) -> frozenset[bytes] | None:
        """The (host_id, ts) of every engine-decoded nmon message of the batch, as their Avro bytes
        (cached on the batch), or None when one cannot be read so (a broken body, a writer schema
        that does not begin with NMON_KEY_FIELDS, nmon rows decoded in Python): then it conflicts."""
        if batch.nmon_keys is not None or batch.nmon_keys_unknown:
            return batch.nmon_keys
        table = ENGINE_DECODED["nmon_snapshots"]
        keys = set()
        for t, schema_id, _offset, value, _key in batch.engine:
            if t != table:
                continue
            key = _nmon_key(value) if self._nmon_key_schema(schema_id) else None
            if key is None:
                batch.nmon_keys_unknown = True
                return None
            keys.add(key)
        if batch.rows.get(table):
            batch.nmon_keys_unknown = True
            return None
        batch.nmon_keys = frozenset(keys)
        return batch.nmon_keys

    def _nmon_key_schema(self, schema_id: int) -> bool:
        """Whether the writer schema begins with NMON_KEY_FIELDS (ts in milliseconds: another unit
        would give the same instant other bytes)."""
        ok = self._nmon_schema_ok.get(schema_id)
        if ok is None:
            fields = json.loads(self.decode.schema_json(schema_id)).get("fields", [])[: len(NMON_KEY_FIELDS)]
            found = tuple(
                (
                    f.get("name"),
                    f"{t.get('type')}/{t.get('logicalType')}" if isinstance(t := f.get("type"), dict) else t,
                )
                for f in fields
            )
            ok = self._nmon_schema_ok[schema_id] = found == NMON_KEY_FIELDS
        return ok

    def _write(self, batch: Batch) -> None:
        """Range recorded, rows inserted with the range's token (the writer thread)."""
        ch = self._client()
        if batch.recorded_last is None:
            ch.insert(
                "sink_batches",
                [[batch.topic, batch.partition, batch.first, batch.last, batch.messages]],
                column_names=["topic", "partition", "first_offset", "last_offset", "messages"],
                settings={"insert_deduplicate": 0},
            )
        else:
            with self._counter_lock:
                self.replayed_batches += 1
        settings = {**DEDUP_SETTINGS, "insert_deduplication_token": batch.token}
        try:
            # a fixed order, a replay repeats the same inserts: the engine-decoded messages first,
            # since a broken one among them adds a dead letter to the batch's rows
            self._insert_engine_decoded(batch, ch)
            for table in sorted(batch.rows):
                ch.insert(table, batch.rows[table], column_names=self.columns[table], settings=settings)
        except Exception:
            with self._counter_lock:
                self.insert_errors += 1
            raise  # offsets stay uncommitted: the same range is cut and inserted again after the retry

    def _commit(self, consumer: Any, batch: Batch) -> None:  # noqa: ANN401
        consumer.commit(offsets=[TopicPartition(batch.topic, batch.partition, batch.last_seen + 1)], asynchronous=False)
        for table, rows in batch.rows.items():
            self.rows_written[table] += len(rows)
        if batch.engine:  # a batch is one topic's: every engine-decoded entry goes to one table
            self.rows_written[batch.engine[0][0]] += len(batch.engine)
        self.batches += 1
        self._backoff = BACKOFF_FIRST_S

    def _insert_engine_decoded(self, batch: Batch, ch: Client | None = None) -> None:
        """One object container per (table, schema id) of the batch, inserted with the batch's token
        and the schema id (a fixed token whatever else the batch holds). A topic's own table read in
        one container takes the batch's token alone, the token the Python path gave the same rows,
        so a batch an older sink inserted (cpu samples and derived metrics were decoded in Python
        before) and this one replays is dropped too, rollups included. If the insert of a group
        fails, each of its messages is decoded here: the broken ones become dead letters and the
        rest of the group is inserted (the failed insert wrote nothing, sql/017); if none is broken,
        the failure was the engine's and raises (nothing committed, retried)."""
        ch = ch or self.ch
        groups = self._groups(batch)
        containers = Counter(table for table, _ in groups)
        for (table, schema_id), msgs in groups.items():
            own_table = self.engine_columns[table] is not None  # not nmon_snapshots_in's views
            alone = own_table and containers[table] == 1
            settings = {
                **DEDUP_SETTINGS,
                **ENGINE_INSERT_SETTINGS,
                **(OWN_TABLE_SETTINGS if own_table else {}),
                "insert_deduplication_token": batch.token if alone else f"{batch.token}@{schema_id}",
            }
            try:
                data = batch.framed.get((table, schema_id))
                if data is None:  # not cut by _flush (tests call _write directly)
                    data = self._container(schema_id, msgs)
                ch.raw_insert(table, self.engine_columns[table], data, settings=settings, fmt="Avro")
            except Exception:
                broken = self._broken_messages(batch, msgs)
                if not broken:
                    raise
                log.warning("sink: %d undecodable message(s) in %s: dead letters", len(broken), batch.token)
                for (_t, _s, offset, value, key), reason in broken.values():
                    with self._counter_lock:
                        self.undecodable += 1
                    batch.rows["dead_letters"].append(
                        _dead_letter_row(batch.topic, batch.partition, offset, key, value, reason)
                    )
                kept = [e for e in msgs if e[2] not in broken]
                batch.engine = [e for e in batch.engine if e[2] not in broken]
                if kept:
                    self._insert_container(table, schema_id, kept, settings, ch)
        batch.framed = {}  # inserted: the containers' memory goes now, not when the batch is committed

    def _insert_container(
        self, table: str, schema_id: int, msgs: list[Entry], settings: dict[str, Any], ch: Client | None = None
    ) -> None:
        (ch or self.ch).raw_insert(
            table, self.engine_columns[table], self._container(schema_id, msgs), settings=settings, fmt="Avro"
        )

    def _container(self, schema_id: int, msgs: list[Entry]) -> bytes:
        return object_container(self.decode.schema_json(schema_id), [e[3] for e in msgs], skip=5)

    @staticmethod
    def _groups(batch: Batch) -> dict[tuple[str, int], list[Entry]]:
        """The batch's engine-decoded messages per (table, schema id), in offset order."""
        groups: dict[tuple[str, int], list[Entry]] = {}
        for entry in batch.engine:
            groups.setdefault((entry[0], entry[1]), []).append(entry)
        return groups

    def _frame(self, batch: Batch) -> None:
        """The object containers of a cut batch (the consumer thread). A replay frames the same
        messages the same way: the containers are a function of the recorded range alone."""
        batch.framed = {key: self._container(key[1], msgs) for key, msgs in self._groups(batch).items()}

    def _broken_messages(self, batch: Batch, msgs: list[Entry]) -> dict[int, tuple[Entry, str]]:
        """offset -> (entry, reason) of the batch's messages that do not decode or make no row, as
        the Python path judges them (TransientError raises through)."""
        broken = {}
        for entry in msgs:
            offset, value = entry[2], entry[3]
            try:
                record = self.decode(value)
                try:
                    list(self.mapper.rows(batch.topic, record, batch.partition, offset))
                except Exception as exc:  # noqa: BLE001 - a record that decodes but makes no row
                    raise UndecodableError(f"decoded but makes no row: {exc!r}") from exc
            except UndecodableError as exc:
                broken[offset] = (entry, str(exc))
        return broken

    def _update_lag(self, consumer: Consumer, probe: Consumer | None = None) -> None:
        """Lag per assigned partition: with a `probe` (_probe) the ends the broker has now, else
        the ends the consumer's last fetches brought (no request)."""
        lag = {}
        for tp in consumer.assignment():
            if probe is not None:
                low, high = probe.get_watermark_offsets(tp, timeout=5, cached=False)
            else:
                low, high = consumer.get_watermark_offsets(tp, cached=True)
            if high < 0:  # cached: no fetch answered for this partition yet
                continue
            position = consumer.position([tp])[0].offset
            lag[f"{tp.topic}/{tp.partition}"] = high - (position if position >= 0 else low)
        self.lag = lag

    def start(self) -> None:
        """Runs the sink in a thread of its own (the warehouse process)."""
        if self._thread is not None:
            raise RuntimeError("the sink is started already")
        self._thread = threading.Thread(target=self.run, name="fleetperf-sink", daemon=True)
        self._thread.start()

    def stop(self, wait: float = 0.0) -> None:
        """Ends the loop; with `wait`, waits up to that long for a start()ed sink to commit its batch
        in flight and close its consumer, which leaves the group. A consumer that never left stayed
        a member for session.timeout.ms (45 s): after `./fleetperf down` and `up` the new consumer
        got its partitions 17 s after its start, and a followed file's first snapshots waited 4-13 s
        for their rows (measured, 2026-11-29)."""
        self.stop_event.set()
        thread = self._thread
        if wait > 0 and thread is not None and thread is not threading.current_thread():
            thread.join(wait)
            if thread.is_alive():
                log.warning("sink: not stopped after %.0fs; its consumer leaves the group on its session timeout", wait)

    def close(self) -> None:
        """Stops the writer thread (after stop() and run() returned)."""
        if self._writer is not None:
            self._writer.shutdown(wait=True)
        for ch in self._opened:
            ch.close()
        self._opened.clear()

    def stats(self) -> dict[str, Any]:
        return {
            "rows_written": dict(self.rows_written),
            "batches": self.batches,
            "replayed_batches": self.replayed_batches,
            "undecodable": self.undecodable,
            "insert_errors": self.insert_errors,
            "transient_errors": self.transient_errors,
            "lag": self.lag,
            "caught_up": self.caught_up,
            "last_error": self.last_error,
        }
