"""Toolkit reports that are damaged or lack what they should print (issue 19, items 8-11), and a
seeded fuzz run over mutants of the project's test data (src/fleetperf/sources/perfkit/testdata)."""

from __future__ import annotations

import json
import math
import random
import re
import time as clock
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from fastavro import parse_schema
from fastavro.validation import validate

from fleetperf.sources.perfkit.parser import scan_lines
from fleetperf.sources.perfkit.records import MissingOptionError, Options, records_of_scan
from tests.unit.test_perfkit import DATA, FCX225_ROWS

SCHEMAS = Path(__file__).resolve().parents[2] / "schemas"


def _run(text: str, name: str = "r.txt", **options: object) -> list:
    scan = scan_lines(name, text.splitlines(keepends=True))
    return list(records_of_scan(scan, Options(**options)))  # type: ignore[arg-type]


def _of(records: list, topic: str) -> list[dict]:
    return [e.record for e in records if e.topic_key == topic]


def _ms(*args: int) -> int:
    return int(datetime(*args, tzinfo=UTC).timestamp() * 1000)


# FCX225 header of Figure 8-11 (seed 004 L4619-4623), then rows written for these tests
_FCX225_HEAD = "".join((DATA / "fcx225_syssumlog.txt").read_text().splitlines(keepends=True)[:5])


def _fcx225(rows: list[str]) -> str:
    # a row: end time, then Pct Busy 50.0, T/V 1.10 and the rest of the 20:39:44 row's cells
    return _FCX225_HEAD + "".join(
        f"{t}\t50.0\t1.10\t.9477\t22.0\t186\t156\t688.0\t.8\t.0\t14.6\t19.4\t.\n" for t in rows
    )


# --- item 8: times and dates a report should not print ---------------------------------------------


def test_item8_end_of_day_bad_times_and_the_file_goes_on() -> None:
    text = _fcx225(["23:50:00", "23:55:00", "29:99:99", "24:00:00", "-", "00:05:00", "00:10:00"])
    records = _run(text, day=date(2024, 2, 28), system="ZVM1", window_s=None)
    systems = _of(records, "zvm_system_samples")
    assert [s["ts"] for s in systems] == [
        _ms(2024, 2, 28, 23, 50),
        _ms(2024, 2, 28, 23, 55),
        _ms(2024, 2, 29, 0, 0),  # 24:00:00 is the end of the day: the next day's 00:00
        _ms(2024, 2, 29, 0, 5),
        _ms(2024, 2, 29, 0, 10),
    ]
    assert {s["interval_s"] for s in systems} == {300.0}
    dead = _of(records, "dead_letters")
    assert [(d["line"], d["origin_file"]) for d in dead] == [(8, "r.txt"), (10, "r.txt")]
    assert "'29:99:99' is not a time of day" in dead[0]["error"] and "no end time" in dead[1]["error"]
    assert dead[0]["raw"].startswith("29:99:99")


def test_item8_leap_second_is_the_end_of_the_day() -> None:
    records = _run(_fcx225(["23:55:00", "23:59:60", "00:05:00"]), day=date(2016, 12, 31), system="Z", window_s=None)
    assert [s["ts"] for s in _of(records, "zvm_system_samples")] == [
        _ms(2016, 12, 31, 23, 55),
        _ms(2017, 1, 1, 0, 0),
        _ms(2017, 1, 1, 0, 5),
    ]
    assert not _of(records, "dead_letters")


