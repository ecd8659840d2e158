"""What the benchmarks that compare this tree with an earlier commit (`--against REV`) share: REV
checked out beside (a git worktree, its package compiled apart; nothing of it touches ./.venv), a
child process run with a tree's package, reporting its figures as one marked JSON line, and a
`fleetperf ingest` run with a tree's package."""

from __future__ import annotations

import argparse
import json
import resource
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parent.parent


def checkout(rev: str, tmp: Path) -> Path:
    """REV's tree under tmp (remove it with `remove`); the Flink job's jar is this tree's, built
    once (the benchmarks compare the Python side)."""
    tree = tmp / "against"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", "-q", str(tree), rev], check=True)
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(tree / "src")], check=True, stdout=subprocess.DEVNULL)
    jar = ROOT / "stream-jobs" / "target"
    if jar.is_dir() and not (tree / "stream-jobs" / "target").exists():
        (tree / "stream-jobs" / "target").symlink_to(jar)
    return tree


def remove(tree: Path | None) -> None:
    if tree is not None:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)


def run_child(script: Path, tree: Path, argv: list[str], mark: str, env: dict[str, str], timeout: float) -> dict:
    """`script --child argv` with `tree`'s package first on the path; its figures (the line after
    `mark`), checked to come from that tree's package."""
    out = subprocess.run(
        [sys.executable, str(script), "--child", *argv],
        env={**env, "PYTHONPATH": str(tree / "src")},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    for line in out.stdout.splitlines():
        if line.startswith(mark):
            figures = json.loads(line[len(mark) :])
            if Path(figures["package"]).resolve() != (tree / "src" / "fleetperf").resolve():
                raise SystemExit(f"the child ran {figures['package']}, not {tree}'s package")
            return figures
    raise SystemExit(f"the run in {tree} failed:\n{out.stdout[-2000:]}\n{out.stderr[-4000:]}")


class Ingested(NamedTuple):
    wall: float
    cpu: float  # of the ingest process, librdkafka's threads included
    summary: str  # its last line of output (files, records, MB/s)


def run_ingest(src: str, env: dict[str, str], args: list[str], force: bool = False) -> Ingested:
    """One `fleetperf ingest` of `args` in a process of its own with the package under `src` (as
    users run it, start-up included); exit status 3 (some records were bad input, dead letters, the
    rest published) counts as done, any other than 0 ends the benchmark."""
    argv = [
        sys.executable,
        "-m",
        "fleetperf.cli.main",
        "ingest",
        "--no-progress",
        *(["--force"] if force else []),
        *args,
    ]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    out = subprocess.run(argv, env={**env, "PYTHONPATH": src}, capture_output=True, text=True, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if out.returncode not in (0, 3):
        raise SystemExit(f"ingest {args} with {src} exited {out.returncode}:\n{out.stderr[-3000:]}")
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return Ingested(wall, cpu, (out.stdout.strip().splitlines() or [""])[-1])


def backlog_arguments(ap: argparse.ArgumentParser) -> None:
    """--dir (nmon files) or --ingest ARGS (repeatable, any source): what a benchmark publishes."""
    ap.add_argument("--dir", type=Path, help="nmon files to publish (e.g. from ./fleetperf simulate --sources nmon)")
    ap.add_argument(
        "--ingest",
        action="append",
        default=[],
        metavar="ARGS",
        help="the arguments of one `fleetperf ingest` to publish instead of --dir (repeatable; e.g. the commands "
        "`./fleetperf simulate --out DIR` prints, for a backlog of every source)",
    )


def backlog_ingests(ap: argparse.ArgumentParser, args: argparse.Namespace) -> list[list[str]] | None:
    """Each --ingest's arguments, or None for --dir; exactly one of the two must be given."""
    if (args.dir is None) == (not args.ingest):
        ap.error("give --dir or --ingest")
    return [shlex.split(a) for a in args.ingest] or None
