"""nmon on old, damaged and hostile input (issue 19, items 1-7), on the project's own files
(src/fleetperf/sources/nmon/testdata/, README.md there) and a seeded fuzz campaign over them.
Every test runs both parsers: the Python reference and, where built, the native scanner."""

from __future__ import annotations

import gzip
import io
import json
import math
import random
import signal
import time
import tracemalloc
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fastavro import schemaless_reader

from fleetperf.ingest import validate
from fleetperf.ingest.records import Emitted
from fleetperf.sources.nmon import native_parser, sniff
from fleetperf.sources.nmon.parser import DATE_ORDERS, FileRejectedError, NmonParser, start_date
from tests.unit.test_nmon_native import SCHEMAS, comparable

TESTDATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "nmon" / "testdata"
NATIVE = native_parser.available()
PARSERS = ["python", "native"]


def run(kind: str, name: str, data: bytes, chunk: int = 1 << 20, **options) -> tuple[list[Emitted], object]:
    """All records of `data` (an nmon file named `name`) through one parser, fed in chunks."""
    if kind == "native":
        if not NATIVE:
            pytest.skip("native nmon scanner not built")
        parser = native_parser.NativeNmonParser(name, **options)
    else:
        parser = NmonParser(name, **options)
    out: list[Emitted] = []
    for pos in range(0, len(data), chunk):
        out.extend(parser.feed_chunk(data[pos : pos + chunk]))
    out.extend(parser.finish())
    return out, parser


def decoded(emitted: Emitted) -> dict:
    """The record as the warehouse gets it (the native scanner's Avro decoded)."""
    if emitted.encoded is None:
        return emitted.record
    schema = SCHEMAS[emitted.topic_key]
    return schemaless_reader(io.BytesIO(emitted.encoded), schema, schema)


def by_topic(out: list[Emitted]) -> dict[str, list[dict]]:
    topics: dict[str, list[dict]] = {"cpu_samples": [], "nmon_snapshots": [], "host_configs": [], "dead_letters": []}
    for e in out:
        topics[e.topic_key].append(decoded(e))
    return topics


def ts_ms(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp() * 1000)


def ts_of(record: dict) -> int:
    ts = record["ts"]
    return int(ts.timestamp() * 1000) if isinstance(ts, datetime) else ts


def own_file(name: str) -> bytes:
    return (TESTDATA / name).read_bytes()


# 1: classic nmon, ZZZZ without a date --------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_classic_dateless_zzzz_from_aaa_date_across_midnight(kind: str) -> None:
    name = "aix53lpar_110313_2355.nmon"
    t = by_topic(run(kind, name, own_file(name))[0])
    assert t["dead_letters"] == []
    cpu = t["cpu_samples"]
    # AAA,date,13/03/11 (day 13: DD/MM/YY); ZZZZ,T0002,23:59:02 then ZZZZ,T0003,00:01:02: the next day
    assert [ts_of(r) for r in cpu] == [
        ts_ms("2011-03-13 23:57:02"),
        ts_ms("2011-03-13 23:59:02"),
        ts_ms("2011-03-14 00:01:02"),
        ts_ms("2011-03-14 00:03:02"),
        ts_ms("2011-03-14 00:05:02"),
        ts_ms("2011-03-14 00:07:02"),
    ]
    # CPU_ALL,T0001,12.0,4.0,0.5,83.5,,2 and LPAR,T0001,0.41,2,4,8,0.50,... (testdata file, line 29-30)
    first = cpu[0]
    assert (first["user_pct"], first["idle_pct"], first["cpus"], first["physc"], first["entitled"]) == (
        12.0,
        83.5,
        2,
        0.41,
        0.5,
    )
    assert first["host_id"] == "06ABCDE-4"
    [config] = t["host_configs"]
    assert config["attributes"]["aggregation.ent2.members"] == "ent0,ent1"


def test_the_issue_example_and_aaa_time_rollover(tmp_path: Path) -> None:
    # AAA,date,03/03/11 reads the same either way; AAA,time 23:59:58 and a first ZZZZ at 00:00:04:
    # the first snapshot is already on the next day
    text = (
        b"AAA,progname,nmon\nAAA,host,old\nAAA,time,23:59:58\nAAA,date,03/03/11\n"
        b"CPU_ALL,CPU Total old,User%,Sys%,Wait%,Idle%,Busy,PhysicalCPUs\n"
        b"ZZZZ,T0001,00:00:04\nCPU_ALL,T0001,1.0,1.0,0.0,98.0,,1\n"
        b"ZZZZ,T0002,00:00:09\nCPU_ALL,T0002,1.0,1.0,0.0,98.0,,1\n"
    )
    for kind in PARSERS if NATIVE else ["python"]:
        cpu = by_topic(run(kind, "old.nmon", text)[0])["cpu_samples"]
        assert [ts_of(r) for r in cpu] == [ts_ms("2011-03-04 00:00:04"), ts_ms("2011-03-04 00:00:09")]


