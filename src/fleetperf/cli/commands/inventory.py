"""`inventory`: a TOML inventory that overrides what hosts report."""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetperf import config
from fleetperf.cli.common import EPILOG


def cmd_inventory(args: argparse.Namespace, s: config.Settings) -> int:
    from fleetperf.ingest.aggregations import inventory_records
    from fleetperf.kafka_avro import AvroProducer

    producer = AvroProducer(s)
    records = list(inventory_records(Path(args.file)))
    for emitted in records:
        producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    producer.flush()
    print(f"published inventory of {len(records)} hosts")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    help_ = "publish a TOML inventory (link aggregation members, attributes) that overrides what hosts report"
    inv = sub.add_parser("inventory", help=help_, description=help_, epilog=EPILOG)
    inv.set_defaults(func=cmd_inventory)
    inv.add_argument("file")
