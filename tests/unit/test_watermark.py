"""Stream watermark promises (issue 24 item 3): the Kafka header a live collector puts on each sample
so that the Flink job closes a window without waiting for a sample past it. The Flink side:
PerStreamWindowsTest and StreamWatermarkTest (JUnit)."""

from __future__ import annotations

import io
import json
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from fleetperf import config
from fleetperf.ingest import watermark
from fleetperf.ingest.follow import Follower
from fleetperf.ingest.ledger import Ledger
from fleetperf.ingest.publish import FilePublisher, Summary, source_options
from fleetperf.ingest.records import Emitted
from fleetperf.ingest.watermark import HEADER, SLACK_MS, headers_of, promise_of
from fleetperf.sources import registry
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import NmonParser
from fleetperf.sources.sysstat import layouts as sysstat_layouts

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "stream-jobs" / "src" / "main" / "java" / "io" / "fleetperf" / "jobs" / "samples"
SADC_OWN = Path(sysstat_layouts.__file__).parent / "testdata" / "sa-12.6.1-xall"

# a small nmon file written for this test: three snapshots 10 s apart (AAA,interval,10)
NMON = b"""AAA,progname,nmon
AAA,host,wmbox
AAA,interval,10
AAA,date,01-MAR-2026
CPU_ALL,CPU Total wmbox,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs
ZZZZ,T0001,08:00:00,01-MAR-2026
CPU_ALL,T0001,10.0,5.0,0.0,85.0,0.0,,2
ZZZZ,T0002,08:00:10,01-MAR-2026
CPU_ALL,T0002,20.0,5.0,0.0,75.0,0.0,,2
ZZZZ,T0003,08:00:20,01-MAR-2026
CPU_ALL,T0003,30.0,5.0,0.0,65.0,0.0,,2
"""
# the ZZZZ times above, UTC, and AAA,interval: each promises its time + 10 s - the 1 s slack
ZZZZ_MS = [int(datetime(2026, 3, 1, 8, 0, s, tzinfo=UTC).timestamp() * 1000) for s in (0, 10, 20)]
PROMISED = [ts + 10_000 - 1_000 for ts in ZZZZ_MS]


def _python_records(data: bytes = NMON) -> list[Emitted]:
    parser = NmonParser("wmbox_260301_0800.nmon", UTC)
    out: list[Emitted] = []
    offset = 0
    for n, line in enumerate(data.splitlines(keepends=True), start=1):
        out += parser.feed(line, n, offset)
        offset += len(line)
    return out + list(parser.finish())


def _header_values(records: list[Emitted]) -> list[int]:
    values = []
    for e in records:
        headers = headers_of(e)
        if headers is not None:
            [(name, value)] = headers
            assert name == HEADER and value.isdigit()
            values.append(int(value.decode("ascii")))
    return values


def test_nmon_cpu_samples_promise_their_time_plus_the_interval_minus_the_slack() -> None:
    records = _python_records()
    assert [e.record["ts"] for e in records if e.topic_key == "cpu_samples"] == ZZZZ_MS
    assert SLACK_MS == 1000
    assert _header_values(records) == PROMISED
    # only the samples the Flink job windows: not the snapshots, the host configuration
    assert {e.topic_key for e in records if headers_of(e)} == {"cpu_samples"}
    assert any(e.topic_key == "nmon_snapshots" for e in records)


@pytest.mark.skipif(not native_parser.available(), reason="native nmon scanner not built")
def test_records_of_the_native_scanner_promise_the_same() -> None:
    parser = native_parser.NativeNmonParser("wmbox_260301_0800.nmon", UTC)
    records = list(parser.feed(NMON)) + list(parser.finish())
    cpu = [e for e in records if e.topic_key == "cpu_samples"]
    assert cpu and all(e.encoded is not None and "ts" not in e.record for e in cpu)
    assert _header_values(records) == PROMISED


def test_nmon_without_an_interval_promises_nothing() -> None:
    records = _python_records(NMON.replace(b"AAA,interval,10\n", b""))
    assert [e.topic_key for e in records].count("cpu_samples") == 3
    assert _header_values(records) == []
    zero = _python_records(NMON.replace(b"AAA,interval,10", b"AAA,interval,0"))
    assert _header_values(zero) == []


def test_the_encoded_prefix_is_the_schemas_and_reads_what_fastavro_wrote() -> None:
    schema = json.loads((ROOT / "schemas" / "cpu_sample.avsc").read_text())
    head_fields = schema["fields"][:4]
    types = [f["type"] if isinstance(f["type"], str) else f["type"]["type"] for f in head_fields]
    assert tuple(zip([f["name"] for f in head_fields], types, strict=True)) == watermark.ENCODED_PREFIX
    # an independent writer (fastavro) with a long, non-ASCII host name and a fractional interval
    record: dict[str, Any] = {f["name"]: None for f in schema["fields"]}
    record.update(
        host_id="h" * 200, hostname="hôte-ü", ts=1772352020123, interval_s=12.5, source="nmon", origin_file="f"
    )
    # the other fields: strings get a text, the rest stay null (their unions allow it)
    record.update({f["name"]: "x" for f in schema["fields"] if f["type"] == "string" and record[f["name"]] is None})
    buf = io.BytesIO()
    schemaless_writer(buf, parse_schema(schema), record)
    encoded = Emitted("cpu_samples", {}, key="h", encoded=buf.getvalue())
    assert promise_of(encoded) == 1772352020123 + 12_500 - SLACK_MS
    # cut short anywhere before the interval's last byte: no promise, no exception (the length of the
    # four fields' encoding from fastavro, writing a schema of those four only)
    head = io.BytesIO()
    four = {"type": "record", "name": "Head", "fields": schema["fields"][:4]}
    schemaless_writer(head, parse_schema(four), {k: record[k] for k in ("host_id", "hostname", "ts", "interval_s")})
    assert buf.getvalue().startswith(head.getvalue())
    for cut in range(len(head.getvalue())):
        assert promise_of(Emitted("cpu_samples", {}, key="h", encoded=buf.getvalue()[:cut])) is None
    assert promise_of(Emitted("cpu_samples", {}, key="h", encoded=head.getvalue())) == 1772352020123 + 11_500


