"""`fleetperf parse`: the same JSON from the native scanner (Avro bytes read back with the schema)
as from the Python parser, never a bare NaN, and the exit status of `ingest`."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.main import main
from fleetperf.demo.simulate import simulate
from fleetperf.sources.nmon import native_parser


def _parse(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, list[dict], str]:
    code = main(["parse", *args])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


@pytest.mark.skipif(not native_parser.available(), reason="the native nmon scanner is not built (no cargo)")
def test_parse_nmon_native_equals_the_python_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    [path] = simulate(tmp_path, 1, datetime(2026, 2, 1, 0, 0), timedelta(minutes=10), 60, 5)
    code, native, _ = _parse(capsys, "nmon", str(path))
    monkeypatch.setenv("FLEETPERF_NMON_PARSER", "python")
    assert not native_parser.available()
    code_py, python, _ = _parse(capsys, "nmon", str(path))
    assert code == code_py == 0
    assert len(native) == len(python) > 10
    assert native == python
    snapshots = [m["value"] for m in native if m["topic"].startswith("fleetperf.nmon-snapshots")]
    assert snapshots and all(s["rows"] for s in snapshots)


@pytest.mark.skipif(not native_parser.available(), reason="the native nmon scanner is not built (no cargo)")
def test_parse_nmon_prints_the_same_lines_with_either_parser(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Byte for byte, not only equal values: the Python parser's records used to print their keys in
    another order than the schema's (cpu_samples: origin_file before user_pct), so a diff of the
    two outputs showed every line changed."""
    [path] = simulate(tmp_path, 1, datetime(2026, 2, 1, 0, 0), timedelta(minutes=10), 30, 5)
    assert main(["parse", "nmon", str(path)]) == 0
    native = capsys.readouterr().out
    monkeypatch.setenv("FLEETPERF_NMON_PARSER", "python")
    assert main(["parse", "nmon", str(path)]) == 0
    python = capsys.readouterr().out
    assert native.count("fleetperf.cpu-samples") > 10
    assert native == python


def test_parse_auto_reports_unreadable_files_and_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    garbage = tmp_path / "x.nmon"
    garbage.write_bytes(b"\x00\xff" * 1000)
    code, messages, err = _parse(capsys, "auto", str(garbage))
    assert (code, messages) == (1, [])
    assert "not an nmon file" in err


def test_parse_piped_into_head_stops_quietly(tmp_path: Path) -> None:
    """A closed stdout (`parse nmon FILE | head`) is not a file that cannot be read: no "cannot
    read" message, no "files unreadable" count, exit status 0 (it said both before)."""
    import os
    import subprocess
    import sys

    # a day at 60 s: megabytes of JSON, far more than a pipe holds, so the child is still writing
    # when the reader goes away (3 snapshots fit in the pipe and finished before the close in CI)
    [path] = simulate(tmp_path, 1, datetime(2026, 2, 1, 0, 0), timedelta(days=1), 60, 5)
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    child = subprocess.Popen(
        [sys.executable, "-m", "fleetperf.cli.main", "parse", "nmon", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert child.stdout is not None and child.stderr is not None
    first = child.stdout.readline()
    child.stdout.close()  # what head does after its lines
    err = child.stderr.read().decode()
    assert child.wait(timeout=60) == 0, err
    assert json.loads(first)["topic"].startswith("fleetperf.")
    assert "cannot read" not in err, err
    assert "1 files unreadable" not in err, err  # the summary, if printed, counts no unreadable file
