"""The sadc collector on the project's own recording (src/fleetperf/sources/sysstat/testdata, made here by
Debian's sysstat 12.6.1 sadc: `sadc -S XALL 1 4` under CPU and loopback load, with that package's
`LC_ALL=C TZ=UTC sadf -j FILE -- -A` beside it): value for value against sadf, and every kind of damage
issue 20 lists (header and record counts, changed descriptions, flipped time bytes, implausible uptimes,
counters going backwards, a poison file in live mode). Runs on a clone without the corpus or sysstat."""

from __future__ import annotations

import math
import struct
import time
from pathlib import Path

import pytest

from fleetperf.ingest.records import Emitted
from fleetperf.sources.sysstat import layouts as lay
from fleetperf.sources.sysstat.reader import open_bytes
from fleetperf.sources.sysstat.records import Options, Tail, records_of_bytes
from tests import sar_text

TESTDATA = Path(lay.__file__).parent / "testdata"
OWN = TESTDATA / "sa-12.6.1-xall"
OWN_SADF = TESTDATA / "sa-12.6.1-xall.sadf-j-A.json"
DISKS = {"vda": "dev254-0"}  # the recording machine's /sys/dev/block/254:0 is vda; a file read elsewhere: devM-N
RECORDS = (1708, 6000, 10292, 14584)  # offsets of the 4 statistics records (reader and sadf -H agree)
HEADER_TIME = 1795567271


def _letters(emitted: list[Emitted]) -> list[dict]:
    return [e.record for e in emitted if e.topic_key == "dead_letters"]


def assert_published_in_range(emitted: list[Emitted], file_time: int = HEADER_TIME) -> None:
    """What a damaged file may never publish: times far from the file's, intervals that are none, values
    that are negative, infinite or NaN, CPU percentages above 100."""
    for e in emitted:
        r = e.record
        if e.topic_key in ("sysstat_samples", "cpu_samples"):
            assert file_time - 86400 <= r["ts"] / 1000 <= file_time + 400 * 86400, r
            assert r["interval_s"] is None or 0 < r["interval_s"] <= 31 * 86400, r
        if e.topic_key == "sysstat_samples":
            for name, v in r["metrics"].items():
                assert math.isfinite(v) and v >= 0, (r["section"], r["item"], name, v)
                if r["section"] == "cpu-load-all":
                    assert v <= 100.0001, (r["item"], name, v)
        if e.topic_key == "cpu_samples":
            for name in ("user_pct", "sys_pct", "wait_pct", "idle_pct"):
                assert 0 <= r[name] <= 100.0001, r


def _read(data: bytes, name: str = "damaged") -> list[Emitted]:
    emitted = list(records_of_bytes(data, name, Options()))
    assert_published_in_range(emitted)
    return emitted


def _equal(ours: float, theirs: float) -> bool:
    # sadf prints integers with %llu / %u (exact) or %.0f (MBfsfree ...: rounded)
    return (
        format(ours, ".0f") == str(theirs) if isinstance(theirs, int) else format(ours, ".2f") == format(theirs, ".2f")
    )


def test_own_recording_equals_its_sadf_json() -> None:
    expected = sar_text.sadf_json_rows(OWN_SADF.read_text())
    expected = {(s, t, DISKS.get(i, i) if s == "disk" else i): v for (s, t, i), v in expected.items()}
    emitted = _read(OWN.read_bytes(), "own")
    assert not _letters(emitted)
    ours = sar_text.our_rows(emitted)
    compared, different = 0, []
    for key, row in ours.items():
        for name, value in row.items():
            if name in expected[key]:
                compared += 1
                if not _equal(value, expected[key][name]):
                    different.append((key, name, value, expected[key][name]))
    assert compared >= 1300 and not different, different
    # every figure sadf prints is published, but for sadf's backward-compatible duplicates of disk figures
    # (rd_sec = 2 x rkB, avgrq-sz = 2 x areq-sz, avgqu-sz = aqu-sz)
    missing = {(k[0], name) for k, row in expected.items() for name in row if name not in ours.get(k, {})}
    assert missing == {("disk", n) for n in ("rd_sec", "wr_sec", "dc_sec", "avgrq-sz", "avgqu-sz")}, missing
    # sysstat 12.6.1's memused: total - free - buffers - cached - slab (not 12.7.8's total - available)
    memory = [k for k in expected if k[0] == "memory"]
    assert len(memory) == 3 and all(ours[k]["memused"] == expected[k]["memused"] for k in memory)