@pytest.mark.parametrize("kind", PARSERS)
def test_ambiguous_day_month_order(kind: str) -> None:
    name = "aix53b_110605_0000.nmon"
    data = own_file(name)
    # the file name says 11-06-05: AAA,date 05/06/11 is 5 June
    cpu = by_topic(run(kind, name, data)[0])["cpu_samples"]
    assert ts_of(cpu[0]) == ts_ms("2011-06-05 00:01:01") and len(cpu) == 3
    # under another name nothing tells: one message, nothing published, the option named
    out, parser = run(kind, "aix53b.nmon", data)
    [letter] = [decoded(e) for e in out]
    assert letter["line"] == 8  # the first ZZZZ line
    assert "can be 05 Jun 2011 (day/month) or 06 May 2011 (month/day)" in letter["error"]
    assert "--date-order" in letter["error"]
    assert parser.rejected == letter["error"] and parser.resume_offset == 0
    for order, want in (("mdy", "2011-05-06 00:01:01"), ("dmy", "2011-06-05 00:01:01")):
        cpu = by_topic(run(kind, "aix53b.nmon", data, date_order=order)[0])["cpu_samples"]
        assert ts_of(cpu[0]) == ts_ms(want)


@pytest.mark.parametrize("kind", PARSERS)
def test_classic_file_without_aaa_date_takes_the_day_from_its_name_or_says_so(kind: str) -> None:
    lines = io.BytesIO(own_file("aix53b_110605_0000.nmon"))
    data = b"".join(line for line in lines if not line.startswith(b"AAA,date"))
    cpu = by_topic(run(kind, "aix53b_110605_0000.nmon", data)[0])["cpu_samples"]
    assert ts_of(cpu[0]) == ts_ms("2011-06-05 00:01:01")
    out, parser = run(kind, "aix53b.nmon", data)
    assert [decoded(e)["error"] for e in out] == [parser.rejected]
    assert parser.rejected.startswith("ZZZZ lines carry no date and there is no AAA,date line")


@pytest.mark.parametrize("kind", PARSERS)
def test_zzzz_dates_written_with_numbers(kind: str) -> None:
    text = (
        b"AAA,progname,nmon\nAAA,host,num\nCPU_ALL,CPU Total num,User%,Sys%,Wait%,Idle%,Busy,CPUs\n"
        b"ZZZZ,T0001,23:59:00,13/03/11\nCPU_ALL,T0001,1.0,1.0,0.0,98.0,,2\n"
        b"ZZZZ,T0002,00:01:00,14/03/11\nCPU_ALL,T0002,1.0,1.0,0.0,98.0,,2\n"
    )
    cpu = by_topic(run(kind, "num.nmon", text)[0])["cpu_samples"]
    assert [ts_of(r) for r in cpu] == [ts_ms("2011-03-13 23:59:00"), ts_ms("2011-03-14 00:01:00")]
    out, parser = run(kind, "num.nmon", text.replace(b"13/03/11", b"03/04/11").replace(b"14/03/11", b"04/04/11"))
    assert [decoded(e)["error"] for e in out if e.topic_key == "dead_letters"] == [parser.rejected]
    assert "date_order" in parser.rejected


def test_start_date_formats() -> None:
    assert start_date("10-FEB-2016", "x.nmon", None) == date(2016, 2, 10)
    assert start_date("18-aug-15", "x.nmon", None) == date(2015, 8, 18)
    assert start_date("03/03/11", "x.nmon", None) == date(2011, 3, 3)
    assert start_date("13/03/11", "x.nmon", None) == date(2011, 3, 13)  # only day/month possible
    assert start_date("03/13/11", "x.nmon", None) == date(2011, 3, 13)  # only month/day possible
    assert start_date("2011-03-04", "x.nmon", None) == date(2011, 3, 4)
    assert start_date("04.03.2011", "x.nmon", "dmy") == date(2011, 3, 4)
    assert start_date("Mar 3 2011", "x.nmon", None) == start_date("MAR-03-11", "x.nmon", None) == date(2011, 3, 3)
    assert start_date("04/03/11", "host_110403_0000.nmon", "dmy") == date(2011, 4, 3)  # the file wins
    with pytest.raises(FileRejectedError, match="not a date this reader knows"):
        start_date("yesterday", "x.nmon", None)
    with pytest.raises(FileRejectedError, match="date_order"):
        start_date("04/03/11", "x.nmon", None)
    with pytest.raises(ValueError, match="date_order"):
        NmonParser("x.nmon", date_order="ymd")
    assert DATE_ORDERS == ("dmy", "mdy")


# 2: damaged or missing ZZZZ lines --------------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_damaged_and_missing_zzzz_lines_are_accounted_for(kind: str) -> None:
    name = "zvm1_damaged_zzzz.nmon"
    data = own_file(name)
    t = by_topic(run(kind, name, data)[0])
    assert [r["origin_snapshot"] for r in t["cpu_samples"]] == ["T0001", "T0003", "T0005"]
    letters = [(d["line"], d["error"]) for d in t["dead_letters"]]
    assert letters == [
        (10, "ZZZZ T0002: bad time b'11:0'"),
        (11, "snapshot T0002: 2 data lines without a valid ZZZZ time line: not published"),
        (16, "snapshot T0004: 2 data lines without a valid ZZZZ time line: not published"),
    ]
    # every data line is in a published row or counted by a dead letter
    data_lines = sum(1 for line in data.splitlines() if line.startswith((b"CPU_ALL,T", b"MEM,T")))
    published = sum(len(s["rows"]) for s in t["nmon_snapshots"])
    assert published + 2 + 2 == data_lines == 10


