"""The native nmon scanner against the reference parser: the same records, snapshot records
byte-identical once Avro-encoded, for every corpus file and for files full of quirks, whatever
the chunk sizes the file arrives in."""

from __future__ import annotations

import gzip
import io
import json
import random
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from fleetperf import config
from fleetperf.sources.nmon import native_parser
from fleetperf.sources.nmon.parser import NmonParser
from fleetperf.sources.nmon.parser import parse_file as reference_parse

SCHEMAS = {
    key: parse_schema(json.loads(config.load().topic(key).schema_text())) for key in ("nmon_snapshots", "cpu_samples")
}
SCHEMA = SCHEMAS["nmon_snapshots"]

QUIRKS = (
    "AAA,host,odd\r\nAAA,interval,60\r\nAAA,SerialNumber,0ABCDEF\nAAA,LPARNumberName,2,odd\n"
    "CPU_ALL,CPU Total odd,User%  ,Sys%  ,Wait%,Idle%,Steal%,Busy,CPUs\n"
    "LPAR,Logical Partition odd,PhysicalCPU,virtualCPUs,entitled,poolCPUs,PoolIdle\n"
    "TOP,%CPU Utilisation\n"
    "TOP,+PID,Time,%CPU,%Usr,%Sys,Threads,Size,ResText,ResData,CharIO,%RAM,Paging,Command,WLMclass\n"
    "MYAPP,My application,requests,state,latency\n"
    "NET,Network I/O odd,en0-read-KB/s,en0-write-KB/s,lo0-read-KB/s\n"
    "DISKBUSY,Disk %Busy odd,hdisk0,hdisk1\n"
    'BBBP,001,lsattr -El ent8,"adapter_names ent0,ent2 EtherChannel Adapters True"\n'
    "BBBP,002,uname\n"
    "BBBC,003,free text, with commas\xa0\n"
    "BBB.X,004,not a tag\n"
    "BBBP,005,ls\x00junk\n"
    "CPU_ALL,T0001,1.0,2.0,0.0,96.0,1.0,,2\r\n"
    "ZZZZ,T0001,00:01:00,01-JAN-2024\n"
    "LPAR,T0001,0.5,2,0.4,16,9.5\n"
    "TOP,1234,T0001,5.0,4.0,1.0,3,100,10,20,0,0.1,0,java ,Unclassified\n"
    "TOP,42,T0001,1.0,1.0,0.0,1,10,1,2,0,0.0,0, ksh\xa0,System\n"
    "MYAPP,T0001,1_000, up ,nan\n"
    "NET,T0001,1.5,,3e2\n"
    "DISKBUSY,T0001,  7 ,-inf\n"
    "\x00\x01binary junk\n"
    "   \n"
    "ZZZZ,T0002,00:02:00,01-JAN-2024\n"
    "CPU_ALL,T0002,5.0,x,0.0,90.0,5.0,,2\n"
    "MYAPP,T0002,\n"
    "LPAR,T0002,0.7\n"
    "AAA,LPARNumberName,3,odd\n"  # identity changes mid-file
    "BBBP,006,late\n"
    "ZZZZ,T0003,00:03:00,01-JAN-2024\n"
    "ZZZZ,T0004,bad,time\n"
    "ZZZZ\n"
    "NEWSECT,T0003,1\n"
    "CPU_ALL,T0003,3.0,3.0,0.0,93.0,1.0,,2\n"
    "DISKBUSY,T0004,1,2\n"
    "ZZZZ,T0005,00:05:00,01-JAN-2024\n"
    "CPU_ALL,T0006,3.0,3.0,0.0,93.0,1.0,,2"  # cut short: no newline, no ZZZZ
)


def encode(topic_key: str, record: dict) -> bytes:
    buf = io.BytesIO()
    schemaless_writer(buf, SCHEMAS[topic_key], record)
    return buf.getvalue()


def comparable(emitted) -> tuple:
    """What reaches Kafka: the Avro body of snapshot records, the dict of the others."""
    record = dict(emitted.record)
    record.pop("detected_at", None)
    body = None
    if emitted.topic_key in SCHEMAS:
        body = emitted.encoded if emitted.encoded is not None else encode(emitted.topic_key, record)
        record = {}
    return (emitted.topic_key, emitted.key, emitted.snapshot, emitted.values, body, record)


