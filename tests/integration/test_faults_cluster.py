"""Fault injection in cluster mode (issue 23 item 6): kill -9 one Kafka broker, a Flink
TaskManager, the Flink JobManager, each while a backfill of many files runs and `ingest --follow`
reads a file that is being written, then compare the warehouse with counts that did not go through
the pipeline (the oracle of tests/integration/test_faults.py: csv-module snapshots, windows computed
from them, the fault-free row mapping; 0 lost and 0 doubled in raw, derived and rollup tables).

The stack is the cluster mode of `./fleetperf up` (stack/cluster.py): 3 KRaft brokers (replication
factor 3, min.insync.replicas 2), Apicurio, a standalone Flink session cluster (JobManager + 2
TaskManagers, the job at parallelism 2 over 2 partitions per topic) and the warehouse process
(sink + embedded ClickHouse + SQL endpoint + Superset) started by ClusterStack itself: the sink
bootstraps from every broker (Settings.bootstrap in cluster mode), so it is the real consumer of
the cluster, not a stand-in. Services are killed with SIGKILL (LocalStack.kill on the cluster's
process names) and brought back with `ClusterStack.start(only=...)`, which is what `./fleetperf up`
runs.

Off by default like tests/integration/test_cluster_mode.py (it starts 7 JVMs and the warehouse):
FLEETPERF_TEST_CLUSTER=1 runs it. Ports: FLEETPERF__KAFKA__PORT etc. from the environment when
given (several runs on one machine), free ones otherwise; the state directory is the test's own.
Each case prints a line `FAULT {...}` that docs/faults.md quotes."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from fleetperf import config
from fleetperf.config import Settings
from fleetperf.ingest.publish import Summary, ingest
from fleetperf.stack.cluster import ClusterStack
from fleetperf.stack.local import LocalStack
from tests.integration.following import following
from tests.integration.test_faults import (
    QUIET,
    Expected,
    FaultAt,
    _age,
    _in,
    _q,
    assert_exact,
    expected_of,
    expected_of_text,
    fleet,
    joined,
    later,
    report,
    settle,
)
from tests.providers import free_port as _free
from tests.providers import free_run as _free_run

pytestmark = [
    pytest.mark.integration,
    # the first case also starts the cluster (130 s on an idle 2-core machine, several minutes on a
    # loaded one); the project's 900 s per test is too short for that plus a JobManager restart
    pytest.mark.timeout(1800),
    pytest.mark.skipif(
        os.environ.get("FLEETPERF_TEST_CLUSTER") != "1",
        reason="cluster-mode faults start 7 JVMs (3 brokers, registry, JobManager, 2 TaskManagers) and the "
        "warehouse; FLEETPERF_TEST_CLUSTER=1 runs them",
    ),
]

HOSTS = 10  # files of the backfill, one per host
MINUTES = 20
FOLLOW_PAUSE_S = 0.15  # between the live file's snapshots (120 of them: ~20 s of writing)
SETTLE_LIMIT_S = 420  # a JobManager restart waits for the TaskManagers to free the old job's slots


# --- the stack ------------------------------------------------------------------------------------


def cluster_environment(state: Path) -> dict[str, str]:
    env = {
        "FLEETPERF__STACK__MODE": "cluster",
        "FLEETPERF__STATE__DIR": str(state),
        "FLEETPERF__KAFKA__PARTITIONS": "2",  # both source subtasks read
        "FLEETPERF__FLINK__IDLE_FLUSH_SECONDS": "3",
        # longer than any hold-up here (a JobManager restart), which a stream must outlast unended
        "FLEETPERF__FLINK__STREAM_RETAIN_SECONDS": "300",
        "FLEETPERF__FLINK__CHECKPOINT_INTERVAL_SECONDS": "5",
    }
    kafka = os.environ.get("FLEETPERF__KAFKA__PORT")
    base = _free_run(6) if kafka is None else int(kafka)
    env["FLEETPERF__KAFKA__PORT"] = str(base)
    env["FLEETPERF__KAFKA__CONTROLLER_PORT"] = os.environ.get("FLEETPERF__KAFKA__CONTROLLER_PORT", str(base + 1))
    for key in (
        "REGISTRY__PORT",
        "FLINK__REST_PORT",
        "FLINK_CLUSTER__RPC_PORT",
        "WAREHOUSE__QUERY_PORT",
        "SUPERSET__PORT",
    ):
        env[f"FLEETPERF__{key}"] = os.environ.get(f"FLEETPERF__{key}") or str(_free())
    return env


@dataclass
class Cluster:
    settings: Settings
    stack: ClusterStack
    lines: list[str] = field(default_factory=list)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    env = cluster_environment(tmp_path_factory.mktemp("cluster") / "state")
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)  # the warehouse process and the job settings read the same values
    settings = config.load()
    stack = LocalStack(settings)
    assert isinstance(stack, ClusterStack)
    c = Cluster(settings, stack)
    try:
        stack.start(echo=c.lines.append)
        yield c
    finally:
        stack.stop(echo=c.lines.append)
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    left = [name for name, proc in stack.processes().items() if proc.running() or proc.pid_file.exists()]
    assert not left, f"still running after down: {left}"


# --- Kafka and Flink as seen from outside -----------------------------------------------------------
def admin(settings: Settings) -> Any:  # noqa: ANN401 - confluent_kafka AdminClient
    from confluent_kafka.admin import AdminClient

    from fleetperf.kafka_avro import kafka_client_config

    return AdminClient(kafka_client_config(settings))


def leader_of(settings: Settings, topic_key: str, partition: int = 0) -> int:
    """The broker (node id) leading a partition: the one whose loss moves the backfill's writes."""
    meta = admin(settings).list_topics(timeout=30)
    return int(meta.topics[settings.topic(topic_key).name].partitions[partition].leader)