def test_other_topics_and_implausible_intervals_promise_nothing() -> None:
    def cpu(interval: Any) -> Emitted:
        return Emitted("cpu_samples", {"ts": 1000, "interval_s": interval}, key="h")

    assert promise_of(cpu(float("nan"))) is None
    assert promise_of(cpu(float("inf"))) is None
    assert promise_of(cpu(None)) is None
    assert promise_of(cpu(1.0)) is None  # one second minus the slack promises nothing beyond the sample
    assert promise_of(cpu(2.0)) == 2000
    assert promise_of(Emitted("hpm_samples", {"ts": 1000, "interval_s": 10.0}, key="h")) is None


def test_which_sources_promise() -> None:
    assert set(watermark.PROMISES) <= set(registry.SOURCES)
    assert watermark.promises("nmon")
    assert not watermark.promises("sadc")  # its files record no interval (watermark.py says why)
    assert not watermark.promises("perfkit")


class _Producer:
    """Keeps what is sent with its headers; flush acknowledges all."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, Any]] = []

    def send(self, topic_key: str, record: dict, key: str | None = None, headers: Any = None) -> None:
        self.sent.append((topic_key, record, headers))

    def send_encoded(self, topic_key: str, avro: bytes, key: str | None = None, headers: Any = None) -> None:
        self.sent.append((topic_key, avro, headers))

    def flush(self, timeout: float | None = 60.0) -> None:
        pass

    def close(self) -> None:
        pass


@pytest.fixture
def settings(tmp_path: Path) -> config.Settings:
    return config.load({"FLEETPERF__STATE__DIR": str(tmp_path / "state")})


def _publish(settings: config.Settings, path: Path, promises: bool) -> _Producer:
    source = registry.detect(path, registry.head_of(path))
    assert source is not None
    producer = _Producer()
    ledger = Ledger(settings.state_dir / "ingest-ledger.sqlite")
    publisher = FilePublisher(path, source, producer, ledger, Summary(), quiet=True, promises=promises)  # type: ignore[arg-type]
    publisher.send_all(source.read(path, source_options()))
    return producer


def test_the_publisher_attaches_promises_when_asked_and_only_then(settings: config.Settings, tmp_path: Path) -> None:
    path = tmp_path / "wmbox_260301_0800.nmon"
    path.write_bytes(NMON)
    live = _publish(settings, path, promises=True)
    headed = [(t, h) for t, _, h in live.sent if h is not None]
    assert [t for t, _ in headed] == ["cpu_samples"] * 3
    assert [int(h[0][1]) for _, h in headed] == PROMISED
    batch = _publish(settings, path, promises=False)  # a batch ingest: no headers at all
    assert [h for _, _, h in batch.sent] == [None] * len(batch.sent)


def test_sadc_records_carry_no_promise_even_live(settings: config.Settings) -> None:
    producer = _publish(settings, SADC_OWN, promises=True)
    cpu = [h for t, _, h in producer.sent if t == "cpu_samples"]
    assert cpu and all(h is None for h in cpu)
    assert all(h is None for _, _, h in producer.sent)


def test_ingest_follow_publishes_live_nmon_with_promises(settings: config.Settings, tmp_path: Path) -> None:
    folder = tmp_path / "live"
    folder.mkdir()
    path = folder / "wmbox_260301_0800.nmon"
    path.write_bytes(NMON)
    old = time.time() - 10  # quiet for longer than the quiet period: the last snapshot is complete
    os.utime(path, (old, old))
    producer = _Producer()
    follower = Follower(settings, [str(folder)], UTC, producer=producer, options=source_options(tz="UTC"))  # type: ignore[arg-type]
    follower.poll_once()
    cpu = [h for t, _, h in producer.sent if t == "cpu_samples"]
    assert [int(h[0][1]) for h in cpu] == PROMISED


def test_header_name_is_the_one_the_flink_job_reads() -> None:
    java = (JAVA / "StreamWatermark.java").read_text()
    assert f'HEADER = "{HEADER}"' in java
    assert "fleetperf.ingest.watermark.HEADER" in java
    assert watermark.__doc__ and "StreamWatermark.HEADER" in watermark.__doc__
    deserializer = ROOT / "stream-jobs" / "src" / "main" / "java" / "io" / "fleetperf" / "jobs" / "wire"
    assert "StreamWatermark.apply(" in (deserializer / "RegistryAvroDeserializer.java").read_text()
