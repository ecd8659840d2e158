"""AIX command output: hpmstat (PMU counters, SLB/ERAT misses) and entstat (EtherChannel/LACP ports).
Two sources in one folder because they share the error type, the records and the command runner."""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from fleetperf.ingest.records import Emitted
from fleetperf.sources.base import Option, Reading, Source

if TYPE_CHECKING:  # the readers are imported when a file is read, not when the registry lists the sources
    from fleetperf.ingest.identity import HostIdentity

IDENTITY = (
    Option(("--host-id",), {"help": "hpmstat/entstat: host identity (default: this host's <serial>-<lpar id>)"}),
    Option(("--hostname",), {"help": "hpmstat/entstat: host name (default: this host's)"}),
    Option(
        ("--ts",),
        {
            "help": "hpmstat/entstat: ISO time a captured output ended, i.e. the end of its last report (earlier"
            " reports are placed by their wall clock times; default: the file's modification time)"
        },
    ),
)
INTERVAL = (
    Option(("--interval",), {"type": float, "default": 300, "help": "seconds between runs (default 300)"}),
    Option(("--once",), {"action": "store_true", "help": "run once and exit (for cron)"}),
)


def identity(opts: argparse.Namespace) -> HostIdentity:
    from fleetperf.ingest.identity import HostIdentity

    host_id, hostname = getattr(opts, "host_id", None), getattr(opts, "hostname", None)
    if host_id or hostname:
        return HostIdentity(host_id or hostname, hostname or host_id)
    return _local_identity(opts)


# This host's identity, looked up at most once a minute per run (kept on the run's options):
# `read` asks for it once per file, and each lookup forks `uname -u` and `uname -L`: 1184 forks
# for 592 captures, 1.6 of the 3.0 CPU-s (and 3.3 of 5.7 s wall) reading them took without
# --host-id. A minute still follows a partition moved to another frame (Live Partition Mobility
# changes `uname -u`) in a long-running ingest; another run looks it up afresh.
_IDENTITY_TTL_S = 60.0


def _local_identity(opts: argparse.Namespace) -> HostIdentity:
    from fleetperf.ingest.identity import local_identity

    now = time.monotonic()
    cached = getattr(opts, "_aix_local_identity", None)
    if cached is None or now - cached[0] >= _IDENTITY_TTL_S:
        cached = (now, local_identity())
        try:
            opts._aix_local_identity = cached  # noqa: SLF001 - the run's own cache
        except AttributeError:  # options that take no attributes: looked up every time, as before
            pass
    return cached[1]


def ts_ms(opts: argparse.Namespace) -> int | None:
    ts = getattr(opts, "ts", None)
    return int(datetime.fromisoformat(ts).timestamp() * 1000) if ts else None


class _AixCommand(Source):
    kind: ClassVar[str]
    options = IDENTITY

    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        from fleetperf.sources.aix import collect

        records = collect.from_file(self.kind, path, identity(opts), ts_ms(opts))
        for n, emitted in enumerate(records, start=1):
            yield Emitted(emitted.topic_key, emitted.record, emitted.key, snapshot=n)

    def collect(self, opts: argparse.Namespace) -> Iterator[list[Emitted]]:
        from fleetperf.sources.aix import collect

        argv = collect.command(
            self.kind, getattr(opts, "adapter", "ent0"), getattr(opts, "group", 10), getattr(opts, "seconds", 60)
        )
        return collect.run(self.kind, argv, identity(opts), opts.interval, opts.once)


class HpmstatSource(_AixCommand):
    name = "hpmstat"
    kind = "hpmstat"
    summary = "AIX `hpmstat -r -g N` output (PMU counter groups), by its report fields and PM_ counters"
    sample_topic = "hpm_samples"
    collect_options = (
        *IDENTITY,
        *INTERVAL,
        Option(("--group",), {"type": int, "default": 10, "help": "hpmstat: counter group (10 = SLB misses)"}),
        Option(("--seconds",), {"type": int, "default": 60, "help": "hpmstat: counting time per report"}),
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        from fleetperf.sources.aix import hpmstat

        return hpmstat.sniff(head)


class EntstatSource(_AixCommand):
    name = "entstat"
    kind = "entstat"
    summary = "AIX `entstat -d` output (EtherChannel ports, LACP state), by its ETHERNET STATISTICS blocks"
    sample_topic = "net_port_samples"
    collect_options = (
        *IDENTITY,
        *INTERVAL,
        Option(("--adapter",), {"default": "ent0", "help": "entstat: adapter, e.g. the EtherChannel ent2"}),
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        return b"ETHERNET STATISTICS (" in head
