"""Cluster mode of the local stack (stack/cluster.py): dispatch, broker properties, Flink config and
command lines. Oracles are the documented Kafka/Flink option names and the values the issue asks
for (replication 3, min.insync.replicas 2, parallelism >= 2), not the generator's own tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetperf import config
from fleetperf.stack import cluster
from fleetperf.stack.local import LocalStack


def _settings(**env: str) -> config.Settings:
    return config.load({"FLEETPERF__STATE__DIR": "/tmp/fp-state", **{f"FLEETPERF__{k}": v for k, v in env.items()}})


def _props(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines() if line and not line.startswith("#"))


def test_default_mode_is_local_and_unchanged() -> None:
    s = _settings()
    assert cluster.mode(s) == "local"
    stack = LocalStack(s)
    assert type(stack) is LocalStack
    assert list(stack.processes()) == ["kafka", "registry", "flink", "warehouse"]


def test_env_switches_to_cluster_mode() -> None:
    stack = LocalStack(_settings(STACK__MODE="cluster"))
    assert isinstance(stack, cluster.ClusterStack)
    assert list(stack.processes()) == [
        "kafka-1",
        "kafka-2",
        "kafka-3",
        "registry",
        "flink-jobmanager",
        "flink-taskmanager-1",
        "flink-taskmanager-2",
        "warehouse",
    ]


def test_bad_mode_is_named() -> None:
    with pytest.raises(ValueError, match="mode"):
        cluster.mode(_settings(STACK__MODE="swarm"))


def test_three_kraft_brokers_replicate_three_ways() -> None:
    s = _settings(KAFKA__PORT="30000", KAFKA__CONTROLLER_PORT="30001", KAFKA__PARTITIONS="6")
    assert cluster.broker_ports(s) == [(30000, 30001), (30002, 30003), (30004, 30005)]
    props = [_props(cluster.kafka_broker_properties(s, i, Path(f"/d{i}"))) for i in (1, 2, 3)]
    voters = "1@127.0.0.1:30001,2@127.0.0.1:30003,3@127.0.0.1:30005"
    for i, p in enumerate(props, start=1):
        assert p["node.id"] == str(i)
        assert p["process.roles"] == "broker,controller"
        assert p["controller.quorum.voters"] == voters
        assert p["default.replication.factor"] == "3"
        assert p["min.insync.replicas"] == "2"
        assert p["offsets.topic.replication.factor"] == "3"
        assert p["transaction.state.log.min.isr"] == "2"
        assert p["unclean.leader.election.enable"] == "false"
        assert p["num.partitions"] == "6"
        assert p["log.dirs"] == f"/d{i}"
    assert props[1]["listeners"] == "PLAINTEXT://127.0.0.1:30002,CONTROLLER://127.0.0.1:30003"
    # every broker its own port and data directory
    assert len({p["listeners"] for p in props}) == 3


def test_flink_conf_backends() -> None:
    s = _settings(FLINK__REST_PORT="28082")
    conf = cluster.flink_conf(s, Path("/tmp/fp-state"))
    assert conf["state.backend.type"] == "hashmap"
    assert "execution.checkpointing.incremental" not in conf
    assert conf["rest.port"] == 28082
    assert conf["parallelism.default"] >= 2
    assert conf["execution.checkpointing.savepoint-dir"] == "file:///tmp/fp-state/flink-savepoints"
    assert conf["execution.checkpointing.dir"] == "file:///tmp/fp-state/flink-checkpoints"
    rocks = cluster.flink_conf(_settings(FLINK_CLUSTER__STATE_BACKEND="rocksdb"), Path("/tmp/fp-state"))
    assert rocks["state.backend.type"] == "rocksdb"
    assert rocks["execution.checkpointing.incremental"] is True
    with pytest.raises(ValueError, match="state_backend"):
        cluster.flink_conf(_settings(FLINK_CLUSTER__STATE_BACKEND="memory"), Path("/tmp"))


def test_taskmanager_memory_adds_up() -> None:
    # JVM heap given to the TaskManager = framework + task heap; direct = off-heaps + network
    m = cluster.TASKMANAGER_MEMORY

    def mb(key: str) -> int:
        return int(str(m[key]).removesuffix("m"))

    heap = mb("taskmanager.memory.framework.heap.size") + mb("taskmanager.memory.task.heap.size")
    direct = (
        mb("taskmanager.memory.framework.off-heap.size")
        + mb("taskmanager.memory.task.off-heap.size")
        + mb("taskmanager.memory.network.max")
    )
    assert f"{heap}m" == cluster.TM_HEAP
    assert f"{direct}m" == cluster.TM_DIRECT


def test_yaml_is_flat_and_parses() -> None:
    yaml = pytest.importorskip("yaml")
    conf = cluster.flink_conf(_settings(FLINK_CLUSTER__STATE_BACKEND="rocksdb"), Path("/tmp/x y"))
    assert yaml.safe_load(cluster.yaml_text(conf)) == conf


def test_parallelism_at_least_two() -> None:
    assert cluster.cluster_parallelism(_settings(FLINK__PARALLELISM="1")) == 2
    assert cluster.cluster_parallelism(_settings(FLINK__PARALLELISM="0")) == 2
    assert cluster.cluster_parallelism(_settings(FLINK__PARALLELISM="4", FLINK_CLUSTER__TASKMANAGER_SLOTS="2")) == 4


def test_command_lines() -> None:
    stack = LocalStack(_settings(STACK__MODE="cluster"))
    jm = stack.jobmanager().argv
    assert cluster.JOBMANAGER_MAIN in jm
    assert jm[jm.index("--configDir") + 1] == "/tmp/fp-state/flink-cluster/conf"
    tm = stack.taskmanagers()[1].argv
    assert cluster.TASKMANAGER_MAIN in tm
    assert "-Dtaskmanager.resource-id=tm-2" in tm
    assert f"-Xmx{cluster.TM_HEAP}" in tm
    broker = stack.brokers()[2].argv
    assert broker[-2:] == ["kafka.Kafka", "/tmp/fp-state/kafka-3/server.properties"]


def test_job_settings_for_submission_start_no_minicluster() -> None:
    # rest_port 0 and no checkpoint_dir: DerivedMetricsJob.main then neither binds a REST port nor
    # restores a checkpoint itself; the cluster's config and the run request's savepoint do that
    stack = LocalStack(_settings(STACK__MODE="cluster", KAFKA__PORT="30000"))
    data = stack.job_settings_data()
    assert data["kafka"]["bootstrap"] == "127.0.0.1:30000,127.0.0.1:30002,127.0.0.1:30004"
    assert "-Dapicurio.kafkasql.bootstrap.servers=127.0.0.1:30000,127.0.0.1:30002,127.0.0.1:30004" in (
        stack.registry().argv
    )
    assert data["flink"]["rest_port"] == 0
    assert "checkpoint_dir" not in data["flink"]
    assert data["flink"]["parallelism"] >= 2


def test_newest_savepoint(tmp_path: Path) -> None:
    import os

    assert cluster.newest_savepoint(tmp_path / "missing") is None
    for i, name in enumerate(["savepoint-a", "savepoint-b", "savepoint-c"]):
        (tmp_path / name).mkdir()
        if name != "savepoint-c":  # c is incomplete: no _metadata
            (tmp_path / name / "_metadata").write_text("x")
        os.utime(tmp_path / name, (1000 + i, 1000 + i))
    assert cluster.newest_savepoint(tmp_path) == tmp_path / "savepoint-b"


def test_multipart_body_carries_the_jar(tmp_path: Path) -> None:
    jar = tmp_path / "job.jar"
    jar.write_bytes(b"PK\x03\x04jar-bytes")
    body, ctype = cluster._multipart("jarfile", jar)
    boundary = ctype.split("boundary=")[1]
    assert body.startswith(f"--{boundary}\r\n".encode())
    assert b'name="jarfile"; filename="job.jar"' in body
    assert b"PK\x03\x04jar-bytes\r\n" in body
    assert body.endswith(f"--{boundary}--\r\n".encode())


class _ScriptedRest(cluster.FlinkRest):
    """FlinkRest with canned answers: a job still deploying, then a refused savepoint, then one taken."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:1")
        self.calls: list[tuple[str, str]] = []
        self.overviews = iter([{"running": 3, "total": 5}, {"running": 5, "total": 5}, {"running": 5, "total": 5}])
        self.results = iter(
            [
                {"status": {"id": "COMPLETED"}, "operation": {"failure-cause": {"stack-trace": "not all running"}}},
                {"status": {"id": "IN_PROGRESS"}},
                {"status": {"id": "COMPLETED"}, "operation": {"location": "file:/sp/savepoint-1"}},
            ]
        )

    def _call(self, method: str, path: str, body: object = None, data: bytes | None = None, ctype: str = "") -> object:
        self.calls.append((method, path))
        if path == "/jobs/overview":
            return {"jobs": [{"jid": "j1", "state": "RUNNING", "tasks": next(self.overviews)}]}
        if method == "POST":
            return {"request-id": "r"}
        return next(self.results)


