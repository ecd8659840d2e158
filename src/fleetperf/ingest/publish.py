"""The one ingest pipeline every source goes through: files, directories and globs -> the source
that recognises each file's content (sources/registry.py) -> Avro records -> Kafka, resumable.

What all sources share lives here once: which files are taken (content sniffing, symlink policy),
the ledger (only what Kafka acknowledged is recorded), dead letters, the progress bar, the summary
and the exit status."""

from __future__ import annotations

import argparse
import gc
import glob
import os
import sys
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path
from typing import TYPE_CHECKING

from fleetperf.config import Settings
from fleetperf.ingest import end_of_stream, watermark
from fleetperf.ingest.records import Emitted, EncodedRun, dead_letter
from fleetperf.sources import registry
from fleetperf.sources.base import FileRejectedError, Reading, Source, open_file

if TYPE_CHECKING:  # the Kafka and registry clients cost ~0.2 s to import, the ledger (sqlite3) 7 ms:
    # `parse` needs none of them
    from fleetperf.ingest.ledger import Ledger
    from fleetperf.kafka_avro import AvroProducer

CHECKPOINT_SNAPSHOTS = 2000
INTERRUPT_FLUSH_S = 10.0  # Ctrl-C: how long the last checkpoint waits for Kafka
PENDING_FILES = 64
# a file modified this recently may still be written (nmon, sadc append to today's file): its end is
# not taken as complete and the file not as done; `ingest --follow` is the way to read such files live
STILL_WRITTEN_SECONDS = 30.0

# exit status of `ingest` (and `parse`), for scripts and cron; README "Exit status" lists them too
EXIT_OK = 0  # every file read, every record published
EXIT_FILE_FAILED = 1  # a file could not be read at all (not a known kind, empty, unreadable, cut header)
EXIT_USAGE = 2  # wrong command line (argparse's own status)
EXIT_DEAD_LETTERS = 3  # all files read, but some records were bad input: dead letters, the rest published
EXIT_UNREACHABLE = 4  # Kafka or the schema registry could not be reached: nothing was lost, run again
EXIT_CODES = {
    EXIT_OK: "clean: every file read and published",
    EXIT_FILE_FAILED: "a file could not be read at all (named on stderr, a dead letter); the others were published",
    EXIT_USAGE: "wrong command line",
    EXIT_DEAD_LETTERS: "some records were bad input (dead letters, named on stderr); everything else was published",
    EXIT_UNREACHABLE: "Kafka or the schema registry is not reachable (start the stack: ./fleetperf up)",
}


@dataclass
class Summary:
    files: int = 0
    skipped: int = 0
    failed: int = 0
    snapshots: int = 0  # nmon snapshots (kept by name: scripts and tests read it)
    records: int = 0
    values: int = 0
    errors: int = 0
    bytes: int = 0
    seconds: float = 0.0
    samples: Counter[str] = field(default_factory=Counter)  # "nmon snapshots", "sadc records" ...
    error_lines: list[str] = field(default_factory=list)
    failed_files: list[str] = field(default_factory=list)

    def line(self) -> str:
        mb = self.bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        samples = ", ".join(f"{kind} {n}" for kind, n in sorted(self.samples.items())) or "no samples"
        failed = f", failed {self.failed}" if self.failed else ""
        return (
            f"files {self.files} (skipped, already published: {self.skipped}{failed}), {samples}, "
            f"records {self.records}, values {self.values}, errors {self.errors}, "
            f"{mb:.1f} MB in {self.seconds:.1f}s ({rate:.1f} MB/s)"
        )

    def exit_code(self) -> int:
        if self.failed:
            return EXIT_FILE_FAILED
        return EXIT_DEAD_LETTERS if self.errors else EXIT_OK


