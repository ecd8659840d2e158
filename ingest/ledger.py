"""What has been published already, so re-running an ingest does not publish a file twice.

A file is identified by its path, size and a hash of its first and last 64 KiB; a file that has
grown (nmon still writing) or changed is published again, and the warehouse's ReplacingMergeTree
keys absorb the snapshots that were already there."""

from __future__ import annotations

import hashlib
import sqlite3
import time
from pathlib import Path

_EDGE = 65536


def fingerprint(path: Path) -> str:
    size = path.stat().st_size
    digest = hashlib.sha256(str(size).encode())
    with open(path, "rb") as handle:
        digest.update(handle.read(_EDGE))
        if size > _EDGE:
            handle.seek(max(_EDGE, size - _EDGE))
            digest.update(handle.read(_EDGE))
    return digest.hexdigest()


class Ledger:
    def __init__(self, db_path: Path) -> None:
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = sqlite3.connect(db_path)
        self.db.execute(
            "CREATE TABLE IF NOT EXISTS published (path TEXT PRIMARY KEY, fingerprint TEXT, records INTEGER,"
            " errors INTEGER, published_at REAL)"
        )

    def already_published(self, path: Path) -> bool:
        row = self.db.execute("SELECT fingerprint FROM published WHERE path = ?", (str(path.resolve()),)).fetchone()
        return row is not None and row[0] == fingerprint(path)

    def record(self, path: Path, records: int, errors: int) -> None:
        self.db.execute(
            "INSERT OR REPLACE INTO published VALUES (?, ?, ?, ?, ?)",
            (str(path.resolve()), fingerprint(path), records, errors, time.time()),
        )
        self.db.commit()
