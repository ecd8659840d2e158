"""Backfill end to end (issue 24 goal 1): an nmon file -> collector -> Kafka -> Flink -> Kafka ->
sink -> ClickHouse, on a local stack of its own (Kafka, registry and the Flink job started here as
`./fleetperf up` starts them; the sink runs in this process on its own embedded ClickHouse, as it
runs in the warehouse process). Sinks of several modes (MODES: every record decoded in Python;
nmon snapshots decoded by the engine into one row per value, sql/017, on a warehouse migrated up
to 032: "long"; or into one row per host, section and snapshot, sql/033: "after", and "after033",
the same with the sink's hand-over to its writer thread as of e65c96c; "after037": this sink on the
views before sql/038's cheaper row check and section split; "nmononly": only nmon snapshots read
by the engine, cpu samples and derived metrics decoded in Python) are measured side by side in one
run, each on a host it has not seen (the serial number of the file is changed per measurement), and
each stage is printed:

- collector -> Kafka: `ingest` of the file until every record is acknowledged (the sink consumes
  meanwhile, as in a real backfill); by default `fleetperf ingest` in a process of its own, as
  users run it beside the warehouse (its start-up included), or with --collectors thread in a
  thread of this process, sharing the sink's interpreter (the only way until session 13);
- Flink: from the start of the ingest until the host's last derived window was emitted final;
- sink / ClickHouse on a backlog: the same records consumed again by a fresh group and database
  after they are all in Kafka (nothing else running), until every value is queryable;
- end to end: from the start of the ingest until every value of the file is queryable, and until
  also every derived window of the host is final.

MB are of the nmon file; values are the collector's count. Medians over --runs. Needs the
third-party corpus (../shared/corpus) for the AIX file it grows, or --file.

--hosts N measures a fleet's backfill instead of one host's: the file is written as N hosts (N files,
each with a serial number and hostname no run has seen) and `ingest` reads them in one call, so the
per-file costs (open, re-run ledger, end-of-stream marker) and the per-host ones (Flink keys and
windows, one series per host in the warehouse) are in the figures; every stage waits for every host.

    PYTHONPATH=src .venv/bin/python bench/backfill.py --copies 40 --runs 3 --modes after033 after
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT), str(ROOT / "bench")]

from fleetperf import config  # noqa: E402
from fleetperf.config import Settings  # noqa: E402
from fleetperf.sources.nmon.host_config import HostConfigBuilder  # noqa: E402

# Sink(engine_decode=..., overlap=..., early_handoff=...): "before" decodes every record in Python
# (before sql/017), "serial" lets the engine decode nmon snapshots but inserts each batch before
# reading on, "after" also reads and cuts the next batch while the writer thread inserts the last
# one, frames its Avro object containers in the consumer thread when it is cut and hands it to the
# writer before the last one's offset is committed; "after033" is "after" with the containers
# framed in the writer thread and the commit before the hand-over (the sink as of e65c96c); "long" is
# "after033" on a warehouse migrated up to 032 (sql/017's long form: one row per value in the
# nmon_values table), the others have sql/033 (one row per host, section and snapshot); "nmononly" is
# "after" with only the nmon snapshots read by the engine, the cpu samples and derived metrics
# decoded in Python (the sink as of 74a9acd). "after" has `[warehouse] sink_writers` batches in
# flight (2 by default); "onewriter" is "after" with one at a time (the sink as of e7d4e39), as are
# the modes of older sinks. "lagonfetch" is "after" with an idle sink's lag check asking the broker
# through the consumer that fetches (the sink as of 5fde681; that query waited behind the fetch's
# long-poll, 500 ms per partition, the loop stopped meanwhile).
MODES = {
    "before": {"engine_decode": False, "overlap": False},
    "serial": {"engine_decode": True, "overlap": False},
    "after": {"engine_decode": True, "overlap": True},
    "onewriter": {"engine_decode": True, "overlap": True, "writers": 1},
    "after033": {"engine_decode": True, "overlap": True, "early_handoff": False, "writers": 1},
    "long": {"engine_decode": True, "overlap": True, "early_handoff": False, "writers": 1},
    "after037": {"engine_decode": True, "overlap": True, "writers": 1},
    "nmononly": {"engine_decode": ("nmon_snapshots",), "overlap": True, "writers": 1},
    "lagonfetch": {"engine_decode": True, "overlap": True},
}
# the newest migration a mode's warehouse gets (None: all)
MIGRATED_UP_TO = {"long": "032", "after037": "037"}


def lag_on_fetch_sink() -> type:
    """The sink with its live lag check on the fetching consumer (mode "lagonfetch")."""
    from fleetperf.warehouse.sink import Sink

    class LagOnFetch(Sink):
        def _probe(self) -> Any:  # noqa: ANN401 - no consumer opened: the loop only closes it
            return type("Unopened", (), {"close": lambda _self: None})()

        def _update_lag(self, consumer: Any, probe: Any = None) -> None:  # noqa: ANN401
            # the fetching consumer answers the live query itself, as before the probe
            super()._update_lag(consumer, consumer if probe is not None else None)

    return LagOnFetch


def environment(state: Path) -> dict[str, str]:
    """Ports given in the environment are kept (several benchmarks on one machine); others are free
    ones. Flink keeps its defaults: finished files end their streams with end-of-stream markers."""
    from tests.providers import free_ports

    env = dict(os.environ)
    env["FLEETPERF__STATE__DIR"] = str(state)
    keys = ["KAFKA__PORT", "KAFKA__CONTROLLER_PORT", "REGISTRY__PORT", "FLINK__REST_PORT", "WAREHOUSE__QUERY_PORT"]
    keys.append("SUPERSET__PORT")
    for key, port in zip(keys, free_ports(len(keys)), strict=True):  # distinct: picked all at once
        env.setdefault(f"FLEETPERF__{key}", str(port))
    return env


def host_file(source: Path, target: Path, serial: str, hostname: str | None = None) -> str:
    """The file as another host (as_host); returns the host_id the collector gives the new file."""
    lines = source.read_text().splitlines(keepends=True)
    host_id = as_host(lines, serial, hostname, source)
    target.write_text("".join(lines))
    return host_id


def as_host(lines: list[str], serial: str, hostname: str | None, source: Path) -> str:
    """An nmon file's lines (changed in place) as another host: AAA,SerialNumber (an AIX file's
    host_id is serial-LPAR number) and, when `hostname` is given, AAA,host (a Linux file's host_id)
    changed. Returns the host_id the collector gives them (its own rule, HostConfigBuilder.host_id,
    over the AAA lines)."""
    changed = set()
    identity = HostConfigBuilder()
    for i, line in enumerate(lines[:200]):
        key = line.split(",", 2)[:2]
        if key == ["AAA", "SerialNumber"]:
            lines[i] = f"AAA,SerialNumber,{serial}\n"
            changed.add("serial")
        elif key == ["AAA", "host"] and hostname is not None:
            lines[i] = f"AAA,host,{hostname}\n"
            changed.add("host")
        if key[:1] == ["AAA"]:
            identity.add("AAA", lines[i].rstrip("\r\n").partition(",")[2])
    host_id = identity.host_id
    # a new host only if what its id is made of was changed: the serial (with the LPAR number), or
    # the host name where the id is the host name
    made_new = {f"{serial}-{identity.lpar_number}"} if "serial" in changed else set()
    if "host" in changed:
        made_new.add(hostname)
    if host_id not in made_new:
        raise SystemExit(f"{source}: neither AAA,SerialNumber with AAA,LPARNumberName nor AAA,host to change")
    return host_id


@functools.cache
def last_snapshot_ts(path: Path) -> str:
    """The time of the last snapshot the collector publishes of the file, 'YYYY-MM-DD HH:MM:SS'
    (UTC, as ingested with tz UTC). The collector's own nmon source reads the file (once per file,
    before any timing), so whatever date form it reads counts, and a cut last snapshot it holds back
    is not waited for."""
    from fleetperf.cli.commands.parse import _decoder
    from fleetperf.sources import registry

    last: Any = None
    for e in registry.get("nmon").read(path, argparse.Namespace(tz="UTC")):
        if e.topic_key == "nmon_snapshots":
            last = e
    if last is None:
        raise SystemExit(f"{path}: the collector publishes no snapshot of it")
    # the native scanner's record arrives encoded: read back as `parse` does (ts in ms on the wire)
    record = last.record if last.encoded is None else _decoder(config.load())("nmon_snapshots", last.encoded)
    return datetime.fromtimestamp(record["ts"] / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")


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
        self.sink = (lag_on_fetch_sink() if mode == "lagonfetch" else Sink)(self.settings, self.ch, **MODES[mode])
        self.assigned: float | None = None
        on_assign = self.sink._on_assign  # noqa: SLF001 - when the group gave it its partitions

        def assigned(consumer: Any, partitions: list[Any]) -> None:  # noqa: ANN401
            self.assigned = self.assigned or time.monotonic()
            on_assign(consumer, partitions)

        self.sink._on_assign = assigned  # noqa: SLF001
        # when each insert of derived records returned (its rows queryable from then on): the poll
        # for every final window runs twice a second (a FINAL read), so it takes the last such insert
        # before the poll that saw them all, not the poll's own time (up to 0.5 s later)
        derived_topics = {self.settings.topic(k).name for k in ("derived_windows", "derived_metrics")}
        self.derived_inserts: list[float] = []
        write = self.sink._write  # noqa: SLF001

        def timed_write(batch: Any) -> None:  # noqa: ANN401
            write(batch)
            if batch.topic in derived_topics:
                self.derived_inserts.append(time.monotonic())

        self.sink._write = timed_write  # noqa: SLF001
        self.thread = threading.Thread(target=self.sink.run, daemon=True)

    def start(self) -> None:
        self.thread.start()

    def values(self, hosts: list[str]) -> int:
        """Values stored for the hosts, not deduplicated (a merge may not have run yet)."""
        where = f"host_id IN ({', '.join(repr(h) for h in hosts)})"
        if self.long_form:
            sql = f"SELECT count() FROM nmon_values WHERE {where}"
        else:  # the values' arrays counted, not exploded (nmon_values_raw: 305 ms of CPU for 6 M)
            sql = f"SELECT sum(length(arrayFlatten(rows.values))) FROM nmon_sections WHERE {where}"
        return int(self.q.command(sql))

    def all_values(self, last: dict[str, str], values: int) -> bool:
        """Every value of the files stored (last: host_id -> its last snapshot's time). Polled 4
        times a second: on nmon_sections the values are counted (37 ms of CPU for 6 M) only once
        every host's last snapshot's sections are in (a read of the ts column, ~1 ms; the sink
        inserts a partition's batches in offset order), else the polls took 1.4 of the 4.5 CPU
        seconds measured for the sink on a backlog."""
        self.polls += 1
        if not self.long_form and self.polls % 8:  # every 2 s counted all the same (a cut last snapshot)
            in_list = ", ".join(repr(h) for h in last)
            newest = self.q.query(
                "SELECT host_id, toString(toStartOfSecond(max(ts))) FROM nmon_sections "
                f"WHERE host_id IN ({in_list}) GROUP BY host_id"
            ).result_rows
            if len(newest) < len(last) or any(ts < last[host] for host, ts in newest):
                return False
        return self.values(list(last)) >= values

    def derived(self, last: dict[str, str]) -> tuple[bool, float | None]:
        """(every window of every host final and each host's last snapshot's window among them,
        newest emitted_at)."""
        in_list = ", ".join(repr(h) for h in last)
        rows = self.q.query(
            "SELECT entity_id, count(), countIf(is_final), max(window_end), toUnixTimestamp64Milli(max(emitted_at)) "
            f"FROM derived_metrics FINAL WHERE entity_id IN ({in_list}) GROUP BY entity_id"
        ).result_rows
        done = len(rows) == len(last) and all(
            n == final and newest.strftime("%Y-%m-%d %H:%M:%S") > last[host] for host, n, final, newest, _e in rows
        )
        return done, (max(r[4] for r in rows) / 1000 if rows else None)

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


def stack_cpu(pids: dict[str, int | None]) -> dict[str, float]:
    """CPU seconds of this process (collector + sink + embedded ClickHouse) and of each service."""
    return {"this process": cpu_seconds(os.getpid()), **{name: cpu_seconds(pid) for name, pid in pids.items()}}


def wait(until: Any, limit: float, step: float = 0.25) -> float | None:  # noqa: ANN401
    """Seconds (monotonic clock) when until() was first true, None after `limit`."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if until():
            return time.monotonic()
        time.sleep(step)
    return None


def original_host(path: Path) -> str:
    """The host a file is of as written (AAA,SerialNumber and AAA,LPARNumberName, else AAA,host)."""
    meta: dict[str, str] = {}
    with open(path) as f:
        for _, line in zip(range(200), f, strict=False):
            parts = line.rstrip("\n").split(",")
            if parts[0] == "AAA" and len(parts) > 2:
                meta[parts[1]] = parts[2]
    return f"{meta['SerialNumber']}-{meta['LPARNumberName']}" if "SerialNumber" in meta else meta.get("host", "")


def measure(
    env: dict[str, str],
    mode: str,
    sources: list[tuple[Path, int]],
    tmp: Path,
    run: int,
    args: argparse.Namespace,
    pids: dict[str, int | None],
) -> dict:
    """sources: (file, host number); each host number becomes a host no run has seen."""
    from fleetperf.ingest.publish import ingest

    settings = config.load(env)
    tag = f"B{run:02d}{mode[:2].upper()}{uuid.uuid4().hex[:3].upper()}"
    paths: list[Path] = []
    last: dict[str, str] = {}  # host_id -> its last snapshot's time
    n_hosts = len({n for _, n in sources})
    for i, (source, n) in enumerate(sources):
        name = tag if n_hosts == 1 else f"{tag}H{n:03d}"
        path = tmp / f"{name}_{i:05d}.nmon"
        host = host_file(source, path, name, hostname=name.lower())
        last[host] = max(last.get(host, ""), last_snapshot_ts(source))
        paths.append(path)
    mb = sum(path.stat().st_size for path in paths) / 1e6
    marks = partition_ends(settings)

    e2e = SinkRun(env, mode, marks)
    e2e.start()
    wait(lambda: e2e.sink.caught_up, 60)
    t0 = time.monotonic()
    wall0 = time.time()
    cpu0 = stack_cpu(pids)
    child0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if args.collector == "process":
        # as users run it: `fleetperf ingest` is a process of its own beside the warehouse's sink
        argv = [sys.executable, "-m", "fleetperf.cli.main", "ingest", "--force", "--no-progress", "--tz", "UTC"]
        child_env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
        done = subprocess.run([*argv, *map(str, paths)], capture_output=True, text=True, check=False, env=child_env)
        found = re.search(r"\bvalues (\d+),", done.stdout)
        # 3: some lines were dead letters, the rest published (the AIX corpus file's JFS lines carry
        # values past their headers: two dead letters a snapshot)
        if done.returncode not in (0, 3) or found is None:
            raise RuntimeError(f"ingest exited {done.returncode}: {done.stdout[-300:]} {done.stderr[-600:]}")
        values = int(found.group(1))
    else:  # a thread of this process: the collector and the sink share one interpreter (its GIL)
        values = ingest(settings, [str(path) for path in paths], UTC, force=True, progress=False).values
    t_ingest = time.monotonic() - t0
    t_values = wait(lambda: e2e.all_values(last, values), args.limit)
    cpu_e2e = {name: cpu - cpu0[name] for name, cpu in stack_cpu(pids).items()}
    child = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_e2e["collector process"] = child.ru_utime + child.ru_stime - child0.ru_utime - child0.ru_stime
    state: dict[str, Any] = {}

    def derived_done() -> bool:
        done, emitted = e2e.derived(last)
        state["emitted"] = emitted
        return done

    t_final = wait(derived_done, args.final_timeout, step=0.5)
    if t_final is not None:
        inserted = max([t for t in e2e.derived_inserts if t <= t_final] or [t_final])
        t_final = max(inserted, t_values) if t_values is not None else inserted
    # the job's flags and the derived metrics' sink run on after the values are queryable
    cpu_final = {name: cpu - cpu0[name] for name, cpu in stack_cpu(pids).items()}
    cpu_final["collector process"] = cpu_e2e["collector process"]
    e2e.stop()
    flink = state["emitted"] - wall0 if t_final is not None and state.get("emitted") else None

    backlog = SinkRun(env, mode, marks)  # every record of the file is in Kafka now
    b0 = time.monotonic()
    c0 = cpu_seconds(os.getpid())
    backlog.start()
    t_backlog = wait(lambda: backlog.all_values(last, values), args.limit)
    cpu_sink = cpu_seconds(os.getpid()) - c0
    # from the group's assignment (a new group waits ~3 s for the broker's initial rebalance delay)
    b0 = backlog.assigned or b0
    backlog.stop()
    for path in paths:
        path.unlink()

    def rel(t: float | None, start: float) -> float | None:
        return None if t is None else t - start

    label = mode if args.hosts == [1] and args.dir is None else f"{mode}/{n_hosts}h"
    if len(args.collectors) > 1:
        label += "/" + args.collector[:4]  # proc, thre
    row = {
        "mode": label,
        "MB": mb,
        "values": values,
        "collector -> Kafka": t_ingest,
        "Flink (last window final)": flink,
        "sink on a backlog": rel(t_backlog, b0),
        "end to end: values queryable": rel(t_values, t0),
        "end to end: + derived final": rel(t_final, t0),
        # CPU seconds: what the figures would be on two cores of their own (this machine is shared)
        "cpu: sink on a backlog": cpu_sink,
        "cpu: whole stack until values queryable": sum(cpu_e2e.values()),
        **{f"cpu: {name} until values queryable": cpu for name, cpu in cpu_e2e.items()},
        "cpu: whole stack until derived final": sum(cpu_final.values()),
        "cpu: flink until derived final": cpu_final.get("flink"),
    }
    shown = ", ".join(f"{k} {v:.1f}s" if isinstance(v, float) else f"{k} {v}" for k, v in list(row.items())[3:])
    shown += f"; load average {os.getloadavg()[0]:.1f}"
    print(f"  run {run} {label:<6} {len(paths)} file(s) {mb:.1f} MB {values:,} values: {shown}", flush=True)
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
    size = {m: next((r["MB"], r["values"]) for r in rows if r["mode"] == m) for m in modes}
    print(f"\nmedians over {len(rows) // len(modes)} run(s); per run: ", end="")
    print("; ".join(f"{m} {mb:.1f} MB of nmon, {values:,} values" for m, (mb, values) in size.items()))
    widths = {m: (len(m) + 4, len(m) + 7, max(len(m) + 11, 13)) for m in modes}  # s, MB/s, values/s
    head = f"{'stage':<32}" + "".join(
        f"{m + ' s':>{w[0]}}{m + ' MB/s':>{w[1]}}{m + ' values/s':>{w[2]}}" for m, w in widths.items()
    )
    ratio = len(modes[-1]) + len(modes[0]) + 6
    if len(modes) >= 2:
        head += f"{modes[-1] + ' / ' + modes[0]:>{ratio}}"
    print(head)
    for stage in stages:
        line = f"{stage:<32}"
        rates = []
        for m in modes:
            mb, values = size[m]
            times = [r[stage] for r in rows if r["mode"] == m and r[stage] is not None]
            missing = sum(1 for r in rows if r["mode"] == m and r[stage] is None)
            w = widths[m]
            if not times:
                line += f"{'n/a':>{w[0]}}{'':>{w[1]}}{'':>{w[2]}}"
                rates.append(None)
                continue
            t = statistics.median(times)
            rates.append(mb / t)
            note = f"({missing} missed)" if missing else ""
            line += f"{t:>{w[0]}.2f}{mb / t:>{w[1]}.2f}{values / t:>{w[2]},.0f}{note}"
        if len(modes) >= 2 and None not in (rates[0], rates[-1]):
            line += f"{rates[-1] / rates[0]:>{ratio - 1}.2f}x"
        print(line)
    print("\nCPU seconds, all threads: 'sink' = this process while only the sink runs; 'whole stack' = this")
    print("process (collector, sink, embedded ClickHouse) + Kafka + registry + Flink. 'MB/s on 2 cores' = the")
    print("rate if the work had both cores to itself (this machine's cores are shared with other work)")
    for stage in (k for k in rows[0] if k.startswith("cpu: ")):
        print(stage[5:])
        for m in modes:
            mb = size[m][0]
            cpu = statistics.median(r[stage] for r in rows if r["mode"] == m)
            if cpu < 0.005:  # e.g. the collector process of a run whose collector was a thread
                continue
            print(f"  {m:<14} {cpu:6.2f} CPU-s = {mb / cpu:6.2f} MB per CPU-s, {2 * mb / cpu:6.2f} MB/s on 2 cores")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--copies", type=int, default=40, help="the AIX corpus file repeated N times (40: ~42 MB)")
    ap.add_argument("--file", type=Path, help="an nmon file to use instead of the grown AIX file")
    ap.add_argument(
        "--hosts",
        type=int,
        nargs="+",
        default=[1],
        help="the data as N hosts (N files of another serial and hostname each), ingested in one call: a fleet's"
        " backfill, per-file and per-host costs included. The grown AIX file's --copies are split among the N"
        " hosts (the same MB and values in total for every N, side by side); a --file is each host's whole"
        " file (default 1)",
    )
    ap.add_argument(
        "--dir",
        type=Path,
        help="the nmon files of a directory (e.g. `./fleetperf simulate --sources nmon --out DIR`) instead of the"
        " AIX file: each of its hosts becomes a host no run has seen, its files ingested in one call",
    )
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument(
        "--warm-runs",
        type=int,
        default=0,
        help="full runs first, printed but left out of the medians (the first run of 150 simulated hosts took"
        " twice the CPU of the next ones: JIT of broker and job on every code path)",
    )
    ap.add_argument("--modes", nargs="+", default=list(MODES), choices=list(MODES))
    ap.add_argument("--limit", type=float, default=600, help="seconds to wait for the values of one run")
    ap.add_argument("--final-timeout", type=float, default=180, help="seconds to wait for final derived windows")
    ap.add_argument("--keep-state", action="store_true", help="keep the stack's state directory")
    ap.add_argument(
        "--collectors",
        nargs="+",
        default=["process"],
        choices=["process", "thread"],
        help="where the collector runs: `fleetperf ingest` in a process of its own, as users run it beside the"
        " warehouse (default), or a thread of this process, whose interpreter the sink shares (how this"
        " benchmark measured until session 13); both: side by side",
    )
    args = ap.parse_args()
    if args.dir is None and args.file is None:
        for n in args.hosts:  # before minutes of starting the stack
            if args.copies % n:
                ap.error(f"--copies {args.copies} do not split among --hosts {n}")

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
            variants: list[list[tuple[Path, int]]] = []  # the files of each variant, with their host numbers
            if args.dir is not None:
                files = sorted(args.dir.rglob("*.nmon"))
                numbers: dict[str, int] = {}
                variants.append([(f, numbers.setdefault(original_host(f), len(numbers))) for f in files])
            for n in args.hosts if args.dir is None else ():
                if args.file is not None:
                    each = args.file
                else:
                    from nmon_throughput import grow_aix

                    if args.copies % n:
                        raise SystemExit(f"--copies {args.copies} do not split among --hosts {n}")
                    each = grow_aix(args.copies // n, tmp / f"aix_grown_{args.copies // n}.nmon")
                variants.append([(each, i) for i in range(n)])
            source = max((f for v in variants for f, _ in v), key=lambda f: f.stat().st_size)
            # warm-up: a first ingest and sink pass on a small file (JIT of broker and job, chDB)
            small = tmp / "warm.nmon"
            small.write_text("".join(source.open().readlines()[:20000]))
            pids = {name: pid for name, pid, _where, _log in stack.status() if pid is not None}
            # (cut mid-file, its last snapshot may lack the CPU lines: no waiting for its windows)
            warm = argparse.Namespace(**{**vars(args), "final_timeout": 5, "hosts": [1], "collector": "thread"})
            measure(env, args.modes[-1], [(small, 0)], tmp, 0, warm, pids)
            # this process runs the sink as the warehouse process and `fleetperf sink` run it
            from fleetperf.warehouse.sink import quiet_gc

            quiet_gc()
            for run in range(1 - args.warm_runs, args.runs + 1):
                for mode in args.modes:
                    for variant in variants:
                        for collector in args.collectors:
                            args.collector = collector
                            row = measure(env, mode, variant, tmp, run, args, pids)
                            if run >= 1:
                                rows.append(row)
        report(rows, list(dict.fromkeys(r["mode"] for r in rows)))
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