class FilePublisher:
    """Publishes one file's records, skipping what the ledger says Kafka already acknowledged."""

    def __init__(
        self,
        path: Path,
        source: Source,
        producer: AvroProducer,
        ledger: Ledger,
        summary: Summary,
        quiet: bool = False,
        promises: bool = False,
    ) -> None:
        self.path = path
        self.source = source
        self.producer = producer
        self.ledger = ledger
        self.summary = summary
        self.quiet = quiet
        self.progress = ledger.get(path, _opener)
        self.resume_snapshot = self.progress.last_snapshot
        self.resume_offset = self.progress.last_offset
        self.offset_seen = -1
        self.unsaved = 0
        self.ends = end_of_stream.StreamEnds()
        # live (ingest --follow): sample records carry their stream's watermark promise, so the Flink
        # job closes a window without waiting for the next sample (ingest/watermark.py)
        self.promises = promises and watermark.promises(source.name)

    def already_done(self) -> bool:
        return self.progress.complete and self.progress.size == self.path.stat().st_size

    def restart(self) -> None:
        """--force: publish every record again (the warehouse keys absorb the repeats); the dead
        letters Kafka already has are not sent twice (their table is read by people, not merged)."""
        self.resume_snapshot = 0

    def finish(self, checkpoint: bool = True, complete: bool = True) -> None:
        """The whole file was read; `checkpoint=False` leaves the flush and the ledger to the caller
        (a backfill takes one checkpoint for many files, see PendingCheckpoints). `complete=False`:
        the file may still grow, so a re-run reads it again (and skips what was published)."""
        if complete:  # the file's streams have ended: end-of-stream markers after its last record
            end_of_stream.publish(self.producer, self.ends.markers())
        self.progress.complete = complete
        self.progress.size = self.path.stat().st_size
        if checkpoint:
            self.checkpoint()

    def checkpoint(self) -> None:
        self.producer.flush(timeout=None)  # as long as Kafka is away (see PendingCheckpoints.save)
        self.record()

    def record(self, commit: bool = True) -> None:
        """Save in the ledger how far this file is published; call it after a flush."""
        self.progress.last_offset = max(self.progress.last_offset, self.offset_seen)
        self.ledger.save(self.path, self.progress, _opener, commit=commit)
        self.unsaved = 0

    def send_all(self, records: Iterable[Emitted | EncodedRun]) -> None:
        """Every record, checkpointing every CHECKPOINT_SNAPSHOTS samples (or the first run of
        records that reaches that many: a run is at most one read chunk's snapshots)."""
        for emitted in records:
            if type(emitted) is EncodedRun:
                self.send_run(emitted)
            else:
                self.send(emitted)
            if self.unsaved >= CHECKPOINT_SNAPSHOTS:
                self.checkpoint()

    def send_run(self, run: EncodedRun) -> None:
        """send() of each record of the run, in one loop (records.EncodedRun says why). Only the
        scanner's encoded snapshot records come in runs: no dead letters, and only a batch ingest
        asks for runs, so no watermark promises."""
        resume = self.resume_snapshot
        send_encoded = self.producer.send_encoded
        sample_topic = self.source.sample_topic
        newest = self.progress.last_snapshot
        last = {}  # (topic, key) -> its last record in the run, in order of first appearance
        sent = values = samples = 0
        for record in run.records:
            topic_key, key, snapshot, encoded, n = record
            last[topic_key, key] = record
            if snapshot <= resume:  # as send(): what a resumed run skips still ends its streams
                continue
            send_encoded(topic_key, encoded, key=key)
            sent += 1
            values += n
            if topic_key == sample_topic:
                samples += 1
            if snapshot > newest:
                newest = snapshot
        for topic_key, key, snapshot, encoded, n in last.values():  # a stream's last record is what ends it
            self.ends.see(Emitted(topic_key, {}, key=key, snapshot=snapshot, encoded=encoded, values=n))
        self.summary.records += sent
        self.summary.values += values
        self._count_samples(samples)
        self.progress.last_snapshot = newest

    def _count_samples(self, n: int) -> None:
        """n records of the source's sample topic published (summary, and the next checkpoint)."""
        if n:
            source = self.source
            self.summary.samples[f"{source.name} {source.sample_word}"] += n
            self.unsaved += n
            if source.sample_word == "snapshots":
                self.summary.snapshots += n

    def send(self, emitted: Emitted) -> None:
        self.ends.see(emitted)  # also what a resumed run skips: the file's streams end all the same
        if emitted.snapshot and emitted.snapshot <= self.resume_snapshot:
            return
        if emitted.topic_key == "dead_letters":
            r = emitted.record
            if r["byte_offset"] <= self.resume_offset:
                return
            self.offset_seen = max(self.offset_seen, r["byte_offset"])
            self.summary.errors += 1
            where = f"{r['line']} (byte {r['byte_offset']})" if r["line"] else f"byte {r['byte_offset']}"
            message = f"{r['origin_file']}:{where}: {r['error']}"
            self.summary.error_lines.append(message)
            if not self.quiet:
                print(f"bad input: {message}", file=sys.stderr)
        headers = watermark.headers_of(emitted) if self.promises else None
        if emitted.encoded is not None:
            self.producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key, headers=headers)
        else:
            self.producer.send(emitted.topic_key, emitted.record, key=emitted.key, headers=headers)
        self.summary.records += 1
        self.summary.values += emitted.values
        if emitted.topic_key == self.source.sample_topic:
            self._count_samples(1)
        if emitted.snapshot:
            self.progress.last_snapshot = max(self.progress.last_snapshot, emitted.snapshot)

    def fail(self, error: str, reported: bool = False) -> None:
        """The file could not be read (further): one message, one dead letter (unless the source
        already sent the one that says why); not ledgered as done."""
        error = error.removeprefix(f"{self.path}: ")  # the message names the file once
        file_failed(self.path, self.source.name, error, self.producer, self.summary, self.quiet, letter=not reported)


