"""The sink's backfill speed changes (issue 24 goal 1) keep what it inserts and its guarantees.

The Avro object containers of engine-decoded nmon snapshots are framed by the consumer thread when
a batch is cut (Sink._frame), no longer by the writer thread inside its inserts. The oracles here:
the sink framing in the writer as before (early_handoff=False) fed the same messages must make the
same inserts byte for byte with the same tokens (so a range inserted by one and replayed by the
other is dropped by the engine), fastavro's own container reader must read the framed bytes back
to the records this test encoded, and the rows stored are the ones written out in
test_sink_nmon_engine from those records.
"""

from __future__ import annotations

import base64
import gc
import io
import json
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from confluent_kafka import KafkaError
from fastavro import parse_schema, reader, schemaless_writer

from fleetperf.warehouse.clickhouse import client
from fleetperf.warehouse.sink import GC_GEN0_THRESHOLD, SMALL_BODY, Sink, _nmon_key, object_container, quiet_gc
from tests.unit.test_sink_durability import Consumer, Msg
from tests.unit.test_sink_nmon_engine import (
    T0,
    TOPIC,
    Registry,
    expected_labels,
    expected_values,
    frame,
    snapshot,
    stored,
)


class Recorder:
    """Passes every call to the engine and records each raw (engine-decoded) insert: table, token,
    bytes and the thread that ran it."""

    def __init__(self, ch: Any) -> None:  # noqa: ANN401
        self._ch = ch
        self.raw: list[tuple[str, str, bytes, str]] = []

    def raw_insert(self, table: str, column_names: Any, data: bytes, **kwargs: Any) -> Any:  # noqa: ANN401
        token = kwargs["settings"]["insert_deduplication_token"]
        self.raw.append((table, token, bytes(data), threading.current_thread().name))
        return self._ch.raw_insert(table, column_names, data, **kwargs)

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self._ch, name)


def _run(settings: Any, ch: Any, msgs: list[Msg], early_handoff: bool) -> tuple[Sink, Consumer, list[str]]:  # noqa: ANN401
    """Feeds the messages through add()/flush_due() as the consumer loop does, with one writer
    thread (overlap; the recorder sees every insert), cutting a batch every 4 messages; returns
    the threads that framed."""
    sink = Sink(
        settings, ch, fetch=Registry(), engine_decode=True, overlap=True, early_handoff=early_handoff, writers=1
    )
    sink.batch_rows = 4
    sink.batch_seconds = 3600.0  # cut by size only
    framed_by: list[str] = []
    frame_batch = sink._frame  # noqa: SLF001

    def spy(batch: Any) -> None:  # noqa: ANN401
        framed_by.append(threading.current_thread().name)
        frame_batch(batch)

    sink._frame = spy  # noqa: SLF001
    consumer = Consumer()
    for m in msgs:
        sink.add(consumer, m)
    sink.flush_due(consumer, force=True)
    sink.close()
    return sink, consumer, framed_by


def test_containers_framed_when_cut_are_the_bytes_the_writer_framed_before(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    # two schema versions interleaved: one container per schema id and batch, 10 messages in 3 batches
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i), 22 if i % 2 else 21)) for i in range(10)]
    early = Recorder(ch)
    sink, consumer, framed_by = _run(settings, early, msgs, early_handoff=True)
    assert consumer.committed == {(TOPIC, 0): 10} and sink.undecodable == 0
    assert framed_by == [threading.current_thread().name] * 3  # the consumer thread, once per batch
    assert {t for *_, t in early.raw} == {"sink-writer_0"}  # the writer only inserts
    assert [tok for _, tok, *_ in early.raw] == [
        f"{TOPIC}/0/{a}-{b}@{s}" for a, b in ((0, 3), (4, 7), (8, 9)) for s in (21, 22)
    ]
    # fastavro's reader reads each container back to exactly its messages' records, in offset order
    read = [r["origin_snapshot"] for _, _, data, _ in early.raw for r in reader(io.BytesIO(data))]
    assert read == [f"T{i:04d}" for i in (0, 2, 1, 3, 4, 6, 5, 7, 8, 9)]
    assert stored(ch) == (expected_values(list(range(10))), expected_labels(list(range(10))))

    # the sink as before (framed in the writer) makes the same inserts: same tables, tokens, bytes,
    # so the engine drops them as replays of the ranges above and nothing is stored twice
    before = Recorder(ch)
    _, consumer_before, framed_before = _run(settings, before, msgs, early_handoff=False)
    assert framed_before == [] and consumer_before.committed == {(TOPIC, 0): 10}
    assert [r[:3] for r in before.raw] == [r[:3] for r in early.raw]
    assert stored(ch, final=False) == stored(ch)  # no key twice: the replay was dropped