def native_records(path: Path, chunks: list[int] | None) -> list:
    parser = native_parser.NativeNmonParser(str(path))
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    out, pos = [], 0
    sizes = iter(chunks or [])
    while pos < len(data):
        n = next(sizes, native_parser.CHUNK)
        out.extend(parser.feed(data[pos : pos + n]))
        pos += n
    out.extend(parser.finish())
    return out


def corpus_files(corpus: Path) -> list[Path]:
    return sorted((corpus / "nmon").glob("*.nmon"))


def test_every_corpus_file_gives_the_reference_records(corpus: Path) -> None:
    files = corpus_files(corpus)
    assert len(files) >= 5
    for path in files:
        want = [comparable(e) for e in reference_parse(path)]
        got = [comparable(e) for e in native_parser.parse_file(path)]
        assert len(got) == len(want), path.name
        assert got == want, path.name
        assert {e[0] for e in got} >= {"nmon_snapshots", "cpu_samples", "host_configs"}, path.name


TESTDATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "nmon" / "testdata"


def test_every_own_test_file_gives_the_reference_records() -> None:
    """The project's own files (testdata/README.md: classic dateless, spliced, cut, damaged,
    absurd values...) as wholes and in random chunks of 1-40 bytes."""
    files = sorted(TESTDATA.glob("*.nmon"))
    assert len(files) >= 9
    rng = random.Random(13)
    for path in files:
        want = [comparable(e) for e in reference_parse(path)]
        assert [comparable(e) for e in native_parser.parse_file(path)] == want, path.name
        chunks = [rng.randint(1, 40) for _ in range(path.stat().st_size)]
        assert [comparable(e) for e in native_records(path, chunks)] == want, path.name
        assert {w[0] for w in want} & {"nmon_snapshots", "dead_letters"}, path.name


def test_quirks_in_random_chunks(tmp_path: Path) -> None:
    path = tmp_path / "quirks.nmon"
    path.write_bytes(QUIRKS.encode())
    want = [comparable(e) for e in reference_parse(path)]
    topics = [w[0] for w in want]
    # the file exercises what it claims to: garbage, bad numbers, missing times, a NUL in a
    # configuration line, a tag that is none, a snapshot whose ZZZZ line is damaged and the cut
    # last line all become dead letters
    assert topics.count("dead_letters") == 10
    assert topics.count("nmon_snapshots") == 3
    # an AAA line between snapshots changes the identity of the records completed after it (T0002
    # completes at the next ZZZZ, after the AAA line); a record's position is its snapshot's first
    # byte + 1 (T0001's first line is its CPU_ALL data line, before its ZZZZ)
    data = QUIRKS.encode()
    assert [(w[1], w[2]) for w in want if w[0] == "nmon_snapshots"] == [
        ("0ABCDEF-2", data.index(b"CPU_ALL,T0001") + 1),
        ("0ABCDEF-3", data.index(b"ZZZZ,T0002") + 1),
        ("0ABCDEF-3", data.index(b"ZZZZ,T0003") + 1),
    ]
    rng = random.Random(7)
    for _ in range(20):
        chunks = [rng.randint(1, 40) for _ in range(len(QUIRKS))]
        got = [comparable(e) for e in native_records(path, chunks)]
        assert got == want


