"""The producer wrapper's lifetime: dropped, it goes at once, and librdkafka's threads with it."""

from __future__ import annotations

import gc
import os
import weakref

from fleetperf import config
from fleetperf.kafka_avro import AvroProducer


def _rdkafka_threads() -> int:
    count = 0
    for task in os.listdir("/proc/self/task"):
        try:
            with open(f"/proc/self/task/{task}/comm") as comm:
                count += comm.read().startswith("rdk:")
        except FileNotFoundError:  # a thread (of anything) that ended meanwhile
            pass
    return count


def test_a_dropped_producer_is_freed_without_the_cyclic_collector() -> None:
    settings = config.load({"FLEETPERF__KAFKA__PORT": "9"})  # nobody listens: nothing is sent
    before = _rdkafka_threads()
    gc.disable()  # in effect during a backfill (gc.freeze): only reference counting frees
    try:
        producer = AvroProducer(settings)
        assert _rdkafka_threads() > before
        gone = weakref.ref(producer)
        del producer
        assert gone() is None
        assert _rdkafka_threads() == before
    finally:
        gc.enable()
