"""Cluster mode of the local stack (`[stack] mode = "cluster"`, off by default): the same services
as the local default, but Kafka as 3 KRaft brokers (replication factor 3, min.insync.replicas 2)
and Flink as a standalone session cluster (JobManager + 2 TaskManagers) started from Flink's own
Maven Central artifacts, with the job jar submitted over the REST API the way `flink run` does.
`down` stops the job with a savepoint; `up` resumes from the newest savepoint or retained
checkpoint (a JobManager killed without `down` leaves only checkpoints; see restore_points).

Everything still runs on 127.0.0.1 under the state directory; it exists to exercise the
multi-process failure modes (a broker or TaskManager killed) that one JVM cannot show.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
import urllib.parse
import urllib.request
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fleetperf.config import Settings, job_settings
from fleetperf.stack import install
from fleetperf.stack.local import JAVA_OPENS, LocalStack
from fleetperf.stack.process import Process, http_ok, port_open

JOBMANAGER_MAIN = "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint"
TASKMANAGER_MAIN = "org.apache.flink.runtime.taskexecutor.TaskManagerRunner"
JOB_NAME = "fleetperf-derived-metrics"


def mode(settings: Settings) -> str:
    """ "local" (default) or "cluster"; anything else is a configuration error named here."""
    value = str(settings.raw.get("stack", {}).get("mode", "local")).strip().lower()
    if value not in ("local", "cluster"):
        raise ValueError(f'[stack] mode must be "local" or "cluster", not {value!r}')
    return value


def broker_ports(settings: Settings) -> list[tuple[int, int]]:
    """(client port, controller port) of each broker: broker i uses port+2i and controller_port+2i,
    so the first broker keeps the configured ports and clients bootstrap from it as before."""
    k = settings["kafka"]
    n = int(settings.raw.get("stack", {}).get("kafka_brokers", 3))
    return [(int(k["port"]) + 2 * i, int(k["controller_port"]) + 2 * i) for i in range(n)]


def kafka_broker_properties(settings: Settings, node_id: int, data_dir: Path) -> str:
    """server.properties of broker `node_id` (1-based) of the KRaft quorum; every broker is also a
    controller, so any one may die and the quorum (2 of 3) survives."""
    k = settings["kafka"]
    host = k["host"]
    ports = broker_ports(settings)
    n = len(ports)
    port, controller = ports[node_id - 1]
    voters = ",".join(f"{i + 1}@{host}:{c}" for i, (_, c) in enumerate(ports))
    replication = min(3, n)
    min_isr = max(1, min(2, replication - 1))
    lines = [
        "process.roles=broker,controller",
        f"node.id={node_id}",
        f"controller.quorum.voters={voters}",
        f"listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller}",
        f"advertised.listeners=PLAINTEXT://{host}:{port}",
        "controller.listener.names=CONTROLLER",
        "inter.broker.listener.name=PLAINTEXT",
        "listener.security.protocol.map=CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT",
        f"log.dirs={data_dir}",
        f"num.partitions={k['partitions']}",
        # a write acknowledged with acks=all (our producers are idempotent) is on 2 brokers at least,
        # so losing any one broker loses nothing and keeps the partitions writable
        f"default.replication.factor={replication}",
        f"min.insync.replicas={min_isr}",
        f"offsets.topic.replication.factor={replication}",
        f"transaction.state.log.replication.factor={replication}",
        f"transaction.state.log.min.isr={min_isr}",
        f"share.coordinator.state.topic.replication.factor={replication}",
        f"share.coordinator.state.topic.min.isr={min_isr}",
        # a follower that is behind must not become leader: that would drop acknowledged records
        "unclean.leader.election.enable=false",
        "group.initial.rebalance.delay.ms=0",
        "auto.create.topics.enable=false",
        "",
    ]
    return "\n".join(lines)


TASKMANAGER_MEMORY: dict[str, Any] = {
    "taskmanager.cpu.cores": 1.0,
    "taskmanager.memory.framework.heap.size": "128m",
    "taskmanager.memory.task.heap.size": "256m",
    "taskmanager.memory.framework.off-heap.size": "128m",
    "taskmanager.memory.task.off-heap.size": "0m",
    "taskmanager.memory.network.min": "64m",
    "taskmanager.memory.network.max": "64m",
    "taskmanager.memory.managed.size": "256m",
    "taskmanager.memory.jvm-metaspace.size": "256m",
    "taskmanager.memory.jvm-overhead.min": "192m",
    "taskmanager.memory.jvm-overhead.max": "192m",
}
TM_HEAP = "384m"  # framework.heap + task.heap above
TM_DIRECT = "192m"  # framework.off-heap + task.off-heap + network above


def flink_conf(settings: Settings, state: Path) -> dict[str, Any]:
    """The session cluster's config.yaml (flat keys). Checkpoints and savepoints under the state
    directory; RocksDB with incremental checkpoints when `[flink] state_backend = "rocksdb"`."""
    f = settings["flink"]
    fc = _fc(settings)
    backend = str(fc.get("state_backend", "hashmap")).lower()
    if backend not in ("hashmap", "rocksdb"):
        raise ValueError(f'[flink_cluster] state_backend must be "hashmap" or "rocksdb", not {backend!r}')
    conf: dict[str, Any] = {
        "jobmanager.rpc.address": "127.0.0.1",
        "jobmanager.rpc.port": int(fc.get("rpc_port", 16123)),
        "jobmanager.bind-host": "127.0.0.1",
        "jobmanager.memory.process.size": str(fc.get("jobmanager_memory", "1024m")),
        "rest.address": "127.0.0.1",
        "rest.bind-address": "127.0.0.1",
        "rest.port": int(f["rest_port"]),
        "taskmanager.host": "127.0.0.1",
        "taskmanager.bind-host": "127.0.0.1",
        "taskmanager.numberOfTaskSlots": int(fc.get("taskmanager_slots", 1)),
        # Flink's start scripts compute these from process.size (BashJavaUtils, part of flink-dist,
        # which Central lacks); TaskManagerRunner started directly needs them spelled out. Total
        # per TaskManager ~1.25 GB: heap 384m (TM_HEAP), direct 192m, managed 256m (RocksDB's
        # block cache and write buffers), metaspace 256m, overhead 192m.
        **TASKMANAGER_MEMORY,
        "parallelism.default": cluster_parallelism(settings),
        "state.backend.type": backend,
        "execution.checkpointing.dir": (state / "flink-checkpoints").resolve().as_uri(),
        "execution.checkpointing.savepoint-dir": (state / "flink-savepoints").resolve().as_uri(),
        "execution.checkpointing.externalized-checkpoint-retention": "RETAIN_ON_CANCELLATION",
        "execution.checkpointing.num-retained": 3,
        "web.upload.dir": str((state / "flink-cluster" / "upload").resolve()),
        "io.tmp.dirs": str((state / "flink-cluster" / "tmp").resolve()),
        "env.java.opts.all": " ".join(JAVA_OPENS),
    }
    if backend == "rocksdb":
        # only the changed SST files go into each checkpoint: cost grows with the change, not the state
        conf["execution.checkpointing.incremental"] = True
    return conf


def _fc(settings: Settings) -> dict[str, Any]:
    return dict(settings.raw.get("flink_cluster", {}))


def cluster_parallelism(settings: Settings) -> int:
    """At least 2 (one subtask per TaskManager), or the configured parallelism if higher."""
    taskmanagers = int(settings.raw.get("stack", {}).get("taskmanagers", 2))
    slots = int(_fc(settings).get("taskmanager_slots", 1))
    return max(2, min(int(settings["flink"].get("parallelism", 0)) or taskmanagers * slots, taskmanagers * slots))


def yaml_text(conf: dict[str, Any]) -> str:
    """Flat `key: value` YAML; strings JSON-quoted (a valid YAML scalar), booleans lower-case."""
    out = []
    for key, value in conf.items():
        if isinstance(value, bool):
            text = "true" if value else "false"
        elif isinstance(value, (int, float)):
            text = str(value)
        else:
            text = json.dumps(str(value))
        out.append(f"{key}: {text}")
    return "\n".join(out) + "\n"


LOG4J = """rootLogger.level = INFO
rootLogger.appenderRef.console.ref = console
appender.console.name = console
appender.console.type = Console
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p %c{1} - %m%n
logger.kafka.name = org.apache.kafka
logger.kafka.level = WARN
"""


def newest_savepoint(directory: Path) -> Path | None:
    """The newest complete savepoint (a folder holding _metadata) under the savepoint directory."""
    if not directory.is_dir():
        return None
    done = [p.parent for p in directory.glob("*/_metadata")]
    return max(done, key=lambda p: p.stat().st_mtime) if done else None


# The job's state layout: one number, kept in the job's resources (the Java job reads the same file,
# io.fleetperf.jobs.Checkpoints.STATE_LAYOUT, and sets aside checkpoints of another layout itself
# when it runs on the MiniCluster; a cluster submission names its restore point here instead).
STATE_LAYOUT_RESOURCE = install.JOBS_DIR / "src" / "main" / "resources" / "io" / "fleetperf" / "jobs" / "state-layout"
LAYOUT_FILE = "state-layout"  # Checkpoints.LAYOUT_FILE


def state_layout() -> int:
    return int(STATE_LAYOUT_RESOURCE.read_text().strip())


def set_aside_other_layouts(state: Path, layout: int) -> list[Path]:
    """Before a submission restores: savepoints and checkpoints written by a job of another state
    layout (their folder's `state-layout` marker) are moved into `superseded-layout-N/` beside
    them (kept for a downgrade, never restored), as the local job does (Checkpoints.restorable),
    and the marker is set to `layout`. Without this, `up` after an upgrade that changed the layout
    would be refused every restore point and fail. A folder without a marker was written by this
    layout: cluster mode came with layout 3, and the local job has always written its marker."""
    moved: list[Path] = []
    for root in (state / "flink-savepoints", state / "flink-checkpoints"):
        root.mkdir(parents=True, exist_ok=True)
        marker = root / LAYOUT_FILE
        found = int(marker.read_text().strip()) if marker.exists() else layout
        if found != layout:
            aside = root / f"superseded-layout-{found}"
            for folder in sorted(p for p in root.iterdir() if p.is_dir() and not p.name.startswith("superseded-")):
                aside.mkdir(exist_ok=True)
                target = aside / folder.name
                folder.rename(target)
                moved.append(target)
        marker.write_text(f"{layout}\n")
    return moved


def restore_points(state: Path) -> list[tuple[str, Path]]:
    """Every complete savepoint and retained checkpoint under the state directory, newest first, as
    ("savepoint" | "checkpoint", folder). Ordered by the _metadata file's time: Flink writes that file
    last (through a recoverable writer on a local file system: it appears whole or not at all), so
    it dates the state. Checkpoints are `<dir>/<job id>/chk-N/_metadata`; they survive a JobManager
    that was killed (nobody is left to delete them) and a cancelled job (RETAIN_ON_CANCELLATION).
    Folders the local job set aside for an older state layout (`superseded-*`) are not candidates."""
    found: list[tuple[float, str, Path]] = []
    savepoints, checkpoints = state / "flink-savepoints", state / "flink-checkpoints"
    if savepoints.is_dir():
        found += [
            (m.stat().st_mtime, "savepoint", m.parent)
            for m in savepoints.glob("*/_metadata")
            if not m.parent.name.startswith("superseded-")
        ]
    if checkpoints.is_dir():
        found += [
            (m.stat().st_mtime, "checkpoint", m.parent)
            for m in checkpoints.glob("*/chk-*/_metadata")
            if not m.parent.parent.name.startswith("superseded-")
        ]
    return [(kind, path) for _, kind, path in sorted(found, key=lambda f: f[0], reverse=True)]


# savepoints kept beside the newest one: a `down` whose savepoint turns out unreadable still has
# an older one to restore from (restore_points tries the newest 3)
SAVEPOINTS_KEPT = 2


def prune_restore_points(state: Path, savepoint: Path) -> list[Path]:
    """After `down` took `savepoint`: removes every retained checkpoint folder of the cluster's jobs
    and all savepoints but the newest SAVEPOINTS_KEPT, and returns what it removed. Each resubmitted
    job (after every `up`, and after a JobManager crash) writes its checkpoints into a folder of its
    own, and nothing else ever deletes them. Safe because a savepoint is self-contained (canonical
    format: it references no checkpoint file), and the job restores in Flink's default NO_CLAIM mode,
    so no checkpoint of a newer job shares files with an older one. Folders set aside for an older
    state layout (`superseded-*`, kept for a downgrade) stay, as do savepoints that are not complete
    (no _metadata: another writer's)."""
    if not (savepoint / "_metadata").is_file():
        return []  # not a complete savepoint: keep every other restore point
    removed: list[Path] = []
    checkpoints = state / "flink-checkpoints"
    if checkpoints.is_dir():
        for job in sorted(checkpoints.iterdir()):
            if job.is_dir() and not job.name.startswith("superseded-"):
                shutil.rmtree(job, ignore_errors=True)
                removed.append(job)
    savepoints = sorted(
        (m.parent for m in (state / "flink-savepoints").glob("*/_metadata")),
        key=lambda folder: (folder / "_metadata").stat().st_mtime,
        reverse=True,
    )
    for old in savepoints[SAVEPOINTS_KEPT:]:
        if old.resolve() != savepoint.resolve():
            shutil.rmtree(old, ignore_errors=True)
            removed.append(old)
    return removed


def _multipart(field: str, path: Path) -> tuple[bytes, str]:
    boundary = uuid.uuid4().hex
    head = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="{field}"; filename="{path.name}"\r\n'
        "Content-Type: application/x-java-archive\r\n\r\n"
    ).encode()
    return head + path.read_bytes() + f"\r\n--{boundary}--\r\n".encode(), f"multipart/form-data; boundary={boundary}"


class FlinkRest:
    """The few REST calls `flink run`/`flink stop --savepointPath` make against a session cluster."""

    def __init__(self, base: str) -> None:
        self.base = base.rstrip("/")

    def _call(self, method: str, path: str, body: Any = None, data: bytes | None = None, ctype: str = "") -> Any:
        headers = {}
        if body is not None:
            data = json.dumps(body).encode()
            ctype = "application/json"
        if ctype:
            headers["Content-Type"] = ctype
        req = urllib.request.Request(self.base + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=120) as response:
                text = response.read()
        except urllib.error.HTTPError as exc:
            raise RuntimeError(f"Flink REST {method} {path}: {exc.code} {exc.read()[:2000]!r}") from None
        return json.loads(text) if text else {}

    def taskmanagers(self) -> int:
        return int(self._call("GET", "/overview").get("taskmanagers", 0))

    def jobs(self) -> list[dict[str, Any]]:
        return list(self._call("GET", "/jobs/overview").get("jobs", []))

    def running_job(self) -> str | None:
        for job in self.jobs():
            if job.get("state") in ("RUNNING", "CREATED", "INITIALIZING", "RESTARTING"):
                return str(job["jid"])
        return None

    def upload(self, jar: Path) -> str:
        data, ctype = _multipart("jarfile", jar)
        name = self._call("POST", "/jars/upload", data=data, ctype=ctype)["filename"]
        return Path(name).name

    def run(self, jar_id: str, args: list[str], parallelism: int, savepoint: Path | None) -> str:
        body: dict[str, Any] = {"programArgsList": args, "parallelism": parallelism}
        if savepoint is not None:
            body["savepointPath"] = savepoint.resolve().as_uri()
            # an operator removed by an upgrade must not block the restore of the others
            body["allowNonRestoredState"] = True
        return str(self._call("POST", f"/jars/{jar_id}/run", body=body)["jobid"])

    def all_tasks_running(self, job_id: str) -> bool:
        for job in self.jobs():
            if job.get("jid") == job_id:
                tasks = job.get("tasks", {})
                return job.get("state") == "RUNNING" and tasks.get("running", 0) == tasks.get("total", -1)
        return False

    def stop_with_savepoint(self, job_id: str, target: Path, timeout: float = 120.0) -> str:
        """Retried until the deadline: Flink refuses a savepoint while some tasks are still being
        deployed (right after a start or a failover), and a refused one leaves the job running."""
        deadline = time.monotonic() + timeout
        failure = "no attempt"
        while time.monotonic() < deadline:
            if not self.all_tasks_running(job_id):
                time.sleep(0.5)
                continue
            trigger = self._call(
                "POST", f"/jobs/{job_id}/stop", body={"targetDirectory": target.resolve().as_uri(), "drain": False}
            )["request-id"]
            while time.monotonic() < deadline:
                status = self._call("GET", f"/jobs/{job_id}/savepoints/{trigger}")
                if status.get("status", {}).get("id") == "COMPLETED":
                    op = status.get("operation", {})
                    if "location" in op:
                        return str(op["location"])
                    failure = str(op.get("failure-cause", {}).get("stack-trace", op))[:500]
                    break
                time.sleep(0.5)
            time.sleep(1.0)
        raise RuntimeError(f"stop-with-savepoint of {job_id} not done after {timeout:.0f}s: {failure}")


class ClusterStack(LocalStack):
    """LocalStack with kafka and flink replaced by their clusters; registry and warehouse unchanged."""

    @property
    def flink_home(self) -> Path:
        return self.state / "flink-cluster"

    @property
    def savepoint_dir(self) -> Path:
        return self.state / "flink-savepoints"

    def rest(self) -> FlinkRest:
        return FlinkRest(f"http://127.0.0.1:{self.s['flink']['rest_port']}")

    # process definitions ---------------------------------------------------------------------
    def brokers(self) -> list[Process]:
        k = self.s["kafka"]
        libs = install.kafka_libs_dir(self.s)
        out = []
        for i, (port, _) in enumerate(broker_ports(self.s), start=1):
            out.append(
                Process(
                    f"kafka-{i}",
                    ["java", f"-Xmx{k['heap']}", "-cp", f"{libs}/*", "kafka.Kafka", str(self._broker_props(i))],
                    self.run_dir,
                    self.log_dir,
                    ready=lambda port=port: port_open(k["host"], port),
                    where=f"{k['host']}:{port}",
                )
            )
        return out

    def _broker_props(self, node_id: int) -> Path:
        return self.state / f"kafka-{node_id}" / "server.properties"

    def _flink_java(self, main: str, *args: str, heap: str, direct: str = "") -> list[str]:
        lib = install.flink_cluster_lib_dir(self.s)
        conf = self.flink_home / "conf"
        return [
            "java",
            f"-Xmx{heap}",
            *([f"-XX:MaxDirectMemorySize={direct}"] if direct else []),
            *JAVA_OPENS,
            f"-Dlog4j.configurationFile={conf / 'log4j.properties'}",
            "-cp",
            f"{lib}/*",
            main,
            "--configDir",
            str(conf),
            *args,
        ]

    def jobmanager(self) -> Process:
        rest = self.rest()
        return Process(
            "flink-jobmanager",
            self._flink_java(JOBMANAGER_MAIN, heap="512m"),
            self.run_dir,
            self.log_dir,
            ready=lambda: http_ok(f"{rest.base}/overview"),
            where=f"{rest.base} (Flink session cluster)",
        )

    def taskmanagers(self) -> list[Process]:
        n = int(self.s.raw.get("stack", {}).get("taskmanagers", 2))
        return [
            Process(
                f"flink-taskmanager-{i}",
                self._flink_java(TASKMANAGER_MAIN, f"-Dtaskmanager.resource-id=tm-{i}", heap=TM_HEAP, direct=TM_DIRECT),
                self.run_dir,
                self.log_dir,
                ready=lambda: True,
                where=f"TaskManager tm-{i}",
            )
            for i in range(1, n + 1)
        ]

    def processes(self) -> dict[str, Process]:
        procs: dict[str, Process] = {p.name: p for p in self.brokers()}
        procs["registry"] = self.registry()
        procs["flink-jobmanager"] = self.jobmanager()
        procs.update({p.name: p for p in self.taskmanagers()})
        procs["warehouse"] = self.warehouse()
        return procs

    @property
    def bootstrap_all(self) -> str:
        """Every broker: a client given only the first cannot start while that broker is down. The
        one definition is Settings.bootstrap ([kafka] bootstrap when set, e.g. compose's brokers;
        else host:port + 2i for each broker, the ports broker_ports() gives them)."""
        return self.s.bootstrap

    def registry(self) -> Process:
        proc = super().registry()
        proc.argv = [
            f"-Dapicurio.kafkasql.bootstrap.servers={self.bootstrap_all}"
            if arg.startswith("-Dapicurio.kafkasql.bootstrap.servers=")
            else arg
            for arg in proc.argv
        ]
        return proc

    def job_settings_data(self) -> dict[str, Any]:
        """config.job_settings for a cluster submission: no MiniCluster REST port and no checkpoint
        directory in the job (the cluster's config.yaml has them; the restore comes from the
        savepoint passed to the run request), parallelism of the cluster."""
        data = job_settings(self.s)
        data["kafka"]["bootstrap"] = self.bootstrap_all
        data["flink"]["rest_port"] = 0
        data["flink"].pop("checkpoint_dir", None)
        data["flink"]["parallelism"] = cluster_parallelism(self.s)
        return data

    def write_job_settings(self) -> Path:
        path = self.job_settings_path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(self.job_settings_data(), indent=2, sort_keys=True) + "\n")
        return path

    # lifecycle -------------------------------------------------------------------------------
    def _start_one(self, name: str, echo: Callable[[str], object]) -> str:
        """Kafka as several brokers and Flink as a session cluster; the rest as on one machine."""
        if name == "kafka":
            return self._start_kafka()
        if name == "flink":
            return self._start_flink(echo)
        return super()._start_one(name, echo)

    def _start_kafka(self) -> str:
        install.kafka_libs(self.s)
        self._write_broker_properties()
        brokers = self.brokers()
        for proc in brokers:
            proc.start()
        for proc in brokers:
            proc.wait_ready()
        self.create_topics()
        return ", ".join(p.where for p in brokers)

    def create_topics(self, timeout: float = 60.0) -> None:
        """Every configured topic with replication factor 3 and min.insync.replicas 2, before
        kafka_avro.ensure_topics (which would create them with factor 1) finds them existing."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        from fleetperf.kafka_avro import kafka_client_config

        n = len(broker_ports(self.s))
        replication = min(3, n)
        min_isr = str(max(1, min(2, replication - 1)))
        admin = AdminClient(kafka_client_config(self.s))
        deadline = time.monotonic() + timeout
        # all brokers must have registered before a factor-3 topic can be placed
        while len(admin.list_topics(timeout=10).brokers) < n:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {n} Kafka brokers registered after {timeout:.0f}s")
            time.sleep(0.5)
        topics = [
            NewTopic(
                t.name,
                num_partitions=int(self.s["kafka"]["partitions"]),
                replication_factor=replication,
                config={"min.insync.replicas": min_isr},
            )
            for t in self.s.topics.values()
        ]
        for name, future in admin.create_topics(topics, request_timeout=30).items():
            try:
                future.result()
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise RuntimeError(f"cannot create topic {name}: {exc}") from exc

    def _write_broker_properties(self) -> None:
        import subprocess

        cp = ["java", "-cp", f"{install.kafka_libs_dir(self.s)}/*", "kafka.tools.StorageTool"]
        cluster_id_file = self.state / "kafka-cluster-id"
        if not cluster_id_file.exists():
            out = subprocess.run([*cp, "random-uuid"], capture_output=True, text=True, check=True).stdout.strip()
            cluster_id_file.write_text(out)
        cluster_id = cluster_id_file.read_text().strip()
        for i in range(1, len(broker_ports(self.s)) + 1):
            props = self._broker_props(i)
            data = props.parent / "data"
            props.parent.mkdir(parents=True, exist_ok=True)
            props.write_text(kafka_broker_properties(self.s, i, data))
            if not (data / "meta.properties").exists():
                subprocess.run(
                    [*cp, "format", "-t", cluster_id, "-c", str(props)], capture_output=True, text=True, check=True
                )

    def write_flink_conf(self) -> Path:
        conf_dir = self.flink_home / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        for sub in ("upload", "tmp"):
            (self.flink_home / sub).mkdir(parents=True, exist_ok=True)
        (conf_dir / "config.yaml").write_text(yaml_text(flink_conf(self.s, self.state)))
        (conf_dir / "log4j.properties").write_text(LOG4J)
        return conf_dir

    def _start_flink(self, echo: Callable[[str], object]) -> str:
        install.flink_cluster_lib(self.s)
        jar = install.job_jar()
        self.write_flink_conf()
        self.write_job_settings()
        jm = self.jobmanager()
        jm.start()
        jm.wait_ready()
        tms = self.taskmanagers()
        for tm in tms:
            tm.start()
        rest = self.rest()
        deadline = time.monotonic() + 120
        while rest.taskmanagers() < len(tms):
            if time.monotonic() > deadline:
                raise RuntimeError(f"TaskManagers did not register; last log lines:\n{tms[0].tail()}")
            time.sleep(0.5)
        if rest.running_job() is None:
            self._submit(rest, jar, echo)
        while (job := rest.running_job()) is None or not rest.all_tasks_running(job):
            if time.monotonic() > deadline + 60:
                raise RuntimeError(f"the job is not RUNNING; last JobManager log lines:\n{jm.tail()}")
            time.sleep(0.5)
        return jm.where

    def _submit(self, rest: FlinkRest, jar: Path, echo: Callable[[str], object]) -> str:
        """Submits the job from the newest restore point: the savepoint of the last `down`, or a
        retained checkpoint when the cluster lost the job without one (JobManager killed: a
        standalone session cluster without HA forgets its jobs; the files stay). Without that the
        job would start from the consumer group's committed offsets with empty window state, and the
        windows open at the crash would be emitted from only the samples after it. A restore point
        the run request is refused for is named and the next older one tried (a failure later, when
        the JobManager reads the state, shows as a job that does not reach RUNNING)."""
        jar_id = rest.upload(jar)
        layout = state_layout()
        for folder in set_aside_other_layouts(self.state, layout):
            echo(f"  flink      {folder.name}: state layout other than this job's ({layout}), moved to {folder.parent}")
        failures: list[str] = []
        for kind, path in restore_points(self.state)[:3]:
            echo(f"  flink      restoring from {kind} {path}")
            try:
                return rest.run(jar_id, self.job_args(), cluster_parallelism(self.s), path)
            except RuntimeError as exc:
                failures.append(f"{path}: {exc}")
                echo(f"  flink      cannot restore from {path}: {str(exc)[:300]}")
        if failures:
            raise RuntimeError("the job could not be restored from its newest state:\n" + "\n".join(failures))
        return rest.run(jar_id, self.job_args(), cluster_parallelism(self.s), None)

    def stop(self, echo: Callable[[str], object] = print) -> None:
        procs = self.processes()
        if procs["warehouse"].running():
            procs["warehouse"].stop()
            echo(f"  {'warehouse':<10} stopped")
        if procs["flink-jobmanager"].running():
            try:
                job = self.rest().running_job()
                if job is not None:
                    self.savepoint_dir.mkdir(parents=True, exist_ok=True)
                    location = self.rest().stop_with_savepoint(job, self.savepoint_dir)
                    echo(f"  flink      savepoint {location}")
                    # Flink answers a URI ("file:/..."); the folder is its path
                    taken = Path(urllib.parse.urlparse(location).path if location.startswith("file:") else location)
                    removed = prune_restore_points(self.state, taken)
                    if removed:
                        echo(f"  flink      removed {len(removed)} older checkpoint/savepoint folder(s)")
            except (OSError, RuntimeError) as exc:
                # the cluster still stops; the next start resumes from the newest retained
                # checkpoint instead (restore_points), which is older than a savepoint would be
                echo(f"  flink      no savepoint taken ({exc}); the next up restores the newest checkpoint")
        brokers = [p for name, p in procs.items() if name.startswith("kafka-")]
        for name in reversed(list(procs)):
            if name == "warehouse" or name.startswith("kafka-"):
                continue
            if procs[name].running():
                procs[name].stop()
                echo(f"  {name:<10} stopped")
        # all brokers are asked at once: stopped one by one, the last one waits for a controller
        # quorum that has already gone (its clean shutdown then hangs until the kill)
        for proc in brokers:
            pid = proc.pid()
            if pid is not None:
                try:
                    os.killpg(pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in brokers:
            if proc.running() or proc.pid_file.exists():
                proc.stop()
                echo(f"  {proc.name:<10} stopped")
