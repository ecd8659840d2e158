"""The CLI imports only the command it runs (start-up of `parse`, issue 20)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

from fleetperf.cli import main


def test_the_table_of_subcommands_is_what_each_module_registers() -> None:
    for name, subcommands in main.MODULES.items():
        parser = argparse.ArgumentParser()
        sub = parser.add_subparsers()
        main._module(name).register(sub)
        assert tuple(sub.choices) == subcommands, name


def test_help_still_lists_every_command() -> None:
    text = main.build_parser([]).format_help()
    for subcommands in main.MODULES.values():
        for command in subcommands:
            assert command in text


def test_parse_imports_neither_other_commands_nor_kafka_nor_tqdm() -> None:
    code = (
        "import sys, json; from fleetperf.cli import main; main.build_parser(['parse', 'sadc', 'f'])"
        ".parse_args(['parse', 'sadc', 'f']); print(json.dumps(sorted(sys.modules)))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}  # a fresh interpreter: nothing imported yet
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    loaded = set(json.loads(done.stdout))
    assert "fleetperf.cli.commands.parse" in loaded
    others = {f"fleetperf.cli.commands.{m}" for m in main.MODULES if m != "parse"}
    assert not loaded & others
    assert not loaded & {"confluent_kafka", "tqdm", "clickhouse_connect", "fastavro", "urllib.request"}


def test_parse_nmon_imports_no_other_sources_reader_nor_the_ledger() -> None:
    # each source's reader is imported when a file of it is read (sources/*/source.py), so that
    # `parse nmon FILE` starts in ~0.13 CPU-s instead of ~0.2-0.3 (README, Speed)
    nmon = main.config.REPO_ROOT / "src" / "fleetperf" / "sources" / "nmon" / "testdata" / "linuxvm_nmon16.nmon"
    code = (
        "import sys, json, contextlib, io; from fleetperf.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    status = main.main(['parse', 'nmon', {str(nmon)!r}])\n"
        "print(json.dumps([status, sorted(sys.modules)]))"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env)
    status, loaded = json.loads(done.stdout.splitlines()[-1])
    assert status == 0, done.stderr
    assert "fleetperf.sources.nmon.source" in loaded
    readers = {
        "fleetperf.sources.zvm.monitor",
        "fleetperf.sources.zvm.monitor_layouts",
        "fleetperf.sources.zvm.monitor_records",
        "fleetperf.sources.perfkit.parser",
        "fleetperf.sources.perfkit.records",
        "fleetperf.sources.aix.collect",
        "fleetperf.sources.aix.hpmstat",
        "fleetperf.sources.sysstat.records",
        "fleetperf.ingest.aggregations",
        "fleetperf.ingest.identity",
        "fleetperf.ingest.ledger",
    }
    assert not set(loaded) & readers, set(loaded) & readers


def test_the_launcher_leaves_current_bytecode_whatever_pythondontwritebytecode_says() -> None:
    """`./fleetperf` compiles the package once per edit: with PYTHONDONTWRITEBYTECODE set (as on these
    machines) Python compiled every module again at each start, 50 of a `parse`'s 130 ms (issue 24)."""
    import importlib.util
    from pathlib import Path

    root = Path(main.__file__).resolve().parents[3]
    stamp = root / ".venv" / ".fleetperf-bytecode"
    one = root / "src" / "fleetperf" / "sources" / "nmon" / "sniff.py"
    compiled = Path(importlib.util.cache_from_source(str(one)))
    compiled.unlink(missing_ok=True)
    if stamp.exists():
        os.utime(stamp, (0, 0))  # as if every source had been edited since
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    subprocess.run([str(root / "fleetperf"), "--help"], capture_output=True, check=True, env=env)
    assert stamp.exists() and stamp.stat().st_mtime > 0
    sources = sorted((root / "src" / "fleetperf").rglob("*.py"))
    sources = [p for p in sources if "target" not in p.relative_to(root).parts]
    assert one in sources and len(sources) > 50
    for source in sources:
        pyc = Path(importlib.util.cache_from_source(str(source)))
        assert pyc.exists(), f"no bytecode for {source}"
        # a timestamp .pyc (PEP 552): flags 0, then the source's mtime and size it was compiled from
        header = pyc.read_bytes()[:16]
        assert header[:4] == importlib.util.MAGIC_NUMBER, pyc
        st = source.stat()
        assert int.from_bytes(header[4:8], "little") == 0, pyc
        assert int.from_bytes(header[8:12], "little") == int(st.st_mtime) & 0xFFFFFFFF, f"stale bytecode: {pyc}"
        assert int.from_bytes(header[12:16], "little") == st.st_size & 0xFFFFFFFF, f"stale bytecode: {pyc}"
