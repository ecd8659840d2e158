"""Fault injection against the real local stack (issue 23 item 6): each case ingests a simulated
fleet, kills or stops one part of the stack part-way, lets it come back, and then compares what
the warehouse holds with counts we did not get through the pipeline:

- cpu samples: the snapshots of the nmon files read with the csv module (tests/integration/expected.py);
- derived windows: the window metrics computed from those snapshots (expected.window_metrics), each
  window present once with the right number of samples (a doubled sample shows as samples + 1);
- rollups: metrics_hourly/metrics_daily are fed by materialized views on every insert, so a window
  inserted twice counts twice there; their sum of windows must equal the number of windows;
- nmon values: the rows a fault-free mapping of the parsed files makes (RowMapper over parse_file,
  no Kafka, no sink); the raw table read without FINAL as well, where a duplicate insert stays
  visible until a background merge (a lower bound of the doubles, not a proof of none);
- dead letters: exactly those of the input's bad lines, none from the fault.

The fault is fired from inside the producer at a fixed record number (a real AvroProducer that
kills the service when it gets there), so "mid-ingest" is the same moment on every run. Services
are killed with SIGKILL (LocalStack.kill) and started again as `./fleetperf up` does.

Each case prints one line `FAULT {...}` (lost, doubled, recovery seconds) that docs/faults.md
quotes. The cases that restart the warehouse (Superset's start-up takes most of it) or the whole
stack are slow and run only with FLEETPERF_TEST_SLOW_FAULTS=1."""

from __future__ import annotations

import json
import os
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetperf.cli.sql_client import QueryError, query, warehouse_call
from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon.parser import parse_file
from fleetperf.stack.local import LocalStack
from fleetperf.warehouse.rows import RowMapper
from tests.integration.expected import snapshots, window_metrics
from tests.integration.following import following

pytestmark = pytest.mark.integration

slow = pytest.mark.skipif(
    os.environ.get("FLEETPERF_TEST_SLOW_FAULTS") != "1",
    reason="slow fault case (restarts the warehouse/Superset or the whole stack): FLEETPERF_TEST_SLOW_FAULTS=1",
)
QUIET = {"echo": lambda line: None}
KAFKA_AWAY_S = 75
REGISTRY_RESTART_AFTER_S = 45


def _local_only(stack: Settings) -> LocalStack:
    local = LocalStack(stack)
    if local.kafka().pid() is None:
        pytest.skip("the services are not local processes here (container provider): nothing to kill")
    return local


# --- the input and what it must give ------------------------------------------------------------
@dataclass
class Expected:
    files: list[Path]
    hosts: set[str]
    start: datetime
    end: datetime
    cpu_samples: int
    nmon_values: int
    dead_letters: int
    windows: dict[tuple[str, str, int], tuple[float, int]] = field(default_factory=dict)

    @property
    def metrics(self) -> set[str]:
        return {m for _, m, _ in self.windows}


def fleet(out: Path, seed: int, start: datetime, hosts: int = 3, minutes: int = 30) -> list[Path]:
    files = simulate(out, hosts=hosts, start=start, duration=timedelta(minutes=minutes), interval=10, seed=seed)
    _age(files)
    return files


def _age(files: list[Path]) -> None:
    """An hour old: a file modified in the last 30 s counts as still written (ingest holds its end
    back and sends no end-of-stream), which is not what these cases are about."""
    old = time.time() - 3600
    for f in files:
        os.utime(f, (old, old))


