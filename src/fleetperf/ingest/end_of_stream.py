"""End-of-stream markers: a collector that reaches the end of a file, report or collection says so,
and the Flink job finalises that stream's windows at once instead of after `stream_retain_seconds`
of quiet (stream-jobs/README.md, "Finished streams").

The marker of a stream is a copy of the stream's last record, sent once more after the file's last
record with the Kafka header `HEADER`. Same topic and same Kafka key as the stream's records, so
Kafka keeps it in the same partition behind all of them and Flink sees it after the stream's last
sample. The Avro body is unchanged: no schema, registry subject or table changes, and a consumer
that ignores headers (the warehouse sink) sees a repeat of a record it has, which every sample
table absorbs (ReplacingMergeTree on the record's identity, as for a `--force` re-ingest).

A stream is what the Flink job keys its event clock by (`Sample.streamKey()` in stream-jobs):
`STREAM_FIELDS` names the record fields per topic. Topics the job does not window per stream
(net port counters: their stream is the aggregation across files, re-keyed by port in between)
get no marker; neither does a stream whose records went out under more than one Kafka key (they
may sit in several partitions, and the marker could overtake some of them).

Where it is called (the ingest pipeline, fleetperf/ingest/publish.py): `FilePublisher` keeps a
`StreamEnds` and shows it every record it is given (`see`, also the ones a resumed run skips), and
when a file has been read to its end (`FilePublisher.finish`, before the ledger marks it complete)
publishes `markers()` with `publish(producer, ...)`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import Any, Protocol

from fleetperf.ingest.records import Emitted

# the Kafka header of a marker; stream-jobs: io.fleetperf.jobs.samples.EndOfStream.HEADER
HEADER = "fleetperf-end-of-stream"
HEADERS: list[tuple[str, bytes]] = [(HEADER, b"1")]

# topic key -> the record fields that make up the stream key of the Flink job's per-stream windows
# (stream-jobs: CpuSample, HpmSample, ZvmCpuSample.fromGuestAvro / fromSystemAvro)
STREAM_FIELDS: dict[str, tuple[str, ...]] = {
    "cpu_samples": ("host_id", "origin_file"),
    "hpm_samples": ("host_id", "origin"),
    "zvm_guest_samples": ("guest_id", "source", "zvm_system"),
    "zvm_system_samples": ("zvm_system", "source"),
}

StreamId = tuple[Any, ...]
Headers = list[tuple[str, bytes]]


class StreamEnds:
    """The last record of every stream a file produced, in the order the streams first appeared.
    Memory: one record per stream (a report of 500 z/VM guests: 500)."""

    def __init__(self) -> None:
        self._last: dict[StreamId, Emitted] = {}
        self._split: set[StreamId] = set()

    def see(self, emitted: Emitted) -> None:
        fields = STREAM_FIELDS.get(emitted.topic_key)
        if fields is None:
            return
        stream = stream_of(emitted, fields)
        before = self._last.get(stream)
        if before is not None and before.key != emitted.key:
            self._split.add(stream)
        self._last[stream] = emitted

    def see_all(self, records: Iterable[Emitted]) -> None:
        for emitted in records:
            self.see(emitted)

    def markers(self) -> list[Emitted]:
        """One marker per stream: its last record again, with snapshot 0 so that a resumed file's
        publisher does not hold it back as already published (send it with HEADERS)."""
        return [dataclasses.replace(e, snapshot=0) for s, e in self._last.items() if s not in self._split]


def stream_of(emitted: Emitted, fields: tuple[str, ...]) -> StreamId:
    """The stream of a record. A record the native nmon scanner encoded has no fields in Python
    (`record` empty): it is a cpu_samples record of the one file being read, whose stream is its
    host, i.e. its Kafka key (the scanner keys records by host_id)."""
    record = emitted.record
    if emitted.encoded is not None and not record:
        return (emitted.topic_key, "key", emitted.key)
    return (emitted.topic_key, *(record.get(f) for f in fields))


def markers(finished: Iterable[Emitted]) -> list[Emitted]:
    """The end-of-stream markers to publish (with HEADERS) after the last record of a finished
    file, given the records it produced."""
    ends = StreamEnds()
    ends.see_all(finished)
    return ends.markers()


class MarkerProducer(Protocol):
    """What publish needs of a producer: AvroProducer's send / send_encoded with Kafka headers."""

    def send(
        self,
        topic_key: str,
        record: dict[str, Any],
        key: str | None = None,
        headers: Headers | None = None,
    ) -> None: ...

    def send_encoded(
        self, topic_key: str, avro: bytes, key: str | None = None, headers: Headers | None = None
    ) -> None: ...


def publish(producer: MarkerProducer, marker_records: Iterable[Emitted]) -> int:
    """Sends the markers with the end-of-stream header; the caller flushes (its checkpoint)."""
    sent = 0
    for m in marker_records:
        if m.encoded is not None:
            producer.send_encoded(m.topic_key, m.encoded, key=m.key, headers=HEADERS)
        else:
            producer.send(m.topic_key, m.record, key=m.key, headers=HEADERS)
        sent += 1
    return sent