# 3: a cut last line, resuming at the last complete snapshot ------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_cut_last_line_is_not_data_and_a_rerun_resumes(kind: str) -> None:
    name = "cutvm_cut.nmon"
    data = own_file(name)
    out, parser = run(kind, name, data)
    t = by_topic(out)
    assert [r["origin_snapshot"] for r in t["cpu_samples"]] == [f"T{n:04d}" for n in range(1, 10)]
    assert {r["idle_pct"] for r in t["cpu_samples"]} == {99.5}
    [cut] = t["dead_letters"]
    assert cut["line"] == 37 and cut["byte_offset"] == 1091 and "no end of line" in cut["error"]
    # the resume point is T0010's ZZZZ line (byte 1035): its snapshot is not complete
    assert parser.resume_offset == data.index(b"ZZZZ,T0010") == 1035
    # nmon writes on; a later run over the grown file publishes T0010 (idle 99.5) and what follows, once
    grown = data + b".5,0.0,,2\nZZZZ,T0011,06:00:55,03-FEB-2024\nCPU_ALL,T0011,0.1,0.1,0.0,99.8,0.0,,2\n"
    out, again = run(kind, name, grown, resume_from=parser.resume_offset)
    t = by_topic(out)
    assert [(r["origin_snapshot"], r["idle_pct"]) for r in t["cpu_samples"]] == [("T0010", 99.5), ("T0011", 99.8)]
    assert t["dead_letters"] == [] and t["host_configs"] == []
    assert again.resume_offset == len(grown)


@pytest.mark.parametrize("kind", PARSERS)
def test_resume_offset_in_any_chunking_never_passes_an_open_snapshot(kind: str) -> None:
    """Stop anywhere, resume from resume_offset: every snapshot arrives exactly once."""
    name = "linuxvm_nmon16.nmon"
    data = own_file(name)
    full = [r["origin_snapshot"] for r in by_topic(run(kind, name, data)[0])["nmon_snapshots"]]
    rng = random.Random(3)
    for _ in range(15):
        stop = rng.randint(1, len(data))
        first, parser = run(kind, name, data[:stop], chunk=rng.randint(1, 200))
        rest, _ = run(kind, name, data, chunk=rng.randint(1, 200), resume_from=parser.resume_offset)
        both = by_topic(first)["nmon_snapshots"] + by_topic(rest)["nmon_snapshots"]
        if data[:stop].endswith(b"\n"):  # a clean end publishes the open snapshot: nmon has stopped
            continue
        assert [r["origin_snapshot"] for r in both] == full, stop


@pytest.mark.parametrize("kind", PARSERS)
def test_a_file_still_being_written_keeps_its_last_snapshot_for_later(kind: str) -> None:
    """finish(complete_tail=False): the pipeline's choice for a file nmon may still write (a clean
    end of line does not prove the snapshot complete)."""
    data = own_file("linuxvm_nmon16.nmon")
    data = data[: data.index(b"ZZZZ,T0005")]  # ends after T0004's last line, with its end of line
    parser = NmonParser("linuxvm.nmon") if kind == "python" else None
    if kind == "native":
        if not NATIVE:
            pytest.skip("native nmon scanner not built")
        parser = native_parser.NativeNmonParser("linuxvm.nmon")
    out = [*parser.feed_chunk(data), *parser.finish(complete_tail=False)]
    assert [r["origin_snapshot"] for r in by_topic(out)["nmon_snapshots"]] == ["T0001", "T0002", "T0003"]
    assert parser.resume_offset == data.index(b"ZZZZ,T0004")


HEAD = b"AAA,progname,nmon\nAAA,host,h\nCPU_ALL,CPU Total h,User%,Sys%\nMEM,Memory MB h,memtotal\n"
SNAP1 = b"ZZZZ,T0001,00:00:01,01-JAN-2024\nCPU_ALL,T0001,1.0,1.0\nMEM,T0001,512\n"
SNAP2 = b"ZZZZ,T0002,00:00:11,01-JAN-2024\nCPU_ALL,T0002,1.0,1.0\n"