def expected_of(settings: Settings, files: list[Path]) -> Expected:
    mapper = RowMapper(settings)
    hosts, windows, cpu, values, letters, times = set(), {}, 0, 0, 0, []
    for f in files:
        host, _, snaps = snapshots(f)  # csv module, not the project's parser
        hosts.add(host)
        cpu += len(snaps)
        times += [s["ts"] for s in snaps.values()]
        windows.update(window_metrics(f))
        for e in parse_file(f, UTC):  # the fault-free mapping of what the sink writes
            if e.topic_key == "dead_letters":
                letters += 1
            elif e.topic_key == "nmon_snapshots":
                rows = mapper.rows(settings.topic(e.topic_key).name, e.record)
                values += sum(1 for table, _ in rows if table == "nmon_values")
    start = datetime.fromtimestamp(min(times) // 60 * 60, UTC)  # the first window starts before the first sample
    end = datetime.fromtimestamp(max(times), UTC) + timedelta(minutes=1)
    return Expected(files, hosts, start, end, cpu, values, letters, windows)


# --- what the warehouse holds -------------------------------------------------------------------
def _q(settings: Settings, sql: str) -> list[list[Any]]:
    try:
        return query(settings, sql)[1]
    except QueryError:
        return []


def _in(values: set[str] | list[Path]) -> str:
    return ",".join(f"'{v}'" for v in sorted(str(x) for x in values))


def measure(settings: Settings, exp: Expected) -> dict[str, Any]:
    """Lost and doubled per table, against exp (a negative 'lost' would be rows from elsewhere)."""
    files, hosts = _in(exp.files), _in(exp.hosts)
    s0, s1 = f"'{exp.start:%Y-%m-%d %H:%M:%S}'", f"'{exp.end:%Y-%m-%d %H:%M:%S}'"
    span = f"{s0} AND {s1}"
    out: dict[str, Any] = {}
    in_files = f"origin_file IN ({files})"
    rows = _q(settings, f"SELECT count(), uniqExact(host_id, ts, source) FROM cpu_samples_v WHERE {in_files}")
    raw = _q(settings, f"SELECT count() FROM cpu_samples WHERE origin_file IN ({files})")
    final, unique = (int(rows[0][0]), int(rows[0][1])) if rows else (0, 0)
    out["cpu_samples"] = {
        "expected": exp.cpu_samples,
        "lost": exp.cpu_samples - unique,
        "doubled": (final - unique) + ((int(raw[0][0]) - final) if raw else 0),
    }
    where_values = f"host_id IN ({hosts}) AND ts BETWEEN {span}"
    final_v = _q(settings, f"SELECT count() FROM nmon_values_v WHERE {where_values}")
    raw_v = _q(settings, f"SELECT count() FROM nmon_values_raw WHERE {where_values}")  # sql/033: every stored value
    n_final = int(final_v[0][0]) if final_v else 0
    out["nmon_values"] = {
        "expected": exp.nmon_values,
        "lost": exp.nmon_values - n_final,
        "doubled": (int(raw_v[0][0]) - n_final) if raw_v else 0,
    }
    metrics = _in(exp.metrics)
    got = _q(
        settings,
        "SELECT entity_id, metric, toUnixTimestamp(window_start), value, samples FROM derived_metrics_v "
        f"WHERE is_final AND entity_id IN ({hosts}) AND metric IN ({metrics}) AND window_start BETWEEN {span}",
    )
    seen = Counter((r[0], r[1], int(r[2])) for r in got)
    samples = {(r[0], r[1], int(r[2])): int(r[4]) for r in got}
    wrong = [k for k, (_, n) in exp.windows.items() if k in samples and samples[k] != n]
    out["derived_windows"] = {
        "expected": len(exp.windows),
        "lost": len(set(exp.windows) - set(seen)),
        "doubled": sum(n - 1 for n in seen.values()) + sum(1 for k in wrong if samples[k] > exp.windows[k][1]),
        "wrong_samples": len(wrong),
    }
    for view, col in (("metrics_hourly_v", "hour"), ("metrics_daily_v", "day")):
        res = _q(
            settings,
            f"SELECT sum(windows) FROM {view} WHERE entity_id IN ({hosts}) AND metric IN ({metrics}) "
            f"AND {col} BETWEEN toStartOfDay(toDateTime({s0}, 'UTC')) AND toDateTime({s1}, 'UTC')",
        )
        windows = int(res[0][0] or 0) if res else 0
        out[view] = {
            "expected": len(exp.windows),
            "lost": max(0, len(exp.windows) - windows),
            "doubled": max(0, windows - len(exp.windows)),
        }
    letters = _q(settings, f"SELECT count() FROM dead_letters FINAL WHERE origin_file IN ({files})")
    sink_letters = _q(settings, "SELECT count() FROM dead_letters FINAL WHERE source = 'sink'")
    out["dead_letters"] = {
        "expected": exp.dead_letters,
        "got": int(letters[0][0]) if letters else 0,
        "sink": int(sink_letters[0][0]) if sink_letters else 0,
    }
    return out


def _complete(m: dict[str, Any]) -> bool:
    return all(v.get("lost", 0) <= 0 for v in m.values()) and m["dead_letters"]["got"] >= m["dead_letters"]["expected"]


def settle(settings: Settings, exp: Expected, limit: float = 240, quiet: float = 8) -> tuple[dict[str, Any], float]:
    """Waits until nothing is missing and the figures stay put for `quiet` seconds (a late
    duplicate would still arrive); returns the figures and when they were first complete."""
    t0 = time.monotonic()
    deadline = t0 + limit
    last, since, complete_at = None, t0, None
    while time.monotonic() < deadline:
        m = measure(settings, exp)
        if complete_at is None and _complete(m):
            complete_at = time.monotonic()
        if m != last:
            last, since = m, time.monotonic()
        elif _complete(m) and time.monotonic() - since >= quiet:
            return m, (complete_at or time.monotonic()) - t0
        time.sleep(2)
    return last or {}, float("nan")


def assert_exact(m: dict[str, Any]) -> None:
    problems = {t: v for t, v in m.items() if v.get("lost", 0) or v.get("doubled", 0) or v.get("wrong_samples", 0)}
    assert not problems, f"lost or doubled after the fault: {problems}"
    letters = m["dead_letters"]
    assert letters["got"] == letters["expected"], f"dead letters: {letters}"
    assert letters["sink"] == 0, f"the sink dead-lettered {letters['sink']} messages during the fault"


def report(case: str, m: dict[str, Any], **figures: Any) -> None:  # noqa: ANN401
    lost = sum(max(0, v.get("lost", 0)) for v in m.values())
    doubled = sum(max(0, v.get("doubled", 0)) for v in m.values())
    line = {"case": case, "lost": lost, "doubled": doubled, **figures, "tables": m}
    print("FAULT " + json.dumps(line, default=str), flush=True)


# --- firing a fault at a fixed record -------------------------------------------------------------
class FaultAt(AvroProducer):
    """A real producer that calls `fault` just before its `at`-th record (counted over every send)."""

    def __init__(self, settings: Settings, at: int, fault: Callable[[], None], **kwargs: Any) -> None:  # noqa: ANN401
        super().__init__(settings, **kwargs)
        self.at, self.fault, self.produced = at, fault, 0
        self.fired_at: float | None = None

    def _produce(self, topic: str, value: bytes, key: Any, headers: Any = None) -> None:  # noqa: ANN401
        self.produced += 1
        if self.produced == self.at:
            self.fired_at = time.monotonic()
            self.fault()
        super()._produce(topic, value, key, headers)


def later(seconds: float, action: Callable[[], None]) -> threading.Thread:
    """`action` after `seconds`, in a thread (the producer goes on meanwhile); errors kept."""

    def run() -> None:
        time.sleep(seconds)
        try:
            action()
        except BaseException as exc:  # noqa: BLE001 - reported by the test, not lost in a thread
            thread.error = exc  # type: ignore[attr-defined]

    thread = threading.Thread(target=run, daemon=True)
    thread.error = None  # type: ignore[attr-defined]
    thread.start()
    return thread


def joined(thread: threading.Thread, timeout: float = 300) -> None:
    thread.join(timeout)
    assert not thread.is_alive(), "the restart did not finish"
    assert thread.error is None, f"the restart failed: {thread.error!r}"  # type: ignore[attr-defined]


# --- the cases ----------------------------------------------------------------------------------
def test_kafka_killed_and_restarted_mid_ingest(stack: Settings, tmp_path: Path) -> None:
    """SIGKILL of the (single, local) broker after 500 records of ~1100, started again 75 s later:
    longer than the 60 s a backfill's checkpoint flush used to wait before it ended the run
    (docs/faults.md, F2). The producer's queue and retries carry the records over; nothing is
    dead-lettered; Flink and the sink reconnect by themselves."""
    local = _local_only(stack)
    files = fleet(tmp_path / "in", seed=2301, start=datetime(2026, 8, 3, 10, 0))
    exp = expected_of(stack, files)
    restart: list[threading.Thread] = []

    def kill_kafka() -> None:
        assert local.kill("kafka") is not None
        restart.append(later(KAFKA_AWAY_S, lambda: local.start(only=("kafka",), **QUIET)))

    producer = FaultAt(stack, at=500, fault=kill_kafka)
    t0 = time.monotonic()
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    ingest_s = time.monotonic() - t0
    assert producer.fired_at is not None and restart
    joined(restart[0])
    assert summary.errors == 0 and summary.failed == 0, summary.error_lines
    assert producer.errors == []
    m, recovery = settle(stack, exp)
    report(
        f"kafka SIGKILL mid-ingest, restarted after {KAFKA_AWAY_S} s",
        m,
        records=producer.produced,
        ingest_s=round(ingest_s, 1),
        complete_after_ingest_s=round(recovery, 1),
        producer_requeued=producer.retried,
    )
    assert_exact(m)


def test_registry_down_60s_mid_ingest(stack: Settings, tmp_path: Path) -> None:
    """The registry is killed after 200 records and answers again ~60 s later. The frames of the
    topics already used are cached; the first dead letter (a bad value in the last file) needs the
    registry while it is away: the producer waits for it instead of ending the backfill (F3). The
    AIX stream pauses mid-window meanwhile: its window must still come once, complete (F1). Exactly
    the bad line becomes a dead letter, nothing of the fault. The Flink job has decoded a sample
    before (warm_up); a job that has not is the next case (F5)."""
    local = _local_only(stack)
    warm_up(stack, tmp_path / "warm", seed=2312, start=datetime(2026, 8, 14, 10, 0))
    files = fleet(tmp_path / "in", seed=2302, start=datetime(2026, 8, 4, 10, 0))
    bad = files[-1]
    lines = bad.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith("MEM,T0100,"))
    lines[at] = lines[at].replace("MEM,T0100,", "MEM,T0100,not-a-number", 1)
    bad.write_text("".join(lines))
    _age([bad])
    exp = expected_of(stack, files)
    assert exp.dead_letters == 1
    restart: list[threading.Thread] = []
    down: dict[str, float] = {}

    def kill_registry() -> None:
        assert local.kill("registry") is not None
        down["at"] = time.monotonic()

        def back() -> None:
            local.start(only=("registry",), **QUIET)
            down["back"] = time.monotonic()

        # Apicurio takes 12-30 s to start here: begun at 45 s it answers ~60 s after the kill, inside
        # the test stack's stream_retain_seconds (90 s), which a paused stream must outlast
        restart.append(later(REGISTRY_RESTART_AFTER_S, back))

    producer = FaultAt(stack, at=200, fault=kill_registry)
    t0 = time.monotonic()
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    ingest_s = time.monotonic() - t0
    joined(restart[0])
    assert summary.errors == 1 and summary.failed == 0, summary.error_lines
    assert producer.registry_waits > 0, "the dead letter's schema did not need the registry while it was down"
    assert down["back"] - down["at"] >= REGISTRY_RESTART_AFTER_S
    m, recovery = settle(stack, exp)
    report(
        "registry SIGKILL mid-ingest, down 60 s",
        m,
        registry_down_s=round(down["back"] - down["at"], 1),
        ingest_s=round(ingest_s, 1),
        producer_registry_waits=producer.registry_waits,
        complete_after_ingest_s=round(recovery, 1),
    )
    assert_exact(m)


