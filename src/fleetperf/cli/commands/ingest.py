"""`fleetperf ingest`: files, directories and globs of every source the registry knows, to Kafka."""

from __future__ import annotations

import argparse
import sys

from fleetperf import config
from fleetperf.cli.common import EXIT_EPILOG, check_stack, stack_unreachable
from fleetperf.sources import registry

HELP = (
    "publish files of every kind fleetperf reads (nmon, sysstat saDD, Toolkit reports, CP monitor data,"
    " hpmstat/entstat output; recognised by content) to Kafka; skips what was published"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "ingest", help=HELP, description=HELP, epilog=EXIT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    p.set_defaults(func=run)
    p.add_argument("paths", nargs="+", help="files, directories (recursively) or quoted globs")
    p.add_argument("--force", action="store_true", help="publish again even if already published")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument(
        "--follow-symlinks", action="store_true", help="in directories, follow symlinks that lead out of them"
    )
    p.add_argument(
        "--follow",
        action="store_true",
        help="keep publishing as sources write (nmon, sadc: as they grow; other kinds once complete)",
    )
    p.add_argument("--poll", type=float, default=1.0, help="--follow: seconds between checks (default 1)")
    p.add_argument(
        "--finish-idle",
        type=float,
        default=120.0,
        help="--follow: finish a file idle this long once a newer file of its host exists (default 120)",
    )
    p.add_argument("--status-every", type=float, default=60.0, help="--follow: seconds between status lines (0: none)")
    registry.add_options(p, list(registry.SOURCES.values()))


def run(args: argparse.Namespace, s: config.Settings) -> int:
    try:
        check_stack(s)
        if args.follow:
            return _follow(args, s)
        from fleetperf.ingest.publish import ingest

        summary = ingest(
            s,
            args.paths,
            force=args.force,
            progress=not args.no_progress,
            options=args,
            follow_symlinks=args.follow_symlinks,
        )
    except stack_unreachable() as exc:
        return _unreachable(s, exc)
    print(summary.line())
    return summary.exit_code()


def _follow(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.ingest.follow import Follower

    follower = Follower(
        s,
        args.paths,
        poll_seconds=args.poll,
        finish_idle=args.finish_idle,
        options=args,
        status_every=args.status_every,
    )
    print(f"following {', '.join(args.paths)} (Ctrl-C to stop; progress is kept in the ledger)")
    try:
        summary = follower.run()
    except KeyboardInterrupt:
        follower.stop()
        summary = follower.run(max_seconds=0)
    finally:
        follower.close()
    print(summary.line())
    return summary.exit_code()


def _unreachable(s: config.Settings, exc: BaseException) -> int:
    from fleetperf.ingest.publish import EXIT_UNREACHABLE

    print(
        f"fleetperf ingest: the stack is not reachable: {exc}. Start the local stack with ./fleetperf up, or point"
        " FLEETPERF__KAFKA__* / FLEETPERF__REGISTRY__* at yours. Nothing was published; run again.",
        file=sys.stderr,
    )
    return EXIT_UNREACHABLE
