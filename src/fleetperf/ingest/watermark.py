"""Stream watermarks: a live collector that knows its stream's sampling interval promises, on each
sample record, that no later record of the stream has a timestamp below a given time, so that the
Flink job closes a window as soon as the promise passes its end instead of waiting for a sample
`out_of_orderness_seconds` past it (stream-jobs/README.md, "Live latency").

The promise is the Kafka header `HEADER` with the time as epoch milliseconds in ASCII digits. It
rides on the sample record itself: same topic, same Kafka key, so the same partition and the same
order as the stream's records, and it is spooled with the record while Kafka is away (the spool
keeps headers). No wall clock is involved, so an outage cannot finalise a window without the
samples that were held back. Like the end-of-stream header (`end_of_stream.HEADER`) it changes no
Avro schema, subject, table or native scanner plan, and a consumer that ignores headers (the
warehouse sink) sees nothing new.

Which sources promise, and what the promise rests on (`PROMISES`):
- nmon: one nmon process writes one file at the fixed interval of its `AAA,interval` line, and the
  next snapshot's ZZZZ time is the interval later, in whole seconds. Not exactly: in the corpus
  (/work/shared/corpus/nmon, 1,400 ZZZZ gaps of five real files, AIX 300 s, Linux 1, 5 and 30 s)
  the gap is interval - 1 s a few times each (299 s, 4 s, 29 s: a snapshot late by part of a second
  that the next, on schedule again, follows by less than the interval) and never less. So the
  promise is ts + interval - SLACK_MS, SLACK_MS = 1 s. A snapshot that still comes earlier (nmon
  held up by more than a second and then catching up) is not lost: the job sends it to its late
  output (late_samples), as any sample for a window already closed.
- sadc: no promise. A sa file records no interval (its header has none), and the gap between its
  records is not a fixed one: Debian's /etc/cron.d/sysstat (sysstat 12.6.1-2, lines 6 and 9) runs
  `debian-sa1 1 1` at 5-55/10 and `debian-sa1 60 2` at 23:59, so after a day of 600 s gaps comes a
  record 240 s after the last one; a promise drawn from the gaps seen so far would send it to the
  late output every night. sadc streams keep the out-of-orderness rule.
- Every other source: no promise (headers absent): the job treats their streams as before.

Where: `ingest --follow` (ingest/follow.py) creates its `FilePublisher`s with `promises=True`, and
`FilePublisher.send` attaches `headers_of(record)`. A batch `ingest` does not: a file read whole
brings the samples after a window end within milliseconds, and its last windows are finalised by
the end-of-stream marker, so a promise would only cost time per record.

The Flink side: io.fleetperf.jobs.samples.StreamWatermark.HEADER (same name, checked by
tests/unit/test_watermark.py) and PerStreamWindows.
"""

from __future__ import annotations

import math
import struct

from fleetperf.ingest.records import Emitted

# the Kafka header of a promise; stream-jobs: io.fleetperf.jobs.samples.StreamWatermark.HEADER
HEADER = "fleetperf-stream-watermark"

# the next sample may come this much earlier than the interval says (see the module's text)
SLACK_MS = 1000

# source name -> what its promise rests on (the module's text has the evidence)
PROMISES: dict[str, str] = {
    "nmon": "one process, one file, the fixed AAA,interval; next ZZZZ >= this + interval - 1 s in the corpus",
}

# the topic whose records carry promises: the one the Flink job windows per stream for nmon
TOPIC = "cpu_samples"

# the first fields of schemas/cpu_sample.avsc, in order: what `_ts_and_interval` reads of a record
# the native nmon scanner encoded (the test checks them against the schema file)
ENCODED_PREFIX = (("host_id", "string"), ("hostname", "string"), ("ts", "long"), ("interval_s", "double"))

_DOUBLE = struct.Struct("<d")

Headers = list[tuple[str, bytes]]


def promises(source_name: str) -> bool:
    """True if a live reader of this source attaches promises."""
    return source_name in PROMISES


def promise_of(emitted: Emitted) -> int | None:
    """The time (epoch ms) below which no later record of the sample's stream comes, or None: not a
    cpu sample, or its interval is unknown (nmon writes AAA,interval 0 or nothing; the parsers
    then give 0)."""
    if emitted.topic_key != TOPIC:
        return None
    if emitted.encoded is not None and "ts" not in emitted.record:
        ts, interval_s = _ts_and_interval(emitted.encoded)
    else:
        ts, interval_s = emitted.record.get("ts"), emitted.record.get("interval_s")
    if not isinstance(ts, int) or not isinstance(interval_s, (int, float)):
        return None
    if not (math.isfinite(interval_s) and interval_s * 1000 > SLACK_MS):
        return None  # unknown (0), damaged, or too short to promise anything beyond the sample itself
    return ts + round(interval_s * 1000) - SLACK_MS


def headers_of(emitted: Emitted) -> Headers | None:
    """The Kafka headers that carry the record's promise, or None (then it is sent without)."""
    promised = promise_of(emitted)
    if promised is None:
        return None
    return [(HEADER, str(promised).encode("ascii"))]


def _ts_and_interval(avro: bytes) -> tuple[int | None, float | None]:
    """ts and interval_s of an Avro-encoded cpu_samples record (no Confluent framing): two strings
    (a zig-zag varint length and the bytes), a zig-zag varint long, an 8-byte little-endian double
    (Avro 1.11 specification, "Binary Encoding"). (None, None) if the bytes end too soon."""
    pos = 0
    try:
        for _ in range(2):
            length, pos = _varint(avro, pos)
            pos += length
        ts, pos = _varint(avro, pos)
        if pos + 8 > len(avro):
            return None, None
        return ts, _DOUBLE.unpack_from(avro, pos)[0]
    except IndexError:
        return None, None


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """A zig-zag varint (Avro int/long) at pos: (value, position after it)."""
    shift = result = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (result >> 1) ^ -(result & 1), pos
        shift += 7
        if shift > 63:
            raise IndexError("varint longer than a long")
