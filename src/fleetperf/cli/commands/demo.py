"""`demo`: install, start the stack, simulate the whole fleet (every source), ingest it, serve the dashboards."""

from __future__ import annotations

import argparse
import shutil
import time
from datetime import UTC, datetime, timedelta

from fleetperf import config
from fleetperf.cli.commands.simulate import ALL_DAYS, ALL_INTERVAL
from fleetperf.cli.common import EPILOG

# incidents of the injected faults (rule flags), per platform: what the demo shows on the Anomalies dashboard
INCIDENTS_SQL = (
    "SELECT f.platform AS platform, i.rule AS rule, count() AS incidents FROM incidents AS i"
    " LEFT JOIN fleet_entities AS f ON f.entity_id = i.entity_id WHERE i.kind = 'rule'"
    " GROUP BY platform, rule ORDER BY platform, rule"
)


def cmd_demo(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.cli.sql_client import query, wait_stable
    from fleetperf.demo.fleet import ingest_fleet, simulate_fleet
    from fleetperf.stack import install
    from fleetperf.stack.local import LocalStack

    t0 = time.monotonic()
    print("1/5 installing runtimes (cached after the first run)")
    install.install_all(s)
    print("2/5 starting the local stack")
    LocalStack(s).start()
    out = s.state_dir / "demo" / "fleet"
    shutil.rmtree(out, ignore_errors=True)  # a re-run writes the history up to its own now
    # the history ends now, on an interval boundary: the newest data is what dashboards open on
    now = datetime.now(UTC).replace(second=0, microsecond=0)
    end = now - timedelta(minutes=now.minute % max(1, args.interval // 60))
    fleet = simulate_fleet(out, end - timedelta(days=args.days), args.days, args.interval, args.seed)
    print(
        f"3/5 simulated {len(fleet.files)} files, {args.days:g} days at {args.interval} s: nmon, sadc, bonding,"
        " hpmstat, entstat, z/VM monitor, Toolkit reports; injected faults:"
    )
    for f in fleet.faults:
        print(f"      {f.platform:<12} {f.entity_id:<18} {f.rule:<17} {f.start:%Y-%m-%d %H:%M} +{f.minutes} min")
    summary = ingest_fleet(s, fleet, progress=not args.no_progress)
    print(f"4/5 ingested: {summary.line()}")
    print("5/5 waiting for Flink's windows and flags to land in ClickHouse")
    wait_stable(s, "SELECT count() FROM derived_metrics_v", timeout=args.wait, settle=10)
    wait_stable(s, "SELECT count() FROM incidents", timeout=60, settle=10)
    print("\nrows per table:")
    for table in ("cpu_samples_v", "derived_metrics_v", "dead_letters", "host_cpu_minute", "incidents"):
        print(f"  {table:<20} {query(s, f'SELECT count() FROM {table}')[1][0][0]:>10}")
    print("\nrule incidents per platform:")
    for platform, rule, n in query(s, INCIDENTS_SQL)[1]:
        print(f"  {platform:<12} {rule:<20} {n:>4}")
    print(f"\nready in {time.monotonic() - t0:.0f}s")
    print(
        f"Superset: {s.superset_url}/superset/dashboard/fleet-overview/  (user {s['superset']['admin_user']}, "
        f"password in {s.state_dir / 'secrets' / 'superset_admin_password'})"
    )
    print('SQL:      ./fleetperf sql "SELECT * FROM incidents ORDER BY started DESC LIMIT 10"')
    print("stop:     ./fleetperf down")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "install, start the stack, simulate the whole fleet, ingest it and serve the dashboards"
    demo = sub.add_parser("demo", help=help_, description=help_, epilog=EPILOG)
    demo.set_defaults(func=cmd_demo)
    demo.add_argument("--days", type=float, default=ALL_DAYS, help=f"history length (default {ALL_DAYS:g})")
    demo.add_argument(
        "--interval", type=int, default=ALL_INTERVAL, help=f"seconds between samples (default {ALL_INTERVAL})"
    )
    demo.add_argument("--seed", type=int, default=1)
    demo.add_argument("--wait", type=float, default=600, help="seconds to wait for the windows (default 600)")
    demo.add_argument("--no-progress", action="store_true")
