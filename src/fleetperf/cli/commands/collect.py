"""`fleetperf collect`: live collectors of the sources that have one (hpmstat, entstat, the z/VM
CP monitor) and Linux bonding state, published as they report."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from fleetperf import config
from fleetperf.cli.common import EPILOG
from fleetperf.sources import registry

HELP = (
    "run a live collector and publish: hpmstat / entstat on this AIX host (or captured output with --file),"
    " the z/VM CP monitor from /dev/monreader, Linux bonding state (every source of the registry that has one)"
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("collect", help=HELP, description=HELP, epilog=EPILOG)
    p.set_defaults(func=run)
    inner = p.add_subparsers(dest="kind", required=True, metavar="KIND")
    for source in registry.SOURCES.values():
        if not source.can_collect():
            continue
        sp = inner.add_parser(source.name, help=source.summary, description=source.summary, epilog=EPILOG)
        registry.add_options(sp, [source], collect=True)
        if not _collects_files(source):
            sp.add_argument("--file", nargs="+", help="captured output instead of running the command (read as files)")


def _collects_files(source: registry.Source) -> bool:
    """A collector whose own --file is a live capture (the z/VM monitor stream) reads it itself."""
    return any("--file" in option.flags for option in source.collect_options)


def run(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.kafka_avro import spooling_producer

    # a collector runs for months: while Kafka is away its records wait on disk, it keeps collecting
    producer = spooling_producer(s, f"collect-{args.kind}")
    published = 0

    def publish(records: list) -> None:  # noqa: ANN001
        nonlocal published
        for emitted in records:
            producer.send(emitted.topic_key, emitted.record, key=emitted.key)
        producer.flush()
        published += len(records)
        print(f"published {len(records)} {args.kind} records", flush=True)

    source = registry.get(args.kind)
    if getattr(args, "file", None) and not _collects_files(source):
        from fleetperf.ingest.publish import FILE_ERRORS

        for name in args.file:
            try:
                publish(list(source.read(Path(name), args)))
            except FILE_ERRORS as exc:
                print(f"{name}: {exc}", file=sys.stderr)
                return 1
        return 0
    try:
        for records in source.collect(args):
            publish(records)
    except KeyboardInterrupt:
        pass
    producer.flush()
    producer.close()
    print(f"published {published} records")
    return 0
