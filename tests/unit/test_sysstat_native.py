"""The native sadc path (sources/sysstat/native, Rust) against the Python path, byte for byte: the JSON lines
`fleetperf parse sadc` prints (the native path writes them itself) and the records the collector publishes
(the native path hands over dicts), on the project's own recording, on a file Debian's sadc writes at test
time, on upstream's corpus files, and on the seeded fuzz mutants of test_sysstat_fuzz (damaged input: the
same dead letters, no exception, bounded memory). The only field left out of the comparison is a dead
letter's `detected_at` (the wall clock). Skipped, saying why, when the native module is not built."""

from __future__ import annotations

import io
import json
import random
import struct
import subprocess
import tracemalloc
from collections.abc import Iterable
from pathlib import Path

import pytest
from fastavro import parse_schema, schemaless_writer

from fleetperf import config
from fleetperf.sources.sysstat import reader
from fleetperf.sources.sysstat.records import Lines, Options, Tail, records_of_bytes, records_of_file
from tests.unit.test_sysstat_fuzz import SADC, SEED, _mutations
from tests.unit.test_sysstat_own import OWN

native = pytest.importorskip(
    "fleetperf_sadc_native", reason="the native sadc module is not built (./fleetperf builds it when cargo is there)"
)

TOPICS = {"sysstat_samples": "t.sysstat", "cpu_samples": "t.cpu", "host_configs": "t.hosts", "dead_letters": "t.dl"}
_to_json = json.JSONEncoder(allow_nan=False).encode
_SYSSTAT_SCHEMA = parse_schema(json.loads(config.load({}).topic("sysstat_samples").schema_text()))
ENCODED = [0]  # sysstat_samples _three_ways has seen as native Avro bodies
MAX_PEAK = 64 << 20  # bytes allocated at once while reading one damaged file (test_sysstat_fuzz's bound)


def _text(items: Iterable) -> tuple[str, int]:
    """The lines `parse` prints (cli/commands/parse.py's loop), a dead letter's clock zeroed; and how many
    came as native Lines."""
    out, native_lines = [], 0
    for e in items:
        if isinstance(e, Lines):
            out.append(e.text.decode("ascii"))
            native_lines += e.count
            continue
        record = dict(e.record)
        if "detected_at" in record:
            record["detected_at"] = 0
        out.append(_to_json({"topic": TOPICS[e.topic_key], "key": e.key, "value": record}) + "\n")
    return "".join(out), native_lines


def _records(items: Iterable) -> list[tuple]:
    return [(e.topic_key, e.key, e.snapshot, e.values, {**e.record, "detected_at": 0}) for e in items]


def _avro(record: dict) -> bytes:
    """fastavro's body of a sysstat_samples record (a library we did not write, not avro_plan's encoder)."""
    buf = io.BytesIO()
    schemaless_writer(buf, _SYSSTAT_SCHEMA, record)
    return buf.getvalue()


def _three_ways(data: bytes, monkeypatch: pytest.MonkeyPatch, options: Options | None = None) -> tuple[str, int]:
    """Python path vs native JSON lines vs native records vs native Avro bodies (the collector's `encoded`
    path): all equal; (text, lines written natively)."""
    options = options or Options()
    monkeypatch.setenv("FLEETPERF_SADC_PARSER", "python")
    python = list(records_of_bytes(data, "f", options, TOPICS))
    assert not any(isinstance(e, Lines) for e in python)
    monkeypatch.delenv("FLEETPERF_SADC_PARSER")
    text, native_lines = _text(records_of_bytes(data, "f", options, TOPICS))
    assert text == _text(python)[0]
    assert _records(records_of_bytes(data, "f", options)) == _records(python)
    encoded = list(records_of_bytes(data, "f", options, encoded=True))
    assert len(encoded) == len(python)
    for e, want in zip(encoded, python, strict=True):
        if e.encoded is not None and not e.record:
            assert e.topic_key == want.topic_key == "sysstat_samples"
            assert (e.key, e.snapshot, e.values) == (want.key, want.snapshot, want.values)
            assert e.encoded == _avro(want.record), want.record
            ENCODED[0] += 1
        else:
            assert _records([e]) == _records([want])
    return text, native_lines