def test_values_decode_as_written(tmp_path: Path) -> None:
    path = tmp_path / "quirks.nmon"
    path.write_bytes(QUIRKS.encode())
    emitted = list(native_parser.parse_file(path))
    snaps = [e for e in emitted if e.topic_key == "nmon_snapshots"]
    cpu = [e for e in emitted if e.topic_key == "cpu_samples"]
    first = schemaless_reader(io.BytesIO(snaps[0].encoded), SCHEMA, SCHEMA)
    sample = schemaless_reader(io.BytesIO(cpu[0].encoded), SCHEMAS["cpu_samples"], SCHEMAS["cpu_samples"])
    assert sample["ts"] == first["ts"] == datetime(2024, 1, 1, 0, 1, tzinfo=UTC) and sample["source"] == "nmon"
    assert (sample["user_pct"], sample["steal_pct"], sample["cpus"], sample["physc"]) == (1.0, 1.0, 2, 0.5)
    assert (sample["virtual_cpus"], sample["entitled"], sample["pool_cpus"], sample["pool_idle"]) == (2, 0.4, 16, 9.5)
    assert first["interval_s"] == sample["interval_s"] == 60.0 and first["hostname"] == "odd"
    rows = {(r["section"], r["entities"][0] if r["entities"] else ""): r for r in first["rows"]}
    assert first["origin_snapshot"] == "T0001" and first["host_id"] == "0ABCDEF-2"
    top = rows[("TOP", "1234 java")]
    assert top["labels"] == {"PID": "1234", "Command": "java", "WLMclass": "Unclassified"}
    assert rows[("TOP", "42 ksh")]["values"][0] == 1.0  # NBSP stripped as Python's str.strip does
    app = rows[("MYAPP", "")]
    # an unknown section keeps what is not a finite number as text: 1_000 (float() would take it
    # as 1000) and nan are labels, never values
    assert app["values"] == [None, None, None]
    assert app["labels"] == {"requests": "1_000", "state": "up", "latency": "nan"}
    assert rows[("NET", "en0")]["values"] == [1.5, None, 300.0]
    assert rows[("DISKBUSY", "hdisk0")]["values"] == [7.0, None]  # -inf: null and a dead letter


def test_resume_counters_follow_the_bytes(tmp_path: Path) -> None:
    path = tmp_path / "quirks.nmon"
    path.write_bytes(QUIRKS.encode())
    parser = native_parser.NativeNmonParser(str(path))
    list(parser.feed(QUIRKS.encode()[:100]))
    assert parser.consumed == QUIRKS.encode()[:100].rfind(b"\n") + 1
    list(parser.feed(QUIRKS.encode()[100:]))
    list(parser.finish())
    data = QUIRKS.encode()
    cut = data.rfind(b"\n") + 1  # the last line has no end of line: not consumed
    assert parser.consumed == cut
    assert parser.last_line_offset == data.rfind(b"\n", 0, cut - 1) + 1
    # the open snapshot T0005 (its ZZZZ line) is where a later run resumes
    assert parser.resume_offset == data.index(b"ZZZZ,T0005")
    reference = NmonParser(str(path))
    for line_no, raw in enumerate(QUIRKS.encode().splitlines(keepends=True), start=1):
        list(reference.feed(raw, line_no, 0))
    list(reference.finish())
    assert (parser.errors, parser.snapshots_emitted, parser.values_emitted) == (
        reference.errors,
        reference.snapshots_emitted,
        reference.values_emitted,
    )


def test_numbers_have_the_bits_python_gives(tmp_path: Path) -> None:
    """The scanner's own decimal fast path and its fallback against float(), on cells shaped like
    nmon's and on the awkward ones: many digits, leading zeros, signs, exponents, bare dots."""
    rng = random.Random(11)

    def cell() -> str:
        shape = rng.random()
        digits = "".join(rng.choice("0123456789") for _ in range(rng.randint(1, 19)))
        cut = rng.randint(0, len(digits))
        text = digits[:cut] + "." + digits[cut:] if shape < 0.8 else digits
        if shape > 0.9:
            text += f"e{rng.randint(-30, 30)}"
        return rng.choice(["", "-", "+", " "]) + text

    cells = [[cell() for _ in range(40)] for _ in range(300)]
    cells[0][:6] = ["0.1", "-0.0", "000123.4500", "9007199254740993", "1.7976931348623157e308", "."]
    lines = ["AAA,host,rnd", "RND,Random numbers rnd," + ",".join(f"c{i}" for i in range(40))]
    lines += [f"RND,T0001,{','.join(row)}" for row in cells]
    lines += ["ZZZZ,T0001,00:01:00,01-JAN-2024", ""]
    path = tmp_path / "rnd.nmon"
    path.write_text("\n".join(lines))
    want = [comparable(e) for e in reference_parse(path)]
    got = [comparable(e) for e in native_parser.parse_file(path)]
    assert got == want
    snapshot = next(g for g in got if g[0] == "nmon_snapshots")
    decoded = schemaless_reader(io.BytesIO(snapshot[4]), SCHEMA, SCHEMA)
    assert decoded["rows"][0]["values"][:5] == [0.1, -0.0, 123.45, 9007199254740992.0, 1.7976931348623157e308]
    assert decoded["rows"][0]["labels"] == {"c5": "."}  # not a number: kept as text (unknown section)


