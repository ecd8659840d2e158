"""Exactly once across a crash: the Flink job is killed (SIGKILL) in the middle of a fleet's
stream and restarted; it resumes from its newest checkpoint. Read with read_committed, every final
window appears exactly once, none is missing, and every value equals an independent computation
(the same as an uninterrupted run produces)."""

from __future__ import annotations

import os
import signal
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon.parser import parse_file
from fleetperf.stack.local import LocalStack
from tests.integration.expected import window_metrics
from tests.integration.kafka_read import read_all, read_derived

pytestmark = pytest.mark.integration


def _samples(files: list[Path]) -> list:
    return [e for f in files for e in parse_file(f, UTC) if e.topic_key == "cpu_samples"]


def _newest_checkpoint(state: Path) -> int:
    found = [int(p.parent.name[4:]) for p in (state / "flink-checkpoints").glob("*/chk-*/_metadata")]
    return max(found, default=0)


def test_kill_and_restart_from_checkpoint_gives_each_window_once(stack: Settings, tmp_path: Path) -> None:
    files = simulate(tmp_path, 3, datetime(2026, 4, 1, 8, 0), timedelta(minutes=30), 10, seed=77)
    samples = _samples(files)
    hosts = {e.record["host_id"] for e in samples}
    # interleave the hosts in time order, as a live fleet arrives, and cut the stream in the middle
    samples.sort(key=lambda e: e.record["ts"])
    half = len(samples) // 2
    producer = AvroProducer(stack)
    for e in samples[:half]:
        producer.send(e.topic_key, e.record, key=e.key)
    producer.flush()

    # a checkpoint covers part of the stream; then the rest arrives and the job dies while
    # processing it, with windows emitted in a transaction no checkpoint has committed yet
    state = stack.state_dir
    before = _newest_checkpoint(state)
    deadline = time.monotonic() + 90
    while _newest_checkpoint(state) < before + 2 and time.monotonic() < deadline:
        time.sleep(0.5)
    assert _newest_checkpoint(state) >= before + 2, "no checkpoint completed"
    for e in samples[half:]:
        producer.send(e.topic_key, e.record, key=e.key)
    producer.flush()
    time.sleep(2)
    flink = LocalStack(stack).flink()
    pid = flink.pid()
    if pid is None:
        pytest.skip("the Flink job is not a local process here (container provider): nothing to kill")
    os.killpg(pid, signal.SIGKILL)
    try:
        os.waitpid(pid, 0)  # the stack was started by this process: reap it, or it lingers as a zombie
    except ChildProcessError:
        while flink.running():
            time.sleep(0.2)
    flink.pid_file.unlink(missing_ok=True)

    LocalStack(stack).start(only=("flink",), echo=lambda line: None)
    assert "restoring from checkpoint" in flink.log_file.read_text()
    # a sample for a window its stream closed long ago is kept as a dead letter, not silently dropped
    stale = dict(samples[0].record)
    stale["ts"] = samples[0].record["ts"] + 1
    producer.send("cpu_samples", stale, key=stale["host_id"])
    producer.flush()

    expected = {}
    for f in files:
        expected.update(window_metrics(f))
    # the streams end: after stream_retain_seconds their last windows are final too
    deadline = time.monotonic() + 300  # stream_retain_seconds (90 s in the test stack) after the last sample
    finals: list[dict] = []
    while time.monotonic() < deadline:
        finals = [r for r in read_derived(stack) if r["entity_id"] in hosts and r["is_final"] and _key(r) in expected]
        if {_key(r) for r in finals} >= set(expected):
            break
        time.sleep(5)
    counts = Counter(_key(r) for r in finals)
    duplicates = {k: n for k, n in counts.items() if n > 1}
    assert not duplicates, f"windows delivered more than once: {list(duplicates.items())[:5]}"
    missing = set(expected) - set(counts)
    assert not missing, f"windows lost: {sorted(missing)[:5]}"
    for r in finals:
        key = _key(r)
        value, n = expected[key]
        assert r["value"] == pytest.approx(value, rel=1e-9), key
        assert r["samples"] == n, key

    deadline = time.monotonic() + 90
    late: list[dict] = []
    while not late and time.monotonic() < deadline:
        late = [
            r
            for r in read_all(stack, "dead_letters")
            if r["source"] == "flink-late:cpu" and r["raw"].startswith(stale["host_id"])
        ]
    assert late and "after its window closed" in late[0]["error"]


def _key(r: dict) -> tuple[str, str, int]:
    return r["entity_id"], r["metric"], _epoch(r["window_start"])


def _epoch(value: object) -> int:
    if isinstance(value, datetime):
        return int(value.timestamp())
    return int(value) // 1000  # type: ignore[call-overload]