def test_item8_impossible_date_and_end_of_day_interval() -> None:
    text = (DATA / "fcx112_user.txt").read_text()
    bad = text.replace("Interval 15:22:01-15:23:01, on 2011/09/12", "Interval 23:59:01-24:00:00, on 2024/02/30")
    # damaged, not missing: the line and the table are dead letters, the rest of the file goes on
    records = _run(bad + "\n" + text, window_s=None)  # then the same report with its good date
    assert [(d["line"], d["error"]) for d in _of(records, "dead_letters")] == [
        (19, "date 2024/02/30 is not a calendar date"),
        (23, "FCX112 table at line 23: its date 2024/02/30 is not a calendar date: table skipped (--date reads it)"),
    ]
    assert {g["ts"] for g in _of(records, "zvm_guest_samples")} == {_ms(2011, 9, 12, 15, 23, 1)}
    records = _run(bad, day=date(2024, 2, 28), window_s=None)
    dead = _of(records, "dead_letters")
    assert len(dead) == 1 and dead[0]["line"] == 19 and "2024/02/30 is not a calendar date" in dead[0]["error"]
    guests = _of(records, "zvm_guest_samples")
    assert len(guests) == 22 and {g["ts"] for g in guests} == {_ms(2024, 2, 29, 0, 0)}
    assert {g["interval_s"] for g in guests} == {59.0}


# --- item 9: names a report does not print ---------------------------------------------------------


def test_item9_no_system_names_the_right_flag() -> None:
    text = (DATA / "fcx225_syssumlog.txt").read_text()
    with pytest.raises(MissingOptionError) as caught:
        _run(text, day=date(2011, 9, 21))
    assert "pass --zvm-system NAME" in str(caught.value) and "pass --system" not in str(caught.value)


def test_item9_userlog_without_its_title_line_takes_the_guest_option() -> None:
    text = (DATA / "fcx162_userlog.txt").read_text().replace("Resource Usage Log for User G73VM1", "")
    with pytest.raises(MissingOptionError, match="pass --zvm-guest USERID"):
        _run(text, day=date(2011, 9, 12), system="VMLINUX7")
    guests = _of(
        _run(text, day=date(2011, 9, 12), system="VMLINUX7", guest="G73VM1", window_s=None), "zvm_guest_samples"
    )
    assert len(guests) == 14 and {g["guest_id"] for g in guests} == {"VMLINUX7/G73VM1"}
    # the report's own line wins over the option
    named = _run((DATA / "fcx162_userlog.txt").read_text(), day=date(2011, 9, 12), system="V", guest="OTHER")
    assert {g["userid"] for g in _of(named, "zvm_guest_samples")} == {"G73VM1"}


# --- item 10: a whole-file failure is an exception the pipeline sees -------------------------------


def test_item10_missing_option_fails_the_file_before_anything_is_sent() -> None:
    # FCX112 prints its date, the FCX162 log after it (its own title line) does not
    text = (DATA / "fcx112_user.txt").read_text() + "\n" + (DATA / "fcx162_userlog.txt").read_text()
    seen: list = []
    options = Options(system="VMLINUX7", window_s=None)
    with pytest.raises(MissingOptionError) as caught:
        for emitted in records_of_scan(scan_lines("two.txt", text.splitlines(keepends=True)), options):
            seen.append(emitted)
    # all or nothing: a re-run with --date sends the file from its first record, positions unchanged
    assert seen == []
    assert "two.txt: FCX162 table at line 61: the report prints no date: pass --date" in str(caught.value)
    assert isinstance(caught.value, ValueError)  # what the pipeline counts as a failed file (not ledgered)
    again = list(
        records_of_scan(
            scan_lines("two.txt", text.splitlines(keepends=True)),
            Options(system="VMLINUX7", window_s=None, day=date(2011, 9, 12)),
        )
    )
    assert [e.snapshot for e in again] == list(range(1, 22 + 14 + 1))


# --- item 11: a window holds what was measured in it -----------------------------------------------


