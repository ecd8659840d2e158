"""Linux bonding state (/proc/net/bonding/<bond>): aggregation members as host configuration."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from pathlib import Path

from fleetperf.ingest.records import Emitted
from fleetperf.sources.aix.source import identity
from fleetperf.sources.base import Option, Reading, Source

IDENTITY = (
    Option(("--host-id",), {"help": "host identity (default: this host's)"}),
    Option(("--hostname",), {"help": "host name (default: this host's)"}),
)


class BondingSource(Source):
    name = "bonding"
    summary = "Linux bonding driver state (/proc/net/bonding/<bond>): link aggregation members"
    sample_topic = "host_configs"
    options = IDENTITY
    collect_options = (
        *IDENTITY,
        Option(("--proc-dir",), {"default": "/proc/net/bonding", "help": "where the bond files are"}),
        Option(("--interval",), {"type": float, "default": 300, "help": "seconds between reads (default 300)"}),
        Option(("--once",), {"action": "store_true", "help": "read once and exit (for cron)"}),
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return head.startswith(b"Ethernet Channel Bonding Driver")

    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        from fleetperf.ingest.aggregations import bonding_records_of_file

        for n, emitted in enumerate(bonding_records_of_file(path, identity(opts)), start=1):
            yield Emitted(emitted.topic_key, emitted.record, emitted.key, snapshot=n)

    def collect(self, opts: argparse.Namespace) -> Iterator[list[Emitted]]:
        from fleetperf.ingest.aggregations import bonding_records

        who = identity(opts)
        while True:
            started = time.monotonic()
            yield list(bonding_records(Path(opts.proc_dir), who))
            if opts.once:
                return
            time.sleep(max(0.0, opts.interval - (time.monotonic() - started)))