def test_a_broken_message_of_a_framed_batch_is_a_dead_letter_alone(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i, broken=i == 5))) for i in range(8)]
    sink, consumer, framed_by = _run(settings, Recorder(ch), msgs, early_handoff=True)
    assert len(framed_by) == 2 and consumer.committed == {(TOPIC, 0): 8}
    assert sink.undecodable == 1
    good = [i for i in range(8) if i != 5]
    assert stored(ch) == (expected_values(good), expected_labels(good))
    dead = ch.query(
        "SELECT kafka_partition, kafka_offset, kafka_key_base64, kafka_value_base64 FROM dead_letters "
        "WHERE kafka_topic = {t:String}",
        parameters={"t": TOPIC},
    )
    # its coordinates, key and every byte, as the message had them
    assert dead.result_rows == [(0, 5, base64.b64encode(b"k").decode(), base64.b64encode(msgs[5].value()).decode())]


def test_a_batch_holds_its_engine_messages_as_tuples_the_collector_leaves_alone(warehouse: Any) -> None:  # noqa: F811
    """Not the consumer's Message objects, which the cyclic collector walks at every collection
    for as long as a batch holds them (sink.Entry)."""
    settings, ch = warehouse
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=False)
    sink.batch_seconds = 3600.0
    consumer = Consumer()
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(5)]
    for m in msgs:
        sink.add(consumer, m)
    [batch] = sink._pending.values()  # noqa: SLF001
    gc.collect()
    assert len(batch.engine) == 5
    assert not any(gc.is_tracked(entry) for entry in batch.engine)
    assert not any(isinstance(part, Msg) for entry in batch.engine for part in entry)
    sink.flush_due(consumer, force=True)
    sink.close()
    assert consumer.committed == {(TOPIC, 0): 5}
    assert stored(ch) == (expected_values(list(range(5))), expected_labels(list(range(5))))


def test_the_framed_containers_are_freed_once_inserted(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=False)
    batch_holder: list[Any] = []
    write = sink._write  # noqa: SLF001

    def keep(batch: Any) -> None:  # noqa: ANN401
        assert batch.framed, "the batch reached the writer unframed"
        write(batch)
        batch_holder.append(batch)

    sink._write = keep  # noqa: SLF001
    consumer = Consumer()
    for i in range(3):
        sink.add(consumer, Msg(TOPIC, 0, i, frame(snapshot(i))))
    sink.flush_due(consumer, force=True)
    assert consumer.committed == {(TOPIC, 0): 3}
    assert len(batch_holder) == 1 and batch_holder[0].framed == {}  # memory bounded by the batch in flight


class WatchingConsumer(Consumer):
    """Records, at each commit, the first offset of the batch then in the writer's hands."""

    def __init__(self) -> None:
        super().__init__()
        self.sink: Sink | None = None
        self.in_flight_at_commit: list[int | None] = []
        self.failures = 0

    def commit(self, offsets: list[Any], asynchronous: bool = True) -> None:  # noqa: ANN401
        inflight = self.sink._inflight if self.sink is not None else ()  # noqa: SLF001
        self.in_flight_at_commit.append(inflight[-1][1].first if inflight else None)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("broker gone at the commit (test)")
        super().commit(offsets, asynchronous)


def _sink(settings: Any, ch: Any, consumer: WatchingConsumer) -> Sink:  # noqa: ANN401
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=True, writers=1)
    sink.batch_rows = 3
    sink.batch_seconds = 3600.0
    consumer.sink = sink
    return sink


