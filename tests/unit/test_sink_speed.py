"""The sink's backfill speed changes (issue 24 goal 1) keep what it inserts and its guarantees.

The Avro object containers of engine-decoded nmon snapshots are framed by the consumer thread when
a batch is cut (Sink._frame), no longer by the writer thread inside its inserts. The oracles here:
the sink framing in the writer as before (frame_early=False) fed the same messages must make the
same inserts byte for byte with the same tokens (so a range inserted by one and replayed by the
other is dropped by the engine), fastavro's own container reader must read the framed bytes back
to the records this test encoded, and the rows stored are the ones written out in
test_sink_nmon_engine from those records.
"""

from __future__ import annotations

import io
import threading
from typing import Any

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


def _run(settings: Any, ch: Any, msgs: list[Msg], frame_early: bool) -> tuple[Sink, Consumer, list[str]]:  # noqa: ANN401
    """Feeds the messages through add()/flush_due() as the consumer loop does, with the writer
    thread (overlap), cutting a batch every 4 messages; returns the threads that framed."""
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=True, overlap=True, frame_early=frame_early)
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
    sink, consumer, framed_by = _run(settings, early, msgs, frame_early=True)
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
    _, consumer_before, framed_before = _run(settings, before, msgs, frame_early=False)
    assert framed_before == [] and consumer_before.committed == {(TOPIC, 0): 10}
    assert [r[:3] for r in before.raw] == [r[:3] for r in early.raw]
    assert stored(ch, final=False) == stored(ch)  # no key twice: the replay was dropped


def test_a_broken_message_of_a_framed_batch_is_a_dead_letter_alone(warehouse: Any) -> None:  # noqa: F811
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i, broken=i == 5))) for i in range(8)]
    sink, consumer, framed_by = _run(settings, Recorder(ch), msgs, frame_early=True)
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
