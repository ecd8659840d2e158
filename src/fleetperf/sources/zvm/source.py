"""z/VM CP monitor data: MONWRITE files and /dev/monreader captures (batch), /dev/monreader (live)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from fleetperf.ingest.records import Emitted
from fleetperf.sources.base import Option, Reading, Source
from fleetperf.sources.perfkit.source import ZVM_SYSTEM

if TYPE_CHECKING:  # the reader is imported when a file is read, not when the registry lists the sources
    from fleetperf.sources.zvm.monitor_records import Options


UNVERIFIED = Option(
    ("--zvm-unverified",),
    {
        "action": "store_true",
        "help": "zvm: also publish values from monitor fields IBM's text does not confirm (sources/zvm/README.md)",
    },
)


def options_of(opts: argparse.Namespace) -> Options:
    from fleetperf.sources.zvm.monitor_records import Options

    return Options(system=getattr(opts, "zvm_system", None), unverified=bool(getattr(opts, "zvm_unverified", False)))


class ZvmMonitorSource(Source):
    name = "zvm"
    summary = "z/VM CP monitor data: MONWRITE files and /dev/monreader captures, by their record headers"
    sample_topic = "zvm_guest_samples"
    options = (ZVM_SYSTEM, UNVERIFIED)
    collect_options = (
        ZVM_SYSTEM,
        UNVERIFIED,
        Option(("--device",), {"default": "/dev/monreader", "help": "zvm: the monitor reader device"}),
        Option(("--file",), {"nargs": "+", "help": "a captured monreader stream instead of the device"}),
        Option(("--once",), {"action": "store_true", "help": "with --file: stop at its end"}),
    )

    def sniff(self, head: bytes, path: Path) -> bool:
        """A monreader capture, or a MONWRITE file whose first frames hold domain 1 (monitor
        configuration) records, which every monitor data set begins with."""
        if b"\0" not in head:  # both checks below need zero bytes; text (nmon, reports) has none
            return False
        from fleetperf.sources.zvm import monitor_layouts as lay
        from fleetperf.sources.zvm.monitor import looks_like_monreader

        head = head[: 2 * lay.FRAME_SIZE]
        if looks_like_monreader(head):
            return True
        for start in (0, lay.FRAME_SIZE):
            if len(head) >= start + lay.HEADER_SIZE:
                length = int.from_bytes(head[start : start + 2], "big")
                zeros, domain = head[start + 2 : start + 4], head[start + 4]
                if zeros == b"\0\0" and domain == 1 and lay.HEADER_SIZE <= length <= lay.FRAME_SIZE:
                    return True
        return False

    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        from fleetperf.sources.zvm.monitor_records import records_of_file

        for n, emitted in enumerate(records_of_file(path, options_of(opts)), start=1):
            yield Emitted(emitted.topic_key, emitted.record, emitted.key, snapshot=n)

    def collect(self, opts: argparse.Namespace) -> Iterator[list[Emitted]]:
        from fleetperf.sources.zvm.monitor_live import follow
        from fleetperf.sources.zvm.monitor_records import Collector

        source = opts.file[0] if getattr(opts, "file", None) else opts.device
        collector = Collector(source, options_of(opts))
        batch: list[Emitted] = []
        with open(source, "rb", buffering=0) as handle:
            for emitted in follow(handle, collector, stop_at_end=bool(getattr(opts, "file", None)) and opts.once):
                batch.append(emitted)
                if emitted.topic_key == "zvm_system_samples":  # one per interval: a good moment to flush
                    yield batch
                    batch = []
        if batch:
            yield batch
