"""`warehouse` and `sink`: the warehouse process and the standalone sink in the foreground."""

from __future__ import annotations

import argparse

from fleetperf import config
from fleetperf.cli.common import EPILOG


def cmd_warehouse(args: argparse.Namespace, s: config.Settings) -> int:
    import os

    from fleetperf.stack.local import LocalStack
    from fleetperf.warehouse import superset_setup

    stack = LocalStack(s)
    superset_setup.prepare(s, stack.superset_env())
    proc = stack.warehouse()
    os.environ.update(proc.env)
    os.execv(proc.argv[0], proc.argv)  # gunicorn in the foreground (containers, systemd)


def cmd_sink(args: argparse.Namespace, s: config.Settings) -> int:
    import logging

    from fleetperf.warehouse.clickhouse import migrate
    from fleetperf.warehouse.sink import Sink, quiet_gc

    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    ch, ran = migrate(s)
    print(f"migrations applied: {ran or 'none needed'}; consuming {', '.join(t.name for t in s.topics.values())}")
    sink = Sink(s, ch)
    quiet_gc()
    try:
        sink.run()
    except KeyboardInterrupt:
        sink.stop()
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "run the warehouse process (sink + SQL endpoint + Superset) in the foreground, e.g. in a container"
    sub.add_parser("warehouse", help=help_, description=help_, epilog=EPILOG).set_defaults(func=cmd_warehouse)
    help_ = "run only the Kafka->ClickHouse sink in the foreground (for a real ClickHouse server)"
    sub.add_parser("sink", help=help_, description=help_, epilog=EPILOG).set_defaults(func=cmd_sink)
