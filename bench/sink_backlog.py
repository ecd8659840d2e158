"""The sink on a backlog, in a process like the warehouse process (issue 24 goal 1).

`./fleetperf up` runs the sink as a thread of the warehouse process, which has Superset's app
loaded (409 k Python objects); bench/backfill.py runs it in its own lighter process. What the
process holds matters to the sink: the cyclic garbage collector walks it. This script starts Kafka,
the registry and the Flink job (local stack, free ports, a temporary state directory), publishes
--dir's nmon files with `fleetperf ingest` (or runs each --ingest's arguments: any source), waits
until Flink has written their derived metrics, and then runs the sink over that backlog --runs
times, each in a fresh process that first loads Superset's app as the warehouse process does
(--bare: not), on a fresh database and consumer group, until every message is written. Printed per
run and as medians: the process's CPU seconds (engine threads included), wall seconds, and the time
spent inside garbage collections (gc.callbacks) with their count; per run also when the inserts
ran: the first one's start, the seconds with one writer thread inserting and with two, and how long
the reading thread waited for a free writer (a sink bound by the engine keeps both writers busy;
one bound by its own reading leaves them idle).

--against REV runs REV's sink (its tree checked out beside, compiled apart; nothing of it touches
./.venv) in runs alternating with this tree's, on the same backlog, and prints the ratios.

    PYTHONPATH=src .venv/bin/python bench/sink_backlog.py --dir /tmp/sim50 --runs 3 --against 1dda70b
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# a child (--child) imports the package of the tree its PYTHONPATH names: this one or --against's
if "--child" not in sys.argv:
    sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench")]

# what a child prints its figures after
MARK = "SINK_BACKLOG "


def child(bare: bool) -> None:
    """One sink over the whole backlog (the settings come from the environment the parent set)."""
    import gc
    import resource
    import threading
    import uuid

    from fleetperf import config

    settings = config.load()
    if not bare:
        from fleetperf.stack.local import LocalStack

        os.environ.update(LocalStack(settings).superset_env())
        from superset.app import create_app

        create_app()
    in_gc = [0.0, 0, 0.0]

    def timed(phase: str, _info: dict) -> None:
        if phase == "start":
            in_gc[2] = time.perf_counter()
        else:
            in_gc[0] += time.perf_counter() - in_gc[2]
            in_gc[1] += 1

    from fleetperf.warehouse import sink as sink_module
    from fleetperf.warehouse.clickhouse import migrate

    if hasattr(sink_module, "quiet_gc"):  # what the warehouse process does once loaded (not in old trees)
        sink_module.quiet_gc()
    tag = uuid.uuid4().hex[:8]
    own = config.load(
        {**os.environ, "FLEETPERF__CLICKHOUSE__DATABASE": f"b{tag}", "FLEETPERF__WAREHOUSE__GROUP_ID": f"bench-{tag}"}
    )
    ch, _ = migrate(own)
    sink = sink_module.Sink(own, ch)
    inserts, waits = _timeline(sink)
    gc.callbacks.append(timed)
    r0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.monotonic()
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    # until the sink is caught up (nothing in hand, no lag: it sees that within 2 s of idling); the
    # figures are taken when the last rows were written, not when it noticed it was done
    rows, last = 0, (r0, t0, 0.0, 0)
    while not (sink.caught_up and rows > 0):
        time.sleep(0.05)
        now = sum(sink.rows_written.values())
        if now != rows:
            rows, last = now, (resource.getrusage(resource.RUSAGE_SELF), time.monotonic(), in_gc[0], in_gc[1])
    gc.callbacks.remove(timed)
    r1, t1, gc_s, collections = last
    cpu = r1.ru_utime + r1.ru_stime - r0.ru_utime - r0.ru_stime
    figures = {"cpu": cpu, "wall": t1 - t0, "gc": gc_s, "collections": collections, "rows": rows}
    figures.update(_busy(inserts, t0, t1), waited=sum(waits))
    figures["package"] = str(Path(config.__file__).parent)  # which tree ran: the parent checks
    print(MARK + json.dumps(figures), flush=True)
    sink.stop_event.set()
    thread.join(timeout=30)


def _timeline(sink: object) -> tuple[list[tuple[float, float]], list[float]]:
    """Records when each batch's inserts ran (the writer threads) and how long the consumer thread
    waited for a writer: whether the sink is bound by the engine or by its own reading."""
    inserts: list[tuple[float, float]] = []
    waits: list[float] = []
    write, written = sink._write, getattr(sink, "_written", None)  # noqa: SLF001

    def timed_write(batch: object) -> None:
        start = time.monotonic()
        try:
            write(batch)
        finally:
            inserts.append((start, time.monotonic()))

    def timed_written() -> object:
        start = time.monotonic()
        try:
            return written()
        finally:
            waits.append(time.monotonic() - start)

    sink._write = timed_write  # noqa: SLF001
    if written is not None:
        sink._written = timed_written  # noqa: SLF001
    return inserts, waits


def _busy(inserts: list[tuple[float, float]], t0: float, t1: float) -> dict[str, float]:
    """The first insert's start (from the sink's), and the seconds until the last rows with one
    writer inserting and with two or more."""
    events = sorted([(a, 1) for a, _ in inserts] + [(b, -1) for _, b in inserts])
    busy, last, one, more = 0, t0, 0.0, 0.0
    for when, step in events:
        if busy == 1:
            one += min(when, t1) - last
        elif busy > 1:
            more += min(when, t1) - last
        busy, last = busy + step, min(when, t1)
    first = min((a for a, _ in inserts), default=t0) - t0
    return {"first_insert": first, "one_writer": one, "two_writers": more, "inserts": len(inserts)}


def wait_for_flink(settings: object, quiet_s: float = 8.0, limit_s: float = 600.0) -> None:
    """Until the derived metrics topic stopped growing for quiet_s (Flink has read the backlog)."""
    from confluent_kafka import Consumer, TopicPartition

    from fleetperf.kafka_avro import kafka_client_config

    c = Consumer({**kafka_client_config(settings), "group.id": "bench-sink-backlog-wait"})
    name = settings.topic("derived_windows").name  # type: ignore[attr-defined]
    try:
        last, since, started = -1, time.monotonic(), time.monotonic()
        while time.monotonic() - started < limit_s:
            meta = c.list_topics(name, timeout=30).topics[name]
            end = sum(
                c.get_watermark_offsets(TopicPartition(name, p), timeout=30, cached=False)[1] for p in meta.partitions
            )
            if end != last:
                last, since = end, time.monotonic()
            elif end > 0 and time.monotonic() - since >= quiet_s:
                return
            time.sleep(1)
        raise SystemExit(f"Flink wrote no derived metrics for {limit_s:.0f}s")
    finally:
        c.close()


def main() -> int:
    import trees as trees_  # bench/ is on the path: the script's directory

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    trees_.backlog_arguments(ap)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--against", help="an earlier commit whose sink runs alternate with this tree's")
    ap.add_argument("--bare", action="store_true", help="without Superset's app in the sink's process")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        child(args.bare)
        return 0
    ingests = trees_.backlog_ingests(ap, args) or [[str(args.dir)]]

    from backfill import environment, partition_ends

    from fleetperf import config
    from fleetperf.stack.local import LocalStack
    from fleetperf.warehouse import superset_setup

    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-sink-") as tmp:
        env = environment(Path(tmp) / "state")
        settings = config.load(env)
        stack = LocalStack(settings)
        against = trees_.checkout(args.against, Path(tmp)) if args.against else None
        try:
            stack.start(only=("kafka", "registry", "flink"))
            for ingest in ingests:
                print(trees_.run_ingest(str(ROOT / "src"), env, ingest).summary, flush=True)
            print("waiting for Flink's derived metrics of the backlog ...", flush=True)
            wait_for_flink(settings)
            ends = partition_ends(settings)
            per_topic: dict[str, int] = {}
            for tp in ends:
                per_topic[tp.topic] = per_topic.get(tp.topic, 0) + tp.offset
            # Flink's transaction markers take offsets too: the messages are a little fewer
            print(
                f"backlog: {sum(per_topic.values()):,} offsets on the sink's topics ("
                + ", ".join(f"{t} {n:,}" for t, n in sorted(per_topic.items()) if n)
                + ")",
                flush=True,
            )
            if not args.bare:
                print("preparing Superset's metadata (once) ...", flush=True)
                superset_setup.prepare(settings, stack.superset_env())
            trees = [("this tree", ROOT)] + ([(args.against, against)] if against is not None else [])
            results: dict[str, list[dict[str, float]]] = {name: [] for name, _ in trees}
            for run in range(1, args.runs + 1):
                for name, tree in trees if run % 2 else reversed(trees):  # each goes first in turn
                    child_args = ["--bare"] if args.bare else []
                    r = trees_.run_child(Path(__file__).resolve(), tree, child_args, MARK, env, 1800)
                    results[name].append(r)
                    print(
                        f"  run {run} {name}: {r['cpu']:.2f} CPU-s, {r['wall']:.2f} s wall, "
                        f"{r['gc']:.2f} s in {r['collections']} collections, {r['rows']:,} rows; "
                        f"first insert at {r['first_insert']:.2f} s, then {r['inserts']} inserts with one "
                        f"writer busy {r['one_writer']:.2f} s and two {r['two_writers']:.2f} s, the "
                        f"reading thread waiting for a writer {r['waited']:.2f} s",
                        flush=True,
                    )
        finally:
            stack.stop(echo=lambda line: None)
            trees_.remove(against)
    where = "a bare process" if args.bare else "a process with Superset's app loaded (as the warehouse process)"
    print(f"\nmedians over {args.runs} run(s), the sink in {where}, load average {os.getloadavg()[0]:.2f}:")
    print(f"{'tree':<12} {'CPU-s':>8} {'wall s':>8} {'in GC s':>8} {'collections':>12}")
    med = {
        name: {k: statistics.median(r[k] for r in rs) for k in ("cpu", "wall", "gc", "collections")}
        for name, rs in results.items()
    }
    for name, m in med.items():
        print(f"{name:<12} {m['cpu']:>8.2f} {m['wall']:>8.2f} {m['gc']:>8.2f} {m['collections']:>12.0f}")
    if args.against:
        ours, theirs = med["this tree"], med[args.against]
        print(
            f"this tree / {args.against}: CPU {ours['cpu'] / theirs['cpu']:.2f}x, "
            f"wall {ours['wall'] / theirs['wall']:.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
