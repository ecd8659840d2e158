"""Container provider: the integration suite's services as containers started through testcontainers.

    FLEETPERF_SERVICES=containers [FLEETPERF_IMAGES=local] .venv/bin/python -m pytest tests/integration/...

- Kafka (KRaft, one broker) and Apicurio Registry on a private Docker network, configured with the
  same environment as docker-compose.yml's services (read from that file, so both container paths run
  one definition); their client ports are published on 127.0.0.1 only, on the test's free ports.
- the Flink job in the JRE image, and the warehouse (sink + SQL endpoint + Superset, embedded
  ClickHouse) in fleetperf's image (the repository's Dockerfile); both on the host's network, so
  they use the same settings, ports and state directory as on the native path (the state directory
  and the repository are mounted at their own paths; the job jar is the one `mvn package` built).
Image names come from config/images.toml (docker/images.py): FLEETPERF_IMAGES=official (default,
pulled from Docker Hub) or local (docker/build-images.sh, no registry needed).
"""

from __future__ import annotations

import importlib.util
import os
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from types import ModuleType
from typing import Any

import yaml

from fleetperf import config
from fleetperf.config import REPO_ROOT
from fleetperf.kafka_avro import ensure_topics, register_schemas
from fleetperf.stack import install
from fleetperf.stack.local import LocalStack
from fleetperf.stack.process import http_ok

COMPOSE_FILE = REPO_ROOT / "docker-compose.yml"
INTERNAL_KAFKA = 29092  # the compose network's listener (docker-compose.yml KAFKA_LISTENERS)
REGISTRY_PORT = 8080  # the registry's port in its container (both images)


def image_names(set_name: str | None = None) -> dict[str, str]:
    """config/images.toml through docker/images.py (the one reader; docker/ is not a package)."""
    return _images_module().images(set_name)


def _images_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleetperf_docker_images", REPO_ROOT / "docker" / "images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def compose_environment(service: str) -> dict[str, str]:
    """A service's environment in docker-compose.yml, values as strings."""
    services = yaml.safe_load(COMPOSE_FILE.read_text())["services"]
    return {key: str(value) for key, value in (services[service].get("environment") or {}).items()}


def kafka_environment(host_port: int) -> dict[str, str]:
    """docker-compose.yml's broker with its host listener on the test's port (advertised on 127.0.0.1,
    published there only); the INTERNAL listener serves the registry on the Docker network."""
    env = compose_environment("kafka")
    env["KAFKA_LISTENERS"] = f"HOST://:{host_port},INTERNAL://:{INTERNAL_KAFKA},CONTROLLER://:19093"
    env["KAFKA_ADVERTISED_LISTENERS"] = f"HOST://127.0.0.1:{host_port},INTERNAL://kafka:{INTERNAL_KAFKA}"
    return env


def _wait(what: str, ready: Callable[[], bool], timeout: float, logs: Callable[[], str]) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{what} not ready after {timeout:.0f}s; its log ends:\n{logs()[-4000:]}")
        time.sleep(1)


def _logs(container: Any) -> Callable[[], str]:
    def read() -> str:
        out, err = container.get_logs()
        return (out + err).decode(errors="replace")

    return read


def _publish_on_loopback(container: Any, container_port: int, host_port: int) -> None:
    # testcontainers' with_bind_ports publishes on every interface; docker-py takes (address, port)
    container.ports[f"{container_port}/tcp"] = ("127.0.0.1", host_port)


@contextmanager
def container_stack() -> Iterator[config.Settings]:
    images = image_names()
    if os.environ.get("FLEETPERF_IMAGES") == "local":
        # the Ryuk reaper is an image from Docker Hub; the ExitStack below removes what it started
        os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.network import Network

    settings = config.load()
    state: Path = settings.state_dir
    state.mkdir(parents=True, exist_ok=True)
    kafka_port = int(settings["kafka"]["port"])
    registry_port = int(settings["registry"]["port"])
    with ExitStack() as stack:
        network = stack.enter_context(Network())

        kafka = DockerContainer(images["kafka"], env=kafka_environment(kafka_port))
        kafka.with_network(network).with_network_aliases("kafka")
        _publish_on_loopback(kafka, kafka_port, kafka_port)
        stack.enter_context(kafka)
        _wait("Kafka", lambda: "Kafka Server started" in _logs(kafka)(), 120, _logs(kafka))

        registry = DockerContainer(images["registry"], env=compose_environment("registry"))
        registry.with_network(network).with_network_aliases("registry")
        _publish_on_loopback(registry, REGISTRY_PORT, registry_port)
        stack.enter_context(registry)
        _wait("Apicurio Registry", lambda: http_ok(f"{settings.registry_url}/subjects"), 180, _logs(registry))

        ensure_topics(settings)
        register_schemas(settings)

        # the job: the native stack's command line (JVM flags, jar, one settings file) in the JRE image
        local = LocalStack(settings)
        local.write_job_settings()
        install.job_jar()
        flink = DockerContainer(images["jre"], command=local.flink().argv)
        flink.with_volume_mapping(str(REPO_ROOT), str(REPO_ROOT), "ro")
        flink.with_volume_mapping(str(state), str(state), "rw")
        flink.with_kwargs(network_mode="host", working_dir=str(REPO_ROOT))
        stack.enter_context(flink)
        _wait("the Flink job", local._flink_running, 180, _logs(flink))

        # the warehouse: fleetperf's image, `./fleetperf warehouse` as in docker-compose.yml
        fleetperf_env = {k: v for k, v in os.environ.items() if k.startswith("FLEETPERF__")}
        warehouse = DockerContainer(images["fleetperf"], command=["./fleetperf", "warehouse"], env=fleetperf_env)
        warehouse.with_volume_mapping(str(state), str(state), "rw")
        warehouse.with_kwargs(network_mode="host")
        stack.enter_context(warehouse)
        _wait(
            "the warehouse",
            lambda: http_ok(f"{settings.superset_url}/health") and http_ok(f"{settings.query_url}/ping"),
            300,
            _logs(warehouse),
        )
        yield settings