def under_replicated(settings: Settings) -> list[str]:
    """Partitions of our topics whose in-sync replicas are fewer than their replicas."""
    meta = admin(settings).list_topics(timeout=30)
    out = []
    for t in settings.topics.values():
        for p in meta.topics[t.name].partitions.values() if t.name in meta.topics else []:
            if len(p.isrs) < len(p.replicas):
                out.append(f"{t.name}-{p.id} isr={list(p.isrs)}")
    return out


def wait_for(check: Callable[[], bool], limit: float, step: float = 1.0) -> float | None:
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if check():
            return time.monotonic() - t0
        time.sleep(step)
    return None


def wait_checkpointed(settings: Settings, limit: float = 180) -> float:
    """Waits until the Flink job's consumer group has committed, for every partition of the raw
    samples topic, the offset the partition has now. The Kafka source commits offsets only when a
    checkpoint completes, so from then on a checkpoint holds every sample produced so far, with the
    windows they opened still open in its state (a backfill paused mid-file, a live file): a job
    that lost that state and resumed from the committed offsets would emit those windows from only
    the later samples. Returns the seconds waited."""
    from confluent_kafka import Consumer, TopicPartition

    from fleetperf.kafka_avro import kafka_client_config

    topic = settings.topic("cpu_samples").name
    probe = Consumer({**kafka_client_config(settings), "group.id": settings["flink"]["group_id"]})
    try:
        parts = [TopicPartition(topic, p) for p in probe.list_topics(topic, timeout=30).topics[topic].partitions]
        ends = {tp.partition: probe.get_watermark_offsets(tp, timeout=30, cached=False)[1] for tp in parts}
        t0, committed = time.monotonic(), {}
        while time.monotonic() - t0 < limit:
            committed = {tp.partition: tp.offset for tp in probe.committed(parts, timeout=30)}
            if all(committed[p] >= end for p, end in ends.items()):
                return time.monotonic() - t0
            time.sleep(0.5)
        raise AssertionError(f"no checkpoint covered the samples in {limit:.0f} s: committed {committed}, ends {ends}")
    finally:
        probe.close()