@pytest.mark.parametrize(
    ("text", "short"),
    [
        (HEAD + SNAP1 + SNAP2 + b"MEM,T0002,512\n", False),  # the last snapshot has every section
        (HEAD + SNAP1 + SNAP2, True),  # its MEM line not written yet
        (HEAD + SNAP1 + SNAP2[:-6], True),  # cut inside its CPU_ALL line
        (HEAD + SNAP1, False),  # one snapshot: nothing to compare with
        (SNAP1 + SNAP2, True),  # the tail read starts on a ZZZZ line
        (SNAP1[10:] + SNAP2 + b"MEM,T0002,512\n", False),  # ... or inside one: a single ZZZZ line
        (HEAD + SNAP1 + SNAP2 + b"MEM,T0002,512\nZZZZ,T0003,00:00:21,01-JAN-2024\n", True),  # ZZZZ alone
    ],
)
def test_a_growing_files_last_snapshot_is_short_without_a_section(tmp_path: Path, text: bytes, short: bool) -> None:
    """What `ingest` holds back of a file modified in the last 30 s (sources/nmon/source.py)."""
    from fleetperf.sources.nmon.source import _last_snapshot_short

    path = tmp_path / "h.nmon"
    path.write_bytes(text)
    assert _last_snapshot_short(path) is short


# 4: absurd values -------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_absurd_values_are_null_with_a_dead_letter_naming_the_field(kind: str) -> None:
    name = "absurd_values.nmon"
    t = by_topic(run(kind, name, own_file(name))[0])
    cpu = {r["origin_snapshot"]: r for r in t["cpu_samples"]}
    assert sorted(cpu) == ["T0001", "T0004", "T0005"]  # T0002 (year 0001) and T0003 (year 9999) are not
    t1 = cpu["T0001"]
    # CPU_ALL,T0001,nan,inf,-5,250,1e400,,2: every field null but CPUs
    assert [t1[k] for k in ("user_pct", "sys_pct", "wait_pct", "idle_pct", "steal_pct", "cpus")] == [None] * 5 + [2]
    assert cpu["T0004"]["user_pct"] == 100.4  # within the documented tolerance
    letters = {d["line"]: d for d in t["dead_letters"]}
    assert letters[8]["error"].startswith("CPU User%: not a finite number: b'nan'; CPU Sys%: not a finite number")
    assert "CPU Wait%: negative: b'-5'" in letters[8]["error"]
    assert "CPU Idle%: above 100 %: b'250'" in letters[8]["error"]
    assert "CPU Steal%: not a finite number: b'1e400'" in letters[8]["error"]
    assert letters[8]["origin_file"] == name and letters[8]["raw"] == "CPU_ALL,T0001,nan,inf,-5,250,1e400,,2"
    assert letters[9]["error"].startswith("NET eth0-read-KB/s: not a finite number: b'1_0'; NET eth0-write-KB/s: neg")
    assert "outside 1990..now+1 day" in letters[10]["error"] and "outside" in letters[12]["error"]
    assert "number too long (400 characters)" in letters[16]["error"]
    net = {s["origin_snapshot"]: [r for r in s["rows"] if r["section"] == "NET"] for s in t["nmon_snapshots"]}
    assert net["T0001"][0]["values"] == [None, None] and net["T0004"][0]["values"] == [None, 2.0]
    if kind == "python":  # what `parse nmon` prints: strict JSON
        for e in run(kind, name, own_file(name))[0]:
            json.dumps(e.record, allow_nan=False)


@pytest.mark.parametrize("kind", PARSERS)
@pytest.mark.parametrize("chunk", [1 << 20, 5])
def test_values_past_the_header_are_a_dead_letter_and_the_rest_of_the_line_is_published(kind: str, chunk: int) -> None:
    """A data line with more cells than its header names (the AIX corpus file's JFSFILE: 31 values
    under 9 file systems): the named ones published, the first such line of each header a dead letter
    that says how many were not (the rest alike not again, until the header is written anew);
    trailing empty cells are not values; UARG's last column takes the rest of its line."""
    text = (
        b"AAA,progname,nmon\nAAA,host,wide\nAAA,interval,60\nAAA,date,01-DEC-2026\n"
        b"JFSFILE,JFS Filespace %Used wide,/,/usr\n"
        b"TOP,+PID,Time,%CPU,Command\n"
        b"UARG,+Time,PID,ProgName,FullCommand\n"
        b"ZZZZ,T0001,00:00:00,01-DEC-2026\n"
        b"JFSFILE,T0001,39.4,10.4,64.3, 5.0\n"
        b"JFSFILE,T0001,1.0,2.0,,\n"
        b"TOP,0000042,T0001,3.5,spin,7\n"
        b"UARG,T0001,0000042,spin,spin --a=1,2,3\n"
        b"ZZZZ,T0002,00:01:00,01-DEC-2026\n"
        b"JFSFILE,T0002,1.0,2.0,3.0\n"  # reported already
        b"JFSFILE,JFS Filespace %Used wide,/,/usr\n"  # the header anew: reported again
        b"JFSFILE,T0002,1.0,2.0,4.0\n"
    )
    out, _ = run(kind, "wide.nmon", text, chunk)
    t = by_topic(out)
    again = " (not published; later lines of this header alike are not reported again)"
    assert [(d["line"], d["error"]) for d in t["dead_letters"]] == [
        (9, "JFSFILE: 2 values past the header's 2 columns" + again),
        (11, "TOP: 1 values past the header's 3 columns" + again),
        (16, "JFSFILE: 1 values past the header's 2 columns" + again),
    ]
    assert t["dead_letters"][0]["raw"] == "JFSFILE,T0001,39.4,10.4,64.3, 5.0"  # the values kept there
    rows = [(r["section"], r["entities"], r["values"], r["labels"]) for r in t["nmon_snapshots"][0]["rows"]]
    assert rows == [
        ("JFSFILE", ["/", "/usr"], [39.4, 10.4], {}),
        ("JFSFILE", ["/", "/usr"], [1.0, 2.0], {}),
        ("TOP", ["0000042 spin"], [3.5], {"PID": "0000042", "Command": "spin"}),
        # every column text: no value, one entity all the same (the process, as TOP names it)
        ("UARG", ["0000042 spin"], [], {"PID": "0000042", "ProgName": "spin", "FullCommand": "spin --a=1,2,3"}),
    ]


