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
