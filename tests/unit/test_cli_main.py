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
