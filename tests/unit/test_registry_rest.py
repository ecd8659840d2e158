"""The producers' registry calls (registry_rest) send what confluent_kafka's SchemaRegistryClient sends,
and read its answers and errors as the retry logic expects (kafka_avro.register_with_retry). The
library itself is the oracle: both clients call the same local HTTP server, which records them."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from fleetperf import config
from fleetperf.kafka_avro import register_with_retry
from fleetperf.registry_rest import RegistryError, RegistryRest


class Registry(ThreadingHTTPServer):
    """Answers POST subjects/<s>/versions with an id per schema text, PUT config/<s> with the level;
    `fail` (status, body) answers the next requests with an error instead."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, str, dict, dict]] = []  # method, path, headers, body
        self.fail: list[tuple[int, bytes]] = []
        self.ids: dict[str, int] = {}

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Registry

    def log_message(self, *args: object) -> None:
        pass

    def _answer(self, status: int, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _handle(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])) or b"null")
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.seen.append((self.command, self.path, headers, body))
        if self.server.fail:
            self._answer(*self.server.fail.pop(0))
        elif self.command == "POST":
            schema_id = self.server.ids.setdefault(body["schema"], len(self.server.ids) + 1)
            self._answer(200, json.dumps({"id": schema_id}).encode())
        else:
            self._answer(200, json.dumps(body).encode())

    do_POST = do_PUT = _handle  # noqa: N815 - http.server's names


@pytest.fixture
def registry() -> Iterator[Registry]:
    server = Registry()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def test_register_and_compatibility_are_the_librarys_requests(registry: Registry) -> None:
    from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

    topic = config.load({}).topic("nmon_snapshots")
    conf = {"url": registry.url, "basic.auth.user.info": "fleet:s3cret"}
    ours = RegistryRest(conf)
    assert ours.register_schema(topic.subject, topic.schema_text()) == 1
    ours.set_compatibility(topic.subject, "backward")
    theirs = SchemaRegistryClient(conf)
    assert theirs.register_schema(topic.subject, Schema(topic.schema_text(), "AVRO")) == 1
    theirs.set_compatibility(topic.subject, "backward")
    assert len(registry.seen) == 4
    for (method, path, headers, body), (l_method, l_path, l_headers, l_body) in zip(
        registry.seen[:2], registry.seen[2:], strict=True
    ):
        assert (method, path, body) == (l_method, l_path, l_body)
        for name in ("content-type", "authorization"):
            assert headers[name] == l_headers[name], name
    assert registry.seen[0][1] == f"/subjects/{topic.subject}/versions?normalize=False"
    assert registry.seen[1][1:4:2] == (f"/config/{topic.subject}", {"compatibility": "BACKWARD"})


def test_errors_carry_the_status_and_message_the_retry_reads(registry: Registry) -> None:
    topic = config.load({}).topic("cpu_samples")
    ours = RegistryRest({"url": registry.url})
    registry.fail = [(422, b'{"error_code": 42201, "message": "Invalid schema"}')]
    with pytest.raises(RegistryError) as bad:
        ours.register_schema(topic.subject, topic.schema_text())
    assert bad.value.http_status_code == 422 and "Invalid schema" in str(bad.value)
    # retried: 5xx, and Apicurio's 409 "already exists" after a restart; 4xx at once
    registry.fail = [(503, b"busy"), (409, b'{"message": "Artifact already exists"}')]
    assert register_with_retry(ours, topic, wait_s=20) == (1, 2)
    registry.fail = [(401, b'{"message": "Unauthorized"}')]
    asked = len(registry.seen)
    with pytest.raises(RegistryError, match="Unauthorized"):
        register_with_retry(RegistryRest({"url": registry.url}), topic, wait_s=20)
    assert len(registry.seen) == asked + 1  # not retried


def test_base_urls_tried_in_turn_and_a_registry_away_is_retried_then_named(registry: Registry) -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{s.getsockname()[1]}"
    topic = config.load({}).topic("cpu_samples")
    ours = RegistryRest({"url": f"{dead}, {registry.url}"})
    assert ours.register_schema(topic.subject, topic.schema_text()) == 1
    away = RegistryRest({"url": dead}, timeout=2)
    with pytest.raises(RuntimeError, match=r"schema registry unreachable for \d+s registering"):
        register_with_retry(away, topic, wait_s=1.5)
