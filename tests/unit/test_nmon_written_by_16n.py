"""Two things Linux nmon 16n writes (seen in files it wrote here; tests/integration/
test_nmon_recorded.py records one), in files of our own so that they are checked everywhere:
CPUUTIL data lines numbered from 0 under headers numbered from 1 (parser._CPUUTIL), and a command
line with commas as the rest of a UARG line (layout._REST_OF_LINE). Both parsers, any chunking."""

from __future__ import annotations

from datetime import UTC
from pathlib import Path

import pytest

from fleetperf.sources.nmon import native_parser, parser
from tests.unit.test_nmon_native import comparable, native_records

HEAD = (
    "AAA,progname,nmon\nAAA,host,box16n\nAAA,interval,2\nAAA,date,01-DEC-2026\n"
    "CPU001,CPU 1 box16n,User%,Sys%,Wait%,Idle%,Steal%\n"
    "CPU002,CPU 2 box16n,User%,Sys%,Wait%,Idle%,Steal%\n"
    "CPU_ALL,CPU Total box16n,User%,Sys%,Wait%,Idle%,Steal%,Busy,CPUs\n"
)
UTIL = ",User%,Nice%,Sys%,Idle%,Wait%,Irq%,Softirq%,Steal%,Guest%,Guest_nice%\n"


def snapshot(n: int, first: int) -> str:
    """As nmon 16n wrote T0001 here (headers inside the first snapshot); `first`: the number of the
    first CPUUTIL data line (16n: 0)."""
    tag = f"T{n:04d}"
    out = f"ZZZZ,{tag},04:24:0{4 + n},01-DEC-2026\n"
    out += f"CPU001,{tag},9.2,4.2,0.0,78.2,8.4\nCPU002,{tag},10.9,5.9,0.0,74.8,8.4\n"
    out += f"CPU_ALL,{tag},10.5,5.0,0.0,76.5,8.0,,2\n"
    if n == 1:
        out += "CPUUTIL_ALL,CPU Util Stats box16n" + UTIL
        out += "CPUUTIL001,CPU Util Stats CPU1 box16n" + UTIL + "CPUUTIL002,CPU Util Stats CPU2 box16n" + UTIL
    out += f"CPUUTIL_ALL,{tag},20.99,0.00,10.08,152.82,0.00,0.00,0.00,15.95,0.00,0.00\n"
    out += f"CPUUTIL{first:03d},{tag},9.24,0.00,4.20,78.09,0.00,0.00,0.00,8.40,0.00,0.00\n"
    out += f"CPUUTIL{first + 1:03d},{tag},10.92,0.00,5.88,74.73,0.00,0.00,0.00,8.40,0.00,0.00\n"
    return out


def _records(path: Path, kind: str) -> list:
    if kind == "native":
        return list(native_parser.parse_file(path, UTC))
    return list(parser.parse_file(path, UTC))


KINDS = ["python"] + (["native"] if native_parser.available() else [])


def _util(path: Path) -> list[dict[str, float]]:
    """Per snapshot: CPUUTIL section -> User%."""
    out = []
    for e in _records(path, "python"):
        if e.topic_key == "dead_letters":
            raise AssertionError(e.record)
        if e.topic_key == "nmon_snapshots":
            out.append({r["section"]: r["values"][0] for r in e.record["rows"] if r["section"].startswith("CPUUTIL0")})
    return out


@pytest.mark.parametrize("first", [0, 1])
def test_cpuutil_data_go_with_the_header_of_their_cpu(tmp_path: Path, first: int) -> None:
    """Numbered from 0 (nmon 16n) or from 1 (as the headers are): CPU 1's 9.24 under CPUUTIL001
    ('CPU1'), CPU 2's 10.92 under CPUUTIL002, nothing dead-lettered; the scanner reads the same
    bytes, in any chunking."""
    path = tmp_path / f"box16n_{first}.nmon"
    path.write_text(HEAD + snapshot(1, first) + snapshot(2, first) + snapshot(3, first))
    assert _util(path) == [{"CPUUTIL001": 9.24, "CPUUTIL002": 10.92}] * 3
    python = [comparable(e) for e in _records(path, "python")]
    if "native" in KINDS:
        assert [comparable(e) for e in _records(path, "native")] == python
        for size in (1, 7, 64):
            assert [comparable(e) for e in native_records(path, [size] * (path.stat().st_size // size + 1))] == python


def test_a_cpuutil_line_without_a_header_is_still_a_dead_letter(tmp_path: Path) -> None:
    """The shift needs the next header: a file with no CPUUTIL headers keeps its error."""
    path = tmp_path / "box16n_nohead.nmon"
    path.write_text(HEAD + "ZZZZ,T0001,04:24:05,01-DEC-2026\nCPUUTIL000,T0001,1.0,2.0\n")
    for kind in KINDS:
        dead = [e.record["error"] for e in _records(path, kind) if e.topic_key == "dead_letters"]
        assert dead == ["CPUUTIL000 data before its header line"], kind


def test_a_command_line_with_commas_is_the_rest_of_the_uarg_line(tmp_path: Path) -> None:
    command = 'backend --uid 0 --env {"A": "x", "B": "y,z"}'
    path = tmp_path / "argbox_261201_0420.nmon"
    path.write_text(
        HEAD + snapshot(1, 0) + "UARG,+Time,PID,ProgName,FullCommand\n"
        f"UARG,T0001,0005040,backend,{command}\nUARG,T0001,0000077,kdamond.0,[kdamond.0]\n"
    )
    python = _records(path, "python")
    rows = [r for e in python if e.topic_key == "nmon_snapshots" for r in e.record["rows"] if r["section"] == "UARG"]
    assert [r["labels"]["FullCommand"] for r in rows] == [command, "[kdamond.0]"]
    # each process its own entity, named as its TOP row names it ('PID name')
    assert [r["entities"] for r in rows] == [["0005040 backend"], ["0000077 kdamond.0"]]
    assert [r["values"] for r in rows] == [[], []]
    if "native" in KINDS:
        assert [comparable(e) for e in _records(path, "native")] == [comparable(e) for e in python]
