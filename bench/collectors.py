"""Each collector alone, files -> Kafka (issue 24 goal 1): `fleetperf ingest` of each --ingest's
arguments, in a process of its own as users run it (start-up included), into a Kafka and registry
started here (free ports, a temporary state directory; nothing else running). Printed per ingest:
wall seconds, CPU seconds of the ingest process (librdkafka's threads included), MB/s and MB/s per
core (MB of the files named), medians over --runs; `--force` re-publishes the same files each run.

--against REV runs REV's tree (checked out beside, compiled apart) alternating with this tree's and
prints the ratios.

    ./fleetperf simulate --out /tmp/fleet
    PYTHONPATH=src .venv/bin/python bench/collectors.py --runs 3 --against 9a39942 \\
        --ingest "/tmp/fleet/toolkit/ZVMB --zvm-system ZVMB --cpc 3906-0D4E5F" --ingest ...
"""

from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT / "bench"), str(ROOT)]

from backfill import environment  # noqa: E402
from backfill_sources import size_of  # noqa: E402
from trees import checkout, remove, run_ingest  # noqa: E402

from fleetperf import config  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ingest", action="append", required=True, metavar="ARGS", help="one ingest's arguments")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--against", help="an earlier commit whose collectors run alternating with this tree's")
    args = ap.parse_args()
    ingests = [shlex.split(a) for a in args.ingest]

    from fleetperf.stack.local import LocalStack

    with tempfile.TemporaryDirectory(prefix="fleetperf-bench-collectors-") as tmp:
        env = environment(Path(tmp) / "state")
        stack = LocalStack(config.load(env))
        against = checkout(args.against, Path(tmp)) if args.against else None
        trees = [("this tree", ROOT)] + ([(args.against, against)] if against is not None else [])
        figures: dict[tuple[str, int], list[tuple[float, float]]] = {}
        try:
            stack.start(only=("kafka", "registry"), echo=lambda line: print(line, flush=True))
            for tree in {t for _, t in trees}:  # topics, schemas and the JIT of the broker, once
                run_ingest(str(tree / "src"), env, ingests[0], force=True)
            for run in range(1, args.runs + 1):
                for name, tree in trees if run % 2 else list(reversed(trees)):
                    for i, a in enumerate(ingests):
                        done = run_ingest(str(tree / "src"), env, a, force=True)
                        figures.setdefault((name, i), []).append((done.wall, done.cpu))
                print(f"  run {run} done, load average {os.getloadavg()[0]:.2f}", flush=True)
        finally:
            stack.stop(echo=lambda line: None)
            remove(against)
    print(f"\nmedians over {args.runs} run(s) (wall s, CPU s, MB/s, MB/s per core):")
    for i, a in enumerate(ingests):
        mb = size_of(a) / 1e6
        line = f"{' '.join(a)[:60]:<60} {mb:6.1f} MB"
        med = {}
        for name, _ in trees:
            wall = statistics.median(w for w, _ in figures[(name, i)])
            cpu = statistics.median(c for _, c in figures[(name, i)])
            med[name] = (wall, cpu)
            line += f" | {name}: {wall:5.2f} s {cpu:5.2f} CPU-s {mb / wall:5.2f} MB/s {mb / cpu:5.2f}/core"
        if args.against:
            line += f" | CPU {med['this tree'][1] / med[args.against][1]:.2f}x"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