def test_the_next_batch_goes_to_the_writer_before_the_last_one_is_committed(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    consumer = WatchingConsumer()
    sink = _sink(settings, ch, consumer)
    for i in range(9):
        sink.add(consumer, Msg(TOPIC, 0, i, frame(snapshot(i))))
    sink.flush_due(consumer, force=True)
    sink.close()
    # batch 0-2 committed while 3-5 was in the writer's hands, 3-5 while 6-8 was, 6-8 at the end
    assert consumer.in_flight_at_commit == [3, 6, None]
    assert consumer.committed == {(TOPIC, 0): 9}
    assert stored(ch) == (expected_values(list(range(9))), expected_labels(list(range(9))))


def test_a_failed_commit_with_the_next_batch_in_flight_loses_and_doubles_nothing(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(9)]
    consumer = WatchingConsumer()
    consumer.failures = 1  # the commit of 0-2 fails while 3-5 is in the writer's hands
    sink = _sink(settings, ch, consumer)
    with pytest.raises(RuntimeError, match="broker gone"):
        for m in msgs:
            sink.add(consumer, m)
    # 3-5 was waited for and forgotten uncommitted: what the loop's `finally` does next finds
    # nothing in flight, and a new consumer starts with no writer still inserting
    assert not sink._inflight  # noqa: SLF001
    sink._settle()  # noqa: SLF001
    sink.close()
    assert consumer.committed == {}  # nothing committed: a restart reads from offset 0 again
    # both ranges were inserted and recorded; a restart cuts them again and the engine drops them
    again = WatchingConsumer()
    sink = _sink(settings, ch, again)
    for m in msgs:
        sink.add(again, m)
    sink.flush_due(again, force=True)
    sink.close()
    assert again.committed == {(TOPIC, 0): 9} and sink.replayed_batches == 2
    assert stored(ch) == (expected_values(list(range(9))), expected_labels(list(range(9))))
    assert stored(ch, final=False) == stored(ch)  # nothing doubled, not even before a merge


# --- two writers (issue 24 goal 1: [warehouse] sink_writers) --------------------------------------


class Timed:
    """A client whose nmon inserts are timed (start, end, token); `hold(token)` says how long an
    insert waits before it reaches the engine (an Event to wait for, or None), `fail(token)` makes
    it raise instead."""

    def __init__(self, ch: Any, log: list[tuple[float, float, str, int]], hold: Any = None, fail: Any = None) -> None:  # noqa: ANN401
        self._ch, self._log, self._hold, self._fail = ch, log, hold, fail

    def raw_insert(self, table: str, column_names: Any, data: bytes, **kwargs: Any) -> Any:  # noqa: ANN401
        token = kwargs["settings"]["insert_deduplication_token"]
        start = time.monotonic()
        event = self._hold(token) if self._hold else None
        if event is not None:
            event.wait(timeout=1.0)
        if self._fail and self._fail(token):
            raise RuntimeError(f"insert of {token} failed (test)")
        try:
            return self._ch.raw_insert(table, column_names, data, **kwargs)
        finally:
            self._log.append((start, time.monotonic(), token, id(self._ch)))

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self._ch, name)


def _two_writers(settings: Any, ch: Any, log: list, **timed: Any) -> Sink:  # noqa: ANN401
    """A sink of two writers, the second on a client of its own (as the default opens one)."""
    opened: list[Any] = []

    def second() -> Any:  # noqa: ANN401
        opened.append(client(settings, ch.database))
        return Timed(opened[-1], log, **timed)

    sink = Sink(settings, Timed(ch, log, **timed), fetch=Registry(), writers=2, writer_client=second)
    sink.batch_rows = 3
    sink.batch_seconds = 3600.0
    return sink


def _replayed_once(settings: Any, ch: Any, log: list, msgs: list[Msg], replayed: int) -> None:  # noqa: ANN401
    """A fresh two-writer sink reads the messages again from offset 0: every recorded range is cut
    again (`replayed` of them), all committed, every value stored once."""
    again = _two_writers(settings, ch, log)
    consumer = Consumer()
    for m in msgs:
        again.add(consumer, m)
    again.flush_due(consumer, force=True)
    again.close()
    assert consumer.committed == {(TOPIC, 0): 9} and again.replayed_batches == replayed
    assert stored(ch) == (expected_values(list(range(9))), expected_labels(list(range(9))))
    assert stored(ch, final=False) == stored(ch)


