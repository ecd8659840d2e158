"""Performance Toolkit reports of seed 004 (excerpts in src/fleetperf/sources/perfkit/testdata, see its README)."""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time
from pathlib import Path

import pytest

from fleetperf.sources.perfkit.align import align, tokens_of
from fleetperf.sources.perfkit.layouts import FCX112, FCX126
from fleetperf.sources.perfkit.parser import scan_lines
from fleetperf.sources.perfkit.records import MissingOptionError, Options, records_of_scan

DATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "perfkit" / "testdata"

# FCX112 (004 L899-926), typed by hand: userid, %CPU, TCPU, VCPU, T/V (None: not printed), status, share
FCX112_ROWS = [
    ("COSTA", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("DATAMOVE", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("DIRMAINT", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("DISKACNT", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("DTCVSW1", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("DTCVSW2", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("EREP", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("FTPSERVE", 0, 0, 0, None, "XC,---,DORM", (100, False)),
    ("GCS", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("LNKDB2", 1.37, 0.823, 0.818, 1.01, "EME,CL3,DISP", (100, False)),
    ("LNKIHS", 0.02, 0.012, 0.011, 1.09, "EME,CL1,DISP", (100, False)),
    ("LNKMR2", 0.02, 0.012, 0.011, 1.09, "EME,CL1,DISP", (100, False)),
    ("LNKSU1", 7.06, 4.236, 4.224, 1.00, "EME,CL3,DISP", (100, False)),
    ("LNKSU3", 0.02, 0.010, 0.010, 1.00, "EME,CL1,DISP", (100, False)),
    ("LNKWAS", 1.75, 1.049, 1.046, 1.00, "EME,CL2,DISP", (100, False)),
    ("MAINT", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("OPERATOR", 0, 0, 0, None, "ESA,---,DORM", (0, False)),
    ("OPERSYMP", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("PERFSVM", 0.01, 0.004, 0.004, 1.00, "ESA,---,DORM", (3.02, True)),
    ("PVM", 0, 0, 0, None, "ESA,---,DORM", (100, False)),
    ("RSCS", 0.00, 0.002, 0.001, 2.00, "ESA,---,DORM", (100, False)),
    ("TCPIP", 0.00, 0.002, 0.002, 1.00, "ESA,---,DORM", (3000, False)),
]

# FCX225 (004 L4626-4637): end time, Pct Busy, T/V, capture ratio, PGIN+PGOUT, Read+Write
FCX225_ROWS = [
    ("20:39:44", 49.5, 1.09, 0.9477, 14.6, 19.4),
    ("20:44:44", 54.5, 1.12, 0.9235, 69.3, 42.0),
    ("20:49:44", 63.3, 1.21, 0.8731, 140.5, 18.4),
    ("20:54:44", 55.1, 1.17, 0.8941, 57.0, 19.6),
    ("20:59:44", 53.0, 1.19, 0.8838, 92.7, 15.1),
    ("21:04:44", 57.0, 1.13, 0.9211, 118.2, 33.3),
    ("21:09:44", 54.2, 1.11, 0.9342, 232.2, 14.5),
    ("21:14:44", 49.5, 1.11, 0.9323, 317.1, 54.1),
    ("21:19:44", 49.6, 1.10, 0.9401, 208.5, 19.7),
    ("21:24:44", 48.9, 1.09, 0.9420, 130.6, 11.0),
    ("21:29:44", 49.9, 1.09, 0.9437, 12.2, 9.2),
    ("21:34:44", 49.4, 1.09, 0.9422, 192.0, 23.2),
    ("21:39:44", 49.2, 1.09, 0.9441, 291.6, 23.3),
    ("21:44:44", 50.0, 1.08, 0.9525, 180.3, 21.8),
]

# FCX126 Figure 8-5 (004 L4238-4254): partition, #Proc, weight, dedicated, %Load, [(cpu, type, %Busy, %Ovhd)]
FCX126_FIG85 = {
    "A1E": (0, None, False, 0.0, []),
    "A1F": (2, 10, False, 0.0, [(0, "CP", 0.1, 0.0), (1, "CP", 0.1, 0.0)]),
    "A11": (
        6,
        100,
        False,
        None,
        [(0, "CP", 0.0, 0.0), (1, "CP", 0.0, 0.0), (2, "CP", 0.0, 0.0), (3, "CP", 0.0, 0.0)]
        + [(4, "ZIIP", 0.0, 0.0), (5, "ZAAP", 0.0, 0.0)],
    ),
    "A12": (
        4,
        10,
        False,
        5.7,
        [(0, "CP", 33.0, 0.5), (1, "CP", 32.7, 0.4), (2, "CP", 36.0, 0.4), (3, "CP", 36.2, 0.5)],
    ),
    "A13": (2, 10, False, 0.3, [(0, "CP", 5.5, 0.1), (1, "CP", 1.2, 0.1)]),
}


def _text(name: str) -> str:
    return (DATA / name).read_text()


def _records(name: str, text: str | None = None, **options: object) -> list:
    # one record per report row (window_s=None): these tests check the reading; test_perfkit_robust
    # checks the cut into window pieces
    options.setdefault("window_s", None)
    lines = (text if text is not None else _text(name)).splitlines(keepends=True)
    return list(records_of_scan(scan_lines(name, lines), Options(**options)))  # type: ignore[arg-type]


def _collapsed(text: str) -> str:
    # a copy that lost its tabs and blank cells: one space between values
    return "\n".join(re.sub(r"\s+", " ", line).strip() for line in text.splitlines()) + "\n"


def _fixed_width(text: str) -> str:
    # a saved screen: cells right-aligned in fixed columns, blank cells as spaces
    out = []
    for line in text.splitlines():
        out.append("".join(f"{cell:>13}" for cell in line.split("\t")) if "\t" in line else line)
    return "\n".join(out) + "\n"


def _guests(records: list) -> dict[str, dict]:
    return {e.record["userid"]: e.record for e in records if e.topic_key == "zvm_guest_samples"}


@pytest.mark.parametrize("variant", [lambda t: t, _collapsed, _fixed_width], ids=["tabs", "collapsed", "screen"])
def test_fcx112_every_row(variant) -> None:  # noqa: ANN001
    records = _records("fcx112_user.txt", variant(_text("fcx112_user.txt")))
    assert not [e for e in records if e.topic_key == "dead_letters"]
    guests = _guests(records)
    assert list(guests) == [row[0] for row in FCX112_ROWS]  # >>Mean>> is not a guest
    end = int(datetime(2011, 9, 12, 15, 23, 1, tzinfo=UTC).timestamp() * 1000)
    for userid, cpu_pct, tcpu, vcpu, ratio, status, share in FCX112_ROWS:
        g = guests[userid]
        assert (g["tcpu_s"], g["vcpu_s"]) == (tcpu, vcpu), userid
        assert g["tv_ratio_reported"] == ratio, userid
        if ratio is not None:
            assert round(tcpu / vcpu, 2) == ratio, userid  # the T/V column is TCPU / VCPU
            assert g["cpu_pct"] == cpu_pct
        assert g["user_status"] == status
        assert (g["share"], g["share_absolute"]) == share
        assert g["guest_id"] == f"VMLINUX7/{userid}" and g["ts"] == end and g["interval_s"] == 60.0


def test_fcx112_row_that_lost_cells_is_not_guessed() -> None:
    # DTCVSW1 prints 8 of the 10 values before its status: the CPU columns are still certain,
    # which two I/O columns went missing is not, so those stay empty
    row = "DTCVSW1\t.00\t.000\t.0000\t.0\t.0\t.0\t.0\t.0\tESA,---,DORM\t1\t1\t0\t.00\t.0\t100"
    reading = align(tokens_of(row), FCX112.columns)
    assert reading is not None
    assert (reading.values["tcpu_s"], reading.values["vcpu_s"]) == (0.0, 0.0)
    assert reading.values["virtual_io_rate"] is None and "virtual_io_rate" in reading.ambiguous


def test_fcx162_userlog() -> None:
    records = _records("fcx162_userlog.txt", day=date(2011, 9, 12), system="VMLINUX7")
    guests = [e.record for e in records if e.topic_key == "zvm_guest_samples"]
    assert len(guests) == 14 and {g["guest_id"] for g in guests} == {"VMLINUX7/G73VM1"}
    first = guests[0]
    assert (first["tcpu_s"], first["vcpu_s"], first["tv_ratio_reported"]) == (5.279, 4.352, 1.2)
    assert round(first["tcpu_s"] / first["vcpu_s"], 2) == 1.21
    for g in guests:
        assert round(g["tcpu_s"] / g["vcpu_s"], 1) == g["tv_ratio_reported"]
        assert g["interval_s"] == 60.0
    assert guests[-1]["ts"] == int(datetime(2011, 9, 12, 16, 42, 33, tzinfo=UTC).timestamp() * 1000)


def test_fcx162_without_date_is_a_clear_error() -> None:
    # an option missing is not bad data: no dead letter, one error the pipeline sees (file not done)
    with pytest.raises(MissingOptionError, match=r"fcx162_userlog.txt: FCX162 table at line 12: .*pass --date"):
        _records("fcx162_userlog.txt", system="VMLINUX7")


@pytest.mark.parametrize("variant", [lambda t: t, _collapsed], ids=["tabs", "collapsed"])
def test_fcx225_every_row(variant) -> None:  # noqa: ANN001
    text = variant(_text("fcx225_syssumlog.txt"))
    records = _records("fcx225_syssumlog.txt", text, day=date(2011, 9, 21), system="ZVM1")
    systems = [e.record for e in records if e.topic_key == "zvm_system_samples"]
    got = [
        (
            datetime.fromtimestamp(s["ts"] / 1000, UTC).strftime("%H:%M:%S"),
            s["busy_pct"],
            s["tv_ratio_reported"],
            s["capture_ratio"],
            s["paging_xstore_rate"],
            s["paging_dasd_rate"],
        )
        for s in systems
    ]
    assert got == FCX225_ROWS  # the >>Mean>> row (547.3 / 112.8) is kept apart
    for s in systems:
        assert s["interval_s"] == 300.0 and s["online_cpus"] == 22.0
        assert s["total_cpu_s"] / s["virtual_cpu_s"] == pytest.approx(s["tv_ratio_reported"])


def test_fcx225_mean_row_is_kept_apart() -> None:
    scan = scan_lines("x", _text("fcx225_syssumlog.txt").splitlines(keepends=True))
    means = [r for r in scan.tables[0].rows if r.kind == "mean"]
    assert len(means) == 1 and means[0].values["paging_xstore_rate"] == 547.3
    assert means[0].values["paging_dasd_rate"] == 112.8 and means[0].values["busy_pct"] == 56.0


def test_fcx126_partitions_of_figure_8_5() -> None:
    records = _records("fcx126_lpar.txt", day=date(2011, 9, 21), at=time(11, 40, 1), interval_s=60.0)
    assert not [e for e in records if e.topic_key == "dead_letters"]
    lpars = [e.record for e in records if e.topic_key == "lpar_samples"]
    last_table = {r["partition"]: r for r in lpars if int(r["origin"].split(":")[1]) >= 99}
    assert set(last_table) == set(FCX126_FIG85)
    for name, (procs, weight, dedicated, load, cpus) in FCX126_FIG85.items():
        r = last_table[name]
        assert (r["proc_count"], r["weight"], r["dedicated"], r["load_pct"]) == (procs, weight, dedicated, load), name
        assert [(c["cpu"], c["cpu_type"], c["busy_pct"], c["ovhd_pct"]) for c in r["cpus"]] == cpus, name
        assert r["lpar_id"] == f"2097-712/{name}" and r["collected_in"] == "A12"
    # only the partition z/VM runs in reports suspend time and its own load
    a12 = last_table["A12"]["cpus"][0]
    assert (a12["susp_pct"], a12["vmld_pct"], a12["logld_pct"]) == (0.9, 32.4, 32.7)
    # the dedicated ICF engine of Figure 8-4
    a09 = next(r for r in lpars if r["partition"] == "A09")
    assert a09["dedicated"] and a09["weight"] is None and a09["wait_completion"] is True
    assert a09["cpus"] == [{"cpu": 0, "cpu_type": "ICF", "busy_pct": 100.0, "ovhd_pct": 0.0} | _NO_VM_FIELDS]


_NO_VM_FIELDS = {"susp_pct": None, "vmld_pct": None, "logld_pct": None}


def test_fcx126_continuation_row_in_collapsed_copy() -> None:
    kind_row, continuation = FCX126.row_variants()
    assert align(tokens_of("10 NO NO 1 .0 .0 CP"), kind_row[1]) is None
    reading = align(tokens_of("10 NO NO 1 .0 .0 CP"), continuation[1])
    assert reading is not None and (reading.values["cpu"], reading.values["busy_pct"]) == (1, 0.0)


def test_garbage_row_is_dead_lettered_and_good_rows_around_it_kept() -> None:
    lines = _text("fcx112_user.txt").splitlines(keepends=True)
    at = next(k for k, line in enumerate(lines) if line.startswith("LNKIHS"))
    lines.insert(at, "LNKBAD\t1.0\tx!7\tgarbage\n")
    text = "".join(lines)
    records = _records("fcx112_user.txt", text)
    dead = [e.record for e in records if e.topic_key == "dead_letters"]
    assert len(dead) == 1 and dead[0]["line"] == at + 1
    assert dead[0]["byte_offset"] == len("".join(lines[:at]).encode())
    assert "FCX112" in dead[0]["error"] and dead[0]["origin_file"] == "fcx112_user.txt"
    assert len(_guests(records)) == len(FCX112_ROWS)


def test_unknown_level_and_unknown_report() -> None:
    text = _text("fcx225_syssumlog.txt").replace("PGIN+", "XPGIN")
    text = "FCX999  Run 2011/09/21  MYSTERY report\n" + text
    scan = scan_lines("f.txt", text.splitlines(keepends=True))
    assert scan.unknown_reports == {"FCX999": 1}
    assert not scan.tables and "FCX225 header lacks 'PGIN+ PGOUT'" in scan.problems[0].message


def test_monitor_counter_deltas_match_the_toolkit_times() -> None:
    # the CP monitor's complement-form CPU timers (they count down) give the Toolkit's LNKDB2 times
    from fleetperf.sources.zvm.cpu_deltas import GuestCpuCounters, GuestCpuDeltas

    start = 1 << 60

    def timer(seconds: float) -> int:
        return start - (round(seconds * 1e6) << 12)

    deltas = GuestCpuDeltas()
    base = GuestCpuCounters("MON", "LNKDB2", 0, {0: (timer(100.0), timer(90.0))}, "m:1")
    assert list(deltas.feed(base)) == []  # the first sample only sets the base
    (e,) = deltas.feed(GuestCpuCounters("MON", "LNKDB2", 60_000, {0: (timer(100.823), timer(90.818))}, "m:2"))
    assert (e.record["tcpu_s"], e.record["vcpu_s"], e.record["interval_s"]) == (0.823, 0.818, 60.0)
    # logoff and logon: the next reading starts a new session and only sets the base
    deltas.logoff("MON", "LNKDB2")
    assert list(deltas.feed(GuestCpuCounters("MON", "LNKDB2", 120_000, {0: (timer(0.012), timer(0.011))}, "m:3"))) == []
    assert deltas.sessions_started == 1