def test_item11_five_minute_interval_spread_over_the_minutes_it_covers() -> None:
    text = (DATA / "fcx225_syssumlog.txt").read_text()
    records = _of(_run(text, day=date(2011, 9, 21), system="ZVM1", window_s=60.0), "zvm_system_samples")
    first = [r for r in records if r["origin"].endswith(":6")]  # the row ending 20:39:44
    assert [(r["ts"], r["interval_s"]) for r in first] == [
        (_ms(2011, 9, 21, 20, 34, 59) + 999, 16.0),  # 20:34:44-20:35:00, in the 20:34 window
        (_ms(2011, 9, 21, 20, 35, 59) + 999, 60.0),
        (_ms(2011, 9, 21, 20, 36, 59) + 999, 60.0),
        (_ms(2011, 9, 21, 20, 37, 59) + 999, 60.0),
        (_ms(2011, 9, 21, 20, 38, 59) + 999, 60.0),
        (_ms(2011, 9, 21, 20, 39, 44), 44.0),
    ]
    # CPU seconds split by time: 49.5 % of 22 CPUs over 300 s, whatever the cut
    assert sum(r["total_cpu_s"] for r in first) == pytest.approx(0.495 * 22 * 300)
    assert {r["busy_pct"] for r in first} == {49.5}
    # the 20:39 minute window (start <= ts, as the Flink job assigns) holds 44 s of the 20:39:44 row
    # and 16 s of the 20:44:44 one: busy and T/V time-weighted, not the 5 minutes labelled by their end
    minute = _ms(2011, 9, 21, 20, 39)
    inside = [r for r in records if minute <= r["ts"] < minute + 60_000]
    assert sorted(r["interval_s"] for r in inside) == [16.0, 44.0]
    busy = sum(r["busy_pct"] * r["interval_s"] for r in inside) / sum(r["interval_s"] for r in inside)
    assert busy == pytest.approx((49.5 * 44 + 54.5 * 16) / 60)
    tv = sum(r["total_cpu_s"] for r in inside) / sum(r["virtual_cpu_s"] for r in inside)
    total_a, total_b = 0.495 * 22 * 44, 0.545 * 22 * 16
    assert tv == pytest.approx((total_a + total_b) / (total_a / 1.09 + total_b / 1.12))
    # each 5-minute row gives 6 pieces (its ends are not on a minute), 14 rows
    assert len(records) == 6 * len(FCX225_ROWS)


def test_item11_the_pipeline_cuts_at_the_configured_flink_window(tmp_path: Path) -> None:
    import argparse

    from fleetperf.sources.perfkit.source import PerfkitSource, options_of

    opts = argparse.Namespace(zvm_system="ZVM1", date="2011-09-21")
    assert options_of(opts).window_s == 60.0  # [flink] window_seconds of config/fleetperf.toml
    report = tmp_path / "syssum.txt"
    report.write_text((DATA / "fcx225_syssumlog.txt").read_text())
    records = [e.record for e in PerfkitSource().read(report, opts) if e.topic_key == "zvm_system_samples"]
    assert len(records) == 6 * 14 and records[-1]["ts"] == _ms(2011, 9, 21, 21, 44, 44)


def test_item11_window_option_off_keeps_one_record_per_interval() -> None:
    text = (DATA / "fcx225_syssumlog.txt").read_text()
    records = _of(_run(text, day=date(2011, 9, 21), system="ZVM1", window_s=None), "zvm_system_samples")
    assert len(records) == 14 and records[0]["ts"] == _ms(2011, 9, 21, 20, 39, 44)


# --- absurd values ---------------------------------------------------------------------------------


def test_absurd_values_become_null_with_a_dead_letter() -> None:
    text = (DATA / "fcx225_syssumlog.txt").read_text()
    text = text.replace("20:44:44\t54.5\t", "20:44:44\t250.0\t").replace("\t69.3\t", "\t" + "9" * 400 + "\t")
    records = _run(text, day=date(2011, 9, 21), system="ZVM1", window_s=None)
    row = next(r for r in _of(records, "zvm_system_samples") if r["ts"] == _ms(2011, 9, 21, 20, 44, 44))
    assert row["busy_pct"] is None and row["paging_xstore_rate"] is None and row["total_cpu_s"] is None
    assert row["tv_ratio_reported"] == 1.12  # the rest of the row arrives
    errors = [(d["line"], d["error"]) for d in _of(records, "dead_letters")]
    assert errors == [
        (7, "FCX225: busy_pct 250 outside [0, 100.5]: published as null"),
        (7, "FCX225: paging_xstore_rate is not a finite number: published as null"),
    ]


