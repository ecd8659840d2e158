"""Shared fixtures. Integration tests (marked `integration`) get real services from tests/providers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fleetperf import config

CORPUS = Path(os.environ.get("FLEETPERF_CORPUS", config.REPO_ROOT.parent / "shared" / "corpus")).resolve()


@pytest.fixture(scope="session")
def corpus() -> Path:
    """Third-party files (real nmon, sysstat binaries with upstream's expected outputs): present in CI beside the
    clone, absent from a user's clone, where the tests that need them are skipped and say why."""
    if not CORPUS.is_dir():
        pytest.skip(f"third-party corpus not found at {CORPUS} (set FLEETPERF_CORPUS to run these tests)")
    return CORPUS


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[config.Settings]:
    from tests.providers import services

    with services(tmp_path_factory.mktemp("stack")) as settings:
        yield settings


@pytest.fixture(scope="session")
def embedded_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One chDB data path for all in-process tests: the engine opens one path per process."""
    return tmp_path_factory.mktemp("chdb-state")


def embedded_settings(state: Path, database: str) -> config.Settings:
    return config.load({"FLEETPERF__STATE__DIR": str(state), "FLEETPERF__CLICKHOUSE__DATABASE": database})


@pytest.fixture
def warehouse(embedded_path: Path, request: pytest.FixtureRequest) -> Iterator[tuple[config.Settings, Any]]:
    """A migrated database of its own on the embedded engine, named for the module and test, and
    its client; dropped afterwards (the sink's unit tests)."""
    from fleetperf.warehouse.clickhouse import migrate

    module = request.module.__name__.rsplit(".", 1)[-1].removeprefix("test_")
    test = request.node.name.replace("[", "_").replace("]", "").replace("-", "_")[:40]
    database = f"{module}_{test}"
    settings = embedded_settings(embedded_path, database)
    ch, _ = migrate(settings)
    yield settings, ch
    ch.command(f"DROP DATABASE IF EXISTS {database}")


def table_columns(table: str) -> list[str]:
    """The columns the sink writes to a table (from the Avro schemas, the one definition)."""
    from fleetperf.warehouse.rows import RowMapper

    return RowMapper(config.load({})).columns[table]
