"""Live tail: publish snapshots of nmon files while nmon is still writing them, and records of
sysstat files while sadc appends to them (a record is published once it is whole).

Only complete lines are read; a snapshot is published when the next ZZZZ line shows it is
complete, so records lag nmon by one interval. Directories are re-scanned for new files (nmon's
daily rotation starts a new file); a file that has not grown for `finish_idle` seconds while a
newer file of the same host exists is finished (its last snapshot published) and dropped.
Progress is checkpointed in the ledger after every poll, so a restart continues where it stopped.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from datetime import tzinfo
from pathlib import Path

from fleetperf.config import Settings
from fleetperf.ingest.ledger import Ledger
from fleetperf.ingest.publish import FilePublisher, Summary, expand
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import open_binary
from fleetperf.sources.sysstat import records as sadc


@dataclass
class _Tailed:
    publisher: FilePublisher
    offset: int = 0
    line_no: int = 0
    partial: bytes = b""
    last_growth: float = 0.0
    sysstat: sadc.Tail | None = None  # a sysstat file: read by records, not lines

    @property
    def host_id(self) -> str | None:
        if self.sysstat is not None:
            return self.sysstat.collector.host_id if self.sysstat.collector else None
        return self.publisher.host_id


class Follower:
    def __init__(
        self,
        settings: Settings,
        inputs: list[str],
        tz: tzinfo,
        poll_seconds: float = 1.0,
        finish_idle: float = 120.0,
        producer: AvroProducer | None = None,
    ) -> None:
        self.inputs = inputs
        self.tz = tz
        self.poll_seconds = poll_seconds
        self.finish_idle = finish_idle
        self.producer = producer or AvroProducer(settings)
        self.ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
        self.summary = Summary()
        self.files: dict[Path, _Tailed] = {}
        self.finished: set[Path] = set()
        self.stop_event = threading.Event()

    def run(self, max_seconds: float | None = None) -> Summary:
        started = time.monotonic()
        while not self.stop_event.is_set():
            self.poll_once()
            if max_seconds is not None and time.monotonic() - started >= max_seconds:
                break
            self.stop_event.wait(self.poll_seconds)
        for tailed in self.files.values():
            tailed.publisher.checkpoint()
        self.summary.seconds = time.monotonic() - started
        return self.summary

    def stop(self) -> None:
        self.stop_event.set()

    def poll_once(self) -> None:
        for path in expand(self.inputs):
            if path not in self.files and path not in self.finished:
                publisher = FilePublisher(path, self.tz, self.producer, self.ledger, self.summary)
                if publisher.already_done():
                    self.finished.add(path)
                    continue
                tail = sadc.Tail(path, sadc.Options()) if sadc.is_sadc_file(path) else None
                self.files[path] = _Tailed(publisher, last_growth=time.monotonic(), sysstat=tail)
                self.summary.files += 1
        for path, tailed in list(self.files.items()):
            self._read_new_lines(path, tailed)
            tailed.publisher.checkpoint()
        self._finish_rotated()

    def _read_new_lines(self, path: Path, tailed: _Tailed) -> None:
        size = path.stat().st_size
        if size < tailed.offset + len(tailed.partial):
            raise RuntimeError(f"{path} shrank from {tailed.offset} to {size} bytes while being followed")
        if size == tailed.offset + len(tailed.partial):
            return
        tailed.last_growth = time.monotonic()
        if tailed.sysstat is not None:
            for emitted in tailed.sysstat.poll():
                tailed.publisher.send(emitted)
            self.summary.bytes += size - tailed.offset
            tailed.offset = size
            tailed.publisher.offset_seen = tailed.sysstat.offset or 0
            return
        with open_binary(path) as handle:
            handle.seek(tailed.offset + len(tailed.partial))
            data = tailed.partial + handle.read()
        cut = data.rfind(b"\n") + 1
        complete, tailed.partial = data[:cut], data[cut:]  # an incomplete last line waits for the rest
        self.summary.bytes += len(complete)
        if native_parser.available():
            tailed.publisher.feed_chunk(complete)
            tailed.offset += len(complete)
            return
        for line in complete.split(b"\n")[:-1]:
            tailed.line_no += 1
            raw = line + b"\n"
            tailed.publisher.feed(raw, tailed.line_no, tailed.offset)
            tailed.offset += len(raw)

    def _finish_rotated(self) -> None:
        now = time.monotonic()
        for path, tailed in list(self.files.items()):
            if now - tailed.last_growth < self.finish_idle:
                continue
            newer = [
                p
                for p, t in self.files.items()
                if p != path and t.host_id == tailed.host_id and p.stat().st_mtime > path.stat().st_mtime
            ]
            if newer:
                tailed.publisher.finish()
                self.finished.add(path)
                del self.files[path]