def test_own_recording_byte_for_byte(monkeypatch: pytest.MonkeyPatch) -> None:
    before = ENCODED[0]
    text, native_lines = _three_ways(OWN.read_bytes(), monkeypatch)
    # every sysstat_samples and cpu_samples line of the file written natively (none left to Python)
    assert native_lines == text.count('"topic": "t.sysstat"') + text.count('"topic": "t.cpu"') > 200
    # and every sysstat_samples record as a native Avro body
    assert ENCODED[0] - before == text.count('"topic": "t.sysstat"') > 200


def test_own_recording_streamed_with_sar_definitions_of_other_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """records_of_file (the window) and every memused rule, through the CLI's entry (read_lines)."""
    for sar in ((11, 6), (12, 6, 1), (12, 7, 8)):
        options = Options(sar=sar, host_id='host "quoted" é')
        monkeypatch.setenv("FLEETPERF_SADC_PARSER", "python")
        python = _text(records_of_file(OWN, options, TOPICS))[0]
        monkeypatch.delenv("FLEETPERF_SADC_PARSER")
        text, native_lines = _text(records_of_file(OWN, options, TOPICS))
        assert text == python, sar
        assert native_lines > 200


def test_live_mode_same_records(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    data = OWN.read_bytes()
    results = []
    for mode in ("python", None):
        if mode:
            monkeypatch.setenv("FLEETPERF_SADC_PARSER", mode)
        else:
            monkeypatch.delenv("FLEETPERF_SADC_PARSER")
        (tmp_path / str(len(results))).mkdir()
        path = tmp_path / str(len(results)) / "sa25"
        tail = Tail(path, Options())
        published = []
        for end in (len(data) // 3, len(data) // 2 + 7, len(data)):
            path.write_bytes(data[:end])
            published.extend(tail.poll())
        published.extend(tail.finish())
        results.append(_records(published))
    assert results[0] == results[1]
    assert len(results[0]) > 200


def test_fresh_recording_byte_for_byte(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not SADC.exists():
        pytest.skip(f"sysstat is not installed ({SADC}): apt-get install sysstat to run this test")
    for name, args in (("xall", ["-S", "XALL"]), ("default", [])):
        path = tmp_path / name
        subprocess.run([str(SADC), *args, "1", "4", str(path)], check=True, timeout=60)
        text, native_lines = _three_ways(path.read_bytes(), monkeypatch)
        assert native_lines > 0, name


def test_corpus_files_byte_for_byte(corpus: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every upstream file: all formats, both byte orders, both long sizes, damaged and refused ones."""
    files = sorted((corpus / "sysstat" / "binary").iterdir())
    assert files
    written = 0
    for path in files:
        for options in (Options(), Options(trust_times=True)):
            written += _three_ways(path.read_bytes(), monkeypatch, options)[1]
    assert written > 100


def test_fuzzed_files_same_dead_letters_and_figures(monkeypatch: pytest.MonkeyPatch) -> None:
    """test_sysstat_fuzz's seeded mutants of the own recording: the same output both ways (dead letters,
    errors and figures), no exception, bounded memory on the native path."""
    rng = random.Random(SEED)
    data = OWN.read_bytes()
    tried = 0
    for what, mutate in _mutations(data, rng):
        damaged = mutate(bytearray(data))
        if "word" in what:
            tracemalloc.start()
            try:
                list(records_of_bytes(damaged, "f", Options(), TOPICS))
            finally:
                _, peak = tracemalloc.get_traced_memory()
                tracemalloc.stop()
            assert peak < MAX_PEAK, f"seed {SEED}: {what}: {peak} bytes at once"
        try:
            _three_ways(damaged, monkeypatch)
        except AssertionError as exc:
            raise AssertionError(f"seed {SEED}: {what}") from exc
        tried += 1
    assert tried >= 250


def test_fuzzed_fresh_recordings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    if not SADC.exists():
        pytest.skip(f"sysstat is not installed ({SADC}): apt-get install sysstat to run this test")
    path = tmp_path / "xall"
    subprocess.run([str(SADC), "-S", "XALL", "1", "3", str(path)], check=True, timeout=60)
    data = path.read_bytes()
    rng = random.Random(SEED + 10)
    for what, mutate in _mutations(data, rng)[:120]:
        try:
            _three_ways(mutate(bytearray(data)), monkeypatch)
        except AssertionError as exc:
            raise AssertionError(f"seed {SEED + 10}: {what}") from exc


def test_streamed_through_a_small_window(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The native decoder asks the reader for more bytes mid-record: the same as whole bytes."""
    monkeypatch.setattr(reader, "CHUNK", 256)
    monkeypatch.setattr(reader, "KEEP", 512)
    rng = random.Random(SEED + 2)
    data = OWN.read_bytes()
    path = tmp_path / "sa"
    for what, mutate in [("intact", bytes), *_mutations(data, rng)[:60]]:
        damaged = mutate(bytearray(data))
        path.write_bytes(damaged)
        assert (
            _text(records_of_file(path, Options(), TOPICS))[0]
            == _text(records_of_bytes(damaged, str(path), Options(), TOPICS))[0]
        ), what


def test_float_text_is_pythons_repr() -> None:
    """The native JSON writer's floats: CPython's repr, also where two shortest strings are equally near
    (x exactly halfway: CPython takes the even digit)."""
    rng = random.Random(20)
    values = [0.0, -0.0, 1e-5, 1e-4, 0.1 + 0.2, 1e16, 1.5e16, 9999999999999998.0, 1e22, 5e-324, 1.7976931348623157e308,
              819117376971184.25, 1371866460345113.25, float("inf"), float("-inf"), float("nan")]  # fmt: skip
    for _ in range(100_000):
        values.append(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
        values.append(rng.randint(0, 2 ** rng.randint(30, 70)) / 2 ** rng.randint(0, 18))
        values.append(rng.randint(0, 2**64) / rng.randint(1, 100_000) * 100)
    for v in values:
        assert native.float_repr(v) == repr(v), v


def test_json_strings_are_pythons() -> None:
    for s in ("eth0", 'a"b\\c', "\x01\x7f\n\t\r\b\f", "é\ufffd", "\U0001f600", ""):
        assert native.json_str(s) == json.dumps(s)


def test_bad_layouts_and_offsets_are_errors_not_crashes() -> None:
    """Layout text that does not add up is refused (the reader then stays on the Python path); an offset
    past the bytes asks for more instead of reading outside them."""
    for fmt, names, size in (("<QQ", ["a"], 16), ("<Q", ["a"], 12), ("QQ", ["a", "b"], 16), ("<Z", [], 1)):
        with pytest.raises(ValueError):
            native.Spec(False, [(1, "cpu", 1, 1, size, False, 8193, fmt, names, [])])
    spec = native.Spec(False, [(1, "cpu", 2, 1, 16, True, 8193, "<QQ", ["user", "nice"], [])])
    assert native.stats(spec, b"", 10**6, True)[0] == 0
    assert native.stats(spec, struct.pack("<i", -1), 0, True)[:2] == (1, 0)
    assert native.stats(spec, struct.pack("<i", 1) + bytes(8), 0, True)[0] == 0  # 16 bytes needed, 8 there
    kind, end, _stats = native.stats(spec, struct.pack("<i", 1) + bytes(16), 0, True)
    assert (kind, end) == (2, 20)


def test_sections_added_in_python_only_keep_the_python_path() -> None:
    """An activity added to rates.COMPUTE without its port: the collector must not silently drop it."""
    from fleetperf.sources.sysstat.rates import COMPUTE

    compute = [(aid, section) for aid, (section, _fn, _kind) in COMPUTE.items()]
    assert native.Ctx(1, {}, compute) is not None
    with pytest.raises(ValueError):
        native.Ctx(1, {}, [*compute, (43, "new-activity")])
