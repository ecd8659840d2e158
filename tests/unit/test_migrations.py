"""The migrations on the real embedded engine (chDB): they apply, and applying twice changes nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fleetperf import config
from fleetperf.ingest.records import Emitted
from fleetperf.warehouse.clickhouse import migrate
from tests.conftest import embedded_settings, table_columns


def test_migrations_apply_twice_without_change(embedded_path: Path) -> None:
    settings = embedded_settings(embedded_path, "migrations_test")
    ch, ran = migrate(settings)
    assert ran == sorted(p.stem for p in config.SQL_DIR.glob("[0-9][0-9][0-9]_*.sql"))
    tables = ch.query(
        "SELECT name, create_table_query FROM system.tables WHERE database = 'migrations_test'"
    ).result_rows
    ch2, again = migrate(settings)
    assert again == []
    assert (
        ch2.query("SELECT name, create_table_query FROM system.tables WHERE database = 'migrations_test'").result_rows
        == tables
    )
    for view in (
        "cpu_samples_v",
        "derived_metrics_v",
        "host_cpu_minute",
        "nmon_values_v",
        "host_inventory",
        "hpm_rates",
        "link_aggregation_members",
        "lpar_cpus_v",
        "incidents",
        "sysstat_samples_v",
        "sysstat_cpu_v",
        "cpu_steal_per_cpu_minute",
    ):
        ch.query(f"SELECT * FROM {view} LIMIT 1")


def test_retention_does_not_delete_a_backfill_of_old_data(embedded_path: Path) -> None:
    from datetime import UTC, datetime

    ch, _ = migrate(embedded_settings(embedded_path, "retention_test"))
    old = datetime(2016, 2, 10, 17, 28, 10, tzinfo=UTC)
    ch.insert(
        "nmon_values",
        [["h", old, "CPU", "ALL", "User%", 33.1]],
        column_names=["host_id", "ts", "section", "entity", "metric", "value"],
    )
    ch.insert(
        "derived_metrics",
        [["h", "h", "steal_pct", old, old, 1.0, 1, True, datetime.now(UTC)]],
        column_names=table_columns("derived_metrics"),
    )
    for table in ("nmon_values", "derived_metrics"):
        ch.command(f"OPTIMIZE TABLE {table} FINAL")  # merges apply TTLs
    assert ch.query("SELECT count() FROM nmon_values").result_rows == [(1,)]
    assert ch.query("SELECT count() FROM derived_metrics").result_rows == [(1,)]


def test_toolkit_records_land_in_their_tables(embedded_path: Path) -> None:
    from datetime import date, time

    from fleetperf.sources.perfkit.parser import scan_file
    from fleetperf.sources.perfkit.records import Options, records_of_scan
    from tests.unit.test_perfkit import DATA

    # one record per report row (window_s=None): this test checks the rows, not their cut at window edges
    options = Options(system="VMLINUX7", day=date(2011, 9, 21), at=time(11, 40, 1), interval_s=60.0, window_s=None)
    names = ("fcx112_user.txt", "fcx225_syssumlog.txt", "fcx126_lpar.txt")
    ch = _loaded(
        embedded_path, "perfkit_test", [e for n in names for e in records_of_scan(scan_file(DATA / n), options)]
    )
    a12 = ch.query(
        "SELECT cpu, cpu_type, busy_pct, vmld_pct FROM lpar_cpus_v WHERE partition = 'A12' ORDER BY cpu"
    ).result_rows
    assert a12 == [(0, "CP", 33.0, 32.4), (1, "CP", 32.7, 32.1), (2, "CP", 36.0, 35.4), (3, "CP", 36.2, 35.6)]
    guest = ch.query("SELECT tcpu_s, vcpu_s, share_absolute FROM zvm_guest_samples WHERE userid = 'PERFSVM'")
    assert guest.result_rows == [(0.004, 0.004, True)]
    assert ch.query("SELECT count(), max(paging_xstore_rate) FROM zvm_system_samples").result_rows == [(14, 317.1)]


def _loaded(embedded_path: Path, database: str, emitted: list) -> Any:
    """A fresh warehouse database holding the rows the sink would insert for these records."""
    from fleetperf.warehouse.rows import RowMapper

    settings = embedded_settings(embedded_path, database)
    ch, _ = migrate(settings)
    mapper = RowMapper(settings)
    rows: dict[str, list] = {}
    for e in emitted:
        for table, row in mapper.rows(settings.topic(e.topic_key).name, e.record):
            rows.setdefault(table, []).append(row)
    for table, batch in rows.items():
        ch.insert(table, batch, column_names=mapper.columns[table])
    return ch


def test_per_cpu_steal_from_nmon_sadc_and_appldata(embedded_path: Path, corpus: Path) -> None:
    from datetime import UTC

    from fleetperf.sources.nmon.parser import parse_file
    from fleetperf.sources.sysstat.records import Options, records_of_file
    from fleetperf.sources.zvm.monitor_records import Options as MonitorOptions
    from fleetperf.sources.zvm.monitor_records import records_of_bytes
    from tests.unit.test_zvm_monitor import appldata_capture

    emitted = list(parse_file(corpus / "nmon" / "linux_centos7_kvm_nmon16g_small.nmon", UTC))
    emitted += list(records_of_file(corpus / "sysstat" / "binary" / "data-12.0.0", Options(host_id="sadchost")))
    emitted += list(records_of_bytes(appldata_capture(), "capture", MonitorOptions(unverified=True))[0])
    ch = _loaded(embedded_path, "steal_test", emitted)
    nmon = ch.query(
        "SELECT DISTINCT cpu FROM cpu_steal_per_cpu_minute WHERE host_id = 'VM-12-13-centos' ORDER BY cpu"
    ).result_rows
    assert nmon == [("0",), ("1",)]  # CPU001/CPU002 of a 2-CPU guest
    sadc = ch.query(
        "SELECT count(DISTINCT cpu), max(steal_pct), any(source) FROM cpu_steal_per_cpu_minute"
        " WHERE host_id = 'sadchost'"
    ).result_rows
    assert sadc == [(8, 0.0, "sadc")]
    appl = ch.query(
        "SELECT cpu, round(steal_pct, 6), source FROM cpu_steal_per_cpu_minute WHERE host_id = 'ZVMA/LNXWEB1'"
        " ORDER BY cpu"
    ).result_rows
    assert appl == [("0", 10.0, "appldata"), ("1", 25.0, "appldata")]


def test_per_cpu_steal_from_the_projects_own_nmon_sadc_and_appldata(embedded_path: Path) -> None:
    """The corpus test above on files this project wrote or recorded (runs without the corpus)."""
    from datetime import UTC

    from fleetperf.config import PACKAGE_ROOT
    from fleetperf.sources.nmon.parser import parse_file
    from fleetperf.sources.sysstat.records import Options, records_of_file
    from fleetperf.sources.zvm.monitor_records import Options as MonitorOptions
    from fleetperf.sources.zvm.monitor_records import records_of_bytes
    from tests.unit.test_zvm_monitor import appldata_capture

    sources = PACKAGE_ROOT / "sources"
    nmon_file = sources / "nmon" / "testdata" / "linuxvm_nmon16.nmon"
    emitted = list(parse_file(nmon_file, UTC))
    host = next(e.record["host_id"] for e in emitted if e.topic_key == "cpu_samples")
    emitted += list(records_of_file(sources / "sysstat" / "testdata" / "sa-12.6.1-xall", Options(host_id="ownsadc")))
    emitted += list(records_of_bytes(appldata_capture(), "capture", MonitorOptions(unverified=True))[0])
    ch = _loaded(embedded_path, "steal_own", emitted)
    nmon = ch.query(
        f"SELECT cpu, max(steal_pct) FROM cpu_steal_per_cpu_minute WHERE host_id = '{host}' GROUP BY cpu ORDER BY cpu"
    ).result_rows
    assert nmon == [("0", 1.0), ("1", 2.0)]  # CPU001/CPU002 Steal% as the file writes them (T0001: 1.0, 2.0)
    sadc = ch.query(
        "SELECT count(DISTINCT cpu), any(source) FROM cpu_steal_per_cpu_minute WHERE host_id = 'ownsadc'"
    ).result_rows
    assert sadc == [(2, "sadc")]  # recorded on a 2-CPU machine
    appl = ch.query(
        "SELECT cpu, round(steal_pct, 6), source FROM cpu_steal_per_cpu_minute WHERE host_id = 'ZVMA/LNXWEB1'"
        " ORDER BY cpu"
    ).result_rows
    assert appl == [("0", 10.0, "appldata"), ("1", 25.0, "appldata")]


def test_per_cpu_steal_keeps_each_collector_apart(embedded_path: Path) -> None:
    """A guest seen by a sadc file and by APPLDATA in the same minute: one row per collector with its
    own figure (the view used to average them under one source name)."""
    from datetime import UTC, datetime

    ch, _ = migrate(embedded_settings(embedded_path, "steal_sources"))
    ts = datetime(2026, 3, 1, 8, 0, 30, tzinfo=UTC)
    rows = [
        ["LNX1", "lnx1", ts, 60.0, source, "cpu-load-all", "0", {"steal": steal}, "12.6.1", True, "f", 0]
        for source, steal in (("sadc", 4.0), ("appldata", 10.0))
    ]
    columns = ["host_id", "hostname", "ts", "interval_s", "source", "section", "item", "metrics"]
    ch.insert(
        "sysstat_samples",
        rows,
        column_names=[*columns, "sysstat_version", "steal_trusted", "origin_file", "origin_offset"],
    )
    got = ch.query(
        "SELECT cpu, source, steal_pct, samples FROM cpu_steal_per_cpu_minute WHERE host_id = 'LNX1' ORDER BY source"
    ).result_rows
    assert got == [("0", "appldata", 10.0, 1), ("0", "sadc", 4.0, 1)]


def test_frame_pool_size_comes_from_the_typed_cpu_samples(embedded_path: Path, tmp_path: Path) -> None:
    from datetime import UTC, datetime, timedelta

    from fleetperf.demo.simulate import simulate
    from fleetperf.sources.nmon.parser import parse_file

    start = datetime.now().replace(second=0, microsecond=0) - timedelta(hours=1)
    files = simulate(tmp_path, 4, start, timedelta(minutes=30), 60, 2)
    emitted = [e for f in files for e in parse_file(f, UTC)]
    aix = {e.record["host_id"] for e in emitted if e.topic_key == "cpu_samples" and e.record["pool_cpus"]}
    assert aix  # the simulated fleet has AIX LPARs with a shared pool
    ms = int(start.replace(tzinfo=UTC).timestamp() * 1000)
    derived = [
        Emitted(
            "derived_metrics",
            {
                "entity_id": h,
                "entity_name": h,
                "metric": "physc",
                "window_start": ms,
                "window_end": ms + 60_000,
                "value": 1.0,
                "samples": 1,
                "is_final": True,
                "emitted_at": ms,
            },
        )  # fmt: skip
        for h in aix
    ]
    # without the long-form nmon values: the view must not need them any more
    typed = [e for e in emitted if e.topic_key != "nmon_snapshots"]
    ch = _loaded(embedded_path, "pool_test", typed + derived)
    pools = ch.query("SELECT pool_cpus FROM frame_pool_size").result_rows
    assert pools and {p for (p,) in pools} == {16.0}  # the simulator's LPAR poolCPUs