def _overlapped(log: list[tuple[float, float, str, int]], a: str, b: str) -> bool:
    (sa, ea), (sb, eb) = ([(s, e) for s, e, t, _ in log if t.startswith(x)][0] for x in (a, b))
    return sa < eb and sb < ea


def test_two_writers_insert_batches_of_other_snapshots_side_by_side(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    log: list[tuple[float, float, str, int]] = []
    # the first batch's insert waits until the second one's has started (or 1 s): with one writer
    # at a time they could not overlap
    second_started = threading.Event()

    def hold(token: str) -> threading.Event | None:
        if token.startswith(f"{TOPIC}/0/0-2"):
            return second_started
        if token.startswith(f"{TOPIC}/0/3-5"):
            second_started.set()
        return None

    sink = _two_writers(settings, ch, log, hold=hold)
    consumer = WatchingConsumer()
    consumer.sink = sink
    commits: list[int] = []
    commit = consumer.commit
    consumer.commit = lambda offsets, asynchronous=True: (commits.append(offsets[0].offset), commit(offsets))  # type: ignore[method-assign]
    for i in range(9):
        sink.add(consumer, Msg(TOPIC, 0, i, frame(snapshot(i))))
    sink.flush_due(consumer, force=True)
    sink.close()
    assert _overlapped(log, f"{TOPIC}/0/0-2", f"{TOPIC}/0/3-5")  # side by side
    assert len({client for *_, client in log}) == 2  # the second writer on a client of its own
    assert commits == [3, 6, 9]  # in the order the batches were cut, each after its inserts
    assert consumer.committed == {(TOPIC, 0): 9}
    assert stored(ch) == (expected_values(list(range(9))), expected_labels(list(range(9))))
    assert stored(ch, final=False) == stored(ch)


@pytest.mark.parametrize("rule", [True, False])
def test_a_reingested_snapshot_waits_for_the_batch_that_holds_its_older_version(warehouse: Any, rule: bool) -> None:  # noqa: F811
    settings, ch = warehouse
    log: list[tuple[float, float, str, int]] = []
    second_done = threading.Event()

    def hold(token: str) -> threading.Event | None:
        # the first batch reaches the engine only after the second one's insert returned (or 1 s)
        return second_done if token.startswith(f"{TOPIC}/0/0-2") else None

    sink = _two_writers(settings, ch, log, hold=hold)
    if not rule:  # control: without the rule the older version is inserted last and wins
        sink._conflict = lambda a, b: False  # type: ignore[method-assign]  # noqa: SLF001
    newer = snapshot(1)
    newer["rows"][0]["values"] = [10.0 + 1, 99.0, None]  # snapshot 1 ingested again, Sys% changed
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(3)]
    msgs += [Msg(TOPIC, 0, 3, frame(newer)), Msg(TOPIC, 0, 4, frame(snapshot(3))), Msg(TOPIC, 0, 5, frame(snapshot(4)))]
    consumer = Consumer()
    for m in msgs:
        sink.add(consumer, m)
    # both batches are cut; without the rule the second one's insert returns (its log entry) while
    # the first one waits
    deadline = time.monotonic() + 5
    while (
        rule is False and not any(t.startswith(f"{TOPIC}/0/3-5") for _, _, t, _ in log) and time.monotonic() < deadline
    ):
        time.sleep(0.01)
    second_done.set()
    sink.flush_due(consumer, force=True)
    sink.close()
    assert consumer.committed == {(TOPIC, 0): 6}
    sys_pct = ch.query(
        "SELECT value FROM nmon_values_v WHERE section = 'CPU_ALL' AND metric = 'Sys%' "
        "AND ts = {t:DateTime64(3, 'UTC')}",
        parameters={"t": T0 + timedelta(minutes=1)},
    ).result_rows
    if rule:
        assert not _overlapped(log, f"{TOPIC}/0/0-2", f"{TOPIC}/0/3-5")
        assert sys_pct == [(99.0,)]  # the re-ingested version, as with one writer
    else:
        assert sys_pct == [(2.5,)]  # the test can tell: the older version won


