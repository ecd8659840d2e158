"""Container provider: Kafka, Apicurio Registry and ClickHouse server from their official images via
testcontainers; the Flink job and the warehouse (sink + Superset) run as on the native path, pointed
at them. Used where a Docker engine exists; never here (no engine on these machines)."""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager

from testcontainers.core.container import DockerContainer
from testcontainers.core.waiting_utils import wait_for_logs
from testcontainers.kafka import KafkaContainer

from fleetperf import config
from fleetperf.kafka_avro import ensure_topics, register_schemas
from fleetperf.stack.local import LocalStack

# the same versions as the local stack (config/fleetperf.toml), so both providers test one thing
_DEFAULTS = config.load({})
KAFKA_IMAGE = f"apache/kafka:{_DEFAULTS['kafka']['version']}"
REGISTRY_IMAGE = f"apicurio/apicurio-registry:{_DEFAULTS['registry']['version']}"
CLICKHOUSE_IMAGE = "clickhouse/clickhouse-server:25.8"


@contextmanager
def container_stack() -> Iterator[config.Settings]:
    with ExitStack() as stack:
        kafka = stack.enter_context(KafkaContainer(KAFKA_IMAGE).with_kraft())
        host, port = kafka.get_bootstrap_server().rsplit(":", 1)
        registry = stack.enter_context(DockerContainer(REGISTRY_IMAGE).with_exposed_ports(8080))
        wait_for_logs(registry, "Installed features", timeout=120)
        password = secrets.token_urlsafe(18)  # a throw-away server's password, never a constant
        clickhouse = stack.enter_context(
            DockerContainer(CLICKHOUSE_IMAGE).with_exposed_ports(8123).with_env("CLICKHOUSE_PASSWORD", password)
        )
        wait_for_logs(clickhouse, "Ready for connections", timeout=120)
        os.environ.update(
            {
                "FLEETPERF__KAFKA__HOST": host,
                "FLEETPERF__KAFKA__PORT": port,
                "FLEETPERF__REGISTRY__HOST": registry.get_container_host_ip(),
                "FLEETPERF__REGISTRY__PORT": registry.get_exposed_port(8080),
                "FLEETPERF__CLICKHOUSE__URL": (
                    f"http://default:{password}@{clickhouse.get_container_host_ip()}:{clickhouse.get_exposed_port(8123)}"
                ),
            }
        )
        settings = config.load()
        ensure_topics(settings)
        register_schemas(settings)
        local = LocalStack(settings)
        local.start(only=("flink", "warehouse"))
        stack.callback(local.stop, lambda line: None)
        yield settings