def log_from(path: Path) -> Callable[[], str]:
    """What a log gains from now on."""
    start = path.stat().st_size if path.exists() else 0

    def read() -> str:
        if not path.exists():
            return ""
        with open(path, "rb") as f:
            f.seek(start if path.stat().st_size >= start else 0)
            return f.read().decode(errors="replace")

    return read


# --- a backfill and a live follow, with a fault fired from inside the backfill ---------------------
@dataclass
class Run:
    exp: Expected
    summary: Summary
    producer: FaultAt
    ingest_s: float
    follow_spooled: int
    follow_errors: list[Any]
    live_blocks_at_fault: int  # snapshots of the live file written when the fault fired
    live_blocks: int


def backfill_and_follow(c: Cluster, tmp: Path, seed: int, start: datetime, at: int, fault: Callable[[], None]) -> Run:
    """`ingest` of HOSTS files (one per host) with the fault fired before its `at`-th record, while
    `ingest --follow` reads a further host's file that is written a snapshot every FOLLOW_PAUSE_S
    from before the backfill until after it. The live file's end is sent the way a finished file's
    is (ingest of the completed file sends only its end-of-stream)."""
    s = c.settings
    files = fleet(tmp / "in", seed=seed, start=start, hosts=HOSTS, minutes=MINUTES)
    # one host more from the same simulation: a host no file of the backfill has
    src = fleet(tmp / "gen", seed=seed, start=start, hosts=HOSTS + 1, minutes=MINUTES)[-1]
    assert src.name not in {f.name for f in files}
    (tmp / "live").mkdir()
    target = tmp / "live" / src.name
    exp = merge(expected_of(s, files), expected_of_text(s, src, target))
    text = src.read_text().splitlines(keepends=True)
    first = next(i for i, line in enumerate(text) if line.startswith("ZZZZ,"))
    blocks: list[list[str]] = []
    for line in text[first:]:
        if line.startswith("ZZZZ,"):
            blocks.append([])
        blocks[-1].append(line)
    with open(target, "w") as out:
        out.writelines(text[:first])
        for block in blocks[:10]:
            out.writelines(block)

    written = {"blocks": 10, "at_fault": -1}

    def write() -> None:
        for block in blocks[10:]:
            with open(target, "a") as out:
                out.writelines(block)
            written["blocks"] += 1
            time.sleep(FOLLOW_PAUSE_S)

    def fault_now() -> None:
        written["at_fault"] = written["blocks"]
        fault()

    with following(s, tmp / "live", poll=0.5, finish_idle=3600) as follower:
        time.sleep(2)  # the follower has the file before the backfill starts
        writer = later(0, write)
        producer = FaultAt(s, at=at, fault=fault_now)
        t0 = time.monotonic()
        summary = ingest(s, [str(f) for f in files], UTC, progress=False, producer=producer)
        ingest_s = time.monotonic() - t0
        joined(writer, timeout=120)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline and (follower.producer._spooling or follower.producer._spool.segments()):
            time.sleep(1)
        follow_spooled, follow_errors = follower.producer.spooled, list(follower.producer.errors)
    _age([target])
    end = ingest(s, [str(target)], UTC, progress=False)
    assert end.errors == 0, end.error_lines
    return Run(exp, summary, producer, ingest_s, follow_spooled, follow_errors, written["at_fault"], len(blocks))


def merge(*parts: Expected) -> Expected:
    windows: dict[tuple[str, str, int], tuple[float, int]] = {}
    for p in parts:
        assert not set(p.windows) & set(windows), "two inputs share a window: the oracle would count it once"
        windows.update(p.windows)
    return Expected(
        files=[f for p in parts for f in p.files],
        hosts=set().union(*(p.hosts for p in parts)),
        start=min(p.start for p in parts),
        end=max(p.end for p in parts),
        cpu_samples=sum(p.cpu_samples for p in parts),
        nmon_values=sum(p.nmon_values for p in parts),
        dead_letters=sum(p.dead_letters for p in parts),
        windows=windows,
    )