def assert_doubles_and_counted(emitted: list[Emitted]) -> None:
    """Every figure is a double (sysstat_sample.metrics is a map of doubles; `parse` prints 5.0, not 5), and
    each record carries its number of figures for the pipeline's summary (Emitted.values): the reader
    converts only the levels (raw integers) and sets the count when it makes the record, so a rate
    function returning an integer, or a count left out, shows here."""
    samples = [e for e in emitted if e.topic_key == "sysstat_samples"]
    assert samples
    for e in samples:
        metrics = e.record["metrics"]
        assert e.values == len(metrics), (e.record["section"], e.values, len(metrics))
        wrong = {k: v for k, v in metrics.items() if type(v) is not float}
        assert not wrong, (e.record["section"], e.record["item"], wrong)


def test_every_figure_is_a_double_and_counted() -> None:
    emitted = _read(OWN.read_bytes(), "own")
    assert_doubles_and_counted(emitted)
    sections = {e.record["section"] for e in emitted if e.topic_key == "sysstat_samples"}
    assert len(sections) >= 35, sections  # every kind of rate, level and percentage function took part


def _put(data: bytearray, offset: int, fmt: str, *values: int) -> bytes:
    struct.pack_into(fmt, data, offset, *values)
    return bytes(data)


@pytest.mark.parametrize("count", [0, 1, 10, 65, 65535, 0xFFFFFFFF])
def test_file_header_int_count_out_of_range_is_one_dead_letter(count: int) -> None:
    emitted = _read(_put(bytearray(OWN.read_bytes()), 24, "<I", count))
    (letter,) = _letters(emitted)
    assert letter["byte_offset"] == 16 and "described as 1/1/" in letter["error"]
    assert len(emitted) == 1


@pytest.mark.parametrize("count", [0, 2, 200, 0xFFFFFFFF])
def test_record_header_int_count_out_of_range(count: int) -> None:
    # rec_types_nr[2] of the file header: the ints of each record header
    emitted = _read(_put(bytearray(OWN.read_bytes()), 76 + 16 + 4 * 8, "<I", count))
    assert _letters(emitted)
    if count == 0:  # fits: the record type is then read where extra_next is; every record is refused
        assert not sar_text.our_rows(emitted)


@pytest.mark.parametrize(
    ("activity_offset", "types", "missing"),
    [(844, (1, 0, 1), "rx_bytes"), (808, (3, 3, 2), "major, minor"), (412, (2, 0, 0), "sys, idle")],
)
def test_changed_activity_description_skips_that_activity(activity_offset: int, types: tuple, missing: str) -> None:
    data = _put(bytearray(OWN.read_bytes()), activity_offset + 24, "<3I", *types)
    emitted = _read(data)
    (letter,) = _letters(emitted)
    assert letter["byte_offset"] == activity_offset and missing in letter["error"]
    sections = {k[0] for k in sar_text.our_rows(emitted)}
    assert "memory" in sections and "paging" in sections  # the others are still read


@pytest.mark.parametrize("byte", range(8))
@pytest.mark.parametrize("flip", [0xFF, 0x80, 0x01])
def test_flipped_byte_in_a_record_time_never_publishes_another_time(byte: int, flip: int) -> None:
    data = bytearray(OWN.read_bytes())
    data[RECORDS[1] + 8 + byte] ^= flip  # ust_time of the second record
    emitted = _read(bytes(data))
    times = {k[1] for k in sar_text.our_rows(emitted)}
    assert times <= {"00:47:13", "00:47:14", "00:47:15"}
    assert {"00:47:14", "00:47:15"} <= times  # the records after it are kept
    assert [letter["byte_offset"] for letter in _letters(emitted)] == [RECORDS[1]]