def test_stop_with_savepoint_waits_and_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cluster.time, "sleep", lambda _s: None)
    rest = _ScriptedRest()
    assert rest.stop_with_savepoint("j1", Path("/sp"), timeout=30) == "file:/sp/savepoint-1"
    stops = [c for c in rest.calls if c == ("POST", "/jobs/j1/stop")]
    assert len(stops) == 2  # none while deploying, one refused, one taken
    assert rest.calls[0] == ("GET", "/jobs/overview")


def test_clients_bootstrap_from_every_broker_in_cluster_mode() -> None:
    from fleetperf import config

    local = config.load({})
    assert (local.bootstrap, local.kafka_brokers) == ("127.0.0.1:19092", 1)
    cluster = config.load({"FLEETPERF__STACK__MODE": "cluster"})
    assert cluster.kafka_brokers == 3
    assert cluster.bootstrap == "127.0.0.1:19092,127.0.0.1:19094,127.0.0.1:19096"


def _metadata(folder: Path, mtime: float) -> None:
    import os

    folder.mkdir(parents=True)
    (folder / "_metadata").write_text("x")
    os.utime(folder / "_metadata", (mtime, mtime))


def test_restore_points_newest_first_savepoints_and_retained_checkpoints(tmp_path: Path) -> None:
    """A JobManager killed without `down` leaves only retained checkpoints (<dir>/<job>/chk-N); the
    newest state wins whichever kind it is; incomplete ones and set-aside layouts never."""
    assert cluster.restore_points(tmp_path) == []
    _metadata(tmp_path / "flink-savepoints" / "savepoint-1", 1000)
    _metadata(tmp_path / "flink-checkpoints" / "job-a" / "chk-7", 2000)
    _metadata(tmp_path / "flink-checkpoints" / "job-a" / "chk-6", 1500)
    _metadata(tmp_path / "flink-checkpoints" / "superseded-layout-2" / "job-0" / "chk-99", 9000)
    _metadata(tmp_path / "flink-checkpoints" / "superseded-layout-2" / "chk-98", 9000)
    (tmp_path / "flink-checkpoints" / "job-b" / "chk-8").mkdir(parents=True)  # in progress: no _metadata
    assert cluster.restore_points(tmp_path) == [
        ("checkpoint", tmp_path / "flink-checkpoints" / "job-a" / "chk-7"),
        ("checkpoint", tmp_path / "flink-checkpoints" / "job-a" / "chk-6"),
        ("savepoint", tmp_path / "flink-savepoints" / "savepoint-1"),
    ]
    _metadata(tmp_path / "flink-savepoints" / "savepoint-2", 3000)  # a `down` after those checkpoints
    assert cluster.restore_points(tmp_path)[0] == ("savepoint", tmp_path / "flink-savepoints" / "savepoint-2")


