"""`install`, `up`, `down`, `status`: the local stack's lifecycle."""

from __future__ import annotations

import argparse

from fleetperf import config
from fleetperf.cli.common import EPILOG


def cmd_install(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack import install

    install.install_all(s)
    print("runtimes cached under", s.cache_dir)
    return 0


def cmd_up(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import ORDER, LocalStack

    only = tuple(args.only.split(",")) if args.only else ORDER
    print(f"starting local stack (state in {s.state_dir})")
    LocalStack(s).start(only)
    return 0


def cmd_down(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import LocalStack

    LocalStack(s).stop()
    print("stack stopped")
    return 0


def cmd_status(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.stack.local import LocalStack

    for name, pid, where, log in LocalStack(s).status():
        state = f"running (pid {pid})" if pid else "stopped"
        print(f"{name:<10} {state:<20} {where}\n{'':<10} log: {log}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    def add(name: str, func, help_: str) -> argparse.ArgumentParser:  # noqa: ANN001
        p = sub.add_parser(name, help=help_, description=help_, epilog=EPILOG)
        p.set_defaults(func=func)
        return p

    add("install", cmd_install, "fetch Kafka, Apicurio Registry and build the Flink job (cached)")
    up = add("up", cmd_up, "start the local stack: Kafka, registry, Flink job, warehouse (sink + Superset)")
    up.add_argument("--only", help="comma-separated subset of kafka,registry,flink,warehouse")
    add("down", cmd_down, "stop the local stack (no process is left behind)")
    add("status", cmd_status, "what runs, where, and its log file")
