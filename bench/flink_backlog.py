"""The Flink job alone on a backlog, this tree's jar against an earlier commit's (issue 24 goal 1).

Starts Kafka and the registry (local stack, free ports, a temporary state directory), publishes
--dir's nmon files with `fleetperf ingest` (or each --ingest's arguments: any source, e.g. the
commands `./fleetperf simulate --out DIR` prints), --copies times, each copy as other hosts (the
serial number and hostname changed) so that the backlog is long enough for the JVM to be measured
past its start. Then it runs the job's jar over the whole backlog --runs times, each run a fresh
JVM with a consumer group and transactional prefix of its own, until the derived-metrics topic has
not grown for --quiet seconds. Printed per run and as medians: the JVM's CPU seconds (all threads:
JIT, GC, Kafka clients; /proc/PID/stat) and wall seconds from its start to its last derived
metric, and the derived metrics it wrote.

--against REV builds REV's jar (its tree checked out beside; `mvn package`, offline) and runs it
in runs alternating with this tree's, on the same backlog; both jars' final windows (entity,
metric, window, value, samples) are read back and compared, so a faster jar that computes
something else is reported as such.

    PYTHONPATH=src .venv/bin/python bench/flink_backlog.py --dir /tmp/sim50 --copies 4 --runs 2 --against HEAD~1
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]


def copies(source: Path, target: Path, n: int) -> list[Path]:
    """source's nmon files as n sets of other hosts (a host's files stay one host)."""
    from backfill import host_file

    dirs = []
    for c in range(n):
        d = target / f"copy{c}"
        d.mkdir(parents=True)
        hosts: dict[str, int] = {}
        for f in sorted(source.glob("*.nmon")):
            h = hosts.setdefault(f.name.split("_")[0], len(hosts))
            host_file(f, d / f.name, serial=f"C{c}{h:05d}", hostname=f"c{c}h{h:05d}")
        dirs.append(d)
    return dirs


def build_jar(tree: Path) -> Path:
    """REV's job jar, built in its tree (offline: the dependencies are this machine's ~/.m2)."""
    target = tree / "stream-jobs" / "target"
    if target.is_symlink():
        target.unlink()  # trees.checkout links this tree's jar; here REV's own is wanted
    subprocess.run(
        [
            "mvn",
            "-B",
            "-ntp",
            "-q",
            "-o",
            "-Dstyle.color=never",
            "package",
            "-DskipTests",
            "-Dspotless.check.skip=true",
        ],
        cwd=tree / "stream-jobs",
        check=True,
    )
    return target / "fleetperf-stream-jobs.jar"


# The job's output topics: derived_windows since sql/039, derived_metrics for a jar of --against
# from before it; both are watched and read, so the two jars' final windows compare.
DERIVED_TOPICS = ("derived_windows", "derived_metrics")


def derived_ends(consumer: object, parts: list[tuple[str, int]]) -> dict[tuple[str, int], int]:
    from confluent_kafka import TopicPartition

    return {
        (t, p): consumer.get_watermark_offsets(TopicPartition(t, p), timeout=30, cached=False)[1]  # type: ignore[attr-defined]
        for t, p in parts
    }


def run_job(settings: object, jar: Path, tmp: Path, tag: str, quiet_s: float) -> dict:
    """One fresh JVM over the whole backlog, until the derived metrics stop growing."""
    from backfill import cpu_seconds
    from confluent_kafka import Consumer

    from fleetperf.kafka_avro import kafka_client_config
    from fleetperf.stack.local import JAVA_OPENS, LocalStack, jvm_options

    stack = LocalStack(settings)
    path = stack.write_job_settings()
    data = json.loads(path.read_text())
    group = f"bench-flink-backlog-{tag}-{time.time_ns()}"
    data["flink"]["group_id"] = group  # fresh offsets and transactional prefix
    data["flink"]["checkpoint_dir"] = str(tmp / group)
    path.write_text(json.dumps(data))
    f = settings["flink"]  # type: ignore[index]
    probe = Consumer({**kafka_client_config(settings), "group.id": "bench-flink-backlog-probe"})
    partitions = []
    for key in DERIVED_TOPICS:
        topic = settings.topic(key).name  # type: ignore[attr-defined]
        partitions += [(topic, p) for p in sorted(probe.list_topics(topic, timeout=30).topics[topic].partitions)]
    start = derived_ends(probe, partitions)
    cmd = ["java", f"-Xmx{f['heap']}", *jvm_options(f), *JAVA_OPENS, "-jar", str(jar), "--settings", str(path)]
    t0 = time.monotonic()
    with open(tmp / f"{group}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    try:
        last, changed, cpu_then = sum(start.values()), t0, 0.0
        while time.monotonic() - changed < quiet_s or last == sum(start.values()):
            if proc.poll() is not None:
                raise SystemExit(f"the job exited ({proc.returncode}): {tmp / f'{group}.log'}")
            if time.monotonic() - t0 > 1800:
                raise SystemExit("the job wrote no derived metric for 30 min")
            time.sleep(0.25)
            now = derived_ends(probe, partitions)
            if sum(now.values()) != last:
                last, changed, cpu_then = sum(now.values()), time.monotonic(), cpu_seconds(proc.pid)
        end = derived_ends(probe, partitions)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        probe.close()
    # offsets include the transactions' commit markers: the records are counted when read back
    return {"cpu": cpu_then, "wall": changed - t0, "start": start, "end": end}


def final_windows(
    settings: object, start: dict[tuple[str, int], int], end: dict[tuple[str, int], int]
) -> tuple[int, str]:
    """Count and digest of the final derived metrics written between two sets of offsets."""
    import fastavro
    from confluent_kafka import Consumer, TopicPartition

    from fleetperf.kafka_avro import kafka_client_config
    from fleetperf.warehouse.rows import derived_metric_records

    schemas = {
        t.name: fastavro.parse_schema(json.loads(t.schema_text()))
        for t in (settings.topic(k) for k in DERIVED_TOPICS)  # type: ignore[attr-defined]
    }
    c = Consumer(
        {**kafka_client_config(settings), "group.id": "bench-flink-backlog-read", "isolation.level": "read_committed"}
    )
    rows = []
    try:
        for (topic, p), first in start.items():
            if end[(topic, p)] <= first:
                continue
            c.assign([TopicPartition(topic, p, first)])
            done = False
            while not done:
                batch = c.consume(10_000, 10)
                if not batch:
                    break
                for m in batch:
                    if m.error() is None and m.offset() < end[(topic, p)]:
                        record = fastavro.schemaless_reader(io.BytesIO(m.value()[5:]), schemas[topic])
                        for r in derived_metric_records(record):  # type: ignore[arg-type]
                            if r["is_final"]:
                                rows.append(
                                    f"{r['entity_id']}|{r['metric']}|{r['window_start']}|{r['value']!r}|{r['samples']}"
                                )
                    done = done or m.offset() >= end[(topic, p)] - 1
    finally:
        c.close()
    rows.sort()
    return len(rows), hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def main() -> int:
    import trees

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    trees.backlog_arguments(ap)
    ap.add_argument("--copies", type=int, default=1, help="--dir published this many times, as other hosts each time")
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--quiet", type=float, default=6.0, help="seconds without a new derived metric that end a run")
    ap.add_argument("--against", help="an earlier commit whose job jar runs alternate with this tree's")
    args = ap.parse_args()
    ingests = trees.backlog_ingests(ap, args)

    from backfill import environment

    from fleetperf import config
    from fleetperf.stack import install
    from fleetperf.stack.local import LocalStack

    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-flink-") as tmp_name:
        tmp = Path(tmp_name)
        env = environment(tmp / "state")
        os.environ.update(env)
        settings = config.load(env)
        stack = LocalStack(settings)
        against = trees.checkout(args.against, tmp) if args.against else None
        try:
            jars = [("this tree", install.job_jar())]
            if against is not None:
                print(f"building {args.against}'s job jar ...", flush=True)
                jars.append((args.against, build_jar(against)))
            stack.start(only=("kafka", "registry"), echo=lambda line: None)
            ingests = ingests or [[str(d)] for d in copies(args.dir, tmp / "files", args.copies)]
            for ingest in ingests:
                print(trees.run_ingest(str(ROOT / "src"), env, ingest).summary, flush=True)
            results: dict[str, list[dict]] = {name: [] for name, _ in jars}
            for run in range(1, args.runs + 1):
                for name, jar in jars if run % 2 else list(reversed(jars)):  # each goes first in turn
                    r = run_job(settings, jar, tmp, str(len(results[name])), args.quiet)
                    r["finals"], r["digest"] = final_windows(settings, r["start"], r["end"])
                    results[name].append(r)
                    print(
                        f"  run {run} {name}: {r['cpu']:.1f} CPU-s, {r['wall']:.1f} s to the last derived metric, "
                        f"{r['finals']:,} final windows (digest {r['digest']}); load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
        finally:
            stack.stop(echo=lambda line: None)
            trees.remove(against)
    print(f"\nmedians over {args.runs} run(s), the job's JVM from its start (JVM start-up included):")
    print(f"{'jar':<12} {'CPU-s':>8} {'wall s':>8} {'final windows':>14}")
    med = {
        n: (statistics.median(r["cpu"] for r in rs), statistics.median(r["wall"] for r in rs))
        for n, rs in results.items()
    }
    for name, rs in results.items():
        print(f"{name:<12} {med[name][0]:>8.1f} {med[name][1]:>8.1f} {rs[0]['finals']:>14,}")
    digests = {r["digest"] for rs in results.values() for r in rs}
    print(
        "every run wrote the same final windows" if len(digests) == 1 else f"the runs' final windows DIFFER: {digests}"
    )
    if args.against:
        ours, theirs = med["this tree"], med[args.against]
        print(f"this tree / {args.against}: CPU {ours[0] / theirs[0]:.2f}x, wall {ours[1] / theirs[1]:.2f}x")
    return 0 if len(digests) == 1 else 1


if __name__ == "__main__":
    raise SystemExit(main())
