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
