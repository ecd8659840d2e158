"""Batch ingestion: files, directories and globs -> collector -> Avro records -> Kafka, resumable."""

from __future__ import annotations

import gc
import glob
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path

from tqdm import tqdm

from fleetperf.config import Settings
from fleetperf.ingest.ledger import Ledger
from fleetperf.ingest.records import Emitted
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.native_parser import NativeNmonParser
from fleetperf.sources.nmon.parser import NmonParser, open_binary
from fleetperf.sources.perfkit import parser as perfkit
from fleetperf.sources.perfkit.records import Options as PerfkitOptions
from fleetperf.sources.perfkit.records import records_of_file as perfkit_records
from fleetperf.sources.sysstat import records as sadc
from fleetperf.sources.zvm import monitor_records as zvm_monitor

CHECKPOINT_SNAPSHOTS = 2000
PENDING_FILES = 64


@dataclass
class Summary:
    files: int = 0
    skipped: int = 0
    snapshots: int = 0
    records: int = 0
    values: int = 0
    errors: int = 0
    bytes: int = 0
    seconds: float = 0.0
    error_lines: list[str] = field(default_factory=list)

    def line(self) -> str:
        mb = self.bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        return (
            f"files {self.files} (skipped, already published: {self.skipped}), snapshots {self.snapshots}, "
            f"records {self.records}, values {self.values}, errors {self.errors}, "
            f"{mb:.1f} MB in {self.seconds:.1f}s ({rate:.1f} MB/s)"
        )


class FilePublisher:
    """Publishes one file's records, skipping what the ledger says Kafka already acknowledged."""

    def __init__(
        self, path: Path, tz: tzinfo, producer: AvroProducer, ledger: Ledger, summary: Summary, quiet: bool = False
    ) -> None:
        self.path = path
        self.producer = producer
        self.ledger = ledger
        self.summary = summary
        self.quiet = quiet
        self.tz = tz
        self.parser = NmonParser(str(path), tz)  # line by line: live tail
        self.native: NativeNmonParser | None = None  # chunks: backfill
        self.opener = _opener(path)
        self.progress = ledger.get(path, self.opener)
        self.resume_snapshot = self.progress.last_snapshot
        self.resume_offset = self.progress.last_offset
        self.offset_seen = -1
        self.unsaved = 0

    @property
    def host_id(self) -> str:
        return (self.native or self.parser).host_id

    def already_done(self) -> bool:
        return self.progress.complete and self.progress.size == self.path.stat().st_size

    def feed(self, raw: bytes, line_no: int, offset: int) -> None:
        for emitted in self.parser.feed(raw, line_no, offset):
            self.send(emitted)
        self.offset_seen = offset
        if self.unsaved >= CHECKPOINT_SNAPSHOTS:
            self.checkpoint()

    def feed_chunk(self, chunk: bytes) -> None:
        """The next bytes of an nmon file, cut anywhere: the native scanner's way in."""
        if self.native is None:
            self.native = NativeNmonParser(str(self.path), self.tz)
        for emitted in self.native.feed(chunk):
            self.send(emitted)
        self.offset_seen = self.native.last_line_offset
        if self.unsaved >= CHECKPOINT_SNAPSHOTS:
            self.checkpoint()

    def finish(self, checkpoint: bool = True) -> None:
        """The end of the file; `checkpoint=False` leaves the flush and the ledger to the caller
        (a backfill takes one checkpoint for many files, see PendingCheckpoints)."""
        for emitted in (self.native or self.parser).finish():
            self.send(emitted)
        self.progress.complete = True
        self.progress.size = self.path.stat().st_size
        if checkpoint:
            self.checkpoint()

    def checkpoint(self) -> None:
        self.producer.flush()
        self.record()

    def record(self, commit: bool = True) -> None:
        """Save in the ledger how far this file is published; call it after a flush."""
        self.progress.last_offset = max(self.progress.last_offset, self.offset_seen)
        self.ledger.save(self.path, self.progress, self.opener, commit=commit)
        self.unsaved = 0

    def send(self, emitted: Emitted) -> None:
        if emitted.snapshot and emitted.snapshot <= self.resume_snapshot:
            return
        if emitted.topic_key == "dead_letters":
            r = emitted.record
            if r["byte_offset"] <= self.resume_offset:
                return
            self.summary.errors += 1
            message = f"{r['origin_file']}:{r['line']} (byte {r['byte_offset']}): {r['error']}"
            self.summary.error_lines.append(message)
            if not self.quiet:
                print(f"bad input: {message}", file=sys.stderr)
        if emitted.encoded is not None:
            self.producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key)
        else:
            self.producer.send(emitted.topic_key, emitted.record, key=emitted.key)
        self.summary.records += 1
        if emitted.topic_key == "nmon_snapshots":
            self.summary.snapshots += 1
            self.summary.values += emitted.values
            self.unsaved += 1
        elif emitted.topic_key == "sysstat_samples":
            self.summary.values += len(emitted.record["metrics"])
        if emitted.snapshot:
            self.progress.last_snapshot = max(self.progress.last_snapshot, emitted.snapshot)


