"""Where the integration tests get their real services from.

- native (default here): the project's own local stack (stack/local.py) on free ports in a temp state dir.
- containers: official images through testcontainers where a Docker engine answers
  (FLEETPERF_TEST_SERVICES=containers, or auto when `docker info` works).
Both hand the tests the same thing: a Settings object pointing at running services.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fleetperf import config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def _env_overrides(state_dir: Path) -> dict[str, str]:
    return {
        "FLEETPERF__STATE__DIR": str(state_dir),
        "FLEETPERF__KAFKA__PORT": str(free_port()),
        "FLEETPERF__KAFKA__CONTROLLER_PORT": str(free_port()),
        "FLEETPERF__REGISTRY__PORT": str(free_port()),
        "FLEETPERF__FLINK__REST_PORT": str(free_port()),
        "FLEETPERF__WAREHOUSE__QUERY_PORT": str(free_port()),
        "FLEETPERF__SUPERSET__PORT": str(free_port()),
        # tests wait for windows to close; keep the early flush short
        "FLEETPERF__FLINK__IDLE_FLUSH_SECONDS": "3",
        # ... and a stream that went quiet ends sooner, so its last windows become final (rollups, flags)
        "FLEETPERF__FLINK__STREAM_RETAIN_SECONDS": "45",
    }


@contextmanager
def services(state_dir: Path) -> Iterator[config.Settings]:
    kind = os.environ.get("FLEETPERF_TEST_SERVICES") or ("containers" if docker_available() else "native")
    overrides = _env_overrides(state_dir)
    saved = {k: os.environ.get(k) for k in overrides}
    os.environ.update(overrides)  # child processes (warehouse, job) read the same settings
    try:
        if kind == "containers":
            from tests.providers.containers import container_stack

            with container_stack() as settings:
                yield settings
        else:
            from tests.providers.native import native_stack

            with native_stack() as settings:
                yield settings
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
