"""Native provider: the real services as local processes, exactly as `./fleetperf up` runs them."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from fleetperf import config
from fleetperf.stack.local import LocalStack


@contextmanager
def native_stack() -> Iterator[config.Settings]:
    settings = config.load()
    stack = LocalStack(settings)
    try:
        stack.start(echo=lambda line: print(line, flush=True))
        yield settings
    finally:
        stack.stop(echo=lambda line: None)
