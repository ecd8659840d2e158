"""Where the integration tests get their real services from.

- native (default here): the project's own local stack (stack/local.py) on free ports in a temp state dir.
- containers: the same services as containers through testcontainers (tests/providers/containers.py),
  chosen with FLEETPERF_SERVICES=containers (FLEETPERF_TEST_SERVICES is the older name). Never
  chosen by itself, even where an engine answers: the default test command stays Docker-free.
  Images: config/images.toml, FLEETPERF_IMAGES=official (default) or local (docker/build-images.sh).
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


def free_ports(n: int) -> list[int]:
    """n distinct free ports: every socket stays bound until all are picked. One free_port() after
    another may return a port twice (the kernel may hand a just-closed port out again): a CI run's
    Kafka and Superset got the same one, and the warehouse could not start."""
    socks: list[socket.socket] = []
    try:
        for _ in range(n):
            sock = socket.socket()
            socks.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def docker_available() -> bool:
    if shutil.which("docker") is None:
        return False
    return subprocess.run(["docker", "info"], capture_output=True).returncode == 0


def _env_overrides(state_dir: Path) -> dict[str, str]:
    kafka, controller, registry, flink, query, superset = free_ports(6)
    return {
        "FLEETPERF__STATE__DIR": str(state_dir),
        "FLEETPERF__KAFKA__PORT": str(kafka),
        "FLEETPERF__KAFKA__CONTROLLER_PORT": str(controller),
        "FLEETPERF__REGISTRY__PORT": str(registry),
        "FLEETPERF__FLINK__REST_PORT": str(flink),
        "FLEETPERF__WAREHOUSE__QUERY_PORT": str(query),
        "FLEETPERF__SUPERSET__PORT": str(superset),
        # tests wait for windows to close; keep the early flush short
        "FLEETPERF__FLINK__IDLE_FLUSH_SECONDS": "3",
        # ... and a stream that went quiet ends sooner, so its last windows become final (rollups, flags);
        # longer than the fault suite's outages (60 s), which a stream must outlast without ending
        "FLEETPERF__FLINK__STREAM_RETAIN_SECONDS": "90",
    }


def services_kind() -> str:
    kind = os.environ.get("FLEETPERF_SERVICES") or os.environ.get("FLEETPERF_TEST_SERVICES") or "native"
    if kind not in ("native", "containers"):
        raise RuntimeError(f"FLEETPERF_SERVICES={kind!r}: choose native (default) or containers")
    return kind


@contextmanager
def services(state_dir: Path) -> Iterator[config.Settings]:
    kind = services_kind()
    if kind == "containers" and not docker_available():
        raise RuntimeError(
            "FLEETPERF_SERVICES=containers but no Docker engine answers `docker info` "
            "(docker/dockerd.sh start, then export DOCKER_HOST as it prints; docs/docker.md)"
        )
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
