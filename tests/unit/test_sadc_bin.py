"""The standalone `fleetperf-sadc` binary (sources/sysstat/native/src/bin) against the Python command it stands in
for: `./fleetperf parse sadc FILE` runs it, and it either prints exactly what `python -m fleetperf.cli.main parse
sadc FILE` prints (stdout bytes, the summary on stderr, exit status 0) or, for anything it does not vouch for
(damage, old formats, options, globs, directories ...), hands over to that Python command: before any output by
exec, after some lines by running it and passing on its output past those lines (which it checks are the same).

The oracle is the Python command (its reader, its records, its json.dumps), never the binary's own tables; the
binary's layouts are a copy generated from layouts.py, checked here to be that copy. Run without
FLEETPERF_SADC_FALLBACK the binary exits 2 where it would hand over (after the lines it wrote up to there), so
each case shows which side read what.
Skipped, saying why, when the binary is not built (./fleetperf builds it when cargo is there)."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from fleetperf import config
from fleetperf.sources.sysstat.records import Lines, Options, records_of_bytes
from tests.unit.test_sysstat_fuzz import SADC, SEED, _mutations
from tests.unit.test_sysstat_own import OWN

ROOT = Path(__file__).resolve().parents[2]
NATIVE = ROOT / "src" / "fleetperf" / "sources" / "sysstat" / "native"
BIN = NATIVE / "target" / "release" / "fleetperf-sadc"
HANDED_OVER = 2  # the binary's exit status without a Python command to hand a file to

_to_json = json.JSONEncoder(allow_nan=False).encode


@pytest.fixture(scope="module")
def binary() -> Path:
    if not BIN.exists():
        pytest.skip(f"{BIN} is not built (./fleetperf builds it when cargo is there)")
    sources = [NATIVE / "Cargo.toml", *NATIVE.glob("src/**/*.rs")]
    stale = [p.name for p in sources if p.stat().st_mtime > BIN.stat().st_mtime]
    assert not stale, f"{BIN.name} is older than {stale}: run ./fleetperf (it rebuilds it) before these tests"
    return BIN


def _env(fallback: bool) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLEETPERF")}
    env |= {"FLEETPERF_SADC_ROOT": str(ROOT), "PYTHONPATH": str(ROOT / "src"), "LC_ALL": "C"}
    if fallback:
        env["FLEETPERF_SADC_FALLBACK"] = sys.executable
    return env


def _bin(binary: Path, *args: str, fallback: bool = False) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([str(binary), *args], env=_env(fallback), capture_output=True, timeout=120)


def _python(*args: str) -> subprocess.CompletedProcess[bytes]:
    cmd = [sys.executable, "-m", "fleetperf.cli.main", "parse", "sadc", *args]
    return subprocess.run(cmd, env=_env(False), capture_output=True, timeout=300)


def _expected(data: bytes, path: str) -> tuple[str, bool]:
    """What `parse sadc` prints on stdout for these bytes (cli/commands/parse.py's loop, in process), and
    whether it holds a dead letter."""
    names = {k: t.name for k, t in config.load({}).topics.items()}
    out, dead = [], False
    for e in records_of_bytes(data, path, Options(), names):
        if isinstance(e, Lines):
            out.append(e.text.decode("ascii"))
            continue
        dead |= e.topic_key == "dead_letters"
        out.append(_to_json({"topic": names[e.topic_key], "key": e.key, "value": e.record}) + "\n")
    return "".join(out), dead


def _no_clock(text: bytes) -> bytes:
    """A dead letter's detected_at (the wall clock) zeroed: the one field two runs never share."""
    lines = []
    for line in text.decode("ascii").splitlines(keepends=True):
        if '"detected_at"' in line:
            message = json.loads(line)
            message["value"]["detected_at"] = 0
            line = _to_json(message) + "\n"
        lines.append(line)
    return "".join(lines).encode("ascii")


def test_layout_tables_are_layouts_py() -> None:
    """src/layouts_2175.rs is what gen_layouts.py writes from today's layouts.py and rates.COMPUTE."""
    sys.path.insert(0, str(NATIVE))
    try:
        import gen_layouts
    finally:
        sys.path.remove(str(NATIVE))
    assert gen_layouts.TARGET.read_text() == gen_layouts.render(), "run native/gen_layouts.py"
    assert "((11, 0x8c), Grouped" in gen_layouts.render()  # A_DISK's 0x8c layout is in the copy


def test_own_recording_same_bytes_as_the_python_command(binary: Path) -> None:
    ours = _bin(binary, str(OWN))
    theirs = _python(str(OWN))
    assert ours.returncode == theirs.returncode == 0, ours.stderr
    assert ours.stdout == theirs.stdout
    assert ours.stderr == theirs.stderr == b"1 files: 3 cpu_samples, 1 host_configs, 249 sysstat_samples; 0 errors,"\
        b" 0 files unreadable\n"  # fmt: skip
    assert len(ours.stdout.splitlines()) == 253


def test_several_files_and_progress_option(binary: Path, tmp_path: Path) -> None:
    copy = tmp_path / "sa01"
    copy.write_bytes(OWN.read_bytes())
    args = ("--no-progress", str(OWN), str(copy))
    ours, theirs = _bin(binary, *args), _python(*args)
    assert (ours.returncode, ours.stdout, ours.stderr) == (theirs.returncode, theirs.stdout, theirs.stderr)
    assert b"2 files: 6 cpu_samples, 2 host_configs, 498 sysstat_samples" in ours.stderr


def test_a_non_blocking_stdout_gets_every_line(binary: Path) -> None:
    """A stdout its parent left non-blocking: once the pipe was full the binary's write failed
    with EAGAIN ("cannot write: Resource temporarily unavailable", exit 1, the rest lost)."""
    from tests.unit.test_cli_parse import through_a_non_blocking_pipe

    args = [str(OWN)] * 4  # 418 KB of lines, far more than a pipe holds
    want = _bin(binary, *args)
    assert want.returncode == 0 and len(want.stdout) > 4 << 16
    assert through_a_non_blocking_pipe([str(binary), *args], _env(False)) == (0, want.stdout)


def test_fresh_recordings_read_by_the_binary(binary: Path, tmp_path: Path) -> None:
    if not SADC.exists():
        pytest.skip(f"sysstat is not installed ({SADC}): apt-get install sysstat to run this test")
    for name, args in (("xall", ["-S", "XALL"]), ("default", [])):
        path = tmp_path / name
        subprocess.run([str(SADC), *args, "1", "4", str(path)], check=True, timeout=60)
        ours, theirs = _bin(binary, str(path)), _python(str(path))
        assert ours.returncode == 0, (name, ours.stderr)  # read here, not handed over
        assert (ours.stdout, ours.stderr) == (theirs.stdout, theirs.stderr), name


def test_what_it_does_not_read_goes_to_python_with_the_same_result(binary: Path, tmp_path: Path) -> None:
    """Options, a missing file, a directory, a file cut short, not a sysstat file: handed over (exit 2 alone);
    through the hand-over the Python command's own output, messages and documented exit status."""
    cut = tmp_path / "cut"
    cut.write_bytes(OWN.read_bytes()[:12000])  # the header, two whole records, a cut one
    other = tmp_path / "notes.txt"
    other.write_text("not sysstat\n")
    cases = [
        (str(OWN), "--hz", "250"),
        (str(OWN), "--sar-version", "12.7.8"),
        (str(tmp_path / "missing"),),
        (str(tmp_path),),
        (str(cut),),
        (str(other),),
        (str(tmp_path / "*"),),
    ]
    statuses = set()
    for args in cases:
        alone = _bin(binary, *args)
        ours, theirs = _bin(binary, *args, fallback=True), _python(*args)
        assert alone.returncode == HANDED_OVER and theirs.stdout.startswith(alone.stdout), args
        assert ours.returncode == theirs.returncode, args
        assert _no_clock(ours.stdout) == _no_clock(theirs.stdout), args
        assert ours.stderr == theirs.stderr, args
        statuses.add(theirs.returncode)
    assert statuses >= {0, 1, 3}  # read, not found, dead letters (cli/common.py's documented statuses)
    assert b"truncated record" in _python(str(cut)).stderr
    # the lines of the interval before the cut went out, then the hand-over (Python adds the dead letter)
    assert 1 < _bin(binary, str(cut)).stdout.count(b"\n") == _python(str(cut)).stdout.count(b"\n") - 1


def test_fuzzed_files_never_read_differently(binary: Path, tmp_path: Path) -> None:
    """test_sysstat_fuzz's seeded mutants of the own recording: where the binary reads a file itself, its output
    is the Python path's and that has no dead letter; where it hands over, what it wrote first is the start of
    the Python path's output; and through the hand-over (every 8th such mutant, each a Python start) the whole
    result is the Python command's: stdout, stderr, exit status."""
    rng = random.Random(SEED)
    data = OWN.read_bytes()
    path = tmp_path / "sa-mutant"
    read_here = handed = through = 0
    for what, mutate in _mutations(data, rng):
        damaged = mutate(bytearray(data))
        path.write_bytes(damaged)
        ours = _bin(binary, str(path))
        expected, dead = _expected(damaged, str(path))
        if ours.returncode == HANDED_OVER:
            assert expected.encode("ascii").startswith(ours.stdout), f"seed {SEED}: {what}"
            handed += 1
            if handed % 8 == 1:
                whole, theirs = _bin(binary, str(path), fallback=True), _python(str(path))
                assert (whole.returncode, _no_clock(whole.stdout), whole.stderr) == (
                    theirs.returncode, _no_clock(theirs.stdout), theirs.stderr,
                ), f"seed {SEED}: {what}"  # fmt: skip
                through += 1
            continue
        assert ours.returncode == 0, f"seed {SEED}: {what}: {ours.stderr!r}"
        assert not dead, f"seed {SEED}: {what}: read by the binary, a dead letter in Python"
        assert ours.stdout.decode("ascii") == expected, f"seed {SEED}: {what}"
        read_here += 1
    assert handed > 100 and read_here > 10 and through > 10, (handed, read_here, through)  # both sides exercised


def test_corpus_files(binary: Path, corpus: Path) -> None:
    """Upstream's files (all formats, both byte orders and long sizes, damaged ones): the binary reads the clean
    0x2175 ones byte for byte as Python does, hands the rest over, and through the hand-over the result is
    Python's."""
    files = sorted((corpus / "sysstat" / "binary").iterdir())
    assert files
    read_here = 0
    for path in files:
        ours = _bin(binary, str(path))
        if ours.returncode == 0:
            expected, dead = _expected(path.read_bytes(), str(path))
            assert not dead and ours.stdout.decode("ascii") == expected, path.name
            read_here += 1
            continue
        assert ours.returncode == HANDED_OVER, path.name
        handed, theirs = _bin(binary, str(path), fallback=True), _python(str(path))
        assert (handed.returncode, _no_clock(handed.stdout), handed.stderr) == (
            theirs.returncode, _no_clock(theirs.stdout), theirs.stderr,
        ), path.name  # fmt: skip
    assert read_here >= 1