class _FakeRest:
    """Records run requests; refuses the paths in `refuse` the way the REST API answers (RuntimeError)."""

    def __init__(self, refuse: set[Path]) -> None:
        self.refuse, self.runs = refuse, []

    def upload(self, jar: Path) -> str:
        return "jar-1"

    def run(self, jar_id: str, args: list[str], parallelism: int, savepoint: Path | None) -> str:
        self.runs.append(savepoint)
        if savepoint in self.refuse:
            raise RuntimeError("Flink REST POST /jars/jar-1/run: 500 cannot read _metadata")
        return "job-2"


def test_submit_restores_the_newest_state_and_falls_back(tmp_path: Path) -> None:
    stack = LocalStack(_settings(STACK__MODE="cluster", STATE__DIR=str(tmp_path)))
    assert isinstance(stack, cluster.ClusterStack)
    lines: list[str] = []
    fresh = _FakeRest(set())
    assert stack._submit(fresh, tmp_path / "job.jar", lines.append) == "job-2"
    assert fresh.runs == [None]  # nothing to restore: a fresh start
    _metadata(tmp_path / "flink-savepoints" / "savepoint-1", 1000)
    _metadata(tmp_path / "flink-checkpoints" / "job-a" / "chk-7", 2000)
    broken = tmp_path / "flink-checkpoints" / "job-a" / "chk-7"
    rest = _FakeRest({broken})
    assert stack._submit(rest, tmp_path / "job.jar", lines.append) == "job-2"
    assert rest.runs == [broken, tmp_path / "flink-savepoints" / "savepoint-1"]
    assert any("restoring from checkpoint" in line and str(broken) in line for line in lines)
    assert any("cannot restore from" in line for line in lines)
    with pytest.raises(RuntimeError, match="could not be restored"):
        stack._submit(_FakeRest({broken, tmp_path / "flink-savepoints" / "savepoint-1"}), tmp_path / "j", lines.append)


