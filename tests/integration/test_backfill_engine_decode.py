"""Issue 24 goal 1 on the real stack: nmon files ingested through Kafka and loaded by the sink with
the engine decoding the snapshots (sql/017) give every value the collector counted, and exactly
the rows the Python path (engine_decode=False, the sink before sql/017) gives from the same
messages. Oracles: the collector's own value count (ingest summary) and the other decoder."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from fleetperf import config
from fleetperf.config import Settings
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.warehouse.clickhouse import migrate
from fleetperf.warehouse.sink import Sink

pytestmark = pytest.mark.integration

ROWS = {
    "nmon_values_v": "count(), sum(toDecimal128(ifNull(value, 0), 6)), "
    "sum(cityHash64(host_id, ts, section, entity, metric, toString(value)))",
    "nmon_labels FINAL": "count(), sum(cityHash64(host_id, ts, section, entity, label, text))",
}


def _load(stack: Settings, embedded_path: Path, database: str, engine: bool) -> tuple[Any, Sink]:  # noqa: ANN401
    env = {
        **os.environ,
        "FLEETPERF__STATE__DIR": str(embedded_path),
        "FLEETPERF__CLICKHOUSE__DATABASE": database,
        "FLEETPERF__WAREHOUSE__GROUP_ID": f"backfill-{database}",
    }
    local = config.load(env)
    ch, _ = migrate(local)
    sink = Sink(local, ch, engine_decode=engine)
    thread = threading.Thread(target=sink.run, daemon=True)
    thread.start()
    idle_rounds, last = 0, -1
    for _ in range(200):  # until caught up and nothing more arrives (at most ~5 min)
        if idle_rounds >= 4:
            break
        threading.Event().wait(1.5)
        written = sum(sink.rows_written.values())
        idle_rounds = idle_rounds + 1 if written == last and sink.caught_up else 0
        last = written
    sink.stop()
    thread.join(timeout=60)
    assert idle_rounds >= 4, f"the sink did not catch up: {sink.stats()}"
    return ch, sink


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A stack of this module's own: this test publishes the whole nmon corpus again (force), which
    in the session's stack made later tests see its hosts, its windows and a busy Flink job
    (test_nmon_ingest found the corpus file already in the ledger, test_pipeline extra windows)."""
    from tests.providers import services

    with services(tmp_path_factory.mktemp("backfill-stack")) as settings:
        yield settings


def test_engine_decoded_snapshots_hold_every_value_and_the_rows_of_the_python_path(
    stack: Settings, embedded_path: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    files = simulate(
        tmp_path, hosts=4, start=datetime(2026, 8, 1, 12, 0), duration=timedelta(minutes=30), interval=10, seed=24
    )
    from tests.conftest import CORPUS

    real = sorted((CORPUS / "nmon").glob("*.nmon")) if (CORPUS / "nmon").is_dir() else []
    simulated = ingest(stack, [str(f) for f in files], UTC, force=True, progress=False)
    corpus = ingest(stack, [str(f) for f in real], UTC, force=True, progress=False)
    # the AIX corpus file's JFSFILE and JFSINODE lines carry values past their headers: a dead
    # letter for each header's first (tests/unit/test_nmon_parser.py), the named values published
    past = 2 if any(f.name.startswith("aix71_aixlpar") for f in real) else 0
    assert simulated.errors == 0 and corpus.errors == past and simulated.values > 0

    engine_ch, engine_sink = _load(stack, embedded_path, "backfill_engine", engine=True)
    python_ch, python_sink = _load(stack, embedded_path, "backfill_python", engine=False)
    assert engine_sink.undecodable == python_sink.undecodable == 0
    assert engine_sink.rows_written["nmon_snapshots_in"] > 0 and "nmon_values" not in engine_sink.rows_written

    engine = {v: engine_ch.query(f"SELECT {e} FROM {v}").result_rows for v, e in ROWS.items()}
    python = {v: python_ch.query(f"SELECT {e} FROM {v}").result_rows for v, e in ROWS.items()}
    assert engine == python
    # every value the collector published is a row: the simulated files have no key twice; real
    # files can (counted in the corpus: 1,363 NETPACKET values of linux_fc21_nmon15h_nmon2influxdb
    # repeat a (host, ts, section, entity, metric) of their snapshot), which the table keeps once
    # counted over the hosts of these files only: the topics also hold what earlier tests of the
    # session published (the bound failed when test_dashboards ran first)
    hosts = sorted({_host(f) for f in [*files, *real]} - {None})
    where = "WHERE host_id IN {hosts:Array(String)}"
    final = engine_ch.query(f"SELECT count() FROM nmon_values_v {where}", parameters={"hosts": hosts}).result_rows[0][0]
    assert simulated.values <= final <= simulated.values + corpus.values
    raw = engine_ch.query(f"SELECT count() FROM nmon_values_raw {where}", parameters={"hosts": hosts}).result_rows[0][0]
    assert raw >= final
    if not real:
        print(f"{request.node.name}: corpus absent, simulated files only")


def _host(path: Path) -> str | None:
    """The host id the collector gives a file's records (its first record's)."""
    from fleetperf.sources.nmon.parser import parse_file

    return next((e.record["host_id"] for e in parse_file(path, UTC) if "host_id" in e.record), None)
