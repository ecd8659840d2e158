"""What has been published already, per file, so re-runs and restarts publish nothing twice.

A file is identified by its path and a hash of its first bytes (up to 64 KiB: nmon's header with
host, date and command). The ledger remembers how many bytes the hash covered, so a file that is
still growing keeps its identity and one that is replaced does not. For each
file the ledger keeps the last snapshot and the byte offset whose records Kafka has acknowledged,
and whether the whole file was published (with its size then). A crash between Kafka's
acknowledgement and the ledger update re-sends at most one checkpoint's worth of records (2,000
snapshots, or the last 64 small files of a backfill: ingest.publish.PendingCheckpoints), which the
warehouse's ReplacingMergeTree keys absorb."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

_HEAD = 65536


def head_hash(path: Path, opener=open, length: int = _HEAD) -> tuple[str, int]:  # noqa: ANN001
    """sha256 of the first `length` bytes (fewer if the file is shorter) and how many that was."""
    with opener(path, "rb") as handle:
        head = handle.read(length)
    return hashlib.sha256(head).hexdigest(), len(head)


@dataclass
class Progress:
    identity: str
    identity_len: int = 0
    last_snapshot: int = 0
    last_offset: int = -1
    complete: bool = False
    size: int = 0


class Ledger:
    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path, check_same_thread=False)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS progress (path TEXT PRIMARY KEY, identity TEXT, identity_len INTEGER,"
            " last_snapshot INTEGER, last_offset INTEGER, complete INTEGER, size INTEGER, updated_at REAL)"
        )
        self.db.commit()

    def get(self, path: Path, opener=open) -> Progress:  # noqa: ANN001 - open or gzip.open
        row = self.db.execute(
            "SELECT identity, identity_len, last_snapshot, last_offset, complete, size FROM progress WHERE path = ?",
            (str(path.resolve()),),
        ).fetchone()
        if row is not None and head_hash(path, opener, row[1]) == (row[0], row[1]):
            return Progress(row[0], row[1], row[2], row[3], bool(row[4]), row[5])
        return Progress(*head_hash(path, opener))

    def save(self, path: Path, progress: Progress, opener=open, commit: bool = True) -> None:  # noqa: ANN001
        if progress.identity_len < _HEAD:
            # the file has grown since it was first seen: identify it by a longer head from now on
            progress.identity, progress.identity_len = head_hash(path, opener)
        self.db.execute(
            "INSERT OR REPLACE INTO progress VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                str(path.resolve()),
                progress.identity,
                progress.identity_len,
                progress.last_snapshot,
                progress.last_offset,
                int(progress.complete),
                progress.size,
                time.time(),
            ),
        )
        if commit:
            self.db.commit()

    def commit(self) -> None:
        """Saves made with commit=False (several files after one flush), in one transaction."""
        self.db.commit()
