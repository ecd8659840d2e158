"""`ingest --follow` in the background of a test, for the length of a with-block."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC
from pathlib import Path

from fleetperf.config import Settings
from fleetperf.ingest.follow import Follower


@contextmanager
def following(settings: Settings, directory: Path, poll: float, finish_idle: float) -> Iterator[Follower]:
    """A Follower polling `directory` while the block runs; stopped and joined when it ends (a
    restart is a second block)."""
    follower = Follower(settings, [str(directory)], UTC, poll_seconds=poll, finish_idle=finish_idle)
    thread = threading.Thread(target=follower.run, daemon=True)
    thread.start()
    try:
        yield follower
    finally:
        follower.stop()
        thread.join(timeout=30)
        follower.close()
