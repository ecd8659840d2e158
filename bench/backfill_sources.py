"""Backfill end to end of every source (issue 24 goal 1): files of any kind -> collectors -> Kafka ->
Flink -> Kafka -> sink -> ClickHouse, on a local stack of its own started for each run.

bench/backfill.py measures nmon files; a fleet also has sadc files, z/VM monitor data, Performance
Toolkit reports, hpmstat and entstat output. Each run here starts Kafka, the registry and the Flink
job (free ports, a temporary state directory, so every run is the first backfill of a fresh stack,
as a user's first one is), runs a sink in this process on its own embedded ClickHouse (as the
warehouse process runs it), then runs each --ingest's `fleetperf ingest` one after the other in
processes of their own, as users run them, and waits until every record is written and Flink has
nothing more to emit. Printed per run and as medians:

- each ingest's wall seconds and MB/s (the files' size), and the collectors' CPU seconds;
- end to end: from the first ingest's start until the last row was written (derived windows
  included: a finished file ends its streams, so Flink finalises their windows at once);
- the CPU seconds of the sink's process (sink and engine), Kafka and Flink over the run; the
  sink's inserts (how many, their summed time) and how long its reading thread waited for a writer;
- rows written per table.

The end is detected when nothing changed for --quiet seconds (the sink caught up, no new rows, the
derived metrics topic not growing); the figure is the time of the last row, not of the detection.

--against REV runs REV's tree (checked out beside, compiled apart) in runs alternating with this
tree's, every part of it (collectors, sink) REV's, and prints the ratios.

    ./fleetperf simulate --out /tmp/fleet      # prints the ingest commands of its sources
    PYTHONPATH=src .venv/bin/python bench/backfill_sources.py --runs 2 --against 9a39942 \\
        --ingest "/tmp/fleet/nmon" --ingest "/tmp/fleet/linux/webn01 --host-id webn01 --hostname webn01" ...
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import shlex
import statistics
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# a child (--child) imports the package of the tree its PYTHONPATH names: this one or --against's
if "--child" not in sys.argv:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]
sys.path.append(str(ROOT / "bench"))  # backfill.py's helpers, for a child too
sys.path.append(str(ROOT))  # tests.providers (free ports)

MARK = "BACKFILL_SOURCES "


def size_of(args: list[str]) -> int:
    """Bytes of the files and directories an ingest's arguments name (options and their values are
    not paths that exist)."""
    total = 0
    for a in args:
        p = Path(a)
        if p.is_file():
            total += p.stat().st_size
        elif p.is_dir():
            total += sum(f.stat().st_size for f in p.rglob("*") if f.is_file())
    return total


def child(ingests: list[list[str]], quiet: float, limit: float) -> None:
    """One run on a fresh stack with the tree on PYTHONPATH; prints its figures as one JSON line."""
    from fleetperf import config
    from fleetperf.stack.local import LocalStack
    from fleetperf.warehouse.clickhouse import migrate
    from fleetperf.warehouse.sink import Sink

    # imported after the tree's package: backfill.py puts this tree's src first on sys.path
    environment = importlib.import_module("backfill").environment

    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-sources-") as tmp:
        env = environment(Path(tmp) / "state")
        os.environ.update(env)
        tag = uuid.uuid4().hex[:8]
        settings = config.load(
            {**env, "FLEETPERF__CLICKHOUSE__DATABASE": f"b{tag}", "FLEETPERF__WAREHOUSE__GROUP_ID": f"bench-{tag}"}
        )
        stack = LocalStack(settings)
        try:
            stack.start(only=("kafka", "registry", "flink"), echo=lambda line: print(line, file=sys.stderr))
            pids = {name: pid for name, pid, _where, _log in stack.status() if pid is not None}
            ch, _ = migrate(settings)
            sink = Sink(settings, ch)
            figures = run(settings, sink, ingests, pids, env, quiet, limit)
        finally:
            stack.stop(echo=lambda line: None)
    figures["package"] = str(Path(config.__file__).parent)
    print(MARK + json.dumps(figures), flush=True)


def run(settings, sink, ingests, pids, env, quiet, limit) -> dict:  # noqa: ANN001, PLR0913
    from confluent_kafka import Consumer, TopicPartition

    from fleetperf.kafka_avro import kafka_client_config

    derived = settings.topic("derived_windows").name
    probe = Consumer({**kafka_client_config(settings), "group.id": "bench-sources-probe"})

    def derived_end() -> int:
        meta = probe.list_topics(derived, timeout=30).topics[derived]
        return sum(
            probe.get_watermark_offsets(TopicPartition(derived, p), timeout=30, cached=False)[1]
            for p in meta.partitions
        )

    inserts, waits = importlib.import_module("sink_backlog")._timeline(sink)
    thread = threading.Thread(target=sink.run, daemon=True)
    stack_cpu = importlib.import_module("backfill").stack_cpu
    run_ingest = importlib.import_module("trees").run_ingest
    cpu0 = stack_cpu(pids)
    t0 = time.monotonic()
    thread.start()
    stages = []
    for args in ingests:
        done = run_ingest(os.environ["PYTHONPATH"], env, args)
        stages.append({"args": args, "wall": done.wall, "cpu": done.cpu, "bytes": size_of(args)})
    collected = time.monotonic() - t0
    collectors_cpu = sum(s["cpu"] for s in stages)
    # until nothing changed for `quiet` seconds; the end is when the last rows were written
    rows, end, last_change, flink_end = -1, t0, time.monotonic(), -1
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        time.sleep(0.1)
        now_rows, now_end = sum(sink.rows_written.values()), derived_end()
        if now_rows != rows or now_end != flink_end:
            if now_rows != rows:
                end = time.monotonic()
            rows, flink_end, last_change = now_rows, now_end, time.monotonic()
        elif sink.caught_up and time.monotonic() - last_change >= quiet:
            break
    else:
        raise SystemExit(f"not caught up after {limit:.0f} s")
    cpu1 = stack_cpu(pids)
    sink.stop_event.set()
    thread.join(timeout=60)
    probe.close()
    return {
        "stages": stages,
        "collected": collected,
        "end_to_end": end - t0,
        "collectors_cpu": collectors_cpu,
        "cpu": {k: cpu1[k] - cpu0.get(k, 0.0) for k in cpu1},
        "tables": dict(sink.rows_written),
        "mb": sum(s["bytes"] for s in stages) / 1e6,
        "inserts": len(inserts),
        "writers_busy": sum(b - a for a, b in inserts),
        "waited": sum(waits),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--ingest",
        action="append",
        default=[],
        metavar="ARGS",
        required=True,
        help="one ingest's arguments (repeatable)",
    )
    ap.add_argument("--runs", type=int, default=2)
    ap.add_argument("--against", help="an earlier commit whose collectors and sink run alternating with this tree's")
    ap.add_argument("--quiet", type=float, default=5.0, help="seconds with nothing new that end a run (default 5)")
    ap.add_argument("--limit", type=float, default=900.0, help="seconds a run may take at most")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    import trees as trees_  # bench/ is on the path of the parent

    ingests = [shlex.split(a) for a in args.ingest]
    if args.child:
        child(ingests, args.quiet, args.limit)
        return 0
    passed = [x for a in args.ingest for x in ("--ingest", a)] + [
        "--quiet",
        str(args.quiet),
        "--limit",
        str(args.limit),
    ]
    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-sources-trees-") as tmp:
        against = trees_.checkout(args.against, Path(tmp)) if args.against else None
        trees = [("this tree", ROOT)] + ([(args.against, against)] if against is not None else [])
        results: dict[str, list[dict]] = {name: [] for name, _ in trees}
        try:
            for n in range(1, args.runs + 1):
                for name, tree in trees if n % 2 else list(reversed(trees)):  # each goes first in turn
                    r = trees_.run_child(Path(__file__).resolve(), tree, passed, MARK, dict(os.environ), 3600)
                    results[name].append(r)
                    stages = ", ".join(
                        f"{Path(s['args'][0]).name} {s['bytes'] / 1e6:.1f} MB {s['wall']:.2f} s" for s in r["stages"]
                    )
                    cpu = ", ".join(f"{k} {v:.1f}" for k, v in r["cpu"].items())
                    print(
                        f"  run {n} {name}: end to end {r['end_to_end']:.2f} s = {r['mb'] / r['end_to_end']:.2f} MB/s;"
                        f" collectors {r['collected']:.2f} s ({stages}), {r['collectors_cpu']:.1f} CPU-s;"
                        f" CPU-s {cpu}; the sink's {r['inserts']} inserts took {r['writers_busy']:.1f} s (writer"
                        f" threads' time), its reading thread waited {r['waited']:.1f} s for a writer",
                        flush=True,
                    )
        finally:
            trees_.remove(against)
    first = next(iter(results.values()))[0]
    print(f"\nrows written per table (run 1 of this tree): {json.dumps(first['tables'], sort_keys=True)}")
    print(f"medians over {args.runs} run(s), {first['mb']:.1f} MB, load average {os.getloadavg()[0]:.2f}:")
    heads = ("end to end s", "MB/s", "collectors s", "collectors CPU-s", "sink CPU-s", "kafka CPU-s", "flink CPU-s")
    print(f"{'tree':<12} " + " ".join(heads))
    med = {}
    for name, rs in results.items():
        m = {
            "e2e": statistics.median(r["end_to_end"] for r in rs),
            "coll": statistics.median(r["collected"] for r in rs),
            "ccpu": statistics.median(r["collectors_cpu"] for r in rs),
            **{k: statistics.median(r["cpu"].get(k, 0.0) for r in rs) for k in ("this process", "kafka", "flink")},
        }
        med[name] = m
        cells = (m["e2e"], first["mb"] / m["e2e"], m["coll"], m["ccpu"], m["this process"], m["kafka"], m["flink"])
        print(f"{name:<12} " + " ".join(f"{v:>{len(h)}.2f}" for v, h in zip(cells, heads, strict=True)))
    if args.against:
        ours, theirs = med["this tree"], med[args.against]
        print(
            f"this tree / {args.against}: end to end {ours['e2e'] / theirs['e2e']:.2f}x, collectors"
            f" {ours['coll'] / theirs['coll']:.2f}x, sink CPU {ours['this process'] / theirs['this process']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