def file_failed(
    path: Path, origin: str, error: str, producer: AvroProducer, summary: Summary, quiet: bool, letter: bool = True
) -> None:
    """A file that is not read (further): counted, one dead letter (`origin`: the source, or
    "ingest" for a file no source reads), one message now or, under a progress bar, after it."""
    summary.failed += 1
    summary.failed_files.append(f"{path}: {error}")
    if letter:
        producer.send("dead_letters", dead_letter(origin, str(path), 0, 0, error, b"").record, key=str(path))
    if not quiet:
        print(f"cannot read {path}: {error}", file=sys.stderr)


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

    def save(self, timeout: float | None = None) -> None:
        """Flushes, then ledgers the files. By default the flush waits as long as Kafka is away
        (AvroProducer.flush warns once a minute): produce() already blocks on the bounded queue
        while Kafka is down, and a checkpoint that gave up after 60 s ended a backfill whose broker
        was back after 75 s (tests/integration/test_faults.py, docs/faults.md F2)."""
        if not self.files:
            return
        self.producer.flush(timeout=timeout)
        for publisher in self.files:
            publisher.record(commit=False)
        self.ledger.commit()
        self.files.clear()
        self.snapshots = 0


def _opener(p: Path, mode: str = "rb"):  # noqa: ANN202 - the ledger hashes what the source reads
    return open_file(p)


# which files are taken -------------------------------------------------------------------------
@dataclass(frozen=True)
class Candidate:
    path: Path
    explicit: bool  # named by the user (a file or a glob match), not found in a directory walk


def expand(inputs: Iterable[str], follow_symlinks: bool = False) -> Iterator[Candidate]:
    """Files as given; directories recursively; shell-style globs. In a directory walk a symlink is
    followed only when it stays inside the directory given (or with follow_symlinks): a link to a
    secret file elsewhere must not end up in dead letters."""
    for item in inputs:
        matches = [Path(m) for m in sorted(glob.glob(item, recursive=True))] if glob.has_magic(item) else [Path(item)]
        if not matches:
            raise FileNotFoundError(f"no file matches {item}")
        for path in matches:
            if path.is_dir():
                yield from _walk(path, follow_symlinks)
            elif path.exists():
                yield Candidate(path, explicit=True)
            else:
                raise FileNotFoundError(f"no such file: {path}")


def _walk(root: Path, follow_symlinks: bool) -> Iterator[Candidate]:
    top = root.resolve()
    for dirpath, dirnames, filenames in os.walk(root, followlinks=follow_symlinks):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if path.is_symlink() and not follow_symlinks:
                target = path.resolve()
                if not target.is_relative_to(top):
                    note = f"fleetperf: skipped {path}: a symlink out of {root} (--follow-symlinks takes it)"
                    print(note, file=sys.stderr)
                    continue
            if path.is_file():
                yield Candidate(path, explicit=False)


def classify(candidate: Candidate) -> tuple[Source | None, str | None]:
    """(source, None) to read it; (None, reason) to report it as a file that cannot be read;
    (None, None) to pass over it quietly (an unrelated file found in a directory)."""
    path = candidate.path
    try:
        head = registry.head_of(path)
    except OSError as exc:
        return None, f"cannot open: {exc.strerror or exc}"
    source = registry.detect(path, head)
    if source is not None:
        return source, None
    hinted = registry.named_like(path)
    if not candidate.explicit and hinted is None:
        return None, None
    if not head:
        return None, "empty file"
    if hinted is not None:
        return None, f"not {hinted.article} {hinted.name} file (its content is not what {hinted.name} writes)"
    kinds = ", ".join(registry.SOURCES)
    return None, f"not a file of a kind fleetperf reads ({kinds}); see README 'What fleetperf reads'"


def source_options(**values: object) -> argparse.Namespace:
    """Every source option at its default, with `values` set: for callers that are not the CLI."""
    parser = argparse.ArgumentParser(add_help=False)
    registry.add_options(parser, list(registry.SOURCES.values()))
    opts = parser.parse_args([])
    for key, value in values.items():
        setattr(opts, key, value)
    return opts