def test_down_prunes_checkpoints_of_earlier_jobs_and_old_savepoints(tmp_path: Path) -> None:
    """Every resubmitted job checkpoints into a folder of its own; after `down`'s savepoint (self-
    contained) they and all but the newest savepoints go; set-aside layouts and incomplete folders stay."""
    _metadata(tmp_path / "flink-checkpoints" / "job-a" / "chk-7", 1000)
    _metadata(tmp_path / "flink-checkpoints" / "job-b" / "chk-3", 2000)
    (tmp_path / "flink-checkpoints" / "job-b" / "shared").mkdir()
    _metadata(tmp_path / "flink-checkpoints" / "superseded-layout-2" / "job-0" / "chk-99", 500)
    for n, mtime in ((1, 100), (2, 200), (3, 3000)):
        _metadata(tmp_path / "flink-savepoints" / f"savepoint-{n}", mtime)
    (tmp_path / "flink-savepoints" / "savepoint-partial").mkdir()
    # a savepoint that is not complete prunes nothing
    assert cluster.prune_restore_points(tmp_path, tmp_path / "flink-savepoints" / "savepoint-partial") == []
    assert len(cluster.restore_points(tmp_path)) == 5
    removed = cluster.prune_restore_points(tmp_path, tmp_path / "flink-savepoints" / "savepoint-3")
    assert sorted(p.name for p in removed) == ["job-a", "job-b", "savepoint-1"]
    assert cluster.restore_points(tmp_path) == [
        ("savepoint", tmp_path / "flink-savepoints" / "savepoint-3"),
        ("savepoint", tmp_path / "flink-savepoints" / "savepoint-2"),
    ]
    assert (tmp_path / "flink-checkpoints" / "superseded-layout-2" / "job-0" / "chk-99" / "_metadata").exists()
    assert (tmp_path / "flink-savepoints" / "savepoint-partial").is_dir()


def test_the_layout_number_is_the_one_the_java_job_reads() -> None:
    """One definition: the resource the job jar carries (Checkpoints.readLayout reads it)."""
    java = (cluster.install.JOBS_DIR / "src/main/java/io/fleetperf/jobs/Checkpoints.java").read_text()
    assert 'getResourceAsStream("state-layout")' in java
    assert cluster.state_layout() >= 3  # 3 when cluster mode came (Checkpoints.java's history)


def test_restore_points_of_another_state_layout_are_set_aside(tmp_path: Path) -> None:
    """An upgrade that changes the state layout: its savepoints and checkpoints are moved aside
    (never restored, kept for a downgrade) and the submission starts without state; the same
    layout keeps them; a marker-less folder counts as the current layout."""
    _metadata(tmp_path / "flink-savepoints" / "savepoint-1", 1000)
    _metadata(tmp_path / "flink-checkpoints" / "job-a" / "chk-7", 2000)
    assert cluster.set_aside_other_layouts(tmp_path, 3) == []
    assert len(cluster.restore_points(tmp_path)) == 2
    assert (tmp_path / "flink-savepoints" / "state-layout").read_text() == "3\n"
    moved = cluster.set_aside_other_layouts(tmp_path, 4)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in moved) == [
        "flink-checkpoints/superseded-layout-3/job-a",
        "flink-savepoints/superseded-layout-3/savepoint-1",
    ]
    assert cluster.restore_points(tmp_path) == []
    assert (tmp_path / "flink-checkpoints" / "state-layout").read_text() == "4\n"
    _metadata(tmp_path / "flink-savepoints" / "savepoint-2", 3000)  # the new layout's `down`
    assert cluster.set_aside_other_layouts(tmp_path, 4) == []
    assert cluster.restore_points(tmp_path) == [("savepoint", tmp_path / "flink-savepoints" / "savepoint-2")]


def test_submit_after_a_layout_change_starts_without_the_old_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    stack = LocalStack(_settings(STACK__MODE="cluster", STATE__DIR=str(tmp_path)))
    assert isinstance(stack, cluster.ClusterStack)
    _metadata(tmp_path / "flink-savepoints" / "savepoint-1", 1000)
    (tmp_path / "flink-savepoints" / "state-layout").write_text("2\n")
    monkeypatch.setattr(cluster, "state_layout", lambda: 3)
    lines: list[str] = []
    rest = _FakeRest(set())
    assert stack._submit(rest, tmp_path / "job.jar", lines.append) == "job-2"
    assert rest.runs == [None]
    assert any("savepoint-1" in line and "moved to" in line for line in lines)
