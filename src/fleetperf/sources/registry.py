"""Every source fleetperf reads, in the order files are sniffed (most specific content first).
Adding a source: a folder with a `source.py` defining a `Source` subclass, and one line here."""

from __future__ import annotations

import argparse
import gzip
import zlib
from pathlib import Path

from fleetperf.sources.aix.source import EntstatSource, HpmstatSource
from fleetperf.sources.base import Option, Source, open_file
from fleetperf.sources.bonding.source import BondingSource
from fleetperf.sources.nmon.source import NmonSource
from fleetperf.sources.perfkit.source import PerfkitSource
from fleetperf.sources.sysstat.source import SadcSource
from fleetperf.sources.zvm.source import ZvmMonitorSource

# binary magics first, then the text formats, whose sniffers look for distinct markers
SOURCES: dict[str, Source] = {
    s.name: s
    for s in (
        SadcSource(),
        ZvmMonitorSource(),
        NmonSource(),
        PerfkitSource(),
        HpmstatSource(),
        EntstatSource(),
        BondingSource(),
    )
}
HEAD_BYTES = 65536  # enough for nmon's AAA block, two monitor frames, a Toolkit report's title


def get(name: str) -> Source:
    return SOURCES[name]


def head_of(path: Path, size: int = HEAD_BYTES) -> bytes:
    """The first bytes of a file, gzip undone; a .gz too damaged to inflate gives nothing."""
    with open_file(path) as handle:
        try:
            return handle.read(size)
        except (gzip.BadGzipFile, EOFError, zlib.error):
            return b""


def detect(path: Path, head: bytes | None = None) -> Source | None:
    """The source whose content this file holds, or None."""
    head = head_of(path) if head is None else head
    if not head:
        return None
    for source in SOURCES.values():
        if source.sniff(head, path):
            return source
    return None


def named_like(path: Path) -> Source | None:
    """The source a file's name suggests (to say 'not an nmon file' rather than skip it)."""
    return next((s for s in SOURCES.values() if s.matches_name(path)), None)


def add_options(parser: argparse.ArgumentParser, sources: list[Source], collect: bool = False) -> None:
    """Every option of the given sources, each flag once (shared flags such as --tz, --zvm-system)."""
    seen: set[str] = set()
    for source in sources:
        specs: tuple[Option, ...] = source.collect_options if collect else source.options
        fresh = [o for o in specs if o.flags[0] not in seen]
        if not fresh:
            continue
        group = parser.add_argument_group(f"{source.name} options")
        for option in fresh:
            group.add_argument(*option.flags, **option.kwargs)
            seen.add(option.flags[0])