def test_zzzz_times_in_a_zone_with_dst(tmp_path: Path) -> None:
    """The scanner reads ZZZZ times itself on days with one UTC offset and leaves DST days, odd
    spellings and bad dates to Python: all must give the reference's times and errors."""
    berlin = ZoneInfo("Europe/Berlin")
    stamps = [
        "23:59:00,30-MAR-2024",
        "01:30:00,31-MAR-2024",  # the spring-forward day
        "03:30:00,31-MAR-2024",
        "12:00:00,01-apr-2024",
        "1:2:3,01-APR-2024",
        "02:30:00,27-OCT-2024",  # the fall-back day (ambiguous hour)
        "12:00:00,31-FEB-2024",  # no such day: a dead letter
        "25:00:00,02-APR-2024",  # no such hour
        "12:00:00,02-APR-24",  # year 24: Python takes it as 2024
        "12:00:00,29-FEB-2024",
    ]
    lines = ["AAA,host,dst", "AAA,interval,60", "CPU_ALL,CPU Total dst,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs"]
    for n, stamp in enumerate(stamps, start=1):
        lines += [f"ZZZZ,T{n:04d},{stamp}", f"CPU_ALL,T{n:04d},{n}.0,1.0,0.0,90.0,0.0,,2"]
    lines += [f"ZZZZ,T{len(stamps) + 1:04d},12:00:00,01-MAY-2024", ""]
    path = tmp_path / "dst.nmon"
    path.write_text("\n".join(lines))
    want = [comparable(e) for e in reference_parse(path, berlin)]
    asked = []

    class Counting(native_parser.NativeNmonParser):
        def scan_day_start(self, year: int, month: int, day: int) -> int | None:
            answer = super().scan_day_start(year, month, day)
            asked.append(((year, month, day), answer is not None))
            return answer

    parser = Counting(str(path), berlin)
    got = [comparable(e) for e in [*parser.feed(path.read_bytes()), *parser.finish()]]
    assert got == want
    # the first ZZZZ and the odd or impossible ones went to Python; each other day was asked once
    days = [((2024, 3, 31), False), ((2024, 4, 1), True), ((2024, 10, 27), False), ((2024, 2, 29), True)]
    assert asked == [*days, ((2024, 5, 1), True)]
    # 31-FEB and 25:00 (the ZZZZ lines), and each of their snapshots' data line
    assert [w[0] for w in want].count("dead_letters") == 4
    assert [w[0] for w in want].count("cpu_samples") == len(stamps) - 2


def test_a_schema_the_scanner_cannot_write_turns_it_off() -> None:
    schema = json.loads(config.load().topic("nmon_snapshots").schema_text())
    assert native_parser._plan(schema)[-1] == ("rows", 0)
    row = schema["fields"][-1]["type"]["items"]
    row["fields"][3]["type"] = {"type": "array", "items": ["null", "float"]}  # values as float
    with pytest.raises(native_parser.UnsupportedSchemaError, match="rows"):
        native_parser._plan(schema)
    cpu = json.loads(config.load().topic("cpu_samples").schema_text())
    cpu["fields"].append({"name": "new_field", "type": ["null", "string"], "default": None})
    with pytest.raises(native_parser.UnsupportedSchemaError, match="new_field"):
        native_parser._plan(cpu)


