"""fleetperf: fleet-wide performance history for AIX LPARs, z/VM Linux guests and Linux hosts."""

from __future__ import annotations

if __name__ == "__main__":  # the command line (not an import): no cyclic GC while the modules load
    import gc

    gc.disable()  # its collections during the imports were ~5 % of a short command's start-up (CPU s)

import argparse
import gc
import importlib
import os
import sys
import warnings
from types import ModuleType

from fleetperf import config
from fleetperf.cli.common import EPILOG

# authlib (pulled in by the registry client) warns about its own httpx shim on every import
warnings.filterwarnings("ignore", message="The httpx module is deprecated")

# Command modules in the order `--help` lists them, with the subcommands each registers. A command
# line naming one subcommand imports only its module: importing all of them (and through them
# every source, the Kafka and registry clients, tqdm) was most of `parse`'s 0.15 s start-up.
# tests/unit/test_cli_parse.py holds this table to what the modules register.
MODULES = {
    "stack": ("install", "up", "down", "status"),
    "warehouse": ("warehouse", "sink"),
    "ingest": ("ingest",),
    "simulate": ("simulate",),
    "parse": ("parse",),
    "collect": ("collect",),
    "inventory": ("inventory",),
    "sql": ("sql", "rollups", "stats"),
    "demo": ("demo",),
    "test": ("test",),
}


def _module(name: str) -> ModuleType:
    return importlib.import_module(f"fleetperf.cli.commands.{name}")


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """Every command's parser, or (argv naming a subcommand) only that command's module's."""
    p = argparse.ArgumentParser(prog="fleetperf", description=__doc__, epilog=EPILOG)
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    first = next((a for a in argv if not a.startswith("-")), None) if argv else None
    chosen = [m for m, subcommands in MODULES.items() if first in subcommands]
    for name in chosen or MODULES:
        _module(name).register(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser(argv).parse_args(argv)
    gc.enable()  # the modules are in: the command's own garbage is collected as usual
    try:
        return args.func(args, config.load())
    except BrokenPipeError:  # output piped into head & co.: stop quietly
        # what is still buffered for stdout would fail again at exit (status 120, "Exception
        # ignored"): stdout points at /dev/null from here on (Python's documented way, signal module)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (FileNotFoundError, RuntimeError) as exc:
        print(f"fleetperf {args.command}: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