@pytest.mark.parametrize("kind", PARSERS)
def test_int_counts_fit_and_a_far_aaa_date_does_not_crash(kind: str) -> None:
    text = (
        b"AAA,progname,nmon\nAAA,host,h\nAAA,date,31-DEC-9999\n"
        b"CPU_ALL,CPU Total h,User%,Sys%,Wait%,Idle%,Busy,CPUs\n"
        b"ZZZZ,T0001,00:00:01\nCPU_ALL,T0001,1.0,1.0,0.0,98.0,,2\n"
        b"ZZZZ,T0002,00:00:02,01-JAN-2024\nCPU_ALL,T0002,1.0,1.0,0.0,98.0,,1e18\n"
    )
    t = by_topic(run(kind, "h.nmon", text)[0])
    [cpu] = t["cpu_samples"]
    assert cpu["origin_snapshot"] == "T0002" and cpu["cpus"] is None and cpu["user_pct"] == 1.0
    assert [(d["line"], d["error"].split(":")[0]) for d in t["dead_letters"]] == [
        (5, "ZZZZ T0001"),  # AAA,date 9999: outside 1990..now+1 day
        (6, "snapshot T0001"),  # its data line, closed by the next ZZZZ
        (8, "CPU CPUs"),  # 1e18 does not fit the Avro int of cpu_samples.cpus
    ]
    assert "above 2147483647" in t["dead_letters"][2]["error"]


def test_validate_rules() -> None:
    assert validate.parse_number(b"12.5") == 12.5
    for text in (b"nan", b"-inf", b"1e400", b"1_0", b"x", b"9" * 400):
        assert isinstance(validate.parse_number(text), str), text
    assert validate.out_of_range(-0.0, validate.Kind.PERCENT) is None
    assert validate.out_of_range(100.5, validate.Kind.PERCENT) is None
    assert validate.out_of_range(100.6, validate.Kind.PERCENT) == "above 100 %"
    assert validate.out_of_range(-1.0, validate.Kind.NON_NEGATIVE) == "negative"
    assert validate.out_of_range(-1.0, validate.Kind.ANY) is None
    assert validate.no_value(b"-nan", validate.Kind.RATIO) and not validate.no_value(b"-nan", validate.Kind.PERCENT)
    assert validate.timestamp_problem(ts_ms("1989-12-31 23:59:59")) is not None
    assert validate.timestamp_problem(ts_ms("2011-03-03 00:00:00")) is None
    assert validate.finite_or_none(math.inf) is None and validate.finite_or_none(1.0) == 1.0


# 5: two snapshots with one time --------------------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_spliced_file_second_snapshot_with_a_known_time_is_a_dead_letter(kind: str) -> None:
    name = "splice_spliced.nmon"
    t = by_topic(run(kind, name, own_file(name))[0])
    got = [(r["origin_snapshot"], ts_of(r), r["user_pct"]) for r in t["cpu_samples"]]
    assert got == [
        ("T0001", ts_ms("2024-01-02 10:01:00"), 1.0),
        ("T0002", ts_ms("2024-01-02 10:02:00"), 2.0),
        ("T0003", ts_ms("2024-01-02 10:03:00"), 3.0),
        ("T0004", ts_ms("2024-01-02 10:04:00"), 4.0),
        ("T0003", ts_ms("2024-01-02 10:05:00"), 23.0),  # the second run's T0003: a new time
    ]
    assert [(d["line"], d["error"]) for d in t["dead_letters"]] == [
        (
            21,
            "snapshot T0001 has the time of snapshot T0003 (line 11) of this file "
            "(nmon restarted, or files spliced?): not published",
        ),
        (
            23,
            "snapshot T0002 has the time of snapshot T0004 (line 13) of this file "
            "(nmon restarted, or files spliced?): not published",
        ),
    ]


@pytest.mark.parametrize("kind", PARSERS)
def test_record_positions_increase_in_file_order_even_when_tags_restart(kind: str) -> None:
    """Emitted.snapshot is where a re-run resumes (sources/base.py): the snapshot's first byte + 1,
    so the spliced file's second T0003 is not taken for the first one."""
    name = "splice_spliced.nmon"
    data = own_file(name)
    snaps = [e for e in run(kind, name, data)[0] if e.topic_key == "nmon_snapshots"]
    positions = [e.snapshot for e in snaps]
    assert positions == sorted(set(positions))
    second_t0003 = data.index(b"ZZZZ,T0003", data.index(b"ZZZZ,T0003") + 1)
    assert positions[-1] == second_t0003 + 1


