"""Live: publish what sources write while they write it, for every source of the registry.

A file whose source has a live reader (`Source.tail`: nmon, sadc) is followed as it grows; a
file of any other kind (a Toolkit report, a MONWRITE file, captured command output) is read as a
whole once it has not grown for `settle` seconds. Directories are re-scanned for new files (nmon's
daily rotation starts a new file); a followed file that has not grown for `finish_idle` seconds
while a newer file of the same host exists is finished and dropped. A file that fails (damaged
header, not a known kind) is reported once, dead-lettered and skipped; following goes on. Progress
is checkpointed in the ledger after every poll, so a restart continues where it stopped.
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from fleetperf.config import Settings
from fleetperf.ingest.ledger import Ledger
from fleetperf.ingest.publish import (
    FILE_ERRORS,
    FilePublisher,
    Summary,
    classify,
    expand,
    file_failed,
    source_options,
)
from fleetperf.kafka_avro import AvroProducer, spooling_producer
from fleetperf.sources.base import Tail


@dataclass
class _Followed:
    publisher: FilePublisher
    tail: Tail | None  # None: read as a whole once settled
    size: int = 0
    last_growth: float = 0.0

    @property
    def host_id(self) -> str | None:
        return self.tail.host_id if self.tail is not None else None


class Follower:
    def __init__(
        self,
        settings: Settings,
        inputs: list[str],
        tz: tzinfo | None = None,
        poll_seconds: float = 1.0,
        finish_idle: float = 120.0,
        producer: AvroProducer | None = None,
        options: argparse.Namespace | None = None,
        settle: float = 5.0,
        status_every: float = 0.0,
        promises: bool = True,
    ) -> None:
        self.inputs = inputs
        self.opts = options or source_options()
        if tz is not None:
            self.opts.tz = getattr(tz, "key", None) or str(tz)
        self.poll_seconds = poll_seconds
        self.finish_idle = finish_idle
        self.settle = settle
        self.status_every = status_every
        # sample records carry their stream's watermark promise (ingest/watermark.py); False only to
        # measure without (bench/live_latency.py)
        self.promises = promises
        # while Kafka is away, records wait on disk and following goes on (drained when it returns)
        self.producer = producer or spooling_producer(settings, "follow")
        self.ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
        self.summary = Summary()
        self.files: dict[Path, _Followed] = {}
        self.finished: set[Path] = set()
        self.stop_event = threading.Event()

    def run(self, max_seconds: float | None = None) -> Summary:
        started = last_status = time.monotonic()
        while not self.stop_event.is_set():
            self.poll_once()
            now = time.monotonic()
            if self.status_every and now - last_status >= self.status_every:
                last_status = now
                print(f"following {len(self.files)} files: {self.summary.line()}", file=sys.stderr, flush=True)
            if max_seconds is not None and now - started >= max_seconds:
                break
            self.stop_event.wait(self.poll_seconds)
        for followed in self.files.values():
            followed.publisher.checkpoint()
        self.summary.seconds = time.monotonic() - started
        return self.summary

    def stop(self) -> None:
        self.stop_event.set()

    def close(self) -> None:
        """After the last run(): frees the spool directory for the next follower."""
        self.producer.close()

    def poll_once(self) -> None:
        for candidate in expand(self.inputs):
            path = candidate.path
            if path in self.files or path in self.finished:
                continue
            self._start(path, candidate)
        for path, followed in list(self.files.items()):
            try:
                self._poll(path, followed)
            except FILE_ERRORS as exc:
                # a poison file is reported and dropped; the others go on
                followed.publisher.fail(str(exc) or type(exc).__name__)
                followed.publisher.checkpoint()
                self.finished.add(path)
                del self.files[path]
                continue
            followed.publisher.checkpoint()
        self._finish_rotated()

    def _start(self, path: Path, candidate: object) -> None:
        source, problem = classify(candidate)  # type: ignore[arg-type]
        if source is None:
            if problem is not None and problem != "empty file":  # an empty file may be about to be written
                file_failed(path, "ingest", problem, self.producer, self.summary, quiet=False)
                self.finished.add(path)
            return
        publisher = FilePublisher(path, source, self.producer, self.ledger, self.summary, promises=self.promises)
        if publisher.already_done():
            self.finished.add(path)
            return
        tail = source.tail(path, self.opts)
        self.files[path] = _Followed(publisher, tail, size=-1, last_growth=time.monotonic())
        self.summary.files += 1

    def _poll(self, path: Path, followed: _Followed) -> None:
        size = path.stat().st_size
        if size < followed.size:
            raise ValueError(f"shrank from {followed.size} to {size} bytes while being followed")
        now = time.monotonic()
        if size != followed.size:
            self.summary.bytes += max(0, size - max(followed.size, 0))
            followed.size, followed.last_growth = size, now
            if followed.tail is not None:
                followed.publisher.send_all(followed.tail.poll())
            return
        if followed.tail is not None:  # not grown: a quiet period may complete what the tail holds (nmon)
            followed.publisher.send_all(followed.tail.poll())
        if followed.tail is None and now - followed.last_growth >= self.settle:
            # a whole-file kind that stopped growing: read it once and be done with it
            publisher = followed.publisher
            publisher.send_all(publisher.source.read(path, self.opts))
            publisher.finish()
            self.finished.add(path)
            del self.files[path]

    def _finish_rotated(self) -> None:
        now = time.monotonic()
        for path, followed in list(self.files.items()):
            if followed.tail is None or now - followed.last_growth < self.finish_idle:
                continue
            newer = [
                p
                for p, f in self.files.items()
                if p != path and f.host_id == followed.host_id and p.stat().st_mtime > path.stat().st_mtime
            ]
            if newer:
                followed.publisher.send_all(followed.tail.finish())
                followed.publisher.finish()
                self.finished.add(path)
                del self.files[path]