# --- seeded fuzz -----------------------------------------------------------------------------------

_TOPIC_SCHEMA = {
    "zvm_guest_samples": "zvm_guest_sample.avsc",
    "zvm_system_samples": "zvm_system_sample.avsc",
    "lpar_samples": "lpar_sample.avsc",
    "dead_letters": "dead_letter.avsc",
}
_ABSURD = ["1e400", "nan", "-5", "250", "9" * 400, "99999999999999999999", "24:00:00", "29:99:99", "-", "1_0", ""]
_PCT = {"busy_pct", "load_pct", "ovhd_pct", "susp_pct", "vmld_pct", "logld_pct"}
_EARLIEST, _LATEST = _ms(1990, 1, 1), _ms(2200, 1, 1)


def _mutant(rng: random.Random, text: str) -> str:
    if not text.strip("\n"):
        return text  # cut to nothing by an earlier mutation
    kind = rng.randrange(6)
    if kind == 0:  # byte flips
        data = bytearray(text.encode("utf-8", "surrogateescape"))
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return data.decode("utf-8", "surrogateescape")
    if kind == 1:  # cut anywhere
        return text[: rng.randrange(len(text))]
    lines = text.splitlines(keepends=True)
    if kind == 2:  # duplicated lines
        k = rng.randrange(len(lines))
        return "".join(lines[: k + 1] + lines[k : k + rng.randint(1, 5)] + lines[k + 1 :])
    if kind == 3:  # lines dropped or swapped
        a, b = rng.randrange(len(lines)), rng.randrange(len(lines))
        lines[a], lines[b] = lines[b], lines[a]
        del lines[rng.randrange(len(lines))]
        return "".join(lines)
    if kind == 4:  # absurd numbers and times in place of figures
        tokens = list(re.finditer(r"\d+:\d\d:\d\d|\d*\.?\d+", text))
        out, last = [], 0
        for m in sorted(rng.sample(tokens, min(len(tokens), rng.randint(1, 6))), key=lambda m: m.start()):
            out += [text[last : m.start()], rng.choice(_ABSURD)]
            last = m.end()
        return "".join(out) + text[last:]
    return text.replace("\n", " " * rng.randint(0, 3) + "\n" + rng.choice(["", "\t", "x" * 70_000 + "\n"]), 3)


def _check_record(topic: str, record: dict, schemas: dict) -> None:
    assert validate(record, schemas[topic], raise_errors=True)
    # no NaN / Infinity anywhere, every string encodable as Avro's UTF-8 (no lone surrogates)
    json.dumps(record, allow_nan=False, ensure_ascii=False).encode("utf-8")

    def numbers(value: object, name: str = "") -> list[tuple[str, float]]:
        if isinstance(value, dict):
            return [x for k, v in value.items() for x in numbers(v, k)]
        if isinstance(value, list):
            return [x for v in value for x in numbers(v, name)]
        if isinstance(value, int | float) and not isinstance(value, bool):
            return [(name, value)]
        return []

    for name, value in numbers(record):
        assert math.isfinite(value) and (value >= 0 or name in ("ts", "detected_at")), (name, value)
        if name in _PCT:
            assert value <= 100.5, (name, value)
    if topic != "dead_letters":
        assert _EARLIEST <= record["ts"] <= _LATEST
        assert 0 < (record["interval_s"] or 1) <= 86400