# 6: content sniffing --------------------------------------------------------------------------------


def test_sniff() -> None:
    head = own_file("linuxvm_nmon16.nmon")[:4096]
    assert sniff.sniff(head) and sniff.sniff(gzip.compress(head)) and sniff.sniff(b"\n\nAAA,progname,nmon\n")
    assert not sniff.sniff(random.Random(1).randbytes(4096))
    assert not sniff.sniff(b"<html>\n")
    assert sniff.problem(b"") == sniff.problem(b" \n\r\n") == sniff.EMPTY
    assert sniff.problem(b"PK\x03\x04") == sniff.NOT_NMON
    assert sniff.problem(b"\x1f\x8bjunk") == sniff.NOT_NMON
    assert sniff.sniff(sniff.BOM + b"AAA,progname,topas_nmon\n")


@pytest.mark.parametrize("kind", PARSERS)
def test_not_nmon_and_empty_give_one_message(kind: str) -> None:
    noise = random.Random(5).randbytes(50_000)
    out, parser = run(kind, "noise.nmon", noise, chunk=4096)
    [letter] = [decoded(e) for e in out]
    assert (letter["line"], letter["byte_offset"], letter["error"]) == (1, 0, sniff.NOT_NMON)
    assert parser.rejected == sniff.NOT_NMON and parser.resume_offset == 0
    out, parser = run(kind, "empty.nmon", b"")
    assert [decoded(e)["error"] for e in out] == [sniff.EMPTY] and parser.rejected == sniff.EMPTY
    # a UTF-8 byte order mark before AAA is nmon (some editors and copies add one)
    out, parser = run(kind, "bom.nmon", sniff.BOM + own_file("oldbox_nmon13.nmon"))
    assert parser.rejected is None and len(by_topic(out)["cpu_samples"]) == 3


# 7: bounded memory ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", PARSERS)
def test_over_long_line_and_huge_tag_are_dead_letters_and_the_file_goes_on(kind: str) -> None:
    data = own_file("oldbox_nmon13.nmon")
    lines = data.splitlines(keepends=True)
    # after line 12 (T0001's last line): a 3 MiB line of digits, a 5,000-digit snapshot tag
    bad = [b"CPU_ALL,T0001," + b"9" * (3 << 20) + b"\n", b"CPU_ALL,T" + b"0" * 5000 + b"1,1.0\n"]
    text = b"".join(lines[:13] + bad + lines[13:])
    out, parser = run(kind, "oldbox.nmon", text, chunk=65536)
    t = by_topic(out)
    assert len(t["cpu_samples"]) == 3 and t["cpu_samples"][0]["user_pct"] == 1.5
    letters = [(d["line"], d["error"]) for d in t["dead_letters"]]
    assert letters == [
        (14, f"line longer than {1 << 20} bytes ({len(bad[0]) - 1} bytes): skipped"),
        (15, "CPU_ALL: snapshot tag too long (5002 characters)"),
    ]
    assert len(t["dead_letters"][0]["raw"]) == 1024


@pytest.mark.parametrize("kind", PARSERS)
def test_snapshot_beyond_the_bound_is_one_dead_letter(kind: str) -> None:
    head = b"AAA,progname,nmon\nAAA,host,big\nBIG,Big section,a,b\nCPU_ALL,CPU Total big,User%,Sys%\n"
    snap1 = b"ZZZZ,T0001,00:00:01,01-JAN-2024\n" + b"BIG,T0001,1.0,2.0\n" * 5000
    snap2 = b"ZZZZ,T0002,00:00:02,01-JAN-2024\nCPU_ALL,T0002,1.0,2.0\n"
    out, _ = run(kind, "big.nmon", head + snap1 + snap2, chunk=4096, max_snapshot=10_000)
    t = by_topic(out)
    assert [s["origin_snapshot"] for s in t["nmon_snapshots"]] == ["T0002"]
    [letter] = t["dead_letters"]
    assert letter["line"] == 5  # T0001's ZZZZ line
    assert letter["error"] == "snapshot T0001 larger than 10000 bytes (5000 data lines, 90000 bytes): not published"


def test_python_parser_memory_stays_bounded_on_a_huge_line() -> None:
    head = own_file("oldbox_nmon13.nmon")
    parser = NmonParser("huge.nmon")
    tracemalloc.start()
    out = list(parser.feed_chunk(head))
    for _ in range(40):  # 40 MiB without an end of line
        out.extend(parser.feed_chunk(b"7" * (1 << 20)))
    out.extend(parser.finish())
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < 8 << 20, peak
    assert out[-1].record["error"] == f"line longer than {1 << 20} bytes ({40 << 20} bytes): skipped"


# fuzz -------------------------------------------------------------------------------------------------


class FuzzTimeoutError(Exception):
    pass


def _alarm(signum: int, frame: object) -> None:
    raise FuzzTimeoutError


