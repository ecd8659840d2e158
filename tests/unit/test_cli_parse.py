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


def _grown(tmp_path: Path, copies: int) -> bytes:
    """A simulated day's snapshots repeated `copies` times, tags renumbered (megabytes: several of
    the scanner's 1 MiB chunks)."""
    [day] = simulate(tmp_path / "day", 1, datetime(2026, 2, 1, 0, 0), timedelta(days=1), 60, 5)
    lines = day.read_text().splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith("ZZZZ,"))
    head, body = lines[:first], lines[first:]
    per_copy = sum(1 for line in body if line.startswith("ZZZZ,"))
    out = list(head)
    for c in range(copies):
        for line in body:
            parts = line.split(",")
            at = 2 if parts[0] == "TOP" else 1
            if parts[at][:1] == "T" and parts[at][1:].isdigit():
                n = int(parts[at][1:]) + c * per_copy
                parts[at] = f"T{n:05d}"
                if parts[0] == "ZZZZ":
                    ts = datetime(2026, 2, 1) + timedelta(minutes=n)
                    parts[2], parts[3] = ts.strftime("%H:%M:%S"), ts.strftime("%d-%b-%Y").upper()
            out.append(",".join(parts))
    return ("\n".join(out) + "\n").encode()


@pytest.mark.skipif(not native_parser.lines_available(), reason="the native nmon scanner is not built (no cargo)")
def test_parse_nmon_written_to_stdouts_fd_keeps_the_order_of_every_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With a stdout that has an fd the scanner writes its lines there itself (write_lines_to),
    while dead letters and host configuration are written by Python: every line must come out in
    the order it has through Python's buffers (capsys has no fd) and from the Python parser, with
    damage inside some chunks and not others, a cut last line and two files in a row."""
    import sys

    lines = _grown(tmp_path, 28).split(b"\n")
    for i in range(len(lines) // 8, 50, -397):  # damage in the first chunk only
        lines.insert(i, b"CPU_ALL,T00003,abc,1.0" if i % 2 else b"\xff\xfe not nmon")
    # and a dead letter as the last thing of the first chunk: the next chunk's lines go straight to
    # the fd, so it must have left Python's buffers before
    bad = b"\xff\xfe not nmon"
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line) + 1)
    shift, chunk = len(bad) + 1, native_parser.CHUNK  # the line that straddles the chunk's end once `bad` is in:
    j = next(j for j, line in enumerate(lines) if starts[j] + shift < chunk < starts[j] + shift + len(line) + 1)
    lines.insert(j, bad)
    damaged = tmp_path / "damaged.nmon"
    damaged.write_bytes(b"\n".join(lines)[:-40])
    assert damaged.stat().st_size > 3 * native_parser.CHUNK
    good = tmp_path / "good.nmon"
    good.write_bytes(_grown(tmp_path, 1))
    files = [str(damaged), str(good)]

    written = []  # the scanner's own writes: ("lines", b"", snapshots, ...) events
    event = native_parser.NativeNmonParser._event

    def spy(self: native_parser.NativeNmonParser, e: tuple) -> object:
        if e[0] == "lines" and e[1] == b"" and e[2]:
            written.append(e[2])
        return event(self, e)

    monkeypatch.setattr(native_parser.NativeNmonParser, "_event", spy)
    with open(tmp_path / "out.jsonl", "w") as out:
        monkeypatch.setattr(sys, "stdout", out)
        assert main(["parse", "nmon", *files]) == 3  # dead letters
        monkeypatch.undo()
    direct = (tmp_path / "out.jsonl").read_text()
    assert len(written) >= 3  # the clean chunks went straight to the fd
    assert main(["parse", "nmon", *files]) == 3
    buffered = capsys.readouterr().out
    monkeypatch.setenv("FLEETPERF_NMON_PARSER", "python")
    assert main(["parse", "nmon", *files]) == 3
    python = capsys.readouterr().out

    def comparable(text: str) -> list[str]:  # dead letters carry the time they were made
        return [line.split(', "detected_at"')[0] for line in text.splitlines()]

    topics = [json.loads(line)["topic"].split(".")[1] for line in direct.splitlines()]
    assert topics.count("dead-letters") > 10 and topics.count("host-configs") == 2
    assert topics.index("dead-letters") < len(topics) // 4  # among the snapshots, not after them
    assert comparable(direct) == comparable(buffered) == comparable(python)


def through_a_non_blocking_pipe(argv: list[str], env: dict[str, str]) -> tuple[int, bytes]:
    """(exit status, stdout) of a command whose stdout is a pipe with O_NONBLOCK set (as some
    parents leave it), read only once it had time to fill."""
    import fcntl
    import os
    import subprocess
    import time

    r, w = os.pipe()
    fcntl.fcntl(w, fcntl.F_SETFL, fcntl.fcntl(w, fcntl.F_GETFL) | os.O_NONBLOCK)
    child = subprocess.Popen(argv, stdout=w, stderr=subprocess.DEVNULL, env=env)
    os.close(w)
    time.sleep(0.5)  # the pipe fills while nobody reads
    got = bytearray()
    with os.fdopen(r, "rb") as reader:
        while chunk := reader.read1(1 << 16):
            got += chunk
    return child.wait(timeout=60), bytes(got)


def test_parse_into_a_non_blocking_pipe_loses_no_line(tmp_path: Path) -> None:
    """A stdout its parent left non-blocking (O_NONBLOCK on the pipe): once the pipe is full a
    write was partial, and parse went on without the rest (the whole output but 65 KB of 52 MB,
    exit status 0). Every line must arrive, as through a file."""
    import os
    import subprocess
    import sys

    path = tmp_path / "grown.nmon"
    path.write_bytes(_grown(tmp_path, 4))
    env = os.environ | {"PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")}
    argv = [sys.executable, "-m", "fleetperf.cli.main", "parse", "nmon", str(path)]
    with open(tmp_path / "out.jsonl", "wb") as out:
        assert subprocess.run(argv, stdout=out, stderr=subprocess.DEVNULL, env=env, check=False).returncode == 0
    want = (tmp_path / "out.jsonl").read_bytes()
    assert len(want) > 1 << 20  # far more than a pipe holds
    assert through_a_non_blocking_pipe(argv, env) == (0, want)
