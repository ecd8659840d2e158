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

from confluent_kafka import TopicPartition

from fleetperf import config
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
    """The consumer that never fetches: the ends the broker has now."""

    def __init__(self, ends: dict[str, int]) -> None:
        self.ends = ends
        self.queries: list[tuple[str, bool]] = []
        self.closed = False

    def get_watermark_offsets(self, tp: TopicPartition, timeout: float | None = None, cached: bool = False) -> tuple:
        self.queries.append((tp.topic, cached))
        return 0, self.ends[tp.topic]

    def close(self) -> None:
        self.closed = True


def _idle_sink(positions: dict[str, int], broker: dict[str, int]) -> tuple[Sink, Fetching, list[Probe]]:
    sink = Sink(SETTINGS, ch=None, fetch=lambda _id: None)  # type: ignore[arg-type] - nothing inserted
    fetching = Fetching(sink, positions, cached=dict.fromkeys(positions, -1))
    probes: list[Probe] = []

    def probe() -> Probe:
        probes.append(Probe(broker))
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
