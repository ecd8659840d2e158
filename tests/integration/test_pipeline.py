"""End to end on real services: nmon file -> collector -> Kafka -> Flink -> Kafka -> sink -> ClickHouse,
read back with SQL and through Superset, compared with an independent computation."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import requests

from fleetperf.cli.sql_client import query, scalar, wait_stable
from fleetperf.config import Settings
from fleetperf.dashboards.spec import CHARTS, DASHBOARDS
from fleetperf.demo.simulate import simulate
from fleetperf.ingest.publish import ingest
from fleetperf.warehouse.credentials import superset_admin_password
from tests.integration.expected import snapshots, window_metrics

pytestmark = pytest.mark.integration


def _files_for(settings: Settings, paths: list[Path]) -> str:
    names = ",".join(f"'{p}'" for p in paths)
    return f"origin_file IN ({names})"


def _derived(settings: Settings, hosts: set[str]) -> dict[tuple[str, str, int], tuple[float, int]]:
    in_hosts = ",".join(f"'{h}'" for h in hosts)
    _, rows = query(
        settings,
        "SELECT entity_id, metric, toUnixTimestamp(window_start), value, samples "
        f"FROM derived_metrics_v WHERE entity_id IN ({in_hosts})",
    )
    return {(r[0], r[1], int(r[2])): (float(r[3]), int(r[4])) for r in rows}


def _fleet_windows_sql(hosts: set[str], days: set[int]) -> str:
    in_hosts = ",".join(f"'{h}'" for h in hosts)
    in_days = ",".join(str(d) for d in days)
    return (
        f"SELECT count() FROM derived_metrics_v WHERE entity_id IN ({in_hosts}) "
        f"AND intDiv(toUnixTimestamp(window_start), 86400) IN ({in_days})"
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory, corpus: Path) -> list[Path]:
    out = tmp_path_factory.mktemp("fleet")
    files = simulate(
        out, hosts=3, start=datetime(2026, 3, 2, 9, 0), duration=timedelta(minutes=12), interval=10, seed=42
    )
    # one real third-party file too: CentOS 7 KVM guest, nmon 16g, Steal% column
    real = out / "linux_centos7_kvm_nmon16g_small.nmon"
    shutil.copy(corpus / "nmon" / real.name, real)
    return [*files, real]


@pytest.fixture(scope="module")
def ingested(stack: Settings, fleet: list[Path]) -> Settings:
    summary = ingest(stack, [str(p) for p in fleet], UTC, progress=False)
    assert summary.errors == 0, summary.error_lines
    expected_rows = sum(len(snapshots(p)[2]) for p in fleet)
    assert summary.snapshots == expected_rows
    where = _files_for(stack, fleet)
    assert (
        wait_stable(stack, f"SELECT count() FROM cpu_samples_v WHERE {where}", timeout=120, minimum=expected_rows)
        == expected_rows
    )
    return stack


def test_window_metrics_equal_independent_computation(ingested: Settings, fleet: list[Path]) -> None:
    expected: dict[tuple[str, str, int], tuple[float, int]] = {}
    for path in fleet:
        expected.update(window_metrics(path))
    hosts = {key[0] for key in expected}
    # other tests reuse simulated host names on other days: count and compare this fleet's days only
    days = {start // 86400 for _, _, start in expected}
    wait_stable(ingested, _fleet_windows_sql(hosts, days), timeout=120, minimum=len(expected))
    actual = {k: v for k, v in _derived(ingested, hosts).items() if k[2] // 86400 in days}
    assert set(actual) == set(expected)
    for key, (value, samples) in expected.items():
        assert actual[key][0] == pytest.approx(value, rel=1e-12, abs=1e-12), key
        assert actual[key][1] == samples, key
    metrics = {key[1] for key in expected}
    assert metrics == {
        "steal_pct",
        "physc",
        "entc_pct",
        "vps_needed",
        "pool_used",
        "pool_used_pct",
        "busy_pct",
        "cpu_cores",
    }


def test_reingesting_a_file_adds_no_rows(ingested: Settings, fleet: list[Path]) -> None:
    where = _files_for(ingested, fleet)
    before_samples = scalar(ingested, f"SELECT count() FROM cpu_samples_v WHERE {where}")
    expected = {}
    for path in fleet:
        expected.update(window_metrics(path))
    derived_sql = _fleet_windows_sql({k[0] for k in expected}, {k[2] // 86400 for k in expected})
    before_derived = wait_stable(ingested, derived_sql, timeout=120, minimum=len(expected))
    again = ingest(ingested, [str(fleet[0])], UTC, progress=False)
    assert again.skipped == 1 and again.records == 0
    forced = ingest(ingested, [str(fleet[0])], UTC, force=True, progress=False)
    assert forced.snapshots == len(snapshots(fleet[0])[2])
    # the forced copies reach the raw table and are deduplicated there
    wait_stable(
        ingested, f"SELECT count() FROM cpu_samples WHERE {where}", timeout=60, minimum=before_samples + forced.records
    )
    assert scalar(ingested, f"SELECT count() FROM cpu_samples_v WHERE {where}") == before_samples
    assert scalar(ingested, derived_sql) == before_derived


def test_malformed_line_is_reported_and_the_rest_arrives(stack: Settings, tmp_path: Path) -> None:
    [good] = simulate(
        tmp_path / "src", hosts=1, start=datetime(2026, 3, 5, 14, 0), duration=timedelta(minutes=3), interval=10, seed=9
    )
    lines = good.read_text().splitlines()
    zzzz = [i for i, line in enumerate(lines) if line.startswith("ZZZZ,T0009")][0]
    bad_line_no = zzzz + 1  # 1-based number of the inserted line
    lines.insert(zzzz, "\x00\x07\x1bgarbage\x00from a broken disk")
    broken = tmp_path / "broken_host.nmon"
    broken.write_text("\n".join(lines) + "\n")

    summary = ingest(stack, [str(broken)], UTC, progress=False)
    assert summary.errors == 1
    assert summary.error_lines[0].startswith(f"{broken}:{bad_line_no} (byte ")
    assert summary.snapshots == 18  # every snapshot of the file still arrives
    n = wait_stable(stack, f"SELECT count() FROM cpu_samples_v WHERE origin_file = '{broken}'", timeout=60, minimum=18)
    assert n == 18
    wait_stable(stack, f"SELECT count() FROM dead_letters WHERE origin_file = '{broken}'", timeout=60)
    _, rows = query(stack, f"SELECT line, byte_offset, error FROM dead_letters WHERE origin_file = '{broken}'")
    assert len(rows) == 1
    line, offset, error = rows[0]
    assert line == bad_line_no
    assert offset == len("\n".join(lines[:zzzz]).encode()) + 1
    assert "not an nmon line" in error


def test_superset_dashboard_chart_reads_the_warehouse(ingested: Settings) -> None:
    base = ingested.superset_url
    session = requests.Session()
    token = session.post(
        f"{base}/api/v1/security/login",
        json={
            "username": ingested["superset"]["admin_user"],
            "password": superset_admin_password(ingested),
            "provider": "db",
        },
        timeout=30,
    ).json()["access_token"]
    session.headers["Authorization"] = f"Bearer {token}"
    dashboards = session.get(f"{base}/api/v1/dashboard/", timeout=30).json()["result"]
    assert {d["dashboard_title"] for d in dashboards} == {b.title for b in DASHBOARDS}
    charts = session.get(f"{base}/api/v1/dashboard/host-drilldown/charts", timeout=30).json()["result"]
    steal_chart = next(c for c in charts if c["slice_name"] == CHARTS["host_minutes"].title)
    form = steal_chart["form_data"]
    dataset_id = int(str(form["datasource"]).split("__")[0])
    payload = {
        "datasource": {"id": dataset_id, "type": "table"},
        "queries": [
            {
                "columns": form["groupby"],
                "metrics": form["metrics"],
                "extras": {"where": "has_steal"},
                "row_limit": 1000,
            }
        ],
        "result_format": "json",
        "result_type": "full",
    }
    response = session.post(f"{base}/api/v1/chart/data", json=payload, timeout=60)
    assert response.status_code == 200, response.text
    data = response.json()["result"][0]["data"]
    by_host = {row["hostname"]: row["steal %"] for row in data}
    expected = scalar(ingested, "SELECT max(steal_pct) FROM host_cpu_minute WHERE hostname = 'linux000' AND has_steal")
    assert by_host["linux000"] == pytest.approx(expected)