def per_key(settings: Settings, exp: Expected) -> dict[str, list[Any]]:
    """Finer than test_faults.measure (which compares totals): every final window's value against
    the csv-computed one, and per host, metric and hour (day) the rollups' window count and sum of
    values (windows x avg_value) against the same windows grouped there. A window counted twice in
    a rollup, or one counted with the value of a partial window, shows up here even when another
    window of the same total went missing. Returns the mismatching keys per table (empty: exact)."""
    hosts, metrics = _in(exp.hosts), _in(exp.metrics)
    s0, s1 = f"'{exp.start:%Y-%m-%d %H:%M:%S}'", f"'{exp.end:%Y-%m-%d %H:%M:%S}'"
    where = f"entity_id IN ({hosts}) AND metric IN ({metrics})"
    out: dict[str, list[Any]] = {}
    got = _q(
        settings,
        "SELECT entity_id, metric, toUnixTimestamp(window_start), value FROM derived_metrics_v "
        f"WHERE is_final AND {where} AND window_start BETWEEN {s0} AND {s1}",
    )
    values = {(r[0], r[1], int(r[2])): float(r[3]) for r in got}
    out["derived_values"] = [
        (k, v, values.get(k)) for k, (v, _) in exp.windows.items() if k in values and not _close(values[k], v)
    ]
    for view, col, size in (("metrics_hourly_v", "hour", 3600), ("metrics_daily_v", "day", 86400)):
        want: dict[tuple[str, str, int], list[float]] = {}
        for (host, metric, start), (value, _) in exp.windows.items():
            acc = want.setdefault((host, metric, start // size * size), [0, 0.0])
            acc[0] += 1
            acc[1] += value
        rows = _q(
            settings,
            f"SELECT entity_id, metric, toUnixTimestamp(toDateTime({col}, 'UTC')), windows, windows * avg_value "
            f"FROM {view} WHERE {where} AND {col} BETWEEN toStartOfDay(toDateTime({s0}, 'UTC')) "
            f"AND toDateTime({s1}, 'UTC')",
        )
        have = {(r[0], r[1], int(r[2])): (int(r[3]), float(r[4])) for r in rows}
        out[view] = [
            (k, tuple(want.get(k, (0, 0.0))), have.get(k))
            for k in set(want) | set(have)
            if k not in have or k not in want or have[k][0] != want[k][0] or not _close(have[k][1], want[k][1])
        ]
    return out


def _close(a: float, b: float) -> bool:
    """Equal up to the float rounding of an average merged from parts (and the job's sums)."""
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


def settle_exact(settings: Settings, exp: Expected, limit: float) -> tuple[dict[str, Any], float, dict[str, Any]]:
    """test_faults.settle (totals stable and complete), then the per-key comparison."""
    m, recovery = settle(settings, exp, limit=limit)
    keys = per_key(settings, exp)
    return m, recovery, {t: len(v) for t, v in keys.items()} | {"examples": {t: v[:3] for t, v in keys.items() if v}}


def assert_exact_keys(keys: dict[str, Any]) -> None:
    assert not keys["examples"], f"values or rollups per host/metric/period differ from the oracle: {keys}"


def check_run(run: Run) -> None:
    assert run.producer.fired_at is not None, "the fault never fired"
    assert run.summary.errors == 0 and run.summary.failed == 0, run.summary.error_lines
    assert run.producer.errors == [], run.producer.errors
    assert run.follow_errors == [], run.follow_errors
    assert 10 < run.live_blocks_at_fault < run.live_blocks, "the fault did not fall while the live file grew"


# --- the cases ------------------------------------------------------------------------------------
def test_broker_killed_mid_backfill_and_follow(cluster: Cluster, tmp_path: Path) -> None:
    """SIGKILL of the broker leading the cpu-samples partition 0 after 1,000 records of the backfill.
    With replication factor 3 and min.insync.replicas 2 the partitions elect new leaders among the
    2 survivors and stay writable: the collectors (idempotent producers, acks=all) and the sink go
    on; the warehouse must be complete and exact WHILE the broker is still down. Then the broker is
    started again (`up`), catches up, the in-sync replicas are full again, and the figures still
    hold (a rejoining replica must not bring back or double anything)."""
    c, s = cluster, cluster.settings
    victim = leader_of(s, "cpu_samples")
    name = f"kafka-{victim}"
    at_kill: dict[str, float] = {}

    def kill_broker() -> None:
        assert c.stack.kill(name) is not None
        at_kill["t"] = time.monotonic()

    run = backfill_and_follow(c, tmp_path, seed=2321, start=datetime(2026, 9, 1, 10, 0), at=1000, fault=kill_broker)
    check_run(run)
    assert not c.stack.processes()[name].running()
    new_leader = leader_of(s, "cpu_samples")
    t_settle = time.monotonic()
    m, recovery, keys = settle_exact(s, run.exp, limit=SETTLE_LIMIT_S)
    down_s = time.monotonic() - at_kill["t"]
    assert not c.stack.processes()[name].running(), "the broker came back before the data was complete"
    report(
        f"kafka broker {name} (leader of cpu-samples-0) SIGKILL mid-backfill + follow, left down",
        m,
        files=HOSTS,
        follow_files=1,
        new_leader=new_leader,
        ingest_s=round(run.ingest_s, 1),
        live_snapshots_at_fault=f"{run.live_blocks_at_fault}/{run.live_blocks}",
        follow_spooled=run.follow_spooled,
        complete_after_kill_s=round(t_settle + recovery - at_kill["t"], 1),
        complete_after_ingest_s=round(recovery, 1),
        per_key_mismatches=keys,
    )
    assert new_leader != victim
    assert run.follow_spooled == 0, "the follower spooled: it lost Kafka, not one broker"
    assert_exact(m)
    assert_exact_keys(keys)

    t0 = time.monotonic()
    c.stack.start(only=("kafka",), **QUIET)
    started_s = time.monotonic() - t0
    in_sync = wait_for(lambda: not under_replicated(s), 180)
    assert in_sync is not None, f"not back in sync after 180 s: {under_replicated(s)}"
    m2, _, keys2 = settle_exact(s, run.exp, limit=120)
    report(
        f"kafka broker {name} restarted after the run",
        m2,
        broker_down_s=round(down_s + started_s, 1),
        isr_full_after_restart_s=round(started_s + in_sync, 1),
        per_key_mismatches=keys2,
    )
    assert_exact(m2)
    assert_exact_keys(keys2)


def test_taskmanager_killed_mid_backfill_and_follow(cluster: Cluster, tmp_path: Path) -> None:
    """SIGKILL of TaskManager tm-1 (one of the job's two subtasks) at the 1,000th record, once a
    checkpoint holds every sample produced so far (the backfill waits there, mid-file, with windows
    open in the checkpointed state), started again 5 s later (`up`). The JobManager fails the job
    over and restores every task from the newest completed checkpoint (window state, source
    offsets, the Kafka sink's transactions): output of uncommitted transactions was never visible
    to the read_committed sink and is produced again."""
    c, s = cluster, cluster.settings
    jm_log = log_from(c.stack.jobmanager().log_file)
    job = c.stack.rest().running_job()
    times: dict[str, float] = {}
    restart: list[threading.Thread] = []

    def kill_tm() -> None:
        times["checkpoint_wait"] = wait_checkpointed(s)  # the backfill pauses here, mid-file
        assert c.stack.kill("flink-taskmanager-1") is not None
        times["killed"] = time.monotonic()

        def back() -> None:
            c.stack.start(only=("flink",), **QUIET)  # returns when every task of the job runs again
            times["running"] = time.monotonic()

        restart.append(later(5, back))

    run = backfill_and_follow(cluster, tmp_path, seed=2322, start=datetime(2026, 9, 2, 10, 0), at=1000, fault=kill_tm)
    check_run(run)
    joined(restart[0], timeout=400)
    t_settle = time.monotonic()
    m, recovery, keys = settle_exact(s, run.exp, limit=SETTLE_LIMIT_S)
    log = jm_log()
    restored = log.count("Restoring job")
    report(
        "flink TaskManager tm-1 SIGKILL mid-backfill + follow, restarted 5 s later",
        m,
        paused_for_checkpoint_s=round(times["checkpoint_wait"], 1),
        job_running_again_s=round(times["running"] - times["killed"], 1),
        restored_from_checkpoint=restored,
        ingest_s=round(run.ingest_s, 1),
        live_snapshots_at_fault=f"{run.live_blocks_at_fault}/{run.live_blocks}",
        complete_after_kill_s=round(t_settle + recovery - times["killed"], 1),
        complete_after_job_running_s=round(t_settle + recovery - times["running"], 1),
        per_key_mismatches=keys,
    )
    assert c.stack.rest().running_job() == job, "the TaskManager loss must be a failover of the same job"
    assert restored >= 1, "the job did not restore a checkpoint after the TaskManager loss"
    assert_exact(m)
    assert_exact_keys(keys)


def test_jobmanager_killed_mid_backfill_and_follow(cluster: Cluster, tmp_path: Path) -> None:
    """SIGKILL of the JobManager at the 1,000th record, once a checkpoint holds every sample produced
    so far (windows open in its state: without that state they would come out partial), `up` 5 s
    later. A standalone session cluster
    without HA services forgets its jobs with its JobManager; the TaskManagers stay, re-register with
    the new one and free the old job's slots. `up` submits the job again from the newest retained
    checkpoint (ClusterStack._submit: the old job's chk-N, kept on disk because nobody was left to
    delete it), so window state, offsets and transactions continue from there."""
    c, s = cluster, cluster.settings
    old_job = c.stack.rest().running_job()
    times: dict[str, float] = {}
    lines: list[str] = []
    restart: list[threading.Thread] = []

    def kill_jm() -> None:
        times["checkpoint_wait"] = wait_checkpointed(s)  # the backfill pauses here, mid-file
        assert c.stack.kill("flink-jobmanager") is not None
        times["killed"] = time.monotonic()

        def back() -> None:
            c.stack.start(only=("flink",), echo=lines.append)
            times["running"] = time.monotonic()

        restart.append(later(5, back))

    run = backfill_and_follow(cluster, tmp_path, seed=2323, start=datetime(2026, 9, 3, 10, 0), at=1000, fault=kill_jm)
    check_run(run)
    joined(restart[0], timeout=400)
    t_settle = time.monotonic()
    m, recovery, keys = settle_exact(s, run.exp, limit=SETTLE_LIMIT_S)
    new_job = c.stack.rest().running_job()
    restored = [line for line in lines if "restoring from checkpoint" in line]
    report(
        "flink JobManager SIGKILL mid-backfill + follow, up 5 s later",
        m,
        paused_for_checkpoint_s=round(times["checkpoint_wait"], 1),
        job_running_again_s=round(times["running"] - times["killed"], 1),
        resubmitted_from=restored[0].split()[-1] if restored else None,
        ingest_s=round(run.ingest_s, 1),
        live_snapshots_at_fault=f"{run.live_blocks_at_fault}/{run.live_blocks}",
        complete_after_kill_s=round(t_settle + recovery - times["killed"], 1),
        complete_after_job_running_s=round(t_settle + recovery - times["running"], 1),
        per_key_mismatches=keys,
    )
    assert new_job is not None and new_job != old_job
    assert restored and old_job in restored[0], f"not resubmitted from the old job's checkpoint: {lines}"
    assert_exact(m)
    assert_exact_keys(keys)