def _newest_checkpoint(stack: Settings) -> float:
    """When the newest complete checkpoint of the local job was written (0: none)."""
    found = [p.stat().st_mtime for p in (stack.state_dir / "flink-checkpoints").glob("*/chk-*/_metadata")]
    return max(found, default=0.0)


def warm_up(stack: Settings, out: Path, seed: int, start: datetime) -> None:
    """A small fleet through the whole pipeline: the running Flink job has fetched the sample
    schema from the registry (its decoders cache it per task)."""
    files = fleet(out, seed=seed, start=start, hosts=1, minutes=3)
    assert ingest(stack, [str(f) for f in files], UTC, progress=False).errors == 0
    m, _ = settle(stack, expected_of(stack, files))
    assert_exact(m)


@slow
def test_registry_down_when_the_flink_job_has_not_decoded_yet(stack: Settings, tmp_path: Path) -> None:
    """The Flink job is restarted (its decoders start with no schema cached), then the registry
    is killed and a fleet ingested with a producer whose schema ids are cached; the registry is
    back 60 s later. Finding F5: the job's RegistryAvroDeserializer took 'registry unreachable'
    for an undecodable record and skipped it (298 of 403 windows lost in one run); since 8caa324
    it waits for the registry. Nothing may be skipped, lost or doubled."""
    local = _local_only(stack)
    files = fleet(tmp_path / "in", seed=2308, start=datetime(2026, 8, 10, 10, 0))
    exp = expected_of(stack, files)
    flink = local.flink()
    local.kill("flink")
    local.start(only=("flink",), **QUIET)
    # every task up (the sinks' serializers registered their schemas at open): a checkpoint
    # completes only then. Killed earlier, the job fails over while the registry is away, no
    # checkpoint passes the skipped records, and the replay after the outage hides the finding
    first = _newest_checkpoint(stack)
    deadline = time.monotonic() + 120
    while _newest_checkpoint(stack) <= first and time.monotonic() < deadline:
        time.sleep(1)
    assert _newest_checkpoint(stack) > first, "the restarted job completed no checkpoint"
    log_from = flink.log_file.stat().st_size
    producer = AvroProducer(stack)
    for key in ("cpu_samples", "nmon_snapshots", "host_configs"):
        producer._frame(key)  # the collector side is not under test here: its ids are cached
    assert local.kill("registry") is not None
    back = later(60, lambda: local.start(only=("registry",), **QUIET))
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    assert summary.errors == 0, summary.error_lines
    joined(back)
    m, recovery = settle(stack, exp, limit=150)  # windows of skipped samples never come
    with open(flink.log_file, "rb") as log:
        log.seek(log_from)
        skipped = sum(1 for line in log if b"skipping undecodable record" in line and b"ConnectException" in line)
    report(
        "registry down while a fresh Flink job decodes its first samples",
        m,
        flink_records_skipped=skipped,
        complete_after_registry_back_s=round(recovery, 1),
    )
    assert_exact(m)
    assert skipped == 0, f"the job skipped {skipped} samples while the registry was away (F5)"


