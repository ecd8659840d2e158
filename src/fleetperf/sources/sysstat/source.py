"""sysstat binary data files (saDD, written by sadc) of any format version and byte order."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from fleetperf.sources.base import Option, Reading, Source
from fleetperf.sources.base import Tail as BaseTail

if TYPE_CHECKING:  # the reader is imported when a file is read, not when the registry lists the sources
    from fleetperf.ingest.records import Emitted
    from fleetperf.sources.sysstat import records as sadc
    from fleetperf.sources.sysstat.records import Lines

OPTIONS = (
    Option(("--hz",), {"type": int, "help": "sadc: jiffies per second of the host of a pre-11.7 file (default 100)"}),
    Option(
        ("--sar-version",),
        {
            "help": "sadc: reproduce this sar's definitions, e.g. 12.7.8 (memused); default: those of the sysstat"
            " version that wrote the file"
        },
    ),
    Option(("--sadc-host-id",), {"help": "sadc: host_id for the file's records (default: the nodename it records)"}),
    Option(
        ("--sadc-trust-times",),
        {
            "action": "store_true",
            "help": "sadc: take record times as they are, as sar does (a file known to have mangled times); by"
            " default a record whose time cannot be right is a dead letter",
        },
    ),
)


def options_of(opts: argparse.Namespace) -> sadc.Options:
    from fleetperf.sources.sysstat import records as sadc

    version = getattr(opts, "sar_version", None)
    sar = tuple(int(x) for x in version.split(".")[:3]) if version else None
    return sadc.Options(
        host_id=getattr(opts, "sadc_host_id", None),
        hz=getattr(opts, "hz", None),
        trust_times=bool(getattr(opts, "sadc_trust_times", False)),
        **({"sar": sar} if sar else {}),
    )


class SadcSource(Source):
    name = "sadc"
    summary = "sysstat binary files (saDD) written by sadc, any version, recognised by their magic number"
    sample_topic = "sysstat_samples"
    article = "an"
    name_hints = ("sa[0-9][0-9]", "sa[0-9][0-9][0-9][0-9][0-9][0-9][0-9][0-9]")
    options = OPTIONS

    def sniff(self, head: bytes, path: Path) -> bool:
        return head[:2] in (b"\x96\xd5", b"\xd5\x96")  # sysstat's file magic, either byte order

    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        from fleetperf.sources.sysstat.records import records_of_file

        # the summary counts the figures: each sysstat_samples record carries their number (Emitted.values);
        # the native path's come Avro-encoded (records.Collector.avro)
        return records_of_file(path, options_of(opts), encoded=True)

    def read_lines(self, path: Path, opts: argparse.Namespace, topics: dict[str, str]) -> Iterator[Emitted | Lines]:
        """As `read`, for `fleetperf parse`: on the native path the sysstat_samples come as Lines, their JSON
        lines already written (topics: topic key -> the name each message carries)."""
        from fleetperf.sources.sysstat.records import records_of_file

        return records_of_file(path, options_of(opts), topics)

    def tail(self, path: Path, opts: argparse.Namespace) -> BaseTail:
        from fleetperf.sources.sysstat.records import Tail

        return SadcTail(Tail(path, options_of(opts)))


class SadcTail(BaseTail):
    def __init__(self, tail: sadc.Tail) -> None:
        self.inner = tail

    @property
    def host_id(self) -> str | None:
        return self.inner.collector.host_id if self.inner.collector else None

    def poll(self) -> Iterator[Emitted]:
        return self.inner.poll()

    def finish(self) -> Iterator[Emitted]:
        return self.inner.finish()