def test_a_failed_batch_stops_the_one_beside_it_from_being_committed(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    log: list[tuple[float, float, str, int]] = []
    failing = [True]
    second_in = threading.Event()

    def hold(token: str) -> threading.Event | None:
        if token.startswith(f"{TOPIC}/0/3-5"):
            second_in.set()
            return None
        return second_in if token.startswith(f"{TOPIC}/0/0-2") else None

    def fail(token: str) -> bool:
        return failing[0] and token.startswith(f"{TOPIC}/0/0-2")

    sink = _two_writers(settings, ch, log, hold=hold, fail=fail)
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(9)]
    consumer = Consumer()
    with pytest.raises(RuntimeError, match="failed"):
        for m in msgs:
            sink.add(consumer, m)
        sink._settle()  # noqa: SLF001 - as the loop does when nothing more arrives
    assert second_in.is_set()  # the second batch went in while the first one was held
    assert not sink._inflight  # noqa: SLF001 - the batch beside it finished, uncommitted
    sink.close()
    assert consumer.committed == {}  # the second batch was inserted but its offset not committed
    failing[0] = False
    _replayed_once(settings, ch, log, msgs, replayed=2)  # the inserted second batch dropped as a replay


def test_the_key_read_from_an_nmon_body_is_fastavros_encoding_of_host_and_time() -> None:
    # the oracle: fastavro's encoding of host_id and ts alone; hosts whose length takes one and
    # two varint bytes, times before 1970 (negative) and far ahead
    host_schema = parse_schema({"type": "record", "name": "H", "fields": [{"name": "h", "type": "string"}]})
    ts_schema = parse_schema({"type": "record", "name": "T", "fields": [{"name": "t", "type": "long"}]})
    cases = [
        ("lpar7", T0),
        ("h" * 200, datetime(1969, 12, 31, 23, 59, tzinfo=UTC)),
        ("", datetime(2999, 1, 1, tzinfo=UTC)),
    ]
    for host, when in cases:
        value = frame({**snapshot(0), "host_id": host, "hostname": "x" * 70, "ts": when})
        parts = []
        for schema, field_value in ((host_schema, {"h": host}), (ts_schema, {"t": int(when.timestamp() * 1000)})):
            buf = io.BytesIO()
            schemaless_writer(buf, schema, field_value)
            parts.append(buf.getvalue())
        assert _nmon_key(value) == parts[0] + parts[1]
        prefix = len(parts[0]) + 2 + 70 + len(parts[1])  # host_id, hostname (2-byte length), ts
        assert _nmon_key(value[: 5 + prefix]) == parts[0] + parts[1]
        for cut in range(5, 5 + prefix):  # a body cut anywhere before the end of ts has no key
            assert _nmon_key(value[:cut]) is None, cut
    assert _nmon_key(b"\0\0\0\0\x15" + b"\x01") is None  # a negative length


def test_a_failed_commit_leaves_no_batch_in_flight_for_the_next_consumer(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    log: list[tuple[float, float, str, int]] = []
    release = threading.Event()

    def hold(token: str) -> threading.Event | None:  # 3-5 is slow: still in flight when 0-2's commit fails
        return release if token.startswith(f"{TOPIC}/0/3-5") else None

    sink = _two_writers(settings, ch, log, hold=hold)
    consumer = WatchingConsumer()
    consumer.failures = 1
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(9)]
    with pytest.raises(RuntimeError, match="broker gone"):
        for m in msgs:  # 6-8 waits for a free writer, takes 0-2's, and commits it: that fails
            sink.add(consumer, m)
    # every batch still in flight was waited for and forgotten: a new consumer may start
    assert not sink._inflight and consumer.committed == {}  # noqa: SLF001
    assert {t.split("@")[0] for _, _, t, _ in log} == {f"{TOPIC}/0/{r}" for r in ("0-2", "3-5", "6-8")}
    sink.close()
    _replayed_once(settings, ch, log, msgs, replayed=3)