def test_flink_killed_mid_ingest_and_restarted_from_checkpoint(stack: Settings, tmp_path: Path) -> None:
    """SIGKILL of the Flink job (MiniCluster JVM) after 600 records, started again 5 s later:
    it restores its newest checkpoint (windows, offsets, transactions); every window reaches the
    warehouse once and the rollups count each once."""
    local = _local_only(stack)
    files = fleet(tmp_path / "in", seed=2303, start=datetime(2026, 8, 5, 10, 0))
    exp = expected_of(stack, files)
    flink = local.flink()
    restart: list[threading.Thread] = []

    def kill_flink() -> None:
        assert local.kill("flink") is not None
        restart.append(later(5, lambda: local.start(only=("flink",), **QUIET)))

    size_before = flink.log_file.stat().st_size if flink.log_file.exists() else 0
    producer = FaultAt(stack, at=600, fault=kill_flink)
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    joined(restart[0])
    assert summary.errors == 0, summary.error_lines
    with open(flink.log_file, "rb") as log:
        log.seek(size_before)
        restored = b"restoring from checkpoint" in log.read()
    m, recovery = settle(stack, exp)
    report(
        "flink SIGKILL mid-ingest, restarted 5 s later",
        m,
        restored_from_checkpoint=restored,
        complete_after_ingest_s=round(recovery, 1),
    )
    assert restored, "the restarted job did not restore a checkpoint"
    assert_exact(m)


