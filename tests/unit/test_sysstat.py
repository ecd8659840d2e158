"""sadc collector against sysstat's own files and sar's expected outputs (../shared/corpus/sysstat)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetperf.ingest.records import Emitted
from fleetperf.sources.sysstat import layouts
from fleetperf.sources.sysstat.rates import LATEST_SAR, RATE_SECTIONS, memused_rule
from fleetperf.sources.sysstat.reader import open_bytes
from fleetperf.sources.sysstat.records import Options, Tail, records_of_bytes, records_of_file
from tests import sar_text

# The expected outputs are those of upstream's newest sar (the corpus snapshot, SOURCES.txt), not of
# the versions that wrote the files: read them with that sar's definitions (memused = total - avail).
HEAD = Options(sar=LATEST_SAR)
# file -> (expected sar output, reader options)
COMPARED = {
    "data-9.1.6": ("expected.data-9.1.6", HEAD),
    "data-10.3.1": ("expected.data-10.3.1", HEAD),
    "data-11.6.5": ("expected.data-11.6.5", HEAD),
    "data-12.0.0": ("expected.data-12.0.0", HEAD),
    # its records, 1 s apart, are stored 2**24 s apart (a byte-order mangled conversion): sar shows them anyway
    "data-ppc-11.7.2": ("expected.data-ppc-11.7.2", Options(sar=LATEST_SAR, trust_times=True)),
    "data-extra-12.1.7": ("expected.data-extra-12.1.7", HEAD),
    "data-12.5.6-A_QUEUE_modified": ("expected.data-12.5.6-A_QUEUE_modified", HEAD),
    "data-9.1.6 ": ("expected.data-9.1.6-hz", Options(hz=250, sar=LATEST_SAR)),  # same file, read with HZ 250
}


def _as_sar(value: float, text: str) -> str:
    return format(value, ".2f") if "." in text else format(value, ".0f")


@pytest.mark.parametrize("name", sorted(COMPARED))
def test_figures_equal_sar_value_for_value(corpus: Path, name: str) -> None:
    expected_name, options = COMPARED[name]
    emitted = list(records_of_file(corpus / "sysstat" / "binary" / name.strip(), options))
    ours = sar_text.our_rows(emitted)
    for e in emitted:  # every figure a double, each record carrying its figure count (as in test_sysstat_own)
        if e.topic_key == "sysstat_samples":
            metrics = e.record["metrics"]
            assert e.values == len(metrics) and all(type(v) is float for v in metrics.values()), e.record
    expected = sar_text.parse((corpus / "sysstat" / "expected" / expected_name).read_text())
    assert expected, "the sar output parsed to nothing"
    withheld = {e.record["byte_offset"] for e in emitted if e.topic_key == "dead_letters"}
    read = {k[0] for k in ours}
    header = open_bytes((corpus / "sysstat" / "binary" / name.strip()).read_bytes()).header
    # the activities added in issue 20 have 0x2175 layouts only: in older formats they are not read
    not_read = {k[0] for k in expected} - read
    if header.format_magic == layouts.FORMAT_2175:  # rates may be withheld (ppc: uptimes that are no interval)
        assert not (not_read - (RATE_SECTIONS if withheld else set())), f"{name}: sar prints {not_read}, we do not"
    else:  # no documented old layout for these (README)
        assert not_read <= {"filesystems", "hugepages", "io", "interrupts"}, f"{name}: we do not read {not_read}"
    compared = 0
    for key, row in expected.items():
        if key[0] in not_read:
            continue
        got = ours.get(key)
        if got is None:
            # only the rates of an interval we refused (ppc: uptimes that are no interval) may be absent
            assert key[0] in RATE_SECTIONS and withheld, f"{name}: no figures for {key}"
            continue
        for column, text in row.items():
            if column not in got:
                # a counter the file's sysstat did not record (e.g. kbslab before 10.x): sar prints 0
                assert float(text) == 0, f"{name} {key} {column}: sar prints {text}, the file has no such counter"
                continue
            assert _as_sar(got[column], text) == text, f"{name} {key} {column}: ours {got[column]!r}, sar {text}"
            compared += 1
    assert compared >= 4


def test_every_format_byte_order_and_long_size_is_read(corpus: Path) -> None:
    seen = set()
    for name in ("data-9.1.6", "data-10.3.1", "data-12.0.0", "data-ppc-11.7.2"):
        header = open_bytes((corpus / "sysstat" / "binary" / name).read_bytes(), name).header
        seen.add((hex(header.format_magic), header.byte_order, header.sizeof_long))
    assert seen == {("0x2171", "little", 8), ("0x2173", "little", 8), ("0x2175", "little", 8), ("0x2175", "big", 4)}
    ppc = open_bytes((corpus / "sysstat" / "binary" / "data-ppc-11.7.2").read_bytes()).header
    assert (ppc.nodename, ppc.machine, ppc.cpu_count, ppc.hz) == ("partch", "ppc", 16, 100)


def _dead_letters(emitted: list[Emitted]) -> list[dict]:
    return [e.record for e in emitted if e.topic_key == "dead_letters"]


@pytest.mark.parametrize(
    ("name", "offset", "words"),
    [
        ("data-trunc", 980, "truncated record"),
        ("data-12.7.1-A_IRQ_overflow", 412, "8193x4096"),
        ("data-9.1.5", 2, "0x2170"),
    ],
)
def test_damaged_files_give_a_dead_letter(corpus: Path, name: str, offset: int, words: str) -> None:
    path = corpus / "sysstat" / "binary" / name
    letters = _dead_letters(list(records_of_file(path, Options())))
    assert len(letters) == 1
    assert letters[0]["byte_offset"] == offset and words in letters[0]["error"]
    assert letters[0]["origin_file"] == str(path)


def test_unknown_activities_are_skipped_by_their_size(corpus: Path) -> None:
    emitted = list(records_of_file(corpus / "sysstat" / "binary" / "data-ukwn", Options()))
    assert not _dead_letters(emitted)
    cpu = {k[2]: v for k, v in sar_text.our_rows(emitted).items() if k[0] == "cpu-load-all"}
    # what sar -A -f data-ukwn prints: all 50.00 %usr / 50.00 %idle, CPU 0 100 %usr, CPU 1 100 %idle
    assert (cpu["all"]["usr"], cpu["all"]["idle"]) == (50.0, 50.0)
    assert (cpu["0"]["usr"], cpu["1"]["idle"]) == (100.0, 100.0)
    config = next(e.record for e in emitted if e.topic_key == "host_configs")
    assert "activity_255" in config["attributes"]["unread_activities"]


def test_damage_inside_a_file_keeps_the_records_around_it(corpus: Path) -> None:
    data = bytearray((corpus / "sysstat" / "binary" / "data-11.6.5").read_bytes())
    sa = open_bytes(bytes(data))
    records = list(sa.records())
    comment = next(r for r in records if r.kind == "comment")
    clean = sar_text.our_rows(list(records_of_bytes(bytes(data), "clean", Options())))
    data[comment.offset + 40] = 0x77  # record type byte of the comment record: garbage
    damaged = list(records_of_bytes(bytes(data), "damaged", Options()))
    letters = _dead_letters(damaged)
    assert len(letters) == 1 and letters[0]["byte_offset"] == comment.offset + 40
    assert "unknown record type 119" in letters[0]["error"] and "reading went on at offset" in letters[0]["error"]
    assert sar_text.our_rows(damaged) == clean  # the statistics records on both sides still give every figure

    cut = (corpus / "sysstat" / "binary" / "data-11.6.5").read_bytes()[: records[-1].offset + 100]  # last record torn
    torn = list(records_of_bytes(cut, "torn", Options()))
    (letter,) = _dead_letters(torn)
    assert records[-1].offset <= letter["byte_offset"] <= records[-1].offset + 100
    assert f"truncated record at offset {records[-1].offset}" in letter["error"]
    assert not sar_text.our_rows(torn)  # its only interval ended in the torn record: nothing invented


def test_live_file_read_in_arbitrary_pieces_publishes_every_record_once(corpus: Path, tmp_path: Path) -> None:
    source = (corpus / "sysstat" / "binary" / "data-ppc-11.7.2").read_bytes()
    trusting = Options(trust_times=True)  # its times are mangled (COMPARED); the pieces are the point here
    whole = [e.record for e in records_of_bytes(source, str(tmp_path / "sa27"), trusting)]
    path = tmp_path / "sa27"
    tail = Tail(path, trusting)
    got = []
    for end in (7, 300, 1000, 1001, 3591, 3600, 6000, 8000, len(source), len(source)):
        path.write_bytes(source[:end])
        got.extend(e.record for e in tail.poll())
    strip = [{k: v for k, v in r.items() if k != "detected_at"} for r in got]
    assert strip == [{k: v for k, v in r.items() if k != "detected_at"} for r in whole]


def test_cpu_sample_for_the_flink_job_and_steal_trust_mark(corpus: Path) -> None:
    emitted = list(records_of_file(corpus / "sysstat" / "binary" / "data-12.0.0", Options()))
    cpu = [e.record for e in emitted if e.topic_key == "cpu_samples"]
    assert len(cpu) == 1
    # sar -u: 0.37 %user, 0.62 %system, 0 %iowait, 0 %steal, 99.00 %idle
    assert format(cpu[0]["user_pct"], ".2f") == "0.37" and format(cpu[0]["idle_pct"], ".2f") == "99.00"
    assert cpu[0]["steal_pct"] == 0.0 and cpu[0]["cpus"] == 8 and cpu[0]["interval_s"] == 1.0
    assert all(e.record["steal_trusted"] for e in emitted if e.topic_key == "sysstat_samples")
    from fleetperf.sources.sysstat.records import steal_trusted

    assert not steal_trusted("6.0.2") and steal_trusted("7.0.0") and steal_trusted("12.6.1")


def test_old_layouts_match_the_struct_sizes_in_the_files(corpus: Path) -> None:
    """The aligned tables reproduce the sizes sysstat wrote (a wrong alignment shifts every field)."""
    sizes = {}
    for name in ("data-9.1.6", "data-10.3.1", "data-11.6.5"):
        for a in open_bytes((corpus / "sysstat" / "binary" / name).read_bytes()).header.activities:
            fields = layouts.ALIGNED.get((a.id, a.magic))
            if fields:
                placed = layouts.aligned_offsets(fields, 8)
                fitting = [(f, o, w) for f, o, w in placed if o + w <= a.size]
                last_end = fitting[-1][1] + fitting[-1][2]
                sizes[(name, a.name)] = (a.size, last_end)
                assert a.size - last_end < 16, f"{name} {a.name}: {a.size} bytes, table ends at {last_end}"
    # 9 (9.1.6) and 10 (10.3.x) CPU counters, each on 16 bytes: the struct ends 8 bytes after the last
    assert sizes[("data-9.1.6", "cpu")] == (144, 136) and sizes[("data-10.3.1", "cpu")] == (160, 152)


def test_memused_rule_per_sysstat_version() -> None:
    """pr_stats.c/json_stats.c history: total - free until 11.7.3 (commit a8a97394 is first in 11.7.4),
    total - free - buffers - cached - slab until 12.7.7, total - available from 12.7.8 (6f34da35)."""
    assert memused_rule((9, 1, 6)) == memused_rule((11, 6, 5)) == memused_rule((11, 7, 3)) == "total-free"
    assert memused_rule((11, 7, 4)) == memused_rule((12, 6, 1)) == memused_rule((12, 7, 7))
    assert memused_rule((12, 6, 1)) == "total-free-buffers-cached-slab"
    assert memused_rule((12, 7, 8)) == memused_rule((13, 0, 0)) == "total-available"
    assert memused_rule((12, 6)) == "total-free-buffers-cached-slab"  # --sar-version 12.6: its last release


def test_records_with_mangled_times_are_dead_letters_by_default(corpus: Path) -> None:
    """data-ppc-11.7.2: header of 2017-04-27, records in 2039-2040, 2**24 s apart though 1 s apart by their
    uptimes. Published as they are, they would land 23 years in the future: each is a dead letter."""
    emitted = list(records_of_file(corpus / "sysstat" / "binary" / "data-ppc-11.7.2", Options()))
    letters = _dead_letters(emitted)
    assert letters and all("far from the file's" in letter["error"] for letter in letters)
    assert not [e for e in emitted if e.topic_key in ("sysstat_samples", "cpu_samples")]