def test_a_container_of_messages_past_their_header_is_the_container_of_the_bodies() -> None:
    """The sink frames its Confluent-framed messages past their 5-byte header (skip=5): small
    bodies copied into their block's head, large ones (SMALL_BODY and above) joined as memoryviews.
    fastavro's container reader is the oracle that the blocks are whole and in order, on both sides
    of the boundary and for a block size that takes three varint bytes."""
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "a", "type": "long"}, {"name": "s", "type": "string"}],
    }
    parsed = parse_schema(schema)
    records = [{"a": i * 1_000_003, "s": "x" * (i * 37 % 300)} for i in range(200)]
    # bodies of a long (4 bytes here), the string's length (2 bytes) and the string around SMALL_BODY
    records += [{"a": 1 << 20, "s": "y" * (SMALL_BODY + d)} for d in (-7, -6, -5, 0, 1, 200_000)]
    bodies = []
    for r in records:
        out = io.BytesIO()
        schemaless_writer(out, parsed, r)
        bodies.append(out.getvalue())
    assert {len(b) < SMALL_BODY for b in bodies} == {True, False}
    assert SMALL_BODY - 1 in {len(b) for b in bodies} and SMALL_BODY in {len(b) for b in bodies}
    messages = [b"\x00\x00\x00\x00\x07" + b for b in bodies]
    schema_json = json.dumps(schema).encode()
    framed = object_container(schema_json, messages, skip=5)
    assert framed == object_container(schema_json, bodies)
    assert framed == object_container(schema_json, [memoryview(m)[5:] for m in messages])
    assert list(reader(io.BytesIO(framed))) == records
    assert list(reader(io.BytesIO(object_container(schema_json, [])))) == []


@pytest.fixture
def gc_restored() -> Any:  # noqa: ANN401
    threshold = gc.get_threshold()
    yield
    gc.unfreeze()
    gc.set_threshold(*threshold)


def test_quiet_gc_freezes_what_is_loaded_and_collects_the_young_less_often(gc_restored: Any) -> None:
    gc.set_threshold(700, 10, 10)
    kept = [object() for _ in range(10)]  # noqa: F841 - something loaded before
    quiet_gc()
    assert gc.get_freeze_count() > 0
    assert gc.get_threshold() == (GC_GEN0_THRESHOLD, 10, 10)
    gc.unfreeze()
    gc.set_threshold(50_000, 5, 5)
    quiet_gc()  # a process that chose a higher threshold keeps it
    assert gc.get_threshold() == (50_000, 5, 5)


def test_both_processes_that_run_the_sink_quiet_the_collector_once_loaded(monkeypatch: Any) -> None:  # noqa: ANN401
    """The warehouse process after Superset's app is loaded, `fleetperf sink` before consuming."""
    import types

    from fleetperf import config
    from fleetperf.cli.commands import warehouse as commands
    from fleetperf.warehouse import clickhouse, main
    from fleetperf.warehouse import sink as sink_module

    calls: list[str] = []
    monkeypatch.setattr(sink_module, "quiet_gc", lambda: calls.append("quiet_gc"))
    fake_app = types.ModuleType("superset.app")
    fake_app.create_app = lambda: calls.append("create_app") or "app"  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "superset", types.ModuleType("superset"))
    monkeypatch.setitem(sys.modules, "superset.app", fake_app)
    monkeypatch.setattr(main, "start_services", lambda s: calls.append("sink started"))
    monkeypatch.setenv("SUPERSET_CONFIG_PATH", "unused")  # load() sets it when absent: not for later tests
    settings = config.load()
    assert main.WarehouseApp(settings).load() == "app"
    assert calls == ["sink started", "create_app", "quiet_gc"]

    calls.clear()

    class FakeSink:
        def __init__(self, *_: Any) -> None:  # noqa: ANN401
            calls.append("sink made")

        def run(self) -> None:
            calls.append("run")

    monkeypatch.setattr(clickhouse, "migrate", lambda s: (None, []))
    monkeypatch.setattr("logging.basicConfig", lambda **_: None)
    monkeypatch.setattr(sink_module, "Sink", FakeSink)
    assert commands.cmd_sink(None, settings) == 0  # type: ignore[arg-type]
    assert calls == ["sink made", "quiet_gc", "run"]


