"""`demo`: install, start the stack, simulate a fleet, ingest it, serve the dashboards."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, timedelta

from fleetperf import config
from fleetperf.cli.commands.simulate import _default_start
from fleetperf.cli.common import EPILOG


def cmd_demo(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import query, wait_stable
    from fleetperf.demo.simulate import Fault, simulate
    from fleetperf.ingest.publish import ingest
    from fleetperf.stack import install
    from fleetperf.stack.local import LocalStack

    t0 = time.monotonic()
    print("1/5 installing runtimes (cached after the first run)")
    install.install_all(s)
    print("2/5 starting the local stack")
    LocalStack(s).start()
    out = s.state_dir / "demo" / "nmon"
    start = _default_start(args.hours)
    # one injected anomaly, so the Anomalies dashboard has an incident to show
    fault = Fault("linux000", start + timedelta(hours=args.hours * 0.4), 20, steal=30.0)
    files = simulate(out, args.hosts, start, timedelta(hours=args.hours), args.interval, args.seed, (fault,))
    print(
        f"3/5 simulated {len(files)} nmon files for {args.hosts} hosts, {args.hours} h at {args.interval} s"
        f" (steal 30 % injected on linux000 at {fault.start:%H:%M} for 20 min)"
    )
    summary = ingest(s, [str(out)], UTC, progress=not args.no_progress)
    print(f"4/5 ingested: {summary.line()}")
    print("5/5 waiting for Flink's windows to land in ClickHouse")
    wait_stable(s, "SELECT count() FROM derived_metrics_v", timeout=180)
    print("\nrows per table:")
    for table in ("cpu_samples_v", "derived_metrics_v", "dead_letters", "host_cpu_minute", "incidents"):
        print(f"  {table:<20} {query(s, f'SELECT count() FROM {table}')[1][0][0]:>10}")
    print(f"\nready in {time.monotonic() - t0:.0f}s")
    print(
        f"Superset: {s.superset_url}/superset/dashboard/fleet-overview/  (user {s['superset']['admin_user']}, "
        f"password in {s.state_dir / 'secrets' / 'superset_admin_password'})"
    )
    print('SQL:      ./fleetperf sql "SELECT * FROM host_cpu_minute ORDER BY minute DESC LIMIT 10"')
    print("stop:     ./fleetperf down")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "install, start the stack, simulate a fleet, ingest it and serve the dashboard"
    demo = sub.add_parser("demo", help=help_, description=help_, epilog=EPILOG)
    demo.set_defaults(func=cmd_demo)
    demo.add_argument("--hosts", type=int, default=6)
    demo.add_argument("--hours", type=float, default=2.0)
    demo.add_argument("--interval", type=int, default=10)
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--no-progress", action="store_true")
