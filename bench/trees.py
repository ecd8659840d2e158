"""What the benchmarks that compare this tree with an earlier commit (`--against REV`) share: REV
checked out beside (a git worktree, its package compiled apart; nothing of it touches ./.venv) and
a child process run with a tree's package, reporting its figures as one marked JSON line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