@pytest.mark.parametrize("uptime", [0, 1, 65127 + 350, 65230 + 500, 1 << 40, (1 << 64) - 1])
def test_implausible_uptime_is_dead_lettered_not_turned_into_an_interval(uptime: int) -> None:
    data = _put(bytearray(OWN.read_bytes()), RECORDS[1], "<Q", uptime)
    emitted = _read(data)
    assert [letter["byte_offset"] for letter in _letters(emitted)] == [RECORDS[1]]
    cpu = [e.record for e in emitted if e.topic_key == "cpu_samples"]
    assert [round(c["interval_s"], 2) for c in cpu] == [
        2.03,
        1.0,
    ]  # 1st -> 3rd record (uptimes 65127, 65330), 3rd -> 4th


def _activity_offsets(data: bytes, record: int) -> dict[str, int]:
    """Where each activity's items start in a record (walked independently of the reader's decoders)."""
    sa = open_bytes(data)
    off = record + 24
    out = {}
    for a in sa.header.activities:
        nr = a.nr
        if a.has_nr:
            nr = struct.unpack_from("<i", data, off)[0]
            off += 4
        out[a.name] = off
        off += nr * a.nr2 * a.size
    return out


def test_counters_going_backwards_give_no_negative_rate() -> None:
    data = bytearray(OWN.read_bytes())
    disk = _activity_offsets(bytes(data), RECORDS[2])["disk"]
    nr_ios = struct.unpack_from("<Q", data, disk)[0]
    struct.pack_into("<QQQQQQ", data, disk, nr_ios, 0, 0, 0, 0, 0)  # nr_ios kept, sectors back to 0
    emitted = _read(bytes(data))
    letters = _letters(emitted)
    assert letters and all(letter["byte_offset"] == RECORDS[2] and "disk" in letter["error"] for letter in letters)


def test_truncated_anywhere_publishes_whole_records_only() -> None:
    source = OWN.read_bytes()
    whole = sar_text.our_rows(_read(source, "own"))
    for cut in range(0, len(source), 97):
        emitted = _read(source[:cut])
        figures = sar_text.our_rows(emitted)
        assert all(whole[k] == v for k, v in figures.items())
        assert len(_letters(emitted)) <= 1


def test_a_poison_file_in_live_mode_is_reported_once_and_left(tmp_path: Path) -> None:
    path = tmp_path / "sa01"
    data = bytearray(OWN.read_bytes())
    data[2:4] = struct.pack("<H", 0x2170)  # a 9.1.5 file: refused, as by sar
    path.write_bytes(bytes(data))
    tail = Tail(path, Options())
    first = list(tail.poll())
    assert [e.topic_key for e in first] == ["dead_letters"] and "0x2170" in first[0].record["error"]
    assert list(tail.poll()) == []


def grown(data: bytes, copies: int) -> bytes:
    """The own recording with its statistics records repeated `copies` times, each copy after a RESTART
    record (the counters start again, as after a reboot) and 5 s later than the one before, hh:mm:ss
    following (a file as long as wanted, of good intervals only)."""
    body = [data[a:b] for a, b in zip(RECORDS, (*RECORDS[1:], len(data)), strict=True)]
    out = [data[: RECORDS[0]]]
    for c in range(copies):
        for i, rec in enumerate(body):
            uptime, ust = struct.unpack_from("<QQ", rec, 0)
            t = time.gmtime(ust + c * 5)
            if i == 0 and c:  # a RESTART 1 s before the copy's first record: type 2, then the CPU count
                r = time.gmtime(ust + c * 5 - 1)
                out.append(struct.pack("<QQI4Bi", uptime - 100, ust + c * 5 - 1, 0, 2, r.tm_hour, r.tm_min,
                                       r.tm_sec, 3))  # fmt: skip
            head = (
                struct.pack("<QQ", uptime, ust + c * 5) + rec[16:20] + bytes([rec[20], t.tm_hour, t.tm_min, t.tm_sec])
            )
            out.append(head + rec[24:])
    return b"".join(out)


