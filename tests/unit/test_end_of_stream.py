"""End-of-stream markers (issue 24 item 2): what a finished file publishes after its last record so
that the Flink job finalises its streams at once. The Flink side: PerStreamWindowsTest (JUnit)."""

from __future__ import annotations

import re
from datetime import UTC, date, time
from pathlib import Path

import pytest

from fleetperf.ingest import end_of_stream
from fleetperf.ingest.end_of_stream import HEADER, HEADERS, STREAM_FIELDS, StreamEnds, markers, publish
from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import NmonParser

ROOT = Path(__file__).resolve().parents[2]
JAVA = ROOT / "stream-jobs" / "src" / "main" / "java" / "io" / "fleetperf" / "jobs" / "samples"
PERFKIT = ROOT / "src" / "fleetperf" / "sources" / "perfkit" / "testdata"

# a small nmon file written for this test: three snapshots, 10 s apart, of host "eosbox"
NMON = b"""AAA,progname,nmon
AAA,host,eosbox
AAA,interval,10
AAA,date,01-MAR-2026
CPU_ALL,CPU Total eosbox,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs
ZZZZ,T0001,08:00:00,01-MAR-2026
CPU_ALL,T0001,10.0,5.0,0.0,85.0,0.0,,2
ZZZZ,T0002,08:00:10,01-MAR-2026
CPU_ALL,T0002,20.0,5.0,0.0,75.0,0.0,,2
ZZZZ,T0003,08:00:20,01-MAR-2026
CPU_ALL,T0003,30.0,5.0,0.0,65.0,0.0,,2
"""
LAST_TS = 1772352020000  # 2026-03-01 08:00:20 UTC, the file's last ZZZZ


def _python_records(name: str = "eosbox_260301_0800.nmon") -> list[Emitted]:
    parser = NmonParser(name, UTC)
    out: list[Emitted] = []
    offset = 0
    for n, line in enumerate(NMON.splitlines(keepends=True), start=1):
        out += parser.feed(line, n, offset)
        offset += len(line)
    return out + list(parser.finish())


def test_a_finished_nmon_file_has_one_marker_its_last_cpu_sample() -> None:
    records = _python_records()
    [marker] = markers(records)
    assert marker.topic_key == "cpu_samples"
    assert marker.key == "eosbox"
    assert marker.record["ts"] == LAST_TS
    assert marker.record["user_pct"] == 30.0
    assert marker.record["origin_file"] == "eosbox_260301_0800.nmon"
    # held back by no resumed publisher: a marker is not a position in the file
    assert marker.snapshot == 0
    last_cpu = [e for e in records if e.topic_key == "cpu_samples"][-1]
    assert last_cpu.snapshot > 0 and marker.record is last_cpu.record


@pytest.mark.skipif(not native_parser.available(), reason="native nmon scanner not built")
def test_native_scanner_records_give_the_same_marker_bytes() -> None:
    parser = native_parser.NativeNmonParser("eosbox_260301_0800.nmon", UTC)
    records = list(parser.feed(NMON)) + list(parser.finish())
    [marker] = markers(records)
    last_cpu = [e for e in records if e.topic_key == "cpu_samples"][-1]
    assert marker.topic_key == "cpu_samples" and marker.key == "eosbox"
    assert marker.encoded == last_cpu.encoded and marker.encoded is not None


def test_one_marker_per_stream_of_a_report_each_its_last_record() -> None:
    from fleetperf.sources.perfkit.parser import scan_file
    from fleetperf.sources.perfkit.records import Options, records_of_scan

    options = Options(system="VMLINUX7", day=date(2011, 9, 21), at=time(11, 40, 1), interval_s=60.0)
    records = list(records_of_scan(scan_file(PERFKIT / "fcx162_userlog.txt"), options))
    found = markers(records)
    guests = [e for e in records if e.topic_key == "zvm_guest_samples"]
    # fcx162_userlog.txt is the log of one user, G73VM1: one stream, 14 intervals up to 16:42:33
    assert {m.record["guest_id"] for m in found} == {"VMLINUX7/G73VM1"}
    [marker] = found
    assert marker.record is guests[-1].record
    # the row "16:42:33 8.56 5.134 4.490 ..." (fcx162_userlog.txt line 29, the last), whose last 33 s
    # the source puts in the minute after 16:42
    assert marker.record["origin"] == "fcx162_userlog.txt:29"
    assert marker.record["tcpu_s"] == pytest.approx(5.134 * 33 / 60)


