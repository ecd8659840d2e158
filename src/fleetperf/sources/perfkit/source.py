"""z/VM Performance Toolkit reports saved as text (FCX112, FCX162, FCX225, FCX126)."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Iterator
from datetime import date, time
from pathlib import Path
from typing import TYPE_CHECKING

from fleetperf import config
from fleetperf.sources.base import TZ, Option, Reading, Source, tz_of

if TYPE_CHECKING:  # the reader is imported when a file is read, not when the registry lists the sources
    from fleetperf.ingest.records import Emitted
    from fleetperf.sources.perfkit.records import Options

ZVM_SYSTEM = Option(
    ("--zvm-system",), {"help": "z/VM system name (default: what the report or the monitor data names)"}
)
OPTIONS = (
    TZ,
    ZVM_SYSTEM,
    Option(("--cpc",), {"help": "Toolkit FCX126: CPC identity (default: the processor type and model printed)"}),
    Option(("--date",), {"help": "Toolkit: date of the report, YYYY-MM-DD (default: the 'on yyyy/mm/dd' it prints)"}),
    Option(("--at",), {"help": "Toolkit: end of the interval, HH:MM:SS, for reports that print no interval"}),
    Option(
        ("--interval-seconds",),
        {"type": float, "help": "Toolkit: interval length of a log report (needed for one row)"},
    ),
    Option(
        ("--zvm-guest",),
        {"help": "Toolkit FCX162: the guest (userid) of a log saved without its 'Resource Usage Log for User' line"},
    ),
)


def options_of(opts: argparse.Namespace) -> Options:
    from fleetperf.sources.perfkit.records import Options

    day, at = getattr(opts, "date", None), getattr(opts, "at", None)
    return Options(
        system=getattr(opts, "zvm_system", None),
        cpc=getattr(opts, "cpc", None),
        day=date.fromisoformat(day) if day else None,
        at=time.fromisoformat(at) if at else None,
        interval_s=getattr(opts, "interval_seconds", None),
        tz=tz_of(opts),
        guest=getattr(opts, "zvm_guest", None),
        window_s=window_seconds(),
    )


@functools.cache
def window_seconds() -> float:
    """The Flink job's window ([flink] window_seconds, env FLEETPERF__FLINK__WINDOW_SECONDS): guest and
    system samples are cut at its boundaries so that each window holds what was measured in it
    (README, "Time: what a record covers")."""
    return float(config.load()["flink"]["window_seconds"])


class PerfkitSource(Source):
    name = "perfkit"
    summary = "z/VM Performance Toolkit reports as text (FCX112, FCX162, FCX225, FCX126), by their table titles"
    sample_topic = "zvm_guest_samples"
    options = OPTIONS

    def sniff(self, head: bytes, path: Path) -> bool:
        from fleetperf.sources.perfkit import parser

        text = parser._MARKUP.sub("", head.decode("utf-8", "replace"))  # no markup spans lines
        # A report's key words all occur in its header line, so in the text: when no layout's do,
        # no line can start a table. Every file of a directory is sniffed, and the line by line
        # test cost 0.77 ms per file (592 hpmstat/entstat captures: 0.45 s before their own
        # sniffers ran).
        if not any(all(word in text for word in layout.key) for layout in parser.LAYOUTS):
            return False
        return any(parser._table_start(line.strip()) for line in text.splitlines())

    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        from fleetperf.sources.perfkit.records import records_of_file

        return records_of_file(path, options_of(opts))
