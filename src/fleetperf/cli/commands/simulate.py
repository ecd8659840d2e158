"""`simulate`: a synthetic fleet of nmon files for demos and benchmarks."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from pathlib import Path

from fleetperf import config
from fleetperf.cli.common import EPILOG


def cmd_simulate(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.demo.simulate import Fault, simulate

    start = datetime.fromisoformat(args.start) if args.start else _default_start(args.hours)
    faults = tuple(Fault.parse(text, start) for text in args.fault)
    files = simulate(Path(args.out), args.hosts, start, timedelta(hours=args.hours), args.interval, args.seed, faults)
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} nmon files ({size / 1e6:.1f} MB) for {args.hosts} hosts to {args.out}")
    return 0


def _default_start(hours: float) -> datetime:
    now = datetime.now().replace(second=0, microsecond=0)
    return now - timedelta(hours=hours)


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "write a synthetic fleet of nmon files"
    sim = sub.add_parser("simulate", help=help_, description=help_, epilog=EPILOG)
    sim.set_defaults(func=cmd_simulate)
    sim.add_argument("--out", required=True, help="output directory")
    sim.add_argument("--hosts", type=int, default=6)
    sim.add_argument("--hours", type=float, default=2.0)
    sim.add_argument("--interval", type=int, default=10, help="seconds between snapshots")
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--start", help="ISO start time (default: now minus --hours)")
    sim.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="HOST@MINUTE+MINUTES:steal=N|busy=N",
        help="inject an anomaly, e.g. linux000@180+40:steal=30 (repeatable; for testing flags)",
    )
