"""Live: the /dev/monreader device (or a capture of it) read chunk by chunk and published."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import BinaryIO

from fleetperf.ingest.records import Emitted
from fleetperf.sources.zvm.monitor import MonreaderStream
from fleetperf.sources.zvm.monitor_records import Collector

CHUNK = 1 << 16


def follow(handle: BinaryIO, collector: Collector, *, stop_at_end: bool, idle_sleep: float = 0.5) -> Iterator[Emitted]:
    """Records as they arrive. The device returns 0 bytes at the end of each data set and blocks
    for the next; a capture file ends (stop_at_end) or grows (a 0-byte read waits and retries)."""
    stream = MonreaderStream(collector.unverified)
    while True:
        chunk = handle.read(CHUNK)
        if not chunk:
            if stop_at_end:
                break
            time.sleep(idle_sleep)
            continue
        for item in stream.feed(chunk):
            yield from collector.feed(item)
    for item in stream.finish():
        yield from collector.feed(item)
