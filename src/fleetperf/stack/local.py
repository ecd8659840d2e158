"""The local default: every service as a native process on 127.0.0.1, state under one directory."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from fleetperf.config import PACKAGE_ROOT, REPO_ROOT, Settings, job_settings
from fleetperf.kafka_avro import ensure_topics, register_schemas
from fleetperf.stack import install
from fleetperf.stack.process import Process, _group_alive, http_ok, port_open

JAVA_OPENS = [
    f"--add-opens=java.base/{pkg}=ALL-UNNAMED"
    for pkg in (
        "java.lang",
        "java.lang.reflect",
        "java.util",
        "java.util.concurrent",
        "java.io",
        "java.net",
        "java.nio",
        "sun.nio.ch",
        "java.text",
        "java.time",
        "java.util.concurrent.atomic",
    )
]
ORDER = ("kafka", "registry", "flink", "warehouse")


def jvm_options(section: dict) -> list[str]:
    """A service's `jvm_options` (config/fleetperf.toml: C1 only by default, the reason there)."""
    return str(section.get("jvm_options", "")).split()


class LocalStack:
    def __new__(cls, settings: Settings) -> LocalStack:
        """`[stack] mode = "cluster"` gives the cluster mode (stack/cluster.py) to every caller."""
        if cls is LocalStack:
            from fleetperf.stack import cluster

            if cluster.mode(settings) == "cluster":
                return super().__new__(cluster.ClusterStack)
        return super().__new__(cls)

    def __init__(self, settings: Settings) -> None:
        self.s = settings
        self.state = settings.state_dir
        self.run_dir = self.state / "run"
        self.log_dir = self.state / "logs"

    # process definitions ---------------------------------------------------------------------
    def kafka(self) -> Process:
        k = self.s["kafka"]
        libs = install.kafka_libs_dir(self.s)
        return Process(
            "kafka",
            [
                "java",
                f"-Xmx{k['heap']}",
                *jvm_options(k),
                "-cp",
                f"{libs}/*",
                "kafka.Kafka",
                str(self._kafka_properties_path()),
            ],
            self.run_dir,
            self.log_dir,
            ready=lambda: port_open(k["host"], k["port"]),
            where=self.s.bootstrap,
        )

    def registry(self) -> Process:
        r = self.s["registry"]
        return Process(
            "registry",
            [
                "java",
                f"-Xmx{r['heap']}",
                f"-Dquarkus.http.host={r['host']}",
                f"-Dquarkus.http.port={r['port']}",
                # schemas live in a Kafka topic, so their ids survive restarts like Kafka's data does
                "-Dapicurio.storage.kind=kafkasql",
                f"-Dapicurio.kafkasql.bootstrap.servers={self.s.bootstrap}",
                "-jar",
                str(install.registry_jar_path(self.s)),
            ],
            self.run_dir,
            self.log_dir,
            ready=lambda: http_ok(f"{self.s.registry_url}/subjects"),
            where=self.s.registry_url,
        )

    def flink(self) -> Process:
        f = self.s["flink"]
        return Process(
            "flink",
            ["java", f"-Xmx{f['heap']}", *jvm_options(f), *JAVA_OPENS, "-jar", str(install.JOB_JAR), *self.job_args()],
            self.run_dir,
            self.log_dir,
            ready=self._flink_running,
            where=f"http://127.0.0.1:{f['rest_port']} (MiniCluster REST)",
        )

    @property
    def job_settings_path(self) -> Path:
        return self.state / "job-settings.json"

    def job_args(self) -> list[str]:
        """The job reads everything from one JSON file (written by write_job_settings on start)."""
        return ["--settings", str(self.job_settings_path)]

    def write_job_settings(self) -> Path:
        """config.job_settings plus where this stack keeps the job's checkpoints."""
        data = job_settings(self.s)
        data["flink"]["checkpoint_dir"] = str(self.state / "flink-checkpoints")
        path = self.job_settings_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
        return path

    def warehouse(self) -> Process:
        return Process(
            "warehouse",
            [sys.executable, "-m", "fleetperf.warehouse.main"],
            self.run_dir,
            self.log_dir,
            ready=lambda: http_ok(f"{self.s.superset_url}/health") and http_ok(f"{self.s.query_url}/ping"),
            where=f"{self.s.superset_url} (Superset), {self.s.query_url} (SQL)",
            env=self.superset_env(),
            cwd=REPO_ROOT,
            ready_timeout=180,
        )

    def superset_env(self) -> dict[str, str]:
        return {
            "SUPERSET_CONFIG_PATH": str(PACKAGE_ROOT / "warehouse" / "superset_config.py"),
            "FLEETPERF__STATE__DIR": str(self.state),
            "PYTHONPATH": str(PACKAGE_ROOT.parent),
            "FLASK_APP": "superset.app:create_app()",
        }

    def processes(self) -> dict[str, Process]:
        return {
            "kafka": self.kafka(),
            "registry": self.registry(),
            "flink": self.flink(),
            "warehouse": self.warehouse(),
        }

    # lifecycle -------------------------------------------------------------------------------
    def start(self, only: tuple[str, ...] = ORDER, echo: Callable[[str], object] = print) -> None:
        self.state.mkdir(parents=True, exist_ok=True)
        for name in ORDER:
            if name not in only:
                continue
            t0 = time.monotonic()
            where = self._start_one(name, echo)
            echo(f"  {name:<10} ready in {time.monotonic() - t0:5.1f}s  {where}")

    def _start_one(self, name: str, echo: Callable[[str], object]) -> str:
        """Starts one component and waits until it is ready; returns where it listens. The registry
        is ready when the topics exist and the schemas are registered."""
        self._prepare(name)
        proc = getattr(self, name)()
        proc.start()
        proc.wait_ready()
        if name == "registry":
            ensure_topics(self.s)
            register_schemas(self.s)
        return proc.where

    def stop(self, echo: Callable[[str], object] = print) -> None:
        procs = self.processes()
        for name in reversed(ORDER):
            if procs[name].running():
                procs[name].stop()
                echo(f"  {name:<10} stopped")

    def kill(self, name: str) -> int | None:
        """SIGKILL one service's whole process group, as a crash would (no shutdown hook runs, nothing
        is flushed); the PID file is removed so that start(only=...) starts it again. Used by the
        fault-injection suite (tests/integration/test_faults.py) and by hand to rehearse a crash.
        Returns the PID killed, None when the service was not running."""
        proc = self.processes()[name]
        pid = proc.pid()
        if pid is not None:
            try:
                os.killpg(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            deadline = time.monotonic() + 30
            while _group_alive(pid) and time.monotonic() < deadline:
                time.sleep(0.1)  # _group_alive reaps the leader when it is our child (no zombie)
        proc.pid_file.unlink(missing_ok=True)
        return pid

    def status(self) -> list[tuple[str, int | None, str, str]]:
        return [(n, p.pid(), p.where, str(p.log_file)) for n, p in self.processes().items()]

    def _prepare(self, name: str) -> None:
        """What a service needs before it starts: its runtime fetched or built, its config written.
        Only start() does this; status and stop only read PID files."""
        if name == "kafka":
            install.kafka_libs(self.s)
            self._write_kafka_properties()
        elif name == "registry":
            install.registry_jar(self.s)
        elif name == "flink":
            install.job_jar()
            self.write_job_settings()
        elif name == "warehouse":
            from fleetperf.warehouse import superset_setup

            superset_setup.prepare(self.s, self.superset_env())

    def _kafka_properties_path(self) -> Path:
        return self.state / "kafka" / "server.properties"

    def _write_kafka_properties(self) -> None:
        """server.properties from the settings; storage formatted on the first start."""
        k = self.s["kafka"]
        data = self.state / "kafka" / "data"
        props = self._kafka_properties_path()
        props.parent.mkdir(parents=True, exist_ok=True)
        props.write_text(
            "\n".join(
                [
                    "process.roles=broker,controller",
                    "node.id=1",
                    f"controller.quorum.voters=1@{k['host']}:{k['controller_port']}",
                    f"listeners=PLAINTEXT://{k['host']}:{k['port']},CONTROLLER://{k['host']}:{k['controller_port']}",
                    f"advertised.listeners=PLAINTEXT://{k['host']}:{k['port']}",
                    "controller.listener.names=CONTROLLER",
                    "inter.broker.listener.name=PLAINTEXT",
                    "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
                    f"log.dirs={data}",
                    f"num.partitions={k['partitions']}",
                    "offsets.topic.replication.factor=1",
                    "transaction.state.log.replication.factor=1",
                    "transaction.state.log.min.isr=1",
                    "share.coordinator.state.topic.replication.factor=1",
                    "share.coordinator.state.topic.min.isr=1",
                    "group.initial.rebalance.delay.ms=0",
                    # the project creates its topics (kafka_avro.ensure_topics); a typo or a stranger
                    # must not create new ones
                    "auto.create.topics.enable=false",
                    "",
                ]
            )
        )
        if not (data / "meta.properties").exists():
            cp = ["java", "-cp", f"{install.kafka_libs_dir(self.s)}/*", "kafka.tools.StorageTool"]
            cluster_id = subprocess.run([*cp, "random-uuid"], capture_output=True, text=True, check=True).stdout.strip()
            subprocess.run(
                [*cp, "format", "-t", cluster_id, "-c", str(props)], capture_output=True, text=True, check=True
            )

    def _flink_running(self) -> bool:
        url = f"http://127.0.0.1:{self.s['flink']['rest_port']}/jobs/overview"
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                jobs = json.load(response).get("jobs", [])
        except (OSError, ValueError):
            return False
        return any(j.get("state") == "RUNNING" for j in jobs)