def mutants(seed: int, count: int) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(seed)
    files = sorted(TESTDATA.glob("*.nmon"))
    bases = [(p.name, p.read_bytes()) for p in files]
    odd = [
        b"nan",
        b"-nan",
        b"inf",
        b"-inf",
        b"1e400",
        b"-5",
        b"250",
        b"1_0",
        b"9" * 2000,
        b"",
        b"T0001",
        b"\x00",
        b"1e18",
    ]
    for n in range(count):
        name, data = rng.choice(bases)
        lines = data.splitlines(keepends=True)
        how = n % 8
        if how == 0:  # byte flips
            b = bytearray(data)
            for _ in range(rng.randint(1, 8)):
                b[rng.randrange(len(b))] = rng.randrange(256)
            data = bytes(b)
        elif how == 1:  # truncation anywhere
            data = data[: rng.randrange(len(data))]
        elif how == 2:  # line duplications
            for _ in range(rng.randint(1, 4)):
                i = rng.randrange(len(lines))
                lines[i:i] = lines[i : i + rng.randint(1, 6)]
            data = b"".join(lines)
        elif how in (3, 4):  # huge numbers, NaN, inf in cells
            for _ in range(rng.randint(1, 6)):
                i = rng.randrange(len(lines))
                cells = lines[i].rstrip(b"\n").split(b",")
                cells[rng.randrange(len(cells))] = rng.choice(odd)
                lines[i] = b",".join(cells) + b"\n"
            data = b"".join(lines)
        elif how == 5:  # lines dropped or swapped
            for _ in range(rng.randint(1, 4)):
                i, j = rng.randrange(len(lines)), rng.randrange(len(lines))
                if rng.random() < 0.5:
                    del lines[i]
                else:
                    lines[i], lines[j] = lines[j], lines[i]
            data = b"".join(lines)
        elif how == 6:  # two files spliced
            other = rng.choice(bases)[1]
            data = data[: rng.randrange(len(data))] + other[rng.randrange(len(other)) :]
        else:  # garbage inserted
            i = rng.randrange(len(lines))
            lines.insert(i, rng.randbytes(rng.randint(1, 300)) + b"\n")
            data = b"".join(lines)
        yield f"{n:03d}-{name}", data


def check_published(record: dict, topic: str) -> None:
    if topic == "nmon_snapshots":
        for row in record["rows"]:
            assert all(v is None or math.isfinite(v) for v in row["values"]), row
    if topic == "cpu_samples":
        for key in ("user_pct", "sys_pct", "wait_pct", "idle_pct", "steal_pct"):
            v = record[key]
            assert v is None or 0 <= v <= 100 + validate.PERCENT_TOLERANCE, (key, v)
        for key in ("physc", "entitled", "cpus", "virtual_cpus"):
            assert record[key] is None or record[key] >= 0, (key, record[key])
    if topic in ("nmon_snapshots", "cpu_samples"):
        assert validate.timestamp_problem(ts_of(record)) is None


def by_lines(name: str, data: bytes, **options) -> list[Emitted]:
    """The Python parser's other way in: one line at a time (the last one may lack its \\n)."""
    parser, out, offset = NmonParser(name, **options), [], 0
    for line_no, raw in enumerate(io.BytesIO(data), start=1):  # as a file iterates: at \\n only
        out.extend(parser.feed(raw, line_no, offset))
        offset += len(raw)
    return out + list(parser.finish())


def test_fuzz_both_parsers_agree_and_publish_nothing_absurd() -> None:
    """400 seeded mutants of the test files: no exception, no hang (2 s a file), nothing non-finite
    or out of range published, strict JSON, and the native scanner gives the reference's records.
    Every fourth mutant runs with tiny bounds (lines of 300 bytes, snapshots of 600) so that the
    bound paths are fuzzed too; every third also goes through the Python parser line by line."""
    old = signal.signal(signal.SIGALRM, _alarm)
    started = time.monotonic()
    try:
        for n, (name, data) in enumerate(mutants(seed=19, count=400)):
            options = {"max_line": 300, "max_snapshot": 600} if n % 4 == 0 else {}
            results = {}
            for kind in PARSERS if NATIVE else ["python"]:
                signal.setitimer(signal.ITIMER_REAL, 2.0)
                try:
                    out, _ = run(kind, name, data, chunk=random.Random(name).randint(1, 4096), **options)
                except FuzzTimeoutError:
                    pytest.fail(f"{kind} parser took more than 2 s on mutant {name}")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                for e in out:
                    record = decoded(e)
                    check_published(record, e.topic_key)
                    if kind == "python":
                        json.dumps(e.record, allow_nan=False)
                results[kind] = [comparable(e) for e in out]
            if "native" in results:
                assert results["native"] == results["python"], name
            if n % 3 == 0:
                assert [comparable(e) for e in by_lines(name, data, **options)] == results["python"], name
    finally:
        signal.signal(signal.SIGALRM, old)
    assert time.monotonic() - started < 60


