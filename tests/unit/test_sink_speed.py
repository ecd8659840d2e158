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

import io
import threading
from typing import Any

import pytest
from fastavro import reader

from fleetperf.warehouse.sink import Sink
from tests.unit.test_sink_durability import Consumer, Msg
from tests.unit.test_sink_nmon_engine import (
    TOPIC,
    Registry,
    expected_labels,
    expected_values,
    frame,
    snapshot,
    stored,
    warehouse,  # noqa: F401 - the fixture
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
    """Feeds the messages through add()/flush_due() as the consumer loop does, with the writer
    thread (overlap), cutting a batch every 4 messages; returns the threads that framed."""
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=True, early_handoff=early_handoff)
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
    dead = ch.query("SELECT kafka_offset FROM dead_letters WHERE kafka_topic = {t:String}", parameters={"t": TOPIC})
    assert [r[0] for r in dead.result_rows] == [5]


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
        inflight = self.sink._inflight if self.sink is not None else None  # noqa: SLF001
        self.in_flight_at_commit.append(inflight[1].first if inflight else None)
        if self.failures:
            self.failures -= 1
            raise RuntimeError("broker gone at the commit (test)")
        super().commit(offsets, asynchronous)


def _sink(settings: Any, ch: Any, consumer: WatchingConsumer) -> Sink:  # noqa: ANN401
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=True)
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
    consumer.failures = 2  # the commit of 0-2 fails, and the one of 3-5 when the loop gives up
    sink = _sink(settings, ch, consumer)
    with pytest.raises(RuntimeError, match="broker gone"):
        for m in msgs:
            sink.add(consumer, m)
    with pytest.raises(RuntimeError, match="broker gone"):
        sink._settle()  # noqa: SLF001 - what the loop's `finally` does before a new consumer starts
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
