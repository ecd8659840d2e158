"""fleetperf: fleet-wide performance history for AIX LPARs, z/VM Linux guests and Linux hosts."""

from __future__ import annotations

import argparse
import sys
import warnings

from fleetperf import config
from fleetperf.cli.commands import collect, demo, ingest, inventory, parse, simulate, sql, stack, test, warehouse
from fleetperf.cli.common import EPILOG

# authlib (pulled in by the registry client) warns about its own httpx shim on every import
warnings.filterwarnings("ignore", message="The httpx module is deprecated")

# in the order `--help` lists them
COMMANDS = (stack, warehouse, ingest, simulate, parse, collect, inventory, sql, demo, test)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="fleetperf", description=__doc__, epilog=EPILOG)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args, config.load())
    except BrokenPipeError:  # output piped into head & co.
        sys.stderr.close()
        return 0
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"fleetperf {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
