"""Batch ingestion: files, directories and globs -> collector -> Avro records -> Kafka."""

from __future__ import annotations

import glob
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from datetime import tzinfo
from pathlib import Path

from tqdm import tqdm

from core.config import Settings
from core.kafka_avro import AvroProducer
from ingest.ledger import Ledger
from ingest.nmon.parser import parse_file


@dataclass
class Summary:
    files: int = 0
    skipped: int = 0
    records: int = 0
    errors: int = 0
    bytes: int = 0
    seconds: float = 0.0
    error_lines: list[str] = field(default_factory=list)

    def line(self) -> str:
        mb = self.bytes / 1e6
        rate = mb / self.seconds if self.seconds else 0.0
        return (
            f"files {self.files} (skipped, already published: {self.skipped}), records {self.records}, "
            f"errors {self.errors}, {mb:.1f} MB in {self.seconds:.1f}s ({rate:.1f} MB/s)"
        )


def expand(inputs: Iterable[str]) -> Iterator[Path]:
    """Files as given; directories recursively (*.nmon, *.nmon.gz); shell-style globs."""
    for item in inputs:
        matches = [Path(m) for m in sorted(glob.glob(item, recursive=True))] if glob.has_magic(item) else [Path(item)]
        if not matches:
            raise FileNotFoundError(f"no file matches {item}")
        for path in matches:
            if path.is_dir():
                yield from sorted(p for p in path.rglob("*") if p.is_file() and ".nmon" in p.name)
            elif path.exists():
                yield path
            else:
                raise FileNotFoundError(f"no such file: {path}")


def ingest(
    settings: Settings, inputs: Iterable[str], tz: tzinfo, force: bool = False, progress: bool = True
) -> Summary:
    files = list(expand(inputs))
    ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
    producer = AvroProducer(settings)
    summary = Summary()
    started = time.monotonic()
    total = sum(p.stat().st_size for p in files)
    with tqdm(total=total, unit="B", unit_scale=True, disable=not progress, desc="ingest") as bar:
        for path in files:
            size = path.stat().st_size
            if not force and ledger.already_published(path):
                summary.skipped += 1
                bar.update(size)
                continue
            records = errors = 0
            for emitted in parse_file(path, tz):
                producer.send(emitted.topic_key, emitted.record, key=emitted.key)
                if emitted.topic_key == "dead_letters":
                    errors += 1
                    r = emitted.record
                    message = f"{r['origin_file']}:{r['line']} (byte {r['byte_offset']}): {r['error']}"
                    summary.error_lines.append(message)
                    print(f"bad input: {message}", file=sys.stderr)
                else:
                    records += 1
            producer.flush()
            ledger.record(path, records, errors)
            summary.files += 1
            summary.records += records
            summary.errors += errors
            summary.bytes += size
            bar.update(size)
    summary.seconds = time.monotonic() - started
    return summary