def test_fuzz_mutants_of_the_test_data() -> None:
    schemas = {t: parse_schema(json.loads((SCHEMAS / f).read_text())) for t, f in _TOPIC_SCHEMA.items()}
    texts = {p.name: p.read_text() for p in sorted(DATA.glob("*.txt"))}
    given = Options(system="ZVM1", day=date(2011, 9, 21), at=time(11, 40, 1), interval_s=60.0, window_s=60.0)
    rng = random.Random(19)
    started, slowest, published, letters, refused = clock.monotonic(), 0.0, 0, 0, 0
    for n in range(400):
        name = rng.choice(sorted(texts))
        text = texts[name]
        for _ in range(rng.randint(1, 3)):
            text = _mutant(rng, text)
        # every third mutant without options: what the damaged report itself says is all there is
        options = Options() if n % 3 == 0 else given
        t0 = clock.monotonic()
        try:
            records = list(records_of_scan(scan_lines(name, text.splitlines(keepends=True)), options))
        except MissingOptionError:
            refused += 1  # a clean refusal (e.g. the cut removed the processor model line)
            records = []
        slowest = max(slowest, clock.monotonic() - t0)
        assert slowest < 2.0, f"mutant {n} of {name} took {slowest:.1f} s"
        for e in records:
            _check_record(e.topic_key, e.record, schemas)
            published += e.topic_key != "dead_letters"
            letters += e.topic_key == "dead_letters"
    assert clock.monotonic() - started < 45
    assert published > 1000 and letters > 100  # the mutants did reach the rows


def test_a_huge_line_in_a_file_is_a_dead_letter_and_offsets_stay_right(tmp_path: Path) -> None:
    from fleetperf.sources.perfkit.records import records_of_file

    lines = (DATA / "fcx112_user.txt").read_text().splitlines(keepends=True)
    at = next(k for k, line in enumerate(lines) if line.startswith("LNKIHS"))
    lines.insert(at, "9" * 10_000_000 + "\n")
    path = tmp_path / "big.txt"
    path.write_text("".join(lines))
    started = clock.monotonic()
    records = list(records_of_file(path, Options(window_s=None)))
    assert clock.monotonic() - started < 2.0
    dead = _of(records, "dead_letters")
    assert [(d["line"], d["byte_offset"]) for d in dead] == [(at + 1, len("".join(lines[:at]).encode()))]
    assert "longer than 65536 characters" in dead[0]["error"] and len(dead[0]["raw"]) <= 1024
    guests = _of(records, "zvm_guest_samples")
    assert len(guests) == 22
    lnkihs = next(g for g in guests if g["userid"] == "LNKIHS")
    assert lnkihs["origin"] == f"big.txt:{at + 2}"  # the line after the huge one keeps its number


def test_a_log_over_the_end_of_summer_time_is_not_put_a_day_later() -> None:
    """A log (FCX225) in local time over the end of summer time: 02:00-02:55 twice (Europe/Berlin,
    25 Oct 2026). The time of day going back rolled the day over, so every row from the second
    02:00 on was published 23 hours late. With --tz the second showing follows the first; the
    expected instants are counted from 00:40 UTC in steps of 5 minutes, not read from the log."""
    berlin = ZoneInfo("Europe/Berlin")
    start = datetime(2026, 10, 25, 0, 40, tzinfo=UTC)
    instants = [start + timedelta(minutes=5 * k) for k in range(30)]
    clocks = [f"{t.astimezone(berlin):%H:%M:%S}" for t in instants]
    assert clocks[3:5] == ["02:55:00", "02:00:00"]  # the log shows the hour twice
    records = _run(_fcx225(clocks), day=date(2026, 10, 25), system="ZVM1", window_s=None, tz=berlin)
    assert not _of(records, "dead_letters")
    systems = _of(records, "zvm_system_samples")
    assert [s["ts"] for s in systems] == [int(t.timestamp() * 1000) for t in instants]
    assert {s["interval_s"] for s in systems} == {300.0}
    # past midnight, the day still rolls over in that zone
    late = [f"{(t + timedelta(hours=22)).astimezone(berlin):%H:%M:%S}" for t in instants[:4]]
    assert late == ["23:40:00", "23:45:00", "23:50:00", "23:55:00"]
    records = _run(_fcx225([*late, "00:00:00"]), day=date(2026, 10, 25), system="ZVM1", window_s=None, tz=berlin)
    assert [s["ts"] for s in _of(records, "zvm_system_samples")][-1] == int(
        datetime(2026, 10, 25, 23, 0, tzinfo=UTC).timestamp() * 1000
    )