# the batch pipeline ----------------------------------------------------------------------------
def ingest(
    settings: Settings,
    inputs: Iterable[str],
    tz: tzinfo | None = None,
    force: bool = False,
    progress: bool = True,
    producer: AvroProducer | None = None,
    options: argparse.Namespace | None = None,
    follow_symlinks: bool = False,
) -> Summary:
    opts = options or source_options()
    if tz is not None:
        opts.tz = getattr(tz, "key", None) or str(tz)
    candidates = list(expand(inputs, follow_symlinks))
    from fleetperf.ingest.ledger import Ledger

    ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
    if producer is None:
        from fleetperf.kafka_avro import AvroProducer

        producer = AvroProducer(settings)
    # what is loaded by now outlives the backfill: keep the cyclic collector from walking it again
    # and again while millions of short-lived records pass (a few % of backfill time); unfrozen at
    # the end, so that a long-lived caller's garbage is collectable again. A caller that froze its
    # own objects already (warehouse.sink.quiet_gc) keeps them frozen: unfreeze has no undo.
    frozen_by_us = gc.get_freeze_count() == 0
    if frozen_by_us:
        gc.freeze()
    try:
        return _ingest_files(candidates, opts, force, progress, producer, ledger)
    finally:
        if frozen_by_us:
            gc.unfreeze()


def _ingest_files(
    candidates: list[Candidate],
    opts: argparse.Namespace,
    force: bool,
    progress: bool,
    producer: AvroProducer,
    ledger: Ledger,
) -> Summary:
    summary = Summary()
    started = time.monotonic()
    taken: list[tuple[Path, Source]] = []
    for candidate in candidates:
        source, problem = classify(candidate)
        if source is not None:
            taken.append((candidate.path, source))
        elif problem is not None:
            file_failed(candidate.path, "ingest", problem, producer, summary, quiet=progress)
    if progress:
        for source in {s.name: s for _, s in taken}.values():
            if (note := source.notice()) is not None:
                print(f"fleetperf: {note}", file=sys.stderr)
    total = sum(p.stat().st_size for p, _ in taken)
    pending = PendingCheckpoints(producer, ledger)
    stderr_bar = progress and sys.stderr.isatty()  # frames of a bar are noise in a log file
    from tqdm import tqdm  # on use: 0.03-0.1 s of start-up that `parse` never needs

    with tqdm(total=total, unit="B", unit_scale=True, disable=not stderr_bar, desc="ingest") as bar:
        try:
            for path, source in taken:
                size = path.stat().st_size
                publisher = FilePublisher(path, source, producer, ledger, summary, quiet=progress)
                if force:
                    publisher.restart()
                elif publisher.already_done():
                    summary.skipped += 1
                    bar.update(size)
                    continue
                if _publish_file(publisher, opts):
                    pending.add(publisher)
                else:
                    pending.save()  # what was acknowledged of the failed file, not its completion
                    publisher.checkpoint()
                summary.files += 1
                summary.bytes += size
                bar.update(size)
        except KeyboardInterrupt:
            # what Kafka has by now is kept: the next run continues after it. Bounded: Ctrl-C while
            # Kafka is away must end the run; the files not acknowledged are simply not ledgered
            try:
                pending.save(timeout=INTERRUPT_FLUSH_S)
            except RuntimeError as exc:
                print(f"fleetperf: interrupted; not ledgered (sent again next run): {exc}", file=sys.stderr)
            raise
        pending.save()
        producer.flush(timeout=None)
    summary.seconds = time.monotonic() - started
    if progress:
        for message in summary.error_lines[:20]:
            print(f"bad input: {message}", file=sys.stderr)
        if len(summary.error_lines) > 20:
            print(f"... and {len(summary.error_lines) - 20} more (table dead_letters)", file=sys.stderr)
        for message in summary.failed_files:
            print(f"cannot read {message}", file=sys.stderr)
    return summary


# what a source raises when a whole file cannot be read (bad header, a report missing an option);
# anything else is a bug and is raised
FILE_ERRORS = (ValueError, OSError, EOFError, UnicodeError)


def _publish_file(publisher: FilePublisher, opts: argparse.Namespace) -> bool:
    """Every record of one file, finished but not checkpointed (the caller's PendingCheckpoints);
    False if the file failed part-way (what was sent stays sent and is ledgered, not the file).
    A file modified within STILL_WRITTEN_SECONDS may still be written: its source holds back what
    may be incomplete at its end, and it is not recorded as done, so the next run continues it."""
    reading = Reading(
        growing=time.time() - publisher.path.stat().st_mtime < STILL_WRITTEN_SECONDS, runs=not publisher.promises
    )
    try:
        publisher.send_all(publisher.source.read(publisher.path, opts, reading))
    except FileRejectedError as exc:
        publisher.fail(str(exc), reported=exc.reported)
        return False
    except FILE_ERRORS as exc:
        publisher.fail(str(exc) or type(exc).__name__)
        return False
    publisher.finish(checkpoint=False, complete=not reading.held_back)
    return True