def test_guests_and_systems_are_streams_of_their_own() -> None:
    def guest(guest_id: str, ts: int) -> Emitted:
        record = {"guest_id": guest_id, "zvm_system": "ZVMA", "source": "perfkit:FCX112", "ts": ts}
        return Emitted("zvm_guest_samples", record, key=guest_id)

    system = Emitted("zvm_system_samples", {"zvm_system": "ZVMA", "source": "perfkit:FCX225", "ts": 2}, key="ZVMA")
    records = [guest("ZVMA/A", 1), guest("ZVMA/B", 1), system, guest("ZVMA/A", 2), guest("ZVMA/B", 2)]
    found = markers(records)
    assert [(m.topic_key, m.key, m.record["ts"]) for m in found] == [
        ("zvm_guest_samples", "ZVMA/A", 2),
        ("zvm_guest_samples", "ZVMA/B", 2),
        ("zvm_system_samples", "ZVMA", 2),
    ]


def test_topics_without_per_stream_windows_get_no_marker() -> None:
    port = Emitted("net_port_samples", {"host_id": "h", "adapter": "ent0", "ts": 1}, key="h")
    snapshot = Emitted("nmon_snapshots", {"host_id": "h", "ts": 1}, key="h", snapshot=1)
    config = Emitted("host_configs", {"host_id": "h"}, key="h")
    bad = dead_letter("nmon", "f.nmon", 3, 40, "bad line", b"x")
    assert markers([port, snapshot, config, bad]) == []
    assert markers([]) == []


def test_a_stream_split_over_two_kafka_keys_gets_no_marker() -> None:
    # its records may be in two partitions: a marker in one of them could overtake the other's records
    a = Emitted("cpu_samples", {"host_id": "h", "origin_file": "f", "ts": 1}, key="h")
    b = Emitted("cpu_samples", {"host_id": "h", "origin_file": "f", "ts": 2}, key="renamed")
    other = Emitted("cpu_samples", {"host_id": "g", "origin_file": "f", "ts": 2}, key="g")
    assert [m.key for m in markers([a, b, other])] == ["g"]


def test_the_tracker_sees_records_one_at_a_time() -> None:
    ends = StreamEnds()
    records = _python_records()
    for e in records:
        ends.see(e)
    assert ends.markers() == markers(records)


class _HeaderProducer:
    def __init__(self) -> None:
        self.sent: list[tuple[str, object, str | None, object]] = []

    def send(self, topic_key: str, record: dict, key: str | None = None, headers: object = None) -> None:
        self.sent.append((topic_key, record, key, headers))

    def send_encoded(self, topic_key: str, avro: bytes, key: str | None = None, headers: object = None) -> None:
        self.sent.append((topic_key, avro, key, headers))


def test_publish_sends_each_marker_with_the_end_of_stream_header() -> None:
    producer = _HeaderProducer()
    encoded = Emitted("cpu_samples", {}, key="h2", snapshot=7, encoded=b"\x02avro")
    found = markers([*_python_records(), encoded])
    assert publish(producer, found) == 2
    assert [(t, k, h) for t, _, k, h in producer.sent] == [
        ("cpu_samples", "eosbox", HEADERS),
        ("cpu_samples", "h2", HEADERS),
    ]
    assert producer.sent[1][1] == b"\x02avro"
    assert HEADERS == [("fleetperf-end-of-stream", b"1")]


def test_header_and_stream_fields_are_the_ones_the_flink_job_reads() -> None:
    java = (JAVA / "EndOfStream.java").read_text()
    assert f'HEADER = "{HEADER}"' in java
    readers = {
        "cpu_samples": "CpuSample.java",
        "hpm_samples": "HpmSample.java",
        "zvm_guest_samples": "ZvmCpuSample.java",
        "zvm_system_samples": "ZvmCpuSample.java",
    }
    assert set(readers) == set(STREAM_FIELDS)
    for topic, fields in STREAM_FIELDS.items():
        source = (JAVA / readers[topic]).read_text()
        # read by name (r.get("x")) or by position (FieldPositions.fields("x", ...))
        read = set(re.findall(r'r\.get\("(\w+)"\)', source))
        for names in re.findall(r"FieldPositions\.fields\(([^)]*)\)", source):
            read |= set(re.findall(r'"(\w+)"', names))
        assert set(fields) <= read, (topic, set(fields) - read)
    assert end_of_stream.__doc__ and "publish.py" in end_of_stream.__doc__