def test_kafka_down_40s_while_following_spools_and_drains(stack: Settings, tmp_path: Path) -> None:
    """`ingest --follow` of a file nmon is writing (a snapshot every 0.2 s). The broker is killed
    and stays away 40 s, longer than the producer's 30 s before it spools: the follower keeps
    reading, the records wait on disk, and drain in order once Kafka is back. When the writer is
    done the file's end arrives, every snapshot once."""
    local = _local_only(stack)
    src = fleet(tmp_path / "gen", seed=2304, start=datetime(2026, 8, 6, 10, 0), hosts=1, minutes=40)[0]
    (tmp_path / "live").mkdir()
    text = src.read_text().splitlines(keepends=True)
    first_snap = next(i for i, line in enumerate(text) if line.startswith("ZZZZ,"))
    blocks: list[list[str]] = []
    for line in text[first_snap:]:
        if line.startswith("ZZZZ,"):
            blocks.append([])
        blocks[-1].append(line)
    target = tmp_path / "live" / src.name
    exp = expected_of_text(stack, src, target)
    with open(target, "w") as out:
        out.writelines(text[:first_snap])
        for block in blocks[:20]:
            out.writelines(block)
    timeline: dict[str, float] = {}
    with following(stack, tmp_path / "live", poll=0.5, finish_idle=3600) as follower:

        def write(block_list: list[list[str]], pause: float) -> None:
            for block in block_list:
                with open(target, "a") as out:
                    out.writelines(block)
                time.sleep(pause)

        write(blocks[20:60], 0.2)
        assert local.kill("kafka") is not None
        timeline["killed"] = time.monotonic()
        write(blocks[60:160], 0.4)  # 40 s without Kafka
        local.start(only=("kafka",), **QUIET)
        timeline["back"] = time.monotonic()
        write(blocks[160:], 0.2)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and (follower.producer._spooling or follower.producer._spool.segments()):
            time.sleep(1)
        spooled, spooling = follower.producer.spooled, follower.producer._spooling
    # the writer is done: a restart of the follower would find the same file; here the test ends
    # the stream the way a finished file does (ingest of the completed file sends only its end)
    _age([target])
    summary = ingest(stack, [str(target)], UTC, progress=False)
    assert summary.errors == 0
    m, recovery = settle(stack, exp)
    report(
        "kafka SIGKILL during ingest --follow, down 40 s",
        m,
        kafka_down_s=round(timeline["back"] - timeline["killed"], 1),
        spooled_records=spooled,
        complete_after_end_s=round(recovery, 1),
    )
    assert spooled > 0, "nothing went through the spool: the outage was shorter than the spool delay"
    assert not spooling
    assert_exact(m)


