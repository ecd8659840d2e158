"""The sink's consumer: the lag check never asks the broker through the consumer that fetches, and a
stopping warehouse waits for the sink to close its consumer (leave the group).

A watermark query (ListOffsets) on a subscribed consumer waits on the broker connection behind the
consumer's long-poll fetch (fetch.wait.max.ms, 500 ms): 500 ms per partition against a real broker
here (0.7-5 ms on a consumer that never fetches), so an idle sink's check of 12 partitions held its
loop for 6 s, and a live snapshot arriving meanwhile waited (bench/live_latency.py: Kafka -> row
p95 5.83 s, 1.23 s with the probe, same stack, 2026-11-29). The doubles below stand for the two
consumers: the fetching one counts every query the broker would answer, the probe answers the
broker's ends.

A consumer that is never closed stays a member of its group until session.timeout.ms (45 s): after
`./fleetperf down` and `up` the new warehouse's consumer got its partitions 17 s after its start and
a followed file's first snapshots waited 4-13 s for their rows (probe of one cpu sample every 3.1 s,
2026-11-29); with the worker waiting for the sink to close it, 1.0-1.2 s from the first one.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException, TopicPartition

from fleetperf import config
from fleetperf.warehouse import sink as sink_module
from fleetperf.warehouse.sink import Sink

SETTINGS = config.load()


class Fetching:
    """The subscribed consumer: nothing left to read; `cached` holds the ends its last fetches
    brought (-1: no fetch answered yet). consume() stops the sink after `rounds` calls."""

    def __init__(self, sink: Sink, positions: dict[str, int], cached: dict[str, int], rounds: int | None = 3) -> None:
        self.sink, self.positions, self.cached, self.rounds = sink, positions, cached, rounds
        self.broker_queries = 0
        self.closed = False

    def consume(self, num_messages: int, timeout: float) -> list[Any]:
        if self.rounds is None:  # run by start(): waits out the timeout as librdkafka does
            time.sleep(timeout)
            return []
        self.rounds -= 1
        if self.rounds <= 0:
            self.sink.stop()
        return []

    def assignment(self) -> list[TopicPartition]:
        return [TopicPartition(topic, 0) for topic in self.positions]

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float | None = None, cached: bool = False) -> tuple:
        if not cached:
            self.broker_queries += 1  # what waited behind the long-poll fetch
            raise AssertionError("a broker query on the fetching consumer")
        return 0, self.cached[tp.topic]

    def position(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        return [TopicPartition(tp.topic, tp.partition, self.positions[tp.topic]) for tp in tps]

    def close(self) -> None:
        self.closed = True


class Probe:
    """The consumer that never fetches: the ends the broker has now (`fails`: its first query
    raises, as a broker timing out would)."""

    def __init__(self, ends: dict[str, int], fails: bool = False) -> None:
        self.ends, self.fails = ends, fails
        self.queries: list[tuple[str, bool]] = []
        self.closed = False

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float | None = None, cached: bool = False) -> tuple:
        self.queries.append((tp.topic, cached))
        if self.fails:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
        return 0, self.ends[tp.topic]

    def close(self) -> None:
        self.closed = True


def _idle_sink(
    positions: dict[str, int], broker: dict[str, int], failing: int = 0
) -> tuple[Sink, Fetching, list[Probe]]:
    """A sink with nothing to read; its first `failing` probes fail their query."""
    sink = Sink(SETTINGS, ch=None, fetch=lambda _id: None)  # type: ignore[arg-type] - nothing inserted
    fetching = Fetching(sink, positions, cached=dict.fromkeys(positions, -1))
    probes: list[Probe] = []

    def probe() -> Probe:
        probes.append(Probe(broker, fails=len(probes) < failing))
        return probes[-1]

    sink._consumer = lambda: fetching  # type: ignore[method-assign]
    sink._probe = probe  # type: ignore[method-assign]
    return sink, fetching, probes


def test_an_idle_sink_asks_the_probe_for_the_ends_and_closes_it() -> None:
    positions = {"a": 7, "b": 3}
    sink, fetching, probes = _idle_sink(positions, broker={"a": 7, "b": 3})
    sink._loop()
    assert fetching.broker_queries == 0
    assert len(probes) == 1
    assert probes[0].queries == [("a", False), ("b", False)]  # the broker's ends, not a cache
    assert sink.lag == {"a/0": 0, "b/0": 0}
    assert sink.caught_up
    assert probes[0].closed and fetching.closed


def test_an_end_beyond_the_position_is_lag_and_not_caught_up() -> None:
    # the fetching consumer's cache has no end yet (-1): only the probe knows "b" has 2 more
    sink, fetching, probes = _idle_sink({"a": 7, "b": 3}, broker={"a": 7, "b": 5})
    sink._loop()
    assert sink.lag == {"a/0": 0, "b/0": 2}
    assert not sink.caught_up
    assert fetching.broker_queries == 0 and probes[0].closed


def test_a_busy_sink_reads_the_ends_its_fetches_brought_and_skips_unanswered_partitions() -> None:
    sink = Sink(SETTINGS, ch=None, fetch=lambda _id: None)  # type: ignore[arg-type]
    fetching = Fetching(sink, {"a": 7, "b": 3}, cached={"a": 10, "b": -1})
    sink._update_lag(fetching)  # type: ignore[arg-type]
    assert sink.lag == {"a/0": 3}
    assert fetching.broker_queries == 0


def test_stop_with_wait_returns_once_the_started_sink_closed_its_consumer() -> None:
    sink, fetching, probes = _idle_sink({"a": 7}, broker={"a": 7})
    fetching.rounds = None  # until stopped
    sink.start()
    deadline = time.monotonic() + 10
    while not probes and time.monotonic() < deadline:  # its loop is running
        time.sleep(0.05)
    assert probes, "the sink's loop never checked its lag"
    assert not fetching.closed
    sink.stop(wait=10)
    # consume() was inside its 0.2 s timeout when stop() was called: only a stop that waits for the
    # loop sees the consumer closed here
    assert fetching.closed and probes[0].closed
    assert not any(t.name == "fleetperf-sink" and t.is_alive() for t in threading.enumerate())


def test_a_failed_lag_check_keeps_the_consumer_and_asks_a_new_probe_later(monkeypatch: pytest.MonkeyPatch) -> None:
    sink, fetching, probes = _idle_sink({"a": 7}, broker={"a": 7}, failing=1)
    fetching.rounds = 2
    clock = iter(range(100, 10_000, 5))  # 5 s between calls: every idle round checks the lag
    monkeypatch.setattr(sink_module.time, "monotonic", lambda: float(next(clock)))
    sink._loop()  # raised before: the consumer closed and the sink restarted after a backoff
    assert sink.transient_errors == 0 and sink.last_error is None
    assert [p.closed for p in probes] == [True, True]  # the failed one closed at once
    assert probes[1].queries == [("a", False)]
    assert sink.caught_up and fetching.closed


def test_both_consumers_are_closed_when_the_loop_fails() -> None:
    sink, fetching, probes = _idle_sink({"a": 7}, broker={"a": 7})
    rounds = iter([[], KafkaException(KafkaError(KafkaError._FATAL))])

    def consume(num_messages: int, timeout: float) -> list[Any]:
        step = next(rounds)
        if isinstance(step, Exception):
            raise step
        return step

    fetching.consume = consume  # type: ignore[method-assign]
    with pytest.raises(KafkaException):
        sink._loop()
    assert probes and probes[0].closed and fetching.closed


def test_the_probe_is_a_read_committed_consumer_that_never_subscribes(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[tuple[dict, list[str]]] = []

    class Recording:
        def __init__(self, config: dict) -> None:
            made.append((config, []))

        def __getattr__(self, name: str) -> Any:  # noqa: ANN401 - any call is recorded
            made[-1][1].append(name)
            return lambda *a, **k: None

    monkeypatch.setattr(sink_module, "Consumer", Recording)
    Sink(SETTINGS, ch=None, fetch=lambda _id: None)._probe()  # type: ignore[arg-type]
    ((config, calls),) = made
    assert config["isolation.level"] == "read_committed"  # the same end as the fetching consumer's
    assert config["enable.auto.commit"] is False
    assert calls == []  # no subscribe(), no assign(): it never joins the group nor fetches
