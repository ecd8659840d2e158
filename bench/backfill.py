"""Backfill end to end (issue 24 goal 1): an nmon file -> collector -> Kafka -> Flink -> Kafka ->
sink -> ClickHouse, on a local stack of its own (Kafka, registry and the Flink job started here as
`./fleetperf up` starts them; the sink runs in this process on its own embedded ClickHouse, as it
runs in the warehouse process). Sinks of several modes (MODES: every record decoded in Python;
nmon snapshots decoded by the engine into one row per value, sql/017, on a warehouse migrated up
to 032: "long"; or into one row per host, section and snapshot, sql/033: "after", and "after033",
the same with the sink's hand-over to its writer thread as of e65c96c; "after037": this sink on the
views before sql/038's cheaper row check and section split) are measured
side by side in one run, each on a host it has not seen (the serial number of the file is changed
per measurement), and each stage is printed:

- collector -> Kafka: `ingest` of the file until every record is acknowledged (the sink consumes
  meanwhile, as in a real backfill);
- Flink: from the start of the ingest until the host's last derived window was emitted final;
- sink / ClickHouse on a backlog: the same records consumed again by a fresh group and database
  after they are all in Kafka (nothing else running), until every value is queryable;
- end to end: from the start of the ingest until every value of the file is queryable, and until
  also every derived window of the host is final.

MB are of the nmon file; values are the collector's count. Medians over --runs. Needs the
third-party corpus (../shared/corpus) for the AIX file it grows, or --file.

    PYTHONPATH=src .venv/bin/python bench/backfill.py --copies 40 --runs 3 --modes after033 after
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from fleetperf import config  # noqa: E402
from fleetperf.config import Settings  # noqa: E402

# Sink(engine_decode=..., overlap=..., early_handoff=...): "before" decodes every record in Python
# (before sql/017), "serial" lets the engine decode nmon snapshots but inserts each batch before
# reading on, "after" also reads and cuts the next batch while the writer thread inserts the last
# one, frames its Avro object containers in the consumer thread when it is cut and hands it to the
# writer before the last one's offset is committed; "after033" is "after" with the containers
# framed in the writer thread and the commit before the hand-over (the sink as of e65c96c); "long" is
# "after033" on a warehouse migrated up to 032 (sql/017's long form: one row per value in the
# nmon_values table), the others have sql/033 (one row per host, section and snapshot)
MODES = {
    "before": {"engine_decode": False, "overlap": False},
    "serial": {"engine_decode": True, "overlap": False},
    "after": {"engine_decode": True, "overlap": True},
    "after033": {"engine_decode": True, "overlap": True, "early_handoff": False},
    "long": {"engine_decode": True, "overlap": True, "early_handoff": False},
    "after037": {"engine_decode": True, "overlap": True},
}
# the newest migration a mode's warehouse gets (None: all)
MIGRATED_UP_TO = {"long": "032", "after037": "037"}


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def environment(state: Path) -> dict[str, str]:
    """Ports given in the environment are kept (several benchmarks on one machine); others are free
    ones. Flink keeps its defaults: finished files end their streams with end-of-stream markers."""
    env = dict(os.environ)
    env["FLEETPERF__STATE__DIR"] = str(state)
    for key in (
        "KAFKA__PORT",
        "KAFKA__CONTROLLER_PORT",
        "REGISTRY__PORT",
        "FLINK__REST_PORT",
        "WAREHOUSE__QUERY_PORT",
        "SUPERSET__PORT",
    ):
        env.setdefault(f"FLEETPERF__{key}", str(free_port()))
    return env


def host_file(source: Path, target: Path, serial: str) -> str:
    """The file with another serial number (AAA,SerialNumber): another host_id (serial-LPAR)."""
    lines = source.read_text().splitlines(keepends=True)
    for i, line in enumerate(lines[:200]):
        if line.startswith("AAA,SerialNumber,"):
            lines[i] = f"AAA,SerialNumber,{serial}\n"
            break
    else:
        raise SystemExit(f"{source}: no AAA,SerialNumber line")
    target.write_text("".join(lines))
    return serial


def last_snapshot_ts(path: Path) -> str:
    """The last ZZZZ time of the file as 'YYYY-MM-DD HH:MM:SS' (UTC, as ingested with tz UTC)."""
    from datetime import datetime

    last = ""
    with open(path) as f:
        for line in f:
            if line.startswith("ZZZZ,"):
                last = line
    _, _, hms, dmy = last.strip().split(",")[:4]
    return datetime.strptime(f"{dmy} {hms}", "%d-%b-%Y %H:%M:%S").strftime("%Y-%m-%d %H:%M:%S")


def partition_ends(settings: Settings) -> list[Any]:
    from confluent_kafka import Consumer, TopicPartition

    from fleetperf.kafka_avro import kafka_client_config

    probe = Consumer({**kafka_client_config(settings), "group.id": "bench-backfill-probe"})
    try:
        meta = probe.list_topics(timeout=30)
        ends = []
        for t in settings.topics.values():
            for p in meta.topics[t.name].partitions if t.name in meta.topics else {}:
                tp = TopicPartition(t.name, p)
                ends.append(TopicPartition(t.name, p, probe.get_watermark_offsets(tp, timeout=30, cached=False)[1]))
        return ends
    finally:
        probe.close()


def start_group_at(settings: Settings, group: str, offsets: list[Any]) -> None:
    from confluent_kafka import Consumer

    from fleetperf.kafka_avro import kafka_client_config

    c = Consumer({**kafka_client_config(settings), "group.id": group, "enable.auto.commit": False})
    try:
        c.commit(offsets=offsets, asynchronous=False)
    finally:
        c.close()


def migrated(settings: Settings, up_to: str | None) -> Any:  # noqa: ANN401 - a clickhouse-connect Client
    """The warehouse migrated with every sql/NNN_*.sql, or only up to NNN = `up_to`."""
    import fleetperf.warehouse.clickhouse as clickhouse

    if up_to is None:
        return clickhouse.migrate(settings)[0]
    every = clickhouse.SQL_DIR
    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-sql-") as older:
        for path in every.glob("[0-9][0-9][0-9]_*.sql"):
            if path.stem[:3] <= up_to:
                (Path(older) / path.name).symlink_to(path)
        clickhouse.SQL_DIR = Path(older)
        try:
            return clickhouse.migrate(settings)[0]
        finally:
            clickhouse.SQL_DIR = every


class SinkRun:
    """A sink of one mode on a fresh database and consumer group starting at `offsets`."""

    def __init__(self, env: dict[str, str], mode: str, offsets: list[Any]) -> None:
        import clickhouse_connect

        from fleetperf.warehouse.sink import Sink

        self.database = f"bench_{mode}_{uuid.uuid4().hex[:8]}"
        group = f"bench-backfill-{self.database}"
        self.settings = config.load(
            {**env, "FLEETPERF__CLICKHOUSE__DATABASE": self.database, "FLEETPERF__WAREHOUSE__GROUP_ID": group}
        )
        # before sql/033 the values are rows of nmon_values
        self.long_form = MIGRATED_UP_TO.get(mode, "999") < "033"
        self.polls = 0
        self.ch = migrated(self.settings, MIGRATED_UP_TO.get(mode))
        # queries on a client of their own: the sink's client serialises its calls
        self.q = clickhouse_connect.get_client(
            interface="chdb", path=str(self.settings.chdb_path), database=self.database
        )
        start_group_at(self.settings, group, offsets)
        self.sink = Sink(self.settings, self.ch, **MODES[mode])
        self.assigned: float | None = None
        on_assign = self.sink._on_assign  # noqa: SLF001 - when the group gave it its partitions

        def assigned(consumer: Any, partitions: list[Any]) -> None:  # noqa: ANN401
            self.assigned = self.assigned or time.monotonic()
            on_assign(consumer, partitions)

        self.sink._on_assign = assigned  # noqa: SLF001
        self.thread = threading.Thread(target=self.sink.run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def values(self, host: str) -> int:
        """Values stored for the host, not deduplicated (a merge may not have run yet)."""
        if self.long_form:
            sql = f"SELECT count() FROM nmon_values WHERE host_id = '{host}'"
        else:  # the values' arrays counted, not exploded (nmon_values_raw: 305 ms of CPU for 6 M)
            sql = f"SELECT sum(length(arrayFlatten(rows.values))) FROM nmon_sections WHERE host_id = '{host}'"
        return int(self.q.command(sql))

    def all_values(self, host: str, values: int, last_ts: str) -> bool:
        """Every value of the file stored. Polled 4 times a second: on nmon_sections the values are
        counted (37 ms of CPU for 6 M) only once the last snapshot's sections are in (a read of the
        ts column, ~1 ms; the sink inserts a partition's batches in offset order), else the polls
        took 1.4 of the 4.5 CPU seconds measured for the sink on a backlog."""
        self.polls += 1
        if not self.long_form and self.polls % 8:  # every 2 s counted all the same (a cut last snapshot)
            newest = self.q.command(
                f"SELECT toString(toStartOfSecond(max(ts))) FROM nmon_sections WHERE host_id = '{host}'"
            )
            if str(newest) < last_ts:
                return False
        return self.values(host) >= values

    def derived(self, host: str, last_ts: str) -> tuple[bool, float | None]:
        """(every window of the host final and the last snapshot's window among them, newest emitted_at)."""
        n, final, newest, emitted = self.q.query(
            "SELECT count(), countIf(is_final), max(window_end), toUnixTimestamp64Milli(max(emitted_at)) "
            f"FROM derived_metrics FINAL WHERE entity_id = '{host}'"
        ).result_rows[0]
        done = n > 0 and n == final and newest.strftime("%Y-%m-%d %H:%M:%S") > last_ts
        return done, (emitted / 1000 if n else None)

    def stop(self) -> None:
        self.sink.stop()
        self.thread.join(timeout=120)
        self.sink.close()
        self.ch.command(f"DROP DATABASE IF EXISTS {self.database}")


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of a process, all its threads (/proc/PID/stat fields 14 and 15)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, TypeError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def stack_cpu(pids: list[int | None]) -> float:
    """CPU seconds of this process (collector + sink + embedded ClickHouse) and the services."""
    return cpu_seconds(os.getpid()) + sum(cpu_seconds(p) for p in pids)


def wait(until: Any, limit: float, step: float = 0.25) -> float | None:  # noqa: ANN401
    """Seconds (monotonic clock) when until() was first true, None after `limit`."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if until():
            return time.monotonic()
        time.sleep(step)
    return None


def measure(
    env: dict[str, str], mode: str, source: Path, tmp: Path, run: int, args: argparse.Namespace, pids: list[int | None]
) -> dict:
    from fleetperf.ingest.publish import ingest

    settings = config.load(env)
    serial = f"B{run:02d}{mode[:2].upper()}{uuid.uuid4().hex[:3].upper()}"
    path = tmp / f"{serial}.nmon"
    host_file(source, path, serial)
    lpar = next(
        line.split(",")[2] for line in path.open() if line.startswith("AAA,LPARNumberName,")
    )  # host_id = serial-LPAR number (sources/nmon)
    host = f"{serial}-{lpar}"
    last_ts = last_snapshot_ts(path)
    mb = path.stat().st_size / 1e6
    marks = partition_ends(settings)

    e2e = SinkRun(env, mode, marks)
    e2e.start()
    wait(lambda: e2e.sink.caught_up, 60)
    t0 = time.monotonic()
    wall0 = time.time()
    cpu0 = stack_cpu(pids)
    summary = ingest(settings, [str(path)], UTC, force=True, progress=False)
    t_ingest = time.monotonic() - t0
    values = summary.values
    t_values = wait(lambda: e2e.all_values(host, values, last_ts), args.limit)
    cpu_e2e = stack_cpu(pids) - cpu0
    state: dict[str, Any] = {}

    def derived_done() -> bool:
        done, emitted = e2e.derived(host, last_ts)
        state["emitted"] = emitted
        return done

    t_final = wait(derived_done, args.final_timeout, step=0.5)
    e2e.stop()
    flink = state["emitted"] - wall0 if t_final is not None and state.get("emitted") else None

    backlog = SinkRun(env, mode, marks)  # every record of the file is in Kafka now
    b0 = time.monotonic()
    c0 = cpu_seconds(os.getpid())
    backlog.start()
    t_backlog = wait(lambda: backlog.all_values(host, values, last_ts), args.limit)
    cpu_sink = cpu_seconds(os.getpid()) - c0
    # from the group's assignment (a new group waits ~3 s for the broker's initial rebalance delay)
    b0 = backlog.assigned or b0
    backlog.stop()

    def rel(t: float | None, start: float) -> float | None:
        return None if t is None else t - start

    row = {
        "mode": mode,
        "MB": mb,
        "values": values,
        "collector -> Kafka": t_ingest,
        "Flink (last window final)": flink,
        "sink on a backlog": rel(t_backlog, b0),
        "end to end: values queryable": rel(t_values, t0),
        "end to end: + derived final": rel(t_final, t0),
        # CPU seconds: what the figures would be on two cores of their own (this machine is shared)
        "cpu: sink on a backlog": cpu_sink,
        "cpu: whole stack until values queryable": cpu_e2e,
    }
    shown = ", ".join(f"{k} {v:.1f}s" if isinstance(v, float) else f"{k} {v}" for k, v in list(row.items())[3:])
    shown += f"; load average {os.getloadavg()[0]:.1f}"
    print(f"  run {run} {mode:<6} {mb:.1f} MB {values:,} values: {shown}", flush=True)
    return row


def vmhwm(pid: int | None) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    except (OSError, TypeError):
        return None
    return None


def report(rows: list[dict], modes: list[str]) -> None:
    stages = [k for k in rows[0] if k not in ("mode", "MB", "values") and not k.startswith("cpu: ")]
    mb, values = rows[0]["MB"], rows[0]["values"]
    print(f"\nmedians over {len(rows) // len(modes)} run(s); {mb:.1f} MB nmon file, {values:,} values per run")
    head = f"{'stage':<32}" + "".join(f"{m + ' s':>10}{m + ' MB/s':>13}{m + ' values/s':>17}" for m in modes)
    if len(modes) >= 2:
        head += f"{modes[-1] + '/' + modes[0]:>14}"
    print(head)
    for stage in stages:
        line = f"{stage:<32}"
        rates = []
        for m in modes:
            times = [r[stage] for r in rows if r["mode"] == m and r[stage] is not None]
            missing = sum(1 for r in rows if r["mode"] == m and r[stage] is None)
            if not times:
                line += f"{'n/a':>10}{'':>13}{'':>17}"
                rates.append(None)
                continue
            t = statistics.median(times)
            rates.append(mb / t)
            note = f"({missing} missed)" if missing else ""
            line += f"{t:>10.2f}{mb / t:>13.2f}{values / t:>17,.0f}{note}"
        if len(modes) >= 2 and None not in (rates[0], rates[-1]):
            line += f"{rates[-1] / rates[0]:>13.1f}x"
        print(line)
    print("\nCPU seconds, all threads: 'sink' = this process while only the sink runs; 'whole stack' = this")
    print("process (collector, sink, embedded ClickHouse) + Kafka + registry + Flink. 'MB/s on 2 cores' = the")
    print("rate if the work had both cores to itself (this machine's cores are shared with other work)")
    for stage in (k for k in rows[0] if k.startswith("cpu: ")):
        line = f"{stage[5:]:<40}"
        for m in modes:
            cpu = statistics.median(r[stage] for r in rows if r["mode"] == m)
            line += f"  {m}: {cpu:6.2f} CPU-s = {mb / cpu:6.2f} MB per CPU-s, {2 * mb / cpu:6.2f} MB/s on 2 cores"
        print(line)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=40, help="the AIX corpus file repeated N times (40: ~42 MB)")
    ap.add_argument("--file", type=Path, help="an nmon file to use instead of the grown AIX file")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--limit", type=float, default=600, help="seconds to wait for the values of one run")
    ap.add_argument("--final-timeout", type=float, default=180, help="seconds to wait for final derived windows")
    ap.add_argument("--keep-state", action="store_true", help="keep the stack's state directory")
    args = ap.parse_args()

    from fleetperf.stack.local import LocalStack

    state = Path(tempfile.mkdtemp(prefix="fleetperf-bench-backfill-"))
    env = environment(state)
    os.environ.update(env)  # the stack's processes and every config.load() see the same settings
    stack = LocalStack(config.load(env))
    print(f"local stack in {state}: kafka, registry, flink", flush=True)
    stack.start(only=("kafka", "registry", "flink"), echo=lambda line: print(line, flush=True))
    rows: list[dict] = []
    try:
        with tempfile.TemporaryDirectory(prefix="fleetperf-bench-backfill-files-") as tmp_dir:
            tmp = Path(tmp_dir)
            if args.file is not None:
                source = args.file
            else:
                from nmon_throughput import grow_aix

                source = grow_aix(args.copies, tmp / "aix_grown.nmon")
            # warm-up: a first ingest and sink pass on a small file (JIT of broker and job, chDB)
            small = tmp / "warm.nmon"
            small.write_text("".join(source.open().readlines()[:20000]))
            pids = [pid for _name, pid, _where, _log in stack.status()]
            # (cut mid-file, its last snapshot may lack the CPU lines: no waiting for its windows)
            measure(env, args.modes[-1], small, tmp, 0, argparse.Namespace(**{**vars(args), "final_timeout": 5}), pids)
            for run in range(1, args.runs + 1):
                for mode in args.modes:
                    rows.append(measure(env, mode, source, tmp, run, args, pids))
        report(rows, args.modes)
        print(f"\npeak RSS: this process (sink + embedded ClickHouse) {vmhwm(os.getpid()):.0f} MB", end="")
        for name, pid, _where, _log in stack.status():
            peak = vmhwm(pid)
            if peak is not None:
                print(f", {name} {peak:.0f} MB", end="")
        print(f"\nload average at the end: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)")
    finally:
        stack.stop(echo=lambda line: None)
        if not args.keep_state:
            import shutil

            shutil.rmtree(state, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
