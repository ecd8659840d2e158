"""The one way in for every source, in the shape of Telegraf's inputs: a source is a folder under
`fleetperf/sources/` whose `source.py` defines one `Source` subclass, and `sources/registry.py` lists
them. `ingest` (batch and `--follow`), `parse`, `collect` and the CLI's options iterate the registry;
nothing else dispatches on a source's name.

A source says what it is (name, one-line summary, which topic counts its samples), recognises its
files by content (`sniff`, given the first bytes, decompressed), reads a whole file (`read`), may
follow a file that is still being written (`tail`) and may run a live collector (`collect`). Its
options are argparse specs; flags shared by several sources (`--tz`, `--zvm-system`, `--host-id` ...)
are declared by each that uses them and added once. The pipeline (`fleetperf/ingest/pipeline.py`) owns
what all sources share: the ledger, dead letters, progress and summary, exit status.
"""

from __future__ import annotations

import argparse
import gzip
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, tzinfo
from pathlib import Path
from typing import IO, Any, ClassVar
from zoneinfo import ZoneInfo

from fleetperf.ingest.records import Emitted


@dataclass(frozen=True)
class Option:
    """One command-line option of a source: argparse's add_argument arguments."""

    flags: tuple[str, ...]
    kwargs: dict[str, Any] = field(default_factory=dict)

    @property
    def dest(self) -> str:
        return self.kwargs.get("dest") or self.flags[0].lstrip("-").replace("-", "_")


TZ = Option(("--tz",), {"default": "UTC", "help": "time zone of timestamps the file prints without one (default UTC)"})


def tz_of(opts: argparse.Namespace) -> tzinfo:
    name = getattr(opts, "tz", None) or "UTC"
    return UTC if name.upper() == "UTC" else ZoneInfo(name)


@dataclass
class Reading:
    """What the pipeline and a source tell each other about one read of a file."""

    growing: bool = False  # in: written moments ago, may still grow (its end may be incomplete)
    runs: bool = False  # in: the caller takes EncodedRun items beside Emitted (a source may yield them)
    held_back: bool = False  # out: the source kept its end for the next run (the file is not done)


@dataclass
class LineProblem:
    """One line of a text source (AIX command output, Performance Toolkit reports) that could not be
    read, or one value on it that cannot be published: a dead letter naming its line and offset."""

    line: int
    offset: int
    message: str
    raw: str


class FileRejectedError(ValueError):
    """A whole file that is not read (e.g. nmon whose day/month order cannot be told without
    --date-order). `reported`: the source already yielded the dead letter that says why."""

    def __init__(self, reason: str, reported: bool = True) -> None:
        super().__init__(reason)
        self.reported = reported


def open_file(path: Path) -> IO[bytes]:
    """A file's bytes, gzip undone (nmon archives are often .gz): what sources read and the ledger
    hashes to know a file again."""
    with open(path, "rb") as probe:
        magic = probe.read(2)
    return gzip.open(path, "rb") if magic == b"\x1f\x8b" else open(path, "rb")


class Tail(ABC):
    """A file that is still being written: `poll` yields the records completed since the last call."""

    @abstractmethod
    def poll(self) -> Iterator[Emitted]: ...

    def finish(self) -> Iterator[Emitted]:
        """The writer has moved on (rotation): what is left is complete."""
        return iter(())

    @property
    def host_id(self) -> str | None:
        return None


class Source(ABC):
    name: ClassVar[str]
    summary: ClassVar[str]
    # the topic whose records are this source's samples (summary: "nmon snapshots 62, sadc records 30")
    sample_topic: ClassVar[str]
    sample_word: ClassVar[str] = "records"
    # file-name patterns a user expects to be this kind: a file named so that does not sniff as any
    # source is reported ("not an nmon file") instead of skipped quietly in a directory walk
    name_hints: ClassVar[tuple[str, ...]] = ()
    article: ClassVar[str] = "a"  # "not a sadc file" reads wrong: "an"
    options: ClassVar[tuple[Option, ...]] = ()
    collect_options: ClassVar[tuple[Option, ...]] = ()

    @abstractmethod
    def sniff(self, head: bytes, path: Path) -> bool:
        """True if `head` (the file's first bytes, gzip already undone) is this source's content."""

    @abstractmethod
    def read(self, path: Path, opts: argparse.Namespace, reading: Reading | None = None) -> Iterator[Emitted]:
        """Every record of a file in file order, dead letters included. Records carry their position
        (Emitted.snapshot, increasing) so that a re-run skips what Kafka acknowledged. `reading`:
        a file written moments ago may still grow, so what its end holds may be incomplete; a
        source that can tell holds that back for the next run and says so (held_back)."""

    def tail(self, path: Path, opts: argparse.Namespace) -> Tail | None:
        """A live reader of a file still being written, or None: the follower then reads the file as
        a whole once it has stopped growing."""
        return None

    def notice(self) -> str | None:
        """A one-line note before this source's files are read (e.g. a slower fallback in use)."""
        return None

    def can_collect(self) -> bool:
        return type(self).collect is not Source.collect

    def collect(self, opts: argparse.Namespace) -> Iterator[list[Emitted]]:
        """Live collection on this host (runs a command or reads a device); one list per interval."""
        raise NotImplementedError(f"{self.name} has no live collector")

    def matches_name(self, path: Path) -> bool:
        return any(Path(path.name.lower()).match(p) for p in self.name_hints)
