"""`simulate`: a synthetic fleet for demos, tests and benchmarks: every source fleetperf reads (default),
or nmon files only (`--sources nmon`, with --hosts and --fault)."""

from __future__ import annotations

import argparse
from datetime import datetime, timedelta
from pathlib import Path

from fleetperf import config
from fleetperf.cli.common import EPILOG

ALL_DAYS = 14.0  # the whole fleet's default history: trends are lines, forecasts have bands
ALL_INTERVAL = 300  # 5 minutes: nmon's and sadc's usual cron interval, the Toolkit's log interval
NMON_HOURS, NMON_INTERVAL = 2.0, 10


def cmd_simulate(args: argparse.Namespace, s: config.Settings) -> int:
    mode = args.sources or ("nmon" if args.hosts is not None or args.fault else "all")
    if mode == "all":
        if args.hosts is not None or args.fault:
            print("simulate: --hosts and --fault are for --sources nmon (the whole fleet has its own faults)")
            return 2
        return _all(args)
    from fleetperf.demo.simulate import Fault, simulate

    hours = args.hours if args.hours is not None else NMON_HOURS
    interval = args.interval or NMON_INTERVAL
    hosts = args.hosts if args.hosts is not None else 6
    start = datetime.fromisoformat(args.start) if args.start else _default_start(hours)
    faults = tuple(Fault.parse(text, start) for text in args.fault)
    files = simulate(Path(args.out), hosts, start, timedelta(hours=hours), interval, args.seed, faults)
    size = sum(f.stat().st_size for f in files)
    print(f"wrote {len(files)} nmon files ({size / 1e6:.1f} MB) for {hosts} hosts to {args.out}")
    return 0


def _all(args: argparse.Namespace) -> int:
    from fleetperf.demo.fleet import ingest_commands, simulate_fleet

    days = args.hours / 24 if args.hours is not None else ALL_DAYS
    interval = args.interval or ALL_INTERVAL
    start = datetime.fromisoformat(args.start) if args.start else _default_start(days * 24)
    fleet = simulate_fleet(Path(args.out), start, days, interval, args.seed, args.entstat_days)
    size = sum(f.stat().st_size for f in fleet.files)
    print(f"wrote {len(fleet.files)} files ({size / 1e6:.1f} MB) to {args.out}: {days:g} days at {interval} s")
    print("injected faults (the flag rule each must raise):")
    for f in fleet.faults:
        print(
            f"  {f.platform:<12} {f.source:<8} {f.entity_id:<18} {f.rule:<17} {f.start:%Y-%m-%d %H:%M} +{f.minutes} min"
        )
    print("read it in with:")
    for line in ingest_commands(fleet):
        print(f"  {line}")
    return 0


def _default_start(hours: float) -> datetime:
    now = datetime.now().replace(second=0, microsecond=0)
    return now - timedelta(hours=hours)


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "write a synthetic fleet: every source fleetperf reads (default) or nmon files only"
    description = (
        f"{help_}. The whole fleet (default): two sites with POWER frames (nmon, hpmstat, entstat), IBM Z CPCs"
        " with z/VM (CP monitor MONWRITE files, Performance Toolkit reports) and x86 hosts (sadc files, bonding),"
        f" {ALL_DAYS:g} days at {ALL_INTERVAL} s, one injected fault per platform; it prints the ingest commands."
        f" --sources nmon: nmon files of --hosts hosts, {NMON_HOURS:g} h at {NMON_INTERVAL} s, faults from --fault."
    )
    sim = sub.add_parser("simulate", help=help_, description=description, epilog=EPILOG)
    sim.set_defaults(func=cmd_simulate)
    sim.add_argument("--out", required=True, help="output directory")
    sim.add_argument("--sources", choices=("all", "nmon"), help="every source (default) or nmon files only")
    sim.add_argument("--hosts", type=int, help="--sources nmon: number of hosts (default 6)")
    sim.add_argument(
        "--hours", type=float, help=f"history length (default: {ALL_DAYS:g} days; nmon only: {NMON_HOURS:g} h)"
    )
    sim.add_argument(
        "--interval",
        type=int,
        help=f"seconds between samples (default {ALL_INTERVAL}; nmon only: {NMON_INTERVAL})",
    )
    sim.add_argument("--seed", type=int, default=1)
    sim.add_argument("--start", help="ISO start time (default: now minus the history length)")
    sim.add_argument(
        "--entstat-days",
        type=float,
        default=2.0,
        help="days at the end of the history with entstat captures (one file each; default 2)",
    )
    sim.add_argument(
        "--fault",
        action="append",
        default=[],
        metavar="HOST@MINUTE+MINUTES:steal=N|busy=N",
        help="--sources nmon: inject an anomaly, e.g. linux000@180+40:steal=30 (repeatable; for testing flags)",
    )
