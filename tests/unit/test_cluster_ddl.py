"""The cluster flavour of the migrations (warehouse/cluster_ddl.py): generated from sql/*.sql through a
throw-away embedded engine and parsed by that engine's parser. The table list it must cover is read
from the SQL files with a regex here, not from the generator."""

from __future__ import annotations

import re

import pytest

from fleetperf.config import SQL_DIR
from fleetperf.warehouse import cluster_ddl

pytest.importorskip("chdb")


@pytest.fixture(scope="module")
def ddl() -> list[str]:
    return cluster_ddl.generate(cluster="perf", database="fleetperf")


def _merge_tree_tables() -> set[str]:
    """Every table the migrations create with a MergeTree engine, minus the temporary re-key copies."""
    text = "\n".join(p.read_text() for p in sorted(SQL_DIR.glob("[0-9][0-9][0-9]_*.sql")))
    names = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)\s*\([^;]*?ENGINE = \w*MergeTree", text, re.S))
    return {n for n in names if not n.endswith("_rekey")}


def test_the_engine_parses_every_statement(ddl: list[str]) -> None:
    assert cluster_ddl.check(ddl) == []


def test_the_check_rejects_a_broken_statement() -> None:
    errors = cluster_ddl.check(["CREATE TABLE t ON CLUSTER 'c' (x UInt8 ENGINE = Memory"])
    assert len(errors) == 1


def test_every_table_is_replicated_and_distributed(ddl: list[str]) -> None:
    tables = _merge_tree_tables()
    assert {"cpu_samples", "derived_metrics", "metrics_hourly", "sink_batches"} <= tables
    for name in tables:
        local = [s for s in ddl if s.startswith(f"CREATE TABLE IF NOT EXISTS fleetperf.{name}_local ")]
        dist = [s for s in ddl if s.startswith(f"CREATE TABLE IF NOT EXISTS fleetperf.{name} ")]
        assert len(local) == 1 and len(dist) == 1, name
        assert re.search(r"ENGINE = Replicated\w*MergeTree\('/clickhouse/tables/\{shard\}/fleetperf/", local[0]), name
        assert "non_replicated_deduplication_window" not in local[0]
        assert f"ENGINE = Distributed('perf', 'fleetperf', '{name}_local', " in dist[0]
        # the distributed table is created after its local table
        assert ddl.index(local[0]) < ddl.index(dist[0])


def test_final_schema_not_history(ddl: list[str]) -> None:
    text = "\n".join(ddl)
    assert "_rekey" not in text and "EXCHANGE" not in text and "INSERT" not in text
    cpu = next(s for s in ddl if s.startswith("CREATE TABLE IF NOT EXISTS fleetperf.cpu_samples_local "))
    # 014 re-keyed cpu_samples with the source; 010 added pool columns
    assert "ORDER BY (host_id, ts, source)" in cpu
    assert "`pool_cpus`" in cpu
    dist = next(s for s in ddl if s.startswith("CREATE TABLE IF NOT EXISTS fleetperf.cpu_samples "))
    assert dist.endswith("cityHash64(host_id))")


def test_everything_on_cluster_and_views_after_tables(ddl: list[str]) -> None:
    assert all(" ON CLUSTER 'perf'" in s for s in ddl)
    kinds = ["view" if " VIEW " in s else "table" for s in ddl[1:]]
    assert kinds == sorted(kinds, key=lambda k: k == "view")


def test_materialized_views_use_local_tables(ddl: list[str]) -> None:
    mvs = [s for s in ddl if s.startswith("CREATE MATERIALIZED VIEW")]
    assert len(mvs) >= 2
    for mv in mvs:
        targets = re.findall(r"\b(?:TO|FROM|JOIN) fleetperf\.(\w+)", mv)
        assert targets and all(t.endswith("_local") for t in targets), mv


def test_table_ddl_on_a_hand_written_table() -> None:
    create = (
        "CREATE TABLE db.t (`k` String, `v` Float64, `at` DateTime) ENGINE = ReplacingMergeTree(at) "
        "ORDER BY k SETTINGS non_replicated_deduplication_window = 5"
    )
    local, dist = cluster_ddl.table_ddl(create, "db", "c1")
    assert local == (
        "CREATE TABLE IF NOT EXISTS db.t_local ON CLUSTER 'c1' (`k` String, `v` Float64, `at` DateTime) "
        "ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/db/t_local', '{replica}', at) "
        "ORDER BY k SETTINGS replicated_deduplication_window = 5"
    )
    assert dist == (
        "CREATE TABLE IF NOT EXISTS db.t ON CLUSTER 'c1' AS db.t_local "
        "ENGINE = Distributed('c1', 'db', 't_local', cityHash64(k))"
    )


def test_null_input_tables_are_null_on_every_shard_and_sharded_by_host(ddl: list[str]) -> None:
    """A Null-engine input table (its materialized views do the work) keeps nothing on any shard;
    inserts through its Distributed twin reach the shard that holds the host's rows: the sharding
    key of every table its views write (an early and a final window of one entity meet there)."""
    text = "\n".join(p.read_text() for p in sorted(SQL_DIR.glob("[0-9][0-9][0-9]_*.sql")))
    nulls = set(re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)\s*\([^;]*?\)\s*ENGINE = Null", text, re.S))
    assert {"nmon_snapshots_in", "derived_windows_in"} <= nulls

    def sharding(table: str) -> str:
        [dist] = [s for s in ddl if s.startswith(f"CREATE TABLE IF NOT EXISTS fleetperf.{table} ")]
        found = re.search(rf"Distributed\('perf', 'fleetperf', '{table}_local', (.+)\)$", dist)
        assert found, dist
        return found.group(1)

    for name in nulls:
        assert any(
            s.startswith(f"CREATE TABLE IF NOT EXISTS fleetperf.{name}_local ") and s.endswith("ENGINE = Null")
            for s in ddl
        )
        targets = {
            m.group(1)
            for s in ddl
            if "MATERIALIZED VIEW" in s and re.search(rf"FROM fleetperf\.{name}_local\b", s)
            for m in [re.search(r"\bTO fleetperf\.(\w+)_local\b", s)]
            if m
        }
        assert targets, name
        assert sharding(name) in {"cityHash64(host_id)", "cityHash64(entity_id)"}
        for target in targets:
            assert sharding(target) == sharding(name), (name, target)
        assert not [s for s in ddl if "MATERIALIZED VIEW" in s and re.search(rf"FROM fleetperf\.{name}\b(?!_local)", s)]