def _strip(emitted: list[Emitted]) -> list[dict]:
    return [{k: v for k, v in e.record.items() if k != "detected_at"} for e in emitted]


def test_a_file_read_through_a_small_window_gives_what_the_whole_bytes_give(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from fleetperf.sources.sysstat import reader
    from fleetperf.sources.sysstat.records import records_of_file

    data = bytearray(grown(OWN.read_bytes(), 30))
    stats = [r.offset for r in open_bytes(bytes(data)).records() if r.kind == "stats"]
    data[stats[41] + 8] ^= 0x01  # the seconds of a record's time: a dead letter, the record skipped
    path = tmp_path / "sa-grown"
    path.write_bytes(bytes(data))
    whole = _strip(list(records_of_bytes(bytes(data), str(path), Options())))
    monkeypatch.setattr(reader, "CHUNK", 100)  # the window slides many times inside every record
    monkeypatch.setattr(reader, "KEEP", 300)
    streamed = _strip(list(records_of_file(path, Options())))
    assert streamed == whole
    assert sum(1 for r in whole if "error" in r) == 1 and len(whole) > 1000


def test_memory_stays_flat_with_the_file_size(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tracemalloc

    from fleetperf.sources.sysstat import reader
    from fleetperf.sources.sysstat.records import records_of_file

    monkeypatch.setattr(reader, "CHUNK", 64 << 10)  # a smaller window than the default 1 MB + 1 MB,
    monkeypatch.setattr(reader, "KEEP", 64 << 10)  # so that files of a few MB show whether it slides
    peaks = []
    for copies in (100, 400):  # 1.7 MB and 6.9 MB
        path = tmp_path / f"sa-{copies}"
        path.write_bytes(grown(OWN.read_bytes(), copies))
        tracemalloc.start()
        n = sum(1 for _ in records_of_file(path, Options()))
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert n > copies * 3 * 10
    assert peaks[1] < 1 << 20 and peaks[1] < peaks[0] * 1.25, peaks


def test_live_mode_waits_for_the_record_that_tells_a_clock_step_from_damage(tmp_path: Path) -> None:
    """A record whose time disagrees with its uptime is judged by the next one: while that one is still
    being written, the record waits (not dead-lettered), then it is judged."""
    data = bytearray(OWN.read_bytes())
    struct.pack_into("<Q", data, RECORDS[2], 65330 + 500)  # the 3rd record's uptime 5 s late
    path = tmp_path / "sa25"
    tail = Tail(path, Options())
    letters = []
    for end in (RECORDS[3], RECORDS[3] + 100, len(data)):
        path.write_bytes(bytes(data[:end]))
        letters += [e.record for e in tail.poll() if e.topic_key == "dead_letters"]
        if end < len(data):
            assert not letters, letters  # the next record is not whole yet: no judgement
    assert [letter["byte_offset"] for letter in letters] == [RECORDS[2]]


def test_live_mode_reports_a_damaged_end_once_at_finish(tmp_path: Path) -> None:
    data = bytearray(OWN.read_bytes())
    data[RECORDS[3] + 20] = 0x77  # the last record's type: garbage, and nothing whole after it
    path = tmp_path / "sa25"
    path.write_bytes(bytes(data))
    tail = Tail(path, Options())
    polled = [e.record for _ in range(3) for e in tail.poll() if e.topic_key == "dead_letters"]
    assert polled == []  # while sadc may still write, the end is not judged (and never reported twice)
    (letter,) = [e.record for e in tail.finish() if e.topic_key == "dead_letters"]
    assert letter["byte_offset"] == RECORDS[3] + 20 and "unknown record type 119" in letter["error"]
    assert list(tail.finish()) == []
