"""What a collector yields: a record bound for one configured topic (key of [topics.*])."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Emitted:
    topic_key: str
    record: dict[str, Any]
    key: str | None = None
    # position in the source, for resuming: snapshot number of snapshot records
    snapshot: int = 0
    # the record already Avro-encoded (the native nmon scanner); `record` then lacks the bulk
    encoded: bytes | None = None
    # values carried by an nmon snapshot, for the summary
    values: int = 0


# (topic_key, key, snapshot, encoded, values) of one record of an EncodedRun: Emitted's fields
RunRecord = tuple[str, "str | None", int, bytes, int]


@dataclass(frozen=True)
class EncodedRun:
    """Records the native nmon scanner encoded (snapshots and their cpu samples), consecutive in
    the file, handed to the ingest pipeline together when it asks for runs (sources.base.Reading):
    each record as Emitted would carry it, in order. An Emitted and a call chain per record were a
    third of `fleetperf ingest`'s CPU on 40 Linux nmon files (80 k records: 1.62-1.74 CPU-s
    against 1.10-1.17 for the scanner's records produced in one loop, /tmp A/B)."""

    records: list[RunRecord]
    topic_key: str = ""  # no topic: the records carry theirs


def dead_letter(source: str, file: str, line: int, byte_offset: int, error: str, raw: bytes | str) -> Emitted:
    text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
    return Emitted(
        "dead_letters",
        {
            "source": source,
            "origin_file": file,
            "line": line,
            "byte_offset": byte_offset,
            "error": error,
            "raw": text[:1024],
            "detected_at": int(time.time() * 1000),
        },
        key=file,
    )
