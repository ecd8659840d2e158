"""check_stack: the fail-fast probe before a collector starts."""

from __future__ import annotations

import http.server
import socket
import threading
from collections.abc import Iterator

import pytest

from fleetperf import config
from fleetperf.cli.common import StackUnreachableError, check_stack


def _dead_port() -> int:
    with socket.socket() as sock:  # bound then closed: nobody listens there
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.fixture
def registry() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # answers 501
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield str(server.server_address[1])
    finally:
        server.shutdown()
        server.server_close()


def test_one_broker_of_the_list_answering_is_enough(registry: str) -> None:
    with socket.socket() as broker:
        broker.bind(("127.0.0.1", 0))
        broker.listen()
        bootstrap = f"127.0.0.1:{_dead_port()},127.0.0.1:{broker.getsockname()[1]}"
        s = config.load({"FLEETPERF__KAFKA__BOOTSTRAP": bootstrap, "FLEETPERF__REGISTRY__PORT": registry})
        check_stack(s, timeout=2)  # the first broker is down (a cluster with one broker killed)


def test_no_broker_answering_names_every_one(registry: str) -> None:
    dead = [_dead_port(), _dead_port()]
    bootstrap = ",".join(f"127.0.0.1:{p}" for p in dead)
    s = config.load({"FLEETPERF__KAFKA__BOOTSTRAP": bootstrap, "FLEETPERF__REGISTRY__PORT": registry})
    with pytest.raises(StackUnreachableError) as err:
        check_stack(s, timeout=2)
    assert all(f"127.0.0.1:{p}" in str(err.value) for p in dead)
