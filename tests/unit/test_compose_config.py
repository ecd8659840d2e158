"""docker-compose.yml, the image sets (config/images.toml) and the Kafka image's entry point checked
against the one config (config/fleetperf.toml) and the native stack (stack/local.py), so the Docker path
cannot drift from what `./fleetperf up` runs. No Docker engine needed (tests/integration/test_compose_*.py
run the containers). The job's JVM flags and command line are pinned by
tests/unit/test_security.py::test_compose_matches_the_local_stack."""

from __future__ import annotations

import importlib.util
import os
import subprocess
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from fleetperf import config
from fleetperf.config import REPO_ROOT
from fleetperf.stack import install
from fleetperf.stack.local import LocalStack

COMPOSE = REPO_ROOT / "docker-compose.yml"
ENTRYPOINT = REPO_ROOT / "docker" / "kafka" / "entrypoint.sh"
# listener layout differs by design: the compose broker has a host listener and a network one
# (HOST, INTERNAL), the native one a single PLAINTEXT listener on 127.0.0.1; both KRaft-combined
ADDRESSING = {
    "listeners",
    "advertised.listeners",
    "listener.security.protocol.map",
    "inter.broker.listener.name",
    "controller.quorum.voters",
    "log.dirs",
}


@pytest.fixture(scope="module")
def images() -> ModuleType:
    spec = importlib.util.spec_from_file_location("fleetperf_docker_images", REPO_ROOT / "docker" / "images.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def services() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())["services"]


def native_kafka_properties(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """server.properties exactly as the native stack writes it (storage formatting not run)."""
    monkeypatch.setattr(
        "fleetperf.stack.local.subprocess.run", lambda *a, **k: subprocess.CompletedProcess(a, 0, "x", "")
    )
    stack = LocalStack(config.load({"FLEETPERF__STATE__DIR": str(tmp_path)}))
    stack._write_kafka_properties()
    monkeypatch.undo()  # the patch is on the subprocess module itself; the entry point runs for real
    return _properties(stack._kafka_properties_path().read_text())


def _properties(text: str) -> dict[str, str]:
    pairs = [line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#")]
    return {key: value for key, value in pairs}


def entrypoint_properties(env: dict[str, str], tmp_path: Path) -> tuple[dict[str, str], list[str]]:
    """docker/kafka/entrypoint.sh run on the host with `java` replaced by a recorder: the properties it
    writes from the environment, and the java command lines it would run."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(parents=True)
    calls = tmp_path / "java-calls"
    java = bin_dir / "java"
    java.write_text(f'#!/bin/sh\necho "$*" >> {calls}\n[ "$4" = random-uuid ] && echo test-cluster-id\nexit 0\n')
    java.chmod(0o755)
    props = tmp_path / "server.properties"
    run_env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SERVER_PROPERTIES": str(props),
        "KAFKA_LIBS_DIR": "/opt/kafka/libs",
        **env,
    }
    subprocess.run(["bash", str(ENTRYPOINT)], env=run_env, check=True, capture_output=True, text=True)
    return _properties(props.read_text()), calls.read_text().splitlines()


def test_compose_uses_the_official_image_set(services: dict[str, Any], images: ModuleType) -> None:
    official = images.images("official")
    assert services["kafka"]["image"] == official["kafka"] == f"apache/kafka:{config.load({})['kafka']['version']}"
    assert services["registry"]["image"] == official["registry"]
    assert services["clickhouse"]["image"] == official["clickhouse"]
    assert services["flink-job"]["image"] == official["jre"]
    assert services["setup"]["image"] == services["warehouse"]["image"] == official["fleetperf"]
    dockerfile = (REPO_ROOT / "Dockerfile").read_text()
    assert f"ARG PYTHON_IMAGE={official['python']}" in dockerfile
    assert f"ARG RUST_IMAGE={official['rust']}" in dockerfile


def test_image_sets_carry_the_stack_versions(images: ModuleType) -> None:
    s = config.load({})
    local = images.images("local")
    assert local["kafka"].endswith(f":{s['kafka']['version']}")
    assert local["registry"].endswith(f":{s['registry']['version']}")
    assert local["flink"].endswith(f":{install.FLINK_CLUSTER_VERSION}")
    # config/images.toml repeats no version: every one is filled in from the stack's config
    text = (REPO_ROOT / "config" / "images.toml").read_text()
    for version in (s["kafka"]["version"], s["registry"]["version"], install.FLINK_CLUSTER_VERSION):
        assert version not in text


def test_compose_env_files_are_generated_from_the_config(images: ModuleType) -> None:
    for set_name in images.SETS:
        path = images.env_file(set_name)
        assert path.read_text() == images.env_text(set_name), (
            f"{path} is stale: PYTHONPATH=src .venv/bin/python docker/images.py write-env"
        )
    local = dict(
        line.split("=", 1) for line in images.env_file("local").read_text().splitlines() if not line.startswith("#")
    )
    assert local["FLEETPERF_KAFKA_IMAGE"] == images.images("local")["kafka"]
    # every variable docker/compose.images.yml uses is in the env files
    overlay = (REPO_ROOT / "docker" / "compose.images.yml").read_text()
    for variable in images.VARIABLES.values():
        if "${" + variable in overlay:
            assert variable in local


def test_compose_broker_is_configured_like_the_native_one(
    services: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    native = native_kafka_properties(tmp_path / "native", monkeypatch)
    env = {key: str(value) for key, value in services["kafka"]["environment"].items()}
    compose, _ = entrypoint_properties(env, tmp_path / "compose")
    assert {k: v for k, v in compose.items() if k not in ADDRESSING} == {
        k: v for k, v in native.items() if k not in ADDRESSING
    }
    assert native["auto.create.topics.enable"] == compose["auto.create.topics.enable"] == "false"
    assert compose["log.dirs"] == "/var/lib/kafka/data"
    assert services["kafka"]["volumes"] == ["kafka-data:/var/lib/kafka/data"]
    # both KRaft-combined with the controller on its own listener
    assert compose["controller.listener.names"] == native["controller.listener.names"] == "CONTROLLER"
    listeners = {entry.split("://")[0] for entry in compose["listeners"].split(",")}
    assert listeners == set(dict(p.split(":") for p in compose["listener.security.protocol.map"].split(",")))


def test_kafka_entrypoint_follows_the_official_images_naming(tmp_path: Path) -> None:
    # the apache/kafka image's documented rule: KAFKA_ prefix dropped, "_" -> ".", "__" -> "_", "___" -> "-"
    props, calls = entrypoint_properties(
        {
            "KAFKA_PROCESS_ROLES": "broker",
            "KAFKA_NODE_ID": "7",
            "KAFKA_LISTENER_NAME_INTERNAL_SSL_KEYSTORE__TYPE": "PKCS12",
            "KAFKA_LOG_DIRS": str(tmp_path / "data"),
            "KAFKA_SOME___DASHED_KEY": "x",
            "KAFKA_HEAP_OPTS": "-Xmx300m",
            "NOT_KAFKA": "y",
        },
        tmp_path,
    )
    assert props == {
        "process.roles": "broker",
        "node.id": "7",
        "listener.name.internal.ssl.keystore_type": "PKCS12",
        "log.dirs": str(tmp_path / "data"),
        "some-dashed.key": "x",
    }
    # fresh storage: a cluster id, the format, then the broker with the launcher's heap
    assert calls[0].endswith("kafka.tools.StorageTool random-uuid")
    assert "kafka.tools.StorageTool format -t test-cluster-id" in calls[1]
    assert calls[2].startswith("-Xmx300m -cp /opt/kafka/libs/* kafka.Kafka")


def test_kafka_entrypoint_without_variables_is_one_combined_node(tmp_path: Path) -> None:
    props, calls = entrypoint_properties({"KAFKA_LOG_DIRS": str(tmp_path / "data")}, tmp_path)
    assert props["process.roles"] == "broker,controller" and props["node.id"] == "1"
    assert props["controller.quorum.voters"] == "1@localhost:9093"
    assert "kafka.Kafka" in calls[-1]


def test_kafka_entrypoint_keeps_formatted_storage(tmp_path: Path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    (data / "meta.properties").write_text("cluster.id=kept\n")
    _, calls = entrypoint_properties({"KAFKA_LOG_DIRS": str(data)}, tmp_path)
    assert len(calls) == 1 and "kafka.Kafka" in calls[0] and "StorageTool" not in calls[0]


def test_compose_registry_is_configured_like_the_native_one(services: dict[str, Any]) -> None:
    argv = LocalStack(config.load({})).registry().argv
    native = dict(a[2:].split("=", 1) for a in argv if a.startswith("-Dapicurio."))
    env = services["registry"]["environment"]
    # Quarkus maps APICURIO_STORAGE_KIND to apicurio.storage.kind (the native -D flags)
    assert env["APICURIO_STORAGE_KIND"] == native["apicurio.storage.kind"] == "kafkasql"
    assert (
        env["APICURIO_KAFKASQL_BOOTSTRAP_SERVERS"]
        == f"kafka:{services['kafka']['environment']['KAFKA_LISTENERS'].split('INTERNAL://:')[1].split(',')[0]}"
    )
    assert set(native) == {"apicurio.storage.kind", "apicurio.kafkasql.bootstrap.servers"}


def test_local_images_are_built_from_the_native_stacks_artifacts() -> None:
    script = (REPO_ROOT / "docker" / "build-images.sh").read_text()
    artifacts = (REPO_ROOT / "docker" / "images.py").read_text()
    # the jars come from stack/install.py (same Maven coordinates, versions and cache as `./fleetperf up`)
    for fetch in ("install.kafka_libs(", "install.registry_jar(", "install.flink_cluster_lib(", "install.job_jar("):
        assert fetch in artifacts
    for name in ("KAFKA_LIBS", "REGISTRY_HOME", "FLINK_LIB"):
        assert f"${name}" in script
    assert os.access(REPO_ROOT / "docker" / "build-images.sh", os.X_OK)