def expected_of_text(settings: Settings, src: Path, target: Path) -> Expected:
    """The expectation of `src`'s bytes under the name `target` (origin_file is the followed path)."""
    exp = expected_of(settings, [src])
    exp.files = [target]
    return exp


@slow
def test_warehouse_killed_mid_sink_and_restarted(stack: Settings, tmp_path: Path) -> None:
    """Half-way through a backfill the producer pauses until the sink has written some of the
    fleet's rows, then the warehouse process (sink + chDB + SQL + Superset) is killed with SIGKILL
    while the sink is consuming, and started again while the backfill goes on. The sink cuts the
    same offset ranges again from sink_batches; ClickHouse drops the blocks it already has."""
    local = _local_only(stack)
    files = fleet(tmp_path / "in", seed=2306, start=datetime(2026, 8, 8, 10, 0), hosts=6, minutes=60)
    exp = expected_of(stack, files)
    in_files = f"origin_file IN ({_in(files)})"
    at_kill: dict[str, Any] = {}
    restart: list[threading.Thread] = []

    def kill_warehouse() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not at_kill.get("cpu_rows"):
            rows = _q(stack, f"SELECT count() FROM cpu_samples WHERE {in_files}")
            at_kill["cpu_rows"] = int(rows[0][0]) if rows else 0
            time.sleep(0.1)
        assert local.kill("warehouse") is not None
        at_kill["killed"] = time.monotonic()

        def back() -> None:
            local.start(only=("warehouse",), **QUIET)
            at_kill["up"] = time.monotonic()

        restart.append(later(0, back))

    producer = FaultAt(stack, at=exp.cpu_samples, fault=kill_warehouse)  # ~half: 2 records a snapshot
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    assert summary.errors == 0, summary.error_lines
    joined(restart[0])
    assert 0 < at_kill["cpu_rows"] < exp.cpu_samples, f"not mid-sink: {at_kill}"
    m, recovery = settle(stack, exp)
    stats = warehouse_call(stack, "/stats")
    report(
        "warehouse SIGKILL mid-sink, restarted",
        m,
        cpu_rows_at_kill=at_kill["cpu_rows"],
        cpu_rows_expected=exp.cpu_samples,
        warehouse_restart_s=round(at_kill["up"] - at_kill["killed"], 1),
        complete_after_restart_s=round(recovery, 1),
        sink_after_restart={k: stats.get(k) for k in ("batches", "replayed_batches", "transient_errors")},
    )
    assert_exact(m)


@slow
def test_whole_stack_down_and_up_mid_ingest(stack: Settings, tmp_path: Path) -> None:
    """`down` of every service (SIGTERM, in reverse order) after 500 records, `up` again at
    once: the backfill in progress waits for Kafka and finishes; everything arrives once."""
    local = _local_only(stack)
    files = fleet(tmp_path / "in", seed=2307, start=datetime(2026, 8, 9, 10, 0))
    exp = expected_of(stack, files)
    restart: list[threading.Thread] = []
    times: dict[str, float] = {}

    def down_up() -> None:
        times["down"] = time.monotonic()
        local.stop(**QUIET)
        times["stopped"] = time.monotonic()
        local.start(**QUIET)
        times["up"] = time.monotonic()

    producer = FaultAt(stack, at=500, fault=lambda: restart.append(later(0, down_up)))
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False, producer=producer)
    joined(restart[0], timeout=600)
    assert summary.errors == 0, summary.error_lines
    m, recovery = settle(stack, exp)
    report(
        "whole stack down/up mid-ingest",
        m,
        down_s=round(times["stopped"] - times["down"], 1),
        up_s=round(times["up"] - times["stopped"], 1),
        complete_after_up_s=round(recovery, 1),
    )
    assert_exact(m)
