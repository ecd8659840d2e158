"""Runs a fleetperf command (default: demo) and prints its wall time and the peak resident memory
of each local-stack service (all processes of its process group), sampled every 0.5 s."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]

from fleetperf import config  # noqa: E402


def rss_by_group() -> dict[int, int]:
    """pgid -> summed RSS bytes of its processes."""
    page = os.sysconf("SC_PAGE_SIZE")
    out: dict[int, int] = defaultdict(int)
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            fields = stat[stat.rindex(")") + 2 :].split()
            pgid, rss_pages = int(fields[2]), int(fields[21])
        except (OSError, ValueError, IndexError):
            continue
        out[pgid] += rss_pages * page
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("command", nargs="*", default=["demo", "--no-progress"], help="fleetperf command and flags")
    args = ap.parse_args()
    settings = config.load()
    run_dir = settings.state_dir / "run"
    peaks: dict[str, int] = defaultdict(int)
    peak_total = 0
    done = threading.Event()

    def sample() -> None:
        nonlocal peak_total
        while not done.is_set():
            groups = rss_by_group()
            total = 0
            for pid_file in run_dir.glob("*.pid"):
                try:
                    rss = groups.get(int(pid_file.read_text().strip()), 0)
                except (OSError, ValueError):
                    continue
                peaks[pid_file.stem] = max(peaks[pid_file.stem], rss)
                total += rss
            peak_total = max(peak_total, total)
            done.wait(0.5)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    t0 = time.monotonic()
    result = subprocess.run([str(ROOT / "fleetperf"), *args.command], cwd=ROOT)
    elapsed = time.monotonic() - t0
    time.sleep(1.0)
    done.set()
    sampler.join()
    print(f"\ncommand: ./fleetperf {' '.join(args.command)}  exit {result.returncode}  wall {elapsed:.1f}s")
    print(f"{'service':<12}{'peak RSS MB':>12}")
    for name, rss in sorted(peaks.items()):
        print(f"{name:<12}{rss / 2**20:>12.0f}")
    print(f"{'stack total':<12}{peak_total / 2**20:>12.0f}  (peak of the sum, sampled together)")
    return result.returncode


if __name__ == "__main__":
    sys.exit(main())
