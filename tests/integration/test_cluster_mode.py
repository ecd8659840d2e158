"""Cluster mode end to end on real processes: 3 KRaft brokers, Apicurio, a standalone Flink session
cluster (JobManager + 2 TaskManagers) with the job submitted over REST at parallelism 2. A simulated
nmon file goes in, derived metrics come out of Kafka; `down` takes a savepoint and leaves no process;
`up` again restores from that savepoint. The warehouse is not started: the derived-metrics topic is
what the Flink cluster produces, and the sink is the same code as in the local default.

Off by default (it starts 6 JVMs, ~2-3 minutes on 2 cores): FLEETPERF_TEST_CLUSTER=1 to run it."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf import config
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.stack.cluster import ClusterStack, newest_savepoint
from fleetperf.stack.local import LocalStack
from tests.integration.kafka_read import read_derived
from tests.providers import free_port as _free
from tests.providers import free_run as _free_run

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        os.environ.get("FLEETPERF_TEST_CLUSTER") != "1",
        reason="cluster mode starts 6 JVMs (3 brokers, JobManager, 2 TaskManagers); FLEETPERF_TEST_CLUSTER=1 runs it",
    ),
]


def _no_process_left(stack: LocalStack) -> None:
    for name, proc in stack.processes().items():
        assert not proc.running(), f"{name} still running after down"
        assert not proc.pid_file.exists(), f"{name} left its PID file"


def test_cluster_mode_end_to_end(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    base = _free_run(6)
    env = {
        "FLEETPERF__STACK__MODE": "cluster",
        "FLEETPERF__STATE__DIR": str(tmp_path / "state"),
        "FLEETPERF__KAFKA__PORT": str(base),
        "FLEETPERF__KAFKA__CONTROLLER_PORT": str(base + 1),
        "FLEETPERF__KAFKA__PARTITIONS": "2",
        "FLEETPERF__REGISTRY__PORT": str(_free()),
        "FLEETPERF__FLINK__REST_PORT": str(_free()),
        "FLEETPERF__FLINK_CLUSTER__RPC_PORT": str(_free()),
        "FLEETPERF__FLINK__IDLE_FLUSH_SECONDS": "3",
        "FLEETPERF__FLINK__CHECKPOINT_INTERVAL_SECONDS": "3",
    }
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    settings = config.load()
    stack = LocalStack(settings)
    assert isinstance(stack, ClusterStack)
    lines: list[str] = []
    only = ("kafka", "registry", "flink")
    try:
        stack.start(only, echo=lines.append)
        rest = stack.rest()
        assert rest.taskmanagers() == 2
        job = rest.running_job()
        assert job is not None
        vertices = rest._call("GET", f"/jobs/{job}")["vertices"]
        assert max(v["parallelism"] for v in vertices) == 2
        from confluent_kafka.admin import AdminClient

        from fleetperf.kafka_avro import kafka_client_config

        meta = AdminClient(kafka_client_config(settings)).list_topics(timeout=10)
        assert len(meta.brokers) == 3
        cpu = meta.topics[settings.topic("cpu_samples").name]
        assert len(cpu.partitions) == 2
        assert all(len(p.replicas) == 3 for p in cpu.partitions.values())

        files = simulate(
            tmp_path / "fleet",
            hosts=1,
            start=datetime(2026, 3, 2, 9, 0),
            duration=timedelta(minutes=5),
            interval=10,
            seed=7,
        )
        summary = ingest(settings, [str(p) for p in files], UTC, progress=False)
        assert summary.errors == 0, summary.error_lines
        derived = []
        for _ in range(12):  # exactly-once output is visible after a checkpoint (3 s here)
            derived = read_derived(settings, quiet_seconds=5.0)
            if derived:
                break
        assert derived, f"no derived metrics from the Flink cluster; JobManager log:\n{stack.jobmanager().tail()}"
    finally:
        stack.stop(echo=lines.append)
    _no_process_left(stack)
    savepoint = newest_savepoint(stack.savepoint_dir)
    assert savepoint is not None, lines

    # up again: the job resumes from that savepoint
    try:
        lines.clear()
        stack.start(only, echo=lines.append)
        assert any("restoring from savepoint" in line and str(savepoint) in line for line in lines), lines
    finally:
        stack.stop(echo=lines.append)
    _no_process_left(stack)
    # the second down took its own savepoint (a stop right after a start waits for the tasks)
    assert newest_savepoint(stack.savepoint_dir) not in (None, savepoint), lines
