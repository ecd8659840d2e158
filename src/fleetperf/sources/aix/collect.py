"""Runner and file modes of the hpmstat and entstat collectors.

Runner: on an AIX host, run the command every `interval` seconds (or once, for cron) and publish
each report. File: read captured output (one report per file, or several in a row).

What the pipeline sees: `from_file` / `from_text` yield the records and, for each line or value
that could not be read, a dead letter (file, line, byte offset); they raise CommandOutputError (the
pipeline's NotThisKind) when nothing of the output can be read: empty, no report, larger than
MAX_FILE_BYTES, an implausible time."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

from fleetperf.ingest import validate
from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.aix import entstat, hpmstat
from fleetperf.sources.aix.errors import CommandOutputError, Problem
from fleetperf.sources.aix.records import hpm_records, net_port_records, report_ends

# a capture of hpmstat or entstat output is a few kB; anything this large is something else
MAX_FILE_BYTES = 64 * 1024 * 1024


def from_text(kind: str, text: str, who: HostIdentity, ts_ms: int, origin: str) -> Iterator[Emitted]:
    """Records of one captured output, and a dead letter per line or value that could not be read.
    ts_ms is the end of the (last) report. Raises CommandOutputError when nothing can be read."""
    if not text.strip():
        raise CommandOutputError(0, f"empty {kind} output", "")
    why = validate.timestamp_problem(ts_ms)
    if why:
        raise CommandOutputError(0, f"capture time {ts_ms} ms is {why}: pass --ts", "")
    if kind == "hpmstat":
        out = hpmstat.read(text)
        problems = list(out.problems)
        for sample, end in zip(out.samples, report_ends(out.samples, ts_ms), strict=True):
            if end is None:
                problems.append(
                    Problem(
                        sample.first_line,
                        sample.first_offset,
                        "report's end time unknown (a report after it prints no execution time): skipped",
                        "",
                    )
                )
        yield from _dead_letters(kind, origin, problems)
        yield from hpm_records(out.samples, who, ts_ms, origin)
        return
    if kind == "entstat":
        report = entstat.read(text)
        yield from _dead_letters(kind, origin, report.problems)
        yield from net_port_records(report, who, ts_ms, origin)
        return
    raise ValueError(f"unknown AIX collector {kind!r}")


def _dead_letters(kind: str, origin: str, problems: list[Problem]) -> Iterator[Emitted]:
    for p in sorted(problems, key=lambda p: p.line):
        yield dead_letter(kind, origin, p.line, p.offset, p.message, p.raw)


def from_file(kind: str, path: Path, who: HostIdentity, ts_ms: int | None = None) -> Iterator[Emitted]:
    """ts_ms: end of the last report of the capture (the CLI's --ts); default: the file's
    modification time (when the capture was written)."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise CommandOutputError(0, f"{path}: {size} bytes, more than any {kind} output ({MAX_FILE_BYTES})", "")
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
        out = subprocess.run(argv, capture_output=True, text=True, errors="replace", check=True).stdout
        yield list(from_text(kind, out, who, int(time.time() * 1000), " ".join(argv)))
        if once:
            return
        time.sleep(max(0.0, interval - (time.time() - started)))
