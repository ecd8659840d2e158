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
import random
import shutil
import socket
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fleetperf import config

# The tests' services listen on ports picked below the kernel's ephemeral range (Linux:
# ip_local_port_range, 32768-60999 here). bind(("127.0.0.1", 0)) hands out a port from that range,
# which is also where every outgoing connection takes its source port: in the minute a stack takes
# to start, a client socket of the suite (or of anything else on the machine) could take the port
# first (a CI run, 2026-11-30: "Connection in use: ('127.0.0.1', 52107)", the warehouse did not
# start). Below the range only programs that ask for a port by number take one.
PICK_FROM = 20000
_PICK = random.SystemRandom()  # not the random module's: seeded tests would give every run the same ports


def _ephemeral_low() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768  # Linux's default, and IANA's dynamic range starts higher still


def free_port() -> int:
    return free_ports(1)[0]


def free_ports(n: int) -> list[int]:
    """n distinct free ports below the ephemeral range (PICK_FROM): every socket stays bound until
    all are picked. One free_port() after another may return a port twice (the kernel may hand a
    just-closed port out again): a CI run's Kafka and Superset got the same one, and the warehouse
    could not start. Where that range is too small, the kernel picks (bind to port 0)."""
    low = _ephemeral_low()
    candidates = _PICK.sample(range(PICK_FROM, low), 20 * n) if low - PICK_FROM >= 20 * n else []
    socks: list[socket.socket] = []
    try:
        for port in candidates:
            if len(socks) == n:
                break
            sock = socket.socket()
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:  # taken (or in TIME_WAIT): the next candidate
                sock.close()
                continue
            socks.append(sock)
        while len(socks) < n:
            sock = socket.socket()
            socks.append(sock)
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in socks]
    finally:
        for sock in socks:
            sock.close()


def free_run(width: int) -> int:
    """A port p with p..p+width-1 all free, below the ephemeral range as free_ports' (a Kafka
    cluster's broker i listens on port + 2i, its controller on port + 2i + 1)."""
    low = _ephemeral_low()
    for _ in range(200):
        base = _PICK.randrange(PICK_FROM, low - width) if low - width > PICK_FROM else free_port()
        if base + width > 65535:
            continue
        try:
            for port in range(base, base + width):
                with socket.socket() as probe:
                    probe.bind(("127.0.0.1", port))
        except OSError:
            continue
        return base
    raise RuntimeError("no run of free ports")


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