class PendingCheckpoints:
    """Files a backfill has finished whose ledger entries wait for one flush that covers them all.
    A flush per file made the idempotent producer wait out every file's last request: 15 % of a
    backfill of daily-sized files (bench A/B, 45.7 vs 53.7 MB/s per core). The price is the bound
    on what a crash re-sends: the files finished since the last checkpoint, at most
    CHECKPOINT_SNAPSHOTS snapshots or PENDING_FILES files (within a file the bound was and is
    CHECKPOINT_SNAPSHOTS); the warehouse keys absorb the repeats."""

    def __init__(self, producer: AvroProducer, ledger: Ledger) -> None:
        self.producer = producer
        self.ledger = ledger
        self.files: list[FilePublisher] = []
        self.snapshots = 0

    def add(self, publisher: FilePublisher) -> None:
        self.files.append(publisher)
        self.snapshots += publisher.unsaved
        if self.snapshots >= CHECKPOINT_SNAPSHOTS or len(self.files) >= PENDING_FILES:
            self.save()

    def save(self) -> None:
        if not self.files:
            return
        self.producer.flush()
        for publisher in self.files:
            publisher.record(commit=False)
        self.ledger.commit()
        self.files.clear()
        self.snapshots = 0


def _opener(path: Path):  # noqa: ANN202
    return lambda p, mode: open_binary(p)


def expand(inputs: Iterable[str]) -> Iterator[Path]:
    """Files as given; directories recursively (*.nmon, *.nmon.gz, sysstat saDD files and Performance
    Toolkit reports); shell-style globs."""
    for item in inputs:
        matches = [Path(m) for m in sorted(glob.glob(item, recursive=True))] if glob.has_magic(item) else [Path(item)]
        if not matches:
            raise FileNotFoundError(f"no file matches {item}")
        for path in matches:
            if path.is_dir():
                yield from sorted(p for p in path.rglob("*") if p.is_file() and _collectable(p))
            elif path.exists():
                yield path
            else:
                raise FileNotFoundError(f"no such file: {path}")


def _collectable(path: Path) -> bool:
    return ".nmon" in path.name or sadc.is_sadc_file(path) or zvm_monitor.sniff(path) or perfkit.sniff(path)


def ingest(
    settings: Settings,
    inputs: Iterable[str],
    tz: tzinfo,
    force: bool = False,
    progress: bool = True,
    producer: AvroProducer | None = None,
    perfkit_options: PerfkitOptions | None = None,
    sadc_options: sadc.Options | None = None,
) -> Summary:
    files = list(expand(inputs))
    if progress and not native_parser.available() and any(".nmon" in p.name for p in files):
        print("fleetperf: native nmon scanner not built; nmon goes through the slower Python parser", file=sys.stderr)
    ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
    producer = producer or AvroProducer(settings)
    # what is loaded by now outlives the backfill: keep the cyclic collector from walking it again
    # and again while millions of short-lived records pass (a few % of backfill time); unfrozen at
    # the end, so that a long-lived caller's garbage is collectable again
    gc.freeze()
    try:
        return _ingest_files(files, tz, force, progress, producer, ledger, perfkit_options, sadc_options)
    finally:
        gc.unfreeze()