def test_source_read_takes_the_date_order_option_and_survives_a_damaged_gzip(tmp_path: Path) -> None:
    import argparse

    from fleetperf.sources.nmon.source import NmonSource

    source = NmonSource()
    plain = tmp_path / "aix53b.nmon"
    plain.write_bytes(own_file("aix53b_110605_0000.nmon"))
    opts = argparse.Namespace(tz="UTC", date_order="mdy")
    cpu = by_topic(list(source.read(plain, opts)))["cpu_samples"]
    assert ts_of(cpu[0]) == ts_ms("2011-05-06 00:01:01")
    assert source.sniff(own_file("aix53b_110605_0000.nmon")[:4096], plain)
    # a gzip stream cut in its middle: what was read before stands, one dead letter says why
    rng = random.Random(2)
    more = b"".join(
        b"ZZZZ,T%04d,07:%02d:%02d,03-FEB-2024\nCPU_ALL,T%04d,%.1f,0.3,0.0,%.1f,0.0,,2\n"
        % (n, n // 60, n % 60, n, rng.uniform(0, 9), rng.uniform(80, 99))
        for n in range(11, 3000)
    )
    packed = gzip.compress(own_file("cutvm_cut.nmon") + b".5,0.0,,2\n" + more, mtime=0)
    broken = tmp_path / "cut.nmon.gz"
    broken.write_bytes(packed[: len(packed) // 2])
    t = by_topic(list(source.read(broken, argparse.Namespace(tz="UTC"))))
    assert 100 < len(t["cpu_samples"]) < 2990
    [letter] = t["dead_letters"]
    assert letter["error"].startswith("gzip data damaged") and "the rest of the file is not read" in letter["error"]


def test_fuzz_damaged_gzip_files(tmp_path: Path) -> None:
    """60 gzip files with flipped or cut compressed bytes: both parsers read what precedes the
    damage, agree, and say once that the rest is lost (no traceback)."""
    from fleetperf.sources.nmon.parser import parse_file

    rng = random.Random(23)
    files = sorted(TESTDATA.glob("*.nmon"))
    said = 0
    for n in range(60):
        packed = bytearray(gzip.compress(rng.choice(files).read_bytes(), mtime=0))
        if n % 2:
            del packed[rng.randrange(10, len(packed)) :]
        else:
            for _ in range(rng.randint(1, 4)):
                packed[rng.randrange(10, len(packed))] = rng.randrange(256)
        path = tmp_path / f"{n:02d}.nmon.gz"
        path.write_bytes(bytes(packed))
        want = [comparable(e) for e in parse_file(path)]
        if NATIVE:
            assert [comparable(e) for e in native_parser.parse_file(path)] == want, path.name
        damaged = [w for w in want if w[0] == "dead_letters" and w[5]["error"].startswith("gzip data damaged")]
        assert len(damaged) <= 1
        said += len(damaged)
    # most damage is seen at once; a flip that still inflates is seen only by gzip's CRC at the end,
    # after its bytes were parsed (and checked like any text)
    assert said >= 30


@pytest.mark.parametrize("kind", PARSERS)
@pytest.mark.parametrize("dated", [True, False])
def test_the_hour_a_summer_time_end_repeats_is_read_as_the_second_showing(kind: str, dated: bool) -> None:
    """nmon writes local wall-clock times: with --tz Europe/Berlin, 25 Oct 2026 shows 02:00-02:59
    twice (CEST, then CET). Every snapshot is 10 minutes after the one before; the expected instants
    are counted from 22:00 UTC, not read from the file. Read as the first showing both times, the
    second hour's six snapshots had the first hour's times and were dead letters. Dated ZZZZ lines
    (nmon 12+) and classic ones without a date (the day from AAA,date); both parsers (the native
    scanner hands a day whose UTC offset changes to Python)."""
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 10, 24, 22, 0, tzinfo=UTC)
    lines = [
        "AAA,progname,nmon\nAAA,host,dst\nAAA,interval,600\nAAA,date,25-OCT-2026\n",
        "CPU_ALL,CPU Total dst,User%,Sys%,Wait%,Idle%,Busy,CPUs\n",
    ]
    expected = []
    for i in range(1, 31):
        when = start + timedelta(minutes=10 * (i - 1))
        local = when.astimezone(berlin)
        day = f",{local.day:02d}-OCT-2026" if dated else ""
        lines.append(f"ZZZZ,T{i:04d},{local:%H:%M:%S}{day}\nCPU_ALL,T{i:04d},{i}.0,1.0,0.0,{98 - i}.0,,4\n")
        expected.append(int(when.timestamp() * 1000))
    clocks = [line.split(",")[2][:5] for line in lines[2:]]
    assert clocks.count("02:00") == 2 and clocks.count("01:50") == 1  # the file shows the hour twice
    out, _ = run(kind, "dst_261025_0000.nmon", "".join(lines).encode(), 97, tz=berlin)
    t = by_topic(out)
    assert t["dead_letters"] == []
    assert [ts_of(r) for r in t["nmon_snapshots"]] == expected
    assert [ts_of(r) for r in t["cpu_samples"]] == expected
    # UTC (the default) reads the same clocks as they are: the repeated hour is a dead letter each
    out, _ = run(kind, "dst_261025_0000.nmon", "".join(lines).encode(), 97)
    assert len(by_topic(out)["dead_letters"]) == 6
