"""Runner and file modes of the hpmstat and entstat collectors.

Runner: on an AIX host, run the command every `interval` seconds (or once, for cron) and publish
each report. File: read captured output (one report per file, or several in a row)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.records import Emitted
from fleetperf.sources.aix import entstat, hpmstat
from fleetperf.sources.aix.records import hpm_records, net_port_records


def from_text(kind: str, text: str, who: HostIdentity, ts_ms: int, origin: str) -> Iterator[Emitted]:
    """Records of one captured output; raises the parser's error (with line number) on bad text."""
    if kind == "hpmstat":
        return hpm_records(hpmstat.parse(text), who, ts_ms, origin)
    if kind == "entstat":
        return net_port_records(entstat.parse(text), who, ts_ms, origin)
    raise ValueError(f"unknown AIX collector {kind!r}")


def from_file(kind: str, path: Path, who: HostIdentity, ts_ms: int | None = None) -> Iterator[Emitted]:
    """ts defaults to the file's modification time (when the capture was written)."""
    stamp = ts_ms if ts_ms is not None else int(path.stat().st_mtime * 1000)
    return from_text(kind, path.read_text(errors="replace"), who, stamp, str(path))


def command(kind: str, adapter: str, group: int, seconds: int) -> list[str]:
    if kind == "hpmstat":
        return ["hpmstat", "-r", "-g", str(group), str(seconds)]
    return ["entstat", "-d", adapter]


def run(kind: str, argv: list[str], who: HostIdentity, interval: float, once: bool) -> Iterator[list[Emitted]]:
    """Yields the records of each run; hpmstat itself counts for its own duration."""
    while True:
        started = time.time()
        out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
        yield list(from_text(kind, out, who, int(time.time() * 1000), " ".join(argv)))
        if once:
            return
        time.sleep(max(0.0, interval - (time.time() - started)))