def _ingest_files(
    files: list[Path],
    tz: tzinfo,
    force: bool,
    progress: bool,
    producer: AvroProducer,
    ledger: Ledger,
    perfkit_options: PerfkitOptions | None,
    sadc_options: sadc.Options | None,
) -> Summary:
    summary = Summary()
    started = time.monotonic()
    total = sum(p.stat().st_size for p in files)
    pending = PendingCheckpoints(producer, ledger)
    with tqdm(total=total, unit="B", unit_scale=True, disable=not progress, desc="ingest") as bar:
        try:
            for path in files:
                size = path.stat().st_size
                publisher = FilePublisher(path, tz, producer, ledger, summary, quiet=progress)
                if force:
                    publisher.resume_snapshot, publisher.resume_offset = 0, -1
                elif publisher.already_done():
                    summary.skipped += 1
                    bar.update(size)
                    continue
                _publish_file(publisher, tz, perfkit_options, sadc_options)
                pending.add(publisher)
                summary.files += 1
                summary.bytes += size
                bar.update(size)
        except KeyboardInterrupt:
            pending.save()  # what Kafka has by now is kept: the next run continues after it
            raise
        pending.save()
    summary.seconds = time.monotonic() - started
    if progress:
        for message in summary.error_lines[:20]:
            print(f"bad input: {message}", file=sys.stderr)
        if len(summary.error_lines) > 20:
            print(f"... and {len(summary.error_lines) - 20} more (table dead_letters)", file=sys.stderr)
    return summary


def _publish_file(
    publisher: FilePublisher,
    tz: tzinfo,
    perfkit_options: PerfkitOptions | None,
    sadc_options: sadc.Options | None,
) -> None:
    """Every record of one file, finished but not checkpointed (the caller's PendingCheckpoints)."""
    path = publisher.path
    whole = _whole_file_records(path, perfkit_options or PerfkitOptions(tz=tz), sadc_options or sadc.Options())
    if whole is not None:
        publish_complete(publisher, whole)
    elif native_parser.available():
        with open_binary(path) as handle:
            while chunk := handle.read(native_parser.CHUNK):
                publisher.feed_chunk(chunk)
        publisher.finish(checkpoint=False)
    else:
        offset = 0
        with open_binary(path) as handle:
            for line_no, raw in enumerate(handle, start=1):
                publisher.feed(raw, line_no, offset)
                offset += len(raw)
        publisher.finish(checkpoint=False)


def _whole_file_records(
    path: Path, report_options: PerfkitOptions, sadc_options: sadc.Options
) -> Iterable[Emitted] | None:
    """Records of a file read as a whole (sysstat, CP monitor data, Toolkit reports), or None for an
    nmon file, which is read line by line."""
    if sadc.is_sadc_file(path):
        return sadc.records_of_file(path, sadc_options)
    if ".nmon" in path.name:
        return None
    if zvm_monitor.sniff(path):
        return _numbered(zvm_monitor.records_of_file(path, zvm_monitor.Options(system=report_options.system)))
    if perfkit.sniff(path):
        return perfkit_records(path, report_options)
    return None


def _numbered(records: Iterable[Emitted]) -> Iterator[Emitted]:
    """Positions for resuming a file read as a whole: the n-th record it makes."""
    for n, emitted in enumerate(records, start=1):
        yield Emitted(emitted.topic_key, emitted.record, emitted.key, snapshot=n)


def publish_complete(publisher: FilePublisher, records: Iterable[Emitted]) -> None:
    """All records of a file read as a whole (a file is complete when written; after a crash,
    records acknowledged before it are skipped by their position)."""
    for emitted in records:
        publisher.send(emitted)
    publisher.finish(checkpoint=False)
