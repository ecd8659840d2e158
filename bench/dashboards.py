"""Dashboard load times on the benchmark fleet (default 1,000 hosts x 30 days at 1-minute grain,
ending now), cold (first open after the warehouse started) and warm (second open), in headless
Chromium against the real warehouse process (Superset on embedded chDB). Uses its own state dir
and ports; nothing of the regular stack is touched.

    ./fleetperf install && .venv/bin/python bench/dashboards.py [--hosts 1000] [--days 30]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "src"), str(ROOT)]


def _generate(state: Path, hosts: int, days: int) -> None:
    # in a child process: the engine's data path must be free when the warehouse starts
    start = (datetime.now(UTC) - timedelta(days=days)).strftime("%Y-%m-%d %H:%M:00")
    code = f"""
import time
from fleetperf import config
from fleetperf.warehouse.clickhouse import migrate
from bench.warehouse import generate
ch, _ = migrate(config.load())
print(f"generated in {{generate(ch, {hosts}, {days}, {start!r}):.0f}}s", flush=True)
t0 = time.monotonic()
ch.command("OPTIMIZE TABLE metrics_hourly FINAL")
ch.command("OPTIMIZE TABLE metrics_daily FINAL")
print(f"rollups merged in {{time.monotonic() - t0:.0f}}s", flush=True)
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=os.environ | {"PYTHONPATH": str(ROOT)})


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--days", type=int, default=30)
    args = parser.parse_args()

    from tests.providers import _env_overrides

    state = Path(tempfile.mkdtemp(prefix="fleetperf-bench-dash-"))
    os.environ.update(_env_overrides(state))
    from fleetperf import config
    from fleetperf.dashboards.spec import DASHBOARDS
    from fleetperf.stack.local import LocalStack
    from tests.integration.test_dashboards import _driver, _login, _open

    _generate(state, args.hosts, args.days)
    settings = config.load()
    stack = LocalStack(settings)
    rows = []
    try:
        stack.start(only=("warehouse",), echo=lambda line: print(line, flush=True))
        driver = _driver(state)
        try:
            _login(driver, settings)
            for board in DASHBOARDS:
                charts = sum(len(row) for row in board.rows)
                cold, _ = _open(driver, settings, board.slug, charts, timeout=600)
                warm, _ = _open(driver, settings, board.slug, charts, timeout=600)
                rows.append((board.title, charts, cold, warm))
                print(f"{board.title:<18} {charts:>2} charts  cold {cold:6.2f}s  warm {warm:6.2f}s", flush=True)
        finally:
            driver.quit()
    finally:
        stack.stop(echo=lambda line: None)
    print(f"\n{args.hosts} hosts x {args.days} days, {time.strftime('%Y-%m-%d')}")
    print("| dashboard | charts | cold s | warm s |\n|---|---|---|---|")
    for title, charts, cold, warm in rows:
        print(f"| {title} | {charts} | {cold:.2f} | {warm:.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