class _Eof(Msg):
    """The end of a partition, as librdkafka reports it (consume()'s error message)."""

    def error(self) -> Any:  # noqa: ANN401
        class Err:
            def code(self) -> int:
                return KafkaError._PARTITION_EOF  # noqa: SLF001

        return Err()


def _cuts(settings: Any, ch: Any, msgs: list[Msg], chunk: int | None) -> tuple[list[tuple], dict]:  # noqa: ANN401
    """Every batch the sink cuts from msgs (fed one by one to add(), or `chunk` at a time to
    add_all() as the consumer loop does), as it is when cut, and the offsets committed; the writer
    records instead of inserting, so sink_batches holds only the ranges the test recorded."""
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=False)
    sink.batch_rows = 5
    sink.batch_seconds = 3600.0
    cuts: list[tuple] = []

    def write(batch: Any) -> None:  # noqa: ANN401
        # a dead letter's time of writing (column 7) left out: the rest is the message's
        rows = {
            t: [[x for i, x in enumerate(r) if (t, i) != ("dead_letters", 6)] for r in v]
            for t, v in batch.rows.items()
            if v
        }
        cuts.append(
            (
                batch.token,
                batch.recorded_last,
                batch.messages,
                batch.row_count,
                batch.engine_bytes,
                list(batch.engine),
                rows,
            )
        )

    sink._write = write  # noqa: SLF001
    consumer = Consumer()
    if chunk is None:
        for m in msgs:
            if m.error() is None:
                sink.add(consumer, m)
    else:
        for i in range(0, len(msgs), chunk):
            sink.add_all(consumer, msgs[i : i + chunk])
    sink.flush_due(consumer, force=True)
    sink.close()
    return cuts, consumer.committed


def test_add_all_cuts_the_batches_add_cuts_message_by_message(warehouse: Any) -> None:  # noqa: F811
    """add_all's shortcut for engine-decoded messages makes the batches add() makes: the same
    ranges and tokens, entries, dead letters, byte counts and commits, around recorded ranges
    (replays cut where they were recorded, free batches stop short of them), two partitions
    interleaved, two schema ids, a message of an unknown schema id, one too short for a header
    and the ends of partitions."""
    settings, ch = warehouse
    recorded = [(0, 6, 8), (0, 30, 33), (1, 2, 4)]  # (partition, first, last) an earlier sink inserted
    ch.insert(
        "sink_batches",
        [[TOPIC, p, a, b, b - a + 1] for p, a, b in recorded],
        column_names=["topic", "partition", "first_offset", "last_offset", "messages"],
    )
    msgs: list[Msg] = []
    for i in range(40):
        for p in (0, 1) if i < 20 else (0,):
            if (p, i) == (0, 12):
                value = b"\0\0\0\0\x63" + frame(snapshot(i))[5:]  # id 99, unknown to the registry: a dead letter
            elif (p, i) == (1, 7):
                value = b"\0\0"  # no header
            else:
                value = frame(snapshot(i), 22 if i % 3 else 21)
            msgs.append(Msg(TOPIC, p, i, value))
        if i in (15, 25):
            msgs.append(_Eof(TOPIC, 0, i + 1, None))
    one_by_one = _cuts(settings, ch, msgs, None)
    for chunk in (1, 7, 1000):
        assert _cuts(settings, ch, msgs, chunk) == one_by_one, chunk
    cuts, committed = one_by_one
    assert committed == {(TOPIC, 0): 40, (TOPIC, 1): 20}
    tokens = [c[0] for c in cuts]
    # the recorded ranges were cut exactly as recorded, and no free batch crossed into one
    for p, a, b in recorded:
        assert f"{TOPIC}/{p}/{a}-{b}" in tokens
    for token in tokens:
        p, span = token.split("/")[-2:]
        a, b = map(int, span.split("-"))
        assert all(not (a < ra <= b or a <= rb < b) or (a, b) == (ra, rb) for rp, ra, rb in recorded if rp == int(p))
    dead = [r for c in cuts for r in c[6].get("dead_letters", [])]
    assert sorted((r[-4], r[-3]) for r in dead) == [(0, 12), (1, 7)]
    assert sum(len(c[5]) for c in cuts) == 60 - 2  # every message but the two dead letters an engine entry
