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


# --- the cluster profile (docker/compose.cluster.yml) against the native cluster mode (stack/cluster.py) ---

CLUSTER_FILE = REPO_ROOT / "docker" / "compose.cluster.yml"
FLINK_DIR = REPO_ROOT / "docker" / "flink"
# Flink settings that name places (container addresses, ports, temp dirs) rather than behaviour: the
# native cluster binds 127.0.0.1 under the state dir, the containers their interfaces on the network
FLINK_ADDRESSING = {
    "jobmanager.rpc.address",
    "jobmanager.rpc.port",
    "jobmanager.bind-host",
    "rest.address",
    "rest.bind-address",
    "rest.port",
    "taskmanager.host",
    "taskmanager.bind-host",
    "web.upload.dir",
    "io.tmp.dirs",
}
BROKERS = ("kafka", "kafka-2", "kafka-3")


class _ComposeLoader(yaml.SafeLoader):
    """YAML of a compose overlay: !override/!reset tags (compose merge directives) read as plain values."""


def _tagged(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


_ComposeLoader.add_multi_constructor("!", _tagged)


@pytest.fixture(scope="module")
def cluster() -> dict[str, Any]:
    return yaml.load(CLUSTER_FILE.read_text(), Loader=_ComposeLoader)


def _flink_properties(text: str) -> dict[str, str]:
    """FLINK_PROPERTIES read as both entry points read it: one `key: value` a line, split at the first ':'."""
    pairs = [line.strip().split(":", 1) for line in text.splitlines() if line.strip()]
    return {key.strip(): value.strip() for key, value in pairs}


def _conf_text(value: Any) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _mb(size: str) -> int:
    assert size.endswith("m"), size
    return int(size[:-1])


def test_cluster_brokers_are_configured_like_the_native_cluster(
    cluster: dict[str, Any], services: dict[str, Any], tmp_path: Path
) -> None:
    from fleetperf.stack.cluster import broker_ports, kafka_broker_properties

    s = config.load({})
    assert len(broker_ports(s)) == len(BROKERS) == 3
    ids = set()
    for node_id, name in enumerate(BROKERS, start=1):
        env = {key: str(value) for key, value in cluster["services"][name]["environment"].items()}
        compose, _ = entrypoint_properties(env, tmp_path / name)
        native = _properties(kafka_broker_properties(s, node_id, tmp_path / "data"))
        assert {k: v for k, v in compose.items() if k not in ADDRESSING} == {
            k: v for k, v in native.items() if k not in ADDRESSING
        }, name
        # the settings the cluster is about, spelled out
        assert compose["node.id"] == str(node_id)
        assert compose["default.replication.factor"] == "3" and compose["min.insync.replicas"] == "2"
        assert compose["num.partitions"] == str(s["kafka"]["partitions"])
        assert compose["unclean.leader.election.enable"] == "false"
        assert compose["advertised.listeners"] == f"INTERNAL://{name}:29092"
        assert compose["controller.quorum.voters"] == ",".join(f"{i}@{b}:19093" for i, b in enumerate(BROKERS, 1))
        assert compose["log.dirs"] == "/var/lib/kafka/data"
        ids.add(env["CLUSTER_ID"])
    assert len(ids) == 1  # one KRaft cluster
    # broker 1 is the default profile's `kafka` (its volume), the others have volumes of their own
    assert services["kafka"]["volumes"] == ["kafka-data:/var/lib/kafka/data"]
    for name in BROKERS[1:]:
        assert cluster["services"][name]["volumes"] == [f"{name}-data:/var/lib/kafka/data"]
        assert f"{name}-data" in cluster["volumes"]
        assert cluster["services"][name]["profiles"] == ["cluster"]


def test_cluster_clients_bootstrap_from_every_broker(cluster: dict[str, Any]) -> None:
    from fleetperf.kafka_avro import kafka_client_config

    every = ",".join(f"{name}:29092" for name in BROKERS)
    svc = cluster["services"]
    assert cluster["x-bootstrap"] == every
    assert svc["registry"]["environment"]["APICURIO_KAFKASQL_BOOTSTRAP_SERVERS"] == every
    for name in ("setup", "warehouse"):
        assert svc[name]["environment"]["FLEETPERF__KAFKA__BOOTSTRAP"] == every, name
    # the setting reaches the clients: librdkafka's config and the Flink job's settings
    s = config.load({"FLEETPERF__KAFKA__BOOTSTRAP": every})
    assert s.bootstrap == kafka_client_config(s)["bootstrap.servers"] == every
    assert config.job_settings(s)["kafka"]["bootstrap"] == every
    # the job's settings written by setup carry it too (cluster.py derives host:port+2i itself)
    command = " ".join(svc["setup"]["command"])
    assert "job_settings_data()" in command and 'd["kafka"]["bootstrap"] = s.bootstrap' in command
    assert "create_topics()" in command and "ensure_topics(s)" in command and "register_schemas(s)" in command
    assert svc["setup"]["environment"]["FLEETPERF__STACK__MODE"] == "cluster"


def test_bootstrap_setting_defaults_to_the_derived_list() -> None:
    assert config.load({}).raw["kafka"]["bootstrap"] == ""
    assert config.load({}).bootstrap == "127.0.0.1:19092"
    cluster_mode = config.load({"FLEETPERF__STACK__MODE": "cluster"})
    assert cluster_mode.bootstrap == "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096"
    assert config.load({"FLEETPERF__KAFKA__BOOTSTRAP": " b1:9092,b2:9092 "}).bootstrap == "b1:9092,b2:9092"


def test_cluster_flink_is_configured_like_the_native_cluster(cluster: dict[str, Any]) -> None:
    from fleetperf.stack.cluster import TASKMANAGER_MEMORY, flink_conf

    s = config.load({"FLEETPERF__STATE__DIR": "/var/lib/fleetperf"})
    native = {k: _conf_text(v) for k, v in flink_conf(s, Path("/var/lib/fleetperf")).items()}
    svc = cluster["services"]
    texts = {name: svc[name]["environment"]["FLINK_PROPERTIES"] for name in ("jobmanager", "taskmanager", "flink-job")}
    assert len(set(texts.values())) == 1  # one configuration for the cluster and its client
    compose = _flink_properties(texts["jobmanager"])
    assert {k: v for k, v in compose.items() if k in native and k not in FLINK_ADDRESSING} == {
        k: v for k, v in native.items() if k not in FLINK_ADDRESSING
    }
    # the official image's scripts size the TaskManager JVM from process.size: the sum of the parts
    extra = set(compose) - set(native)
    assert extra == {"taskmanager.memory.process.size"}
    parts = [k for k in TASKMANAGER_MEMORY if k.endswith(".size") or k.endswith(".max")]
    assert compose["taskmanager.memory.process.size"] == f"{sum(_mb(TASKMANAGER_MEMORY[k]) for k in parts)}m"
    assert compose["rest.address"] == compose["jobmanager.rpc.address"] == "jobmanager"
    # checkpoints and savepoints on the state volume every Flink container mounts
    # (flink-job keeps the default profile's mount of the same volume, for the job's settings file)
    for name in ("jobmanager", "taskmanager"):
        assert svc[name]["volumes"] == ["fleetperf-state:/var/lib/fleetperf"], name


def test_cluster_runs_the_native_number_of_taskmanagers_and_parallelism(
    cluster: dict[str, Any], images: ModuleType
) -> None:
    from fleetperf.stack.cluster import cluster_parallelism

    s = config.load({})
    svc = cluster["services"]
    assert svc["jobmanager"]["command"] == "jobmanager" and svc["taskmanager"]["command"] == "taskmanager"
    assert svc["taskmanager"]["scale"] == int(s["stack"]["taskmanagers"]) >= 2
    job = svc["flink-job"]
    assert job["command"] == ["bash", "/opt/fleetperf/submit.sh"]
    assert int(job["environment"]["FLEETPERF_PARALLELISM"]) == cluster_parallelism(s) >= 2
    assert job["environment"]["FLEETPERF_JOB_JAR"] == "/jobs/" + install.JOB_JAR.name
    assert job["environment"]["FLEETPERF_JOB_SETTINGS"] == "/var/lib/fleetperf/job-settings.json"
    assert "./docker/flink/submit.sh:/opt/fleetperf/submit.sh:ro" in job["volumes"]
    submit = (FLINK_DIR / "submit.sh").read_text()
    assert 'run -d -p "$PARALLELISM"' in submit and "NAME=fleetperf-derived-metrics" in submit
    # the official images by default, the local ones by the variables of config/images.toml
    official = images.images("official")
    for name, key in [("kafka-2", "kafka"), ("kafka-3", "kafka"), ("jobmanager", "flink"), ("taskmanager", "flink")]:
        variable = images.VARIABLES[key]
        assert svc[name]["image"] == "${" + variable + ":-" + official[key] + "}", name
    assert job["image"] == svc["jobmanager"]["image"]
    # nothing of the cluster is published
    assert not [name for name, service in svc.items() if service.get("ports")]


def test_local_flink_image_is_sized_and_logs_like_the_native_cluster() -> None:
    from fleetperf.stack.cluster import LOG4J, TM_DIRECT, TM_HEAP, ClusterStack

    entrypoint = (FLINK_DIR / "entrypoint.sh").read_text()
    assert f"-Xmx{TM_HEAP} -XX:MaxDirectMemorySize={TM_DIRECT}" in entrypoint
    jm_heap = next(a for a in ClusterStack(config.load({})).jobmanager().argv if a.startswith("-Xmx"))
    assert f"FLINK_JM_JVM_OPTS:-{jm_heap}" in entrypoint
    log4j = (FLINK_DIR / "log4j-console.properties").read_text()
    assert log4j.split("\n", 1)[1] == LOG4J


def test_local_flink_entrypoint_applies_flink_properties(cluster: dict[str, Any], tmp_path: Path) -> None:
    """docker/flink/entrypoint.sh run on the host (`help` writes the configuration and starts nothing):
    the config.yaml it leaves is valid YAML holding every FLINK_PROPERTIES value, the official image's
    container defaults and the JobManager address."""
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "config.yaml").write_text((FLINK_DIR / "config.yaml").read_text())
    text = cluster["services"]["jobmanager"]["environment"]["FLINK_PROPERTIES"]
    env = {
        "PATH": "/usr/bin:/bin",
        "FLINK_HOME": str(tmp_path),
        "FLINK_CONF_DIR": str(conf),
        "JOB_MANAGER_RPC_ADDRESS": "ignored-by-flink-properties",
        "FLINK_PROPERTIES": text + "quoted.value: it's\n",
    }
    subprocess.run(["bash", str(FLINK_DIR / "entrypoint.sh"), "help"], env=env, check=True, capture_output=True)
    written = yaml.safe_load((conf / "config.yaml").read_text())
    assert {k: str(v) for k, v in written.items() if k in _flink_properties(text)} == _flink_properties(text)
    assert written["quoted.value"] == "it's"
    assert written["blob.server.port"] == "6124"
    assert written["taskmanager.bind-host"] == "0.0.0.0"
    assert written["jobmanager.rpc.address"] == "jobmanager"  # FLINK_PROPERTIES comes last, as in the official image


def test_compose_sh_adds_the_cluster_file_only_for_the_cluster_profile(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    calls = tmp_path / "calls"
    docker = bin_dir / "docker"
    docker.write_text(f'#!/bin/sh\n[ "$2" = version ] && exit 0\necho "$*" >> {calls}\n')
    docker.chmod(0o755)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "FLEETPERF_COMPOSE_ENV": str(tmp_path / "none.env")}
    script = str(REPO_ROOT / "docker" / "compose.sh")
    for args, want in [
        (["local", "up", "-d"], False),
        (["local", "--profile", "cluster", "up", "-d"], True),
        (["official", "--profile=cluster", "down", "-v"], True),
        (["official", "--profile", "expose", "up"], False),
    ]:
        calls.write_text("")
        subprocess.run(["bash", script, *args], env=env, check=True, capture_output=True)
        line = calls.read_text()
        assert ("docker/compose.cluster.yml" in line) == want, (args, line)
        # the cluster file comes last: it overrides what the image and embedded overlays set
        if want:
            assert line.rstrip().split(" -f ")[-1].split()[0].endswith("docker/compose.cluster.yml")