# --- `fleetperf parse` with the scanner writing the JSON lines itself (issue 24, goal 4) -------------
#
# Three ways through `parse` for the same files, compared byte for byte: "lines" (the default: the
# scanner writes the JSON lines of nmon_snapshots and cpu_samples), "avro" (the scanner's Avro read
# back with the schema and encoded by parse's json encoder, what parse printed before) and "python"
# (the reference parser's records). The Python parser's cpu_samples dicts hold their fields in
# another order than the schema (origin_file before user_pct); parse prints a dict in its own order,
# so for that path the keys are put in the schema's order before comparing; nothing else changes.

needs_lines = pytest.mark.skipif(
    not native_parser.lines_available(), reason="the native nmon scanner is not built (no cargo) or predates lines"
)
FIELDS = {
    config.load().topic(key).name: [f["name"] for f in json.loads(config.load().topic(key).schema_text())["fields"]]
    for key in ("nmon_snapshots", "cpu_samples")
}
_to_json = json.JSONEncoder(allow_nan=False).encode


def parse_cli(paths: list[Path], mode: str, monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, str, int]:
    """stdout (bytes), stderr and exit status of `fleetperf parse nmon PATHS` one way."""
    import contextlib
    import types

    from fleetperf.cli.main import main
    from fleetperf.ingest import records
    from fleetperf.sources.nmon.source import NmonSource

    with monkeypatch.context() as m:
        m.setattr(records, "time", types.SimpleNamespace(time=lambda: 1_700_000_000.0))  # dead letters' detected_at
        if mode == "avro":
            m.delattr(NmonSource, "read_lines")
        elif mode == "python":
            m.setenv("FLEETPERF_NMON_PARSER", "python")
        out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(["parse", "--no-progress", "nmon", *map(str, paths)])
        out.flush()
    text = out.buffer.getvalue()
    if mode == "python":
        lines = []
        for line in text.decode().splitlines():
            message = json.loads(line)
            order = FIELDS.get(message["topic"])
            if order:
                assert set(message["value"]) == set(order)
                message["value"] = {k: message["value"][k] for k in order}
            lines.append(_to_json(message) + "\n")
        text = "".join(lines).encode()
    return text, err.getvalue(), code


def assert_same_three_ways(paths: list[Path], monkeypatch: pytest.MonkeyPatch) -> tuple[bytes, str, int]:
    lines = parse_cli(paths, "lines", monkeypatch)
    assert lines == parse_cli(paths, "avro", monkeypatch), [p.name for p in paths]
    assert lines == parse_cli(paths, "python", monkeypatch), [p.name for p in paths]
    return lines


@needs_lines
def test_parse_lines_are_the_avro_and_python_paths_lines_on_own_files(monkeypatch: pytest.MonkeyPatch) -> None:
    files = sorted(TESTDATA.glob("*.nmon"))
    assert len(files) >= 9
    for path in files:
        out, err, code = assert_same_three_ways([path], monkeypatch)
        assert out.count(b'"topic": "fleetperf.nmon-snapshots.v1"') >= 3, path.name
        assert code in (0, 3), path.name
    # all in one call: one summary, dead letters of every file on stderr, exit status 3
    out, err, code = assert_same_three_ways(files, monkeypatch)
    assert code == 3 and f"{len(files)} files: " in err and err.count("bad input: ") >= 10


@needs_lines
def test_parse_lines_on_the_corpus(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    files = corpus_files(corpus)
    assert len(files) >= 5
    for path in files:
        out, err, code = assert_same_three_ways([path], monkeypatch)
        # the AIX file's JFS lines carry values past their headers (test_nmon_parser): exit 3
        assert code == (3 if path.name.startswith("aix71_aixlpar") else 0) and out.count(b"\n") > 10, path.name


# cells the lines must print exactly as Python's json prints the float they read as: shortest
# round-trip digits, fixed notation from 1e-4 to below 1e16, exponents with two digits at least
ODD_NUMBERS = (
    "0.00001,0.0001,1e-05,1.5E-7,12345678901234567890,1e16,1e+16,9999999999999998,1e15,123456789012345.6,"
    "-0,-0.0,+0,000,5.,.5,28,28.000,007.50,-12.30,1.0e3,1125899906842624.25,1125899906842624.75,"
    "0.1000000000000000055511151231257827,2.2250738585072014e-308,5e-324,1.7976931348623157e308,-1e-300"
)
ODD = (
    'AAA,progname,nmon\nAAA,host,h\u00f6st "q" \\ \u4e2d\nAAA,interval,30.0\n'
    "CPU_ALL,CPU Total,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs\n"
    "TOP,%CPU Utilisation\n"
    "TOP,+PID,Time,%CPU,%Usr,%Sys,Threads,Size,ResText,ResData,CharIO,%RAM,Paging,Command,WLMclass\n"
    f"ODD,Odd numbers,{','.join(f'c{i}' for i in range(len(ODD_NUMBERS.split(','))))}\n"
    "ZZZZ,T0001,00:01:00,01-JAN-2024\n"
    "CPU_ALL,T0001,1,2.50,0.000,96.5,0,,2.9\n"
    f"ODD,T0001,{ODD_NUMBERS}\n"
    'TOP,77,T0001,5.0,4.0,1.0,3,100,10,20,0,0.1,0,caf\u00e9 \U0001f600 \t\x7f\x1b"x"\\y,Unclassified\n'
    "ODD,T0002,not a number,\u00e9t\u00e9,a\u2028b\n"
    "ZZZZ,T0002,00:02:00,01-JAN-2024\n"
)


@needs_lines
def test_parse_lines_of_non_ascii_text_and_odd_floats(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "odd.nmon"
    path.write_bytes(ODD.encode() + b"TOP,78,T0002,1,1,0,1,1,1,1,0,0,0,bad \xff\xfe utf-8\xc3,x\n")
    out, err, code = assert_same_three_ways([path], monkeypatch)
    messages = [json.loads(line) for line in out.splitlines()]
    snapshots = [m["value"] for m in messages if m["topic"] == "fleetperf.nmon-snapshots.v1"]
    odd = next(r for r in snapshots[0]["rows"] if r["section"] == "ODD")
    assert odd["values"] == [float(x) for x in ODD_NUMBERS.split(",")]
    text = out.decode("ascii")  # ensure_ascii: every non-ASCII character escaped
    for printed in ("1e-05", "0.0001", "1.5e-07", "1.2345678901234567e+19", "1e+16", "9999999999999998.0",
                    "1000000000000000.0", "-0.0", "0.5", "28.0", "7.5", "-12.3", "1000.0", "1125899906842624.2",
                    "1125899906842624.8", "5e-324", "1.7976931348623157e+308", "30.0"):  # fmt: skip
        assert f" {printed}," in text or f" {printed}]" in text, printed
    assert '"h\\u00f6st \\"q\\" \\\\ \\u4e2d"' in text
    assert '"caf\\u00e9 \\ud83d\\ude00 \\t\\u007f\\u001b\\"x\\"\\\\y"' in text
    assert '"\\u00e9t\\u00e9"' in text and '"a\\u2028b"' in text and "bad \\ufffd\\ufffd utf-8\\ufffd" in text
    cpu = next(m["value"] for m in messages if m["topic"] == "fleetperf.cpu-samples.v1")
    assert (cpu["user_pct"], cpu["cpus"], cpu["interval_s"]) == (1.0, 2, 30.0)
    assert ', "cpus": 2, ' in text and '"user_pct": 1.0, "sys_pct": 2.5, "wait_pct": 0.0' in text
    assert code == 0 and "bad input" not in err  # an unknown section keeps text as labels: no error


@needs_lines
def test_parse_lines_of_the_fuzz_mutants(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The seeded mutants of test_nmon_robust.py (seed 19): same stdout, stderr and exit status
    all three ways (parse's own bounds; the tiny ones of that test are no parse option)."""
    from tests.unit.test_nmon_robust import mutants

    codes = set()
    for name, data in mutants(seed=19, count=400):
        path = tmp_path / name
        path.write_bytes(data)
        codes.add(assert_same_three_ways([path], monkeypatch)[2])
        path.unlink()
    assert codes >= {0, 1, 3}  # clean files, rejected ones and dead letters all met


@needs_lines
def test_lines_in_any_chunking_are_the_same(tmp_path: Path) -> None:
    topics = {key: f"t.{key}" for key in ("nmon_snapshots", "cpu_samples", "host_configs", "dead_letters")}
    data = ODD.encode() + QUIRKS.encode()

    def text(chunks: list[int]) -> bytes:
        parser = native_parser.NativeNmonParser("c.nmon", topics=topics)
        out, pos, sizes = [], 0, iter(chunks)
        while pos < len(data):
            n = next(sizes, len(data))
            out.extend(parser.feed(data[pos : pos + n]))
            pos += n
        out.extend(parser.finish())
        return b"".join(e.text if isinstance(e, tuple) else repr(e.topic_key).encode() for e in out)

    whole = text([])
    assert whole.count(b'"topic": "t.nmon_snapshots"') >= 3
    rng = random.Random(5)
    for _ in range(10):
        assert text([rng.randint(1, 64) for _ in range(len(data))]) == whole


@needs_lines
def test_a_non_finite_number_is_reported_as_parse_reports_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No nmon value can be non-finite (the checks make it null); should a record still hold one
    (here an interval forced to inf), the lines path prints nothing of it and says so, as parse does."""
    import math

    from fleetperf.sources.nmon.host_config import HostConfigBuilder

    path = TESTDATA / "aix53b_110605_0000.nmon"
    monkeypatch.setattr(HostConfigBuilder, "interval_s", property(lambda self: math.inf))
    out, err, code = assert_same_three_ways([path], monkeypatch)
    assert code == 3 and out.count(b"\n") == 1  # the host configuration only
    assert err.count("a nmon_snapshots record held a non-finite number") == 3
    assert err.count("a cpu_samples record held a non-finite number") == 3


def test_float_repr_and_json_strings_are_pythons() -> None:
    if not native_parser.lines_available():
        pytest.skip("the native nmon scanner is not built (no cargo) or predates lines")
    import struct

    scan = native_parser._native
    rng = random.Random(3)
    floats = [struct.unpack("<d", rng.randbytes(8))[0] for _ in range(20000)]
    floats += [rng.uniform(-1e6, 1e6) for _ in range(5000)] + [
        rng.randint(-(10**17), 10**17) * 1.0 for _ in range(2000)
    ]
    # two shortest strings equally near (the exact value ends in 5 one digit further): CPython takes the even one
    ties = [m / 8 for m in range(2**52 + 1, 2**52 + 2000, 2)] + [m / 4 for m in range(2**52 + 1, 2**52 + 2000, 2)]
    ties += [m * 2.0**-k for k in range(20, 80, 7) for m in range(2**52 + 1, 2**52 + 300, 2)]
    for x in floats + ties + [0.0, -0.0, 1e16, 1e-4, 1e-5, 9007199254740993.0, 5e-324, 2.0**-1074 * 3]:
        if math_isfinite(x):
            assert scan.float_repr(x) == repr(x), x.hex()
    # cells already in repr's form are copied whole: those next to that form must not be
    shapes = ["0.0", "-0.0", "00.0", "-00.0", "0.00", ".0", "0.", "5.0", "5.00", "05.0", "10.0", "10.50", "10.05"]
    shapes += ["0.5", "00.5", "-0.5", "0.0001", "0.00001", "0.00010", "+1.5", "+0.0", "1", "-7", "123456789012345.0"]
    for text in shapes:
        assert scan.cell_repr(text.encode()) == repr(float(text)), text
    digits = "0123456789"
    for _ in range(20000):
        pick = rng.choice([digits, "0", "01", "05"])  # zeros often, for the leading/trailing zero cases
        int_part = "".join(rng.choice(pick) for _ in range(rng.randint(0, 9)))
        frac = "".join(rng.choice(rng.choice([digits, "0", "10"])) for _ in range(rng.randint(0, 12)))
        text = rng.choice(["", "-", "+"]) + int_part + rng.choice([".", ""] if frac else [".", ""]) + frac
        try:
            want = repr(float(text))
        except ValueError:
            continue
        assert scan.cell_repr(text.encode()) == want, text
    chars = [chr(c) for c in (*range(0, 0x300), 0x2028, 0xFFFD, 0x10FFFF, 0x1F600, 0xE000)]
    for _ in range(2000):
        s = "".join(rng.choice(chars) for _ in range(rng.randint(0, 12)))
        assert scan.json_str(s) == json.dumps(s), repr(s)


def math_isfinite(x: float) -> bool:
    return x == x and x not in (float("inf"), float("-inf"))


def test_text_cells_lose_the_blanks_python_strips(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """TOP's Command as str.strip() leaves it: every ASCII blank Python counts (\\t \\v \\f \\r, the
    separators \\x1c-\\x1f, space) at either end, inside kept, and a cell of blanks only, through
    the scanner's ASCII path and (one non-ASCII cell) its decoding path."""
    blanks = "\t\x0b\x0c\r\x1c\x1d\x1e\x1f "
    commands = [f"{blanks}java{blanks}", f"a{blanks}b", blanks, "\x1fksh", "sh\x1c", f"{blanks}caf\u00e9\x1e", "x\x7f"]
    head = QUIRKS.split("CPU_ALL,T0001")[0]
    rows = "".join(f"TOP,{n},T0001,1.0,1.0,0.0,1,10,1,2,0,0.0,0,{c},System\n" for n, c in enumerate(commands, 1))
    path = tmp_path / "blanks.nmon"
    path.write_bytes((head + "ZZZZ,T0001,00:01:00,01-JAN-2024\n" + rows).encode())
    want = [comparable(e) for e in reference_parse(path)]
    assert [comparable(e) for e in native_parser.parse_file(path)] == want
    (snapshot,) = [e for e in reference_parse(path) if e.topic_key == "nmon_snapshots"]
    labels = [r["labels"]["Command"] for r in snapshot.record["rows"] if r["section"] == "TOP"]
    assert labels == ["java", f"a{blanks}b", "", "ksh", "sh", "caf\u00e9", "x\x7f"]
    if native_parser.lines_available():
        assert_same_three_ways([path], monkeypatch)


@needs_lines
def test_checks_decided_from_the_digits_are_the_checks_on_the_double(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Lines mode checks most cells on their digits, without reading the double (Decimal::passes):
    at and around each bound (a percent's 100 + tolerance, non-negative, zero's sign) it must
    accept and reject exactly what the double's checks (the Avro and Python paths) do."""
    from fleetperf.ingest.validate import PERCENT_TOLERANCE

    top = 100 + PERCENT_TOLERANCE
    cells = ["100", "100.0", "100.00000", f"{top}", f"{top}0", f"{top}000000001", f"{top + 0.1:.1f}", "101", "99.99"]
    cells += ["0", "-0", "-0.0", "-0.00", "+0.0", "-0.1", "-1", "0.000", "1e2", "1000000000000000", "00100.4"]
    cells += [f"{100 + PERCENT_TOLERANCE / 2}", "100.49999999999999", "100.5000000000000001", "2147483647"]
    head = (
        "AAA,progname,nmon\nAAA,host,bounds\nAAA,interval,60\n"
        "CPU01,CPU 1,User%,Sys%,Wait%,Idle%\nNET,Network,eth0-read-KB/s,eth0-write-KB/s,lo-read-KB/s,lo-write-KB/s\n"
    )
    body = []
    for n, cell in enumerate(cells, 1):
        body.append(f"ZZZZ,T{n:04d},00:{n:02d}:00,01-JAN-2024\n")
        body.append(f"CPU01,T{n:04d},{cell},0.0,{cell},1\nNET,T{n:04d},{cell},1,{cell},0.5\n")
    path = tmp_path / "bounds.nmon"
    path.write_text(head + "".join(body))
    out, err, code = assert_same_three_ways([path], monkeypatch)
    assert code == 3  # some cells are out of bounds: dead letters
    assert err.count("above 100 %") >= 4 and err.count("negative") >= 4, err
    printed = [json.loads(line)["value"] for line in out.splitlines() if b"nmon-snapshots" in line]
    assert len(printed) == len(cells)
