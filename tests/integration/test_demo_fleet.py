"""The demo's fleet end to end (what `./fleetperf demo` runs, over two days instead of fourteen): every
source's files through `ingest` with their options, Kafka, Flink (windows, flags) and ClickHouse. Each
injected fault must open an incident of its rule on its entity, in its time, and the incidents must
cover every platform; no file may give a dead letter. Incidents per platform are written to
<state>/test-artifacts/demo-incidents.txt."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.commands.demo import INCIDENTS_SQL
from fleetperf.cli.sql_client import query, scalar, wait_stable
from fleetperf.config import Settings
from fleetperf.demo.fleet import ingest_fleet, simulate_fleet

pytestmark = pytest.mark.integration

DAYS = 2
SLACK = timedelta(minutes=10)  # an incident may open a window late and close a few windows after its fault


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Settings]:
    """A stack of this module's own: the dashboards test loads a fleet with the same hosts and file
    names over the last days into the session's stack, and the Flink job's per-stream clocks (host
    and file) it leaves ahead made this fleet's samples late there, so the outcome depended on the
    order of the two tests."""
    from tests.providers import services

    with services(tmp_path_factory.mktemp("demo-fleet-stack")) as settings:
        yield settings


def test_demo_fleet_raises_an_incident_per_fault_on_every_platform(stack: Settings, tmp_path: Path) -> None:
    end = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    start = end - timedelta(days=DAYS)
    fleet = simulate_fleet(tmp_path / "fleet", start, DAYS, 300, seed=3)
    summary = ingest_fleet(stack, fleet, progress=False)
    assert (summary.errors, summary.failed) == (0, 0), summary.error_lines[:5]
    assert summary.files == len(fleet.files)

    entities = ", ".join(sorted({f"'{f.entity_id}'" for f in fleet.faults}))
    # windows become final as each stream's clock passes them or the stream ends
    since = f"'{start - SLACK:%Y-%m-%d %H:%M:%S}'"
    wait_stable(stack, f"SELECT count() FROM derived_metrics_v WHERE entity_id IN ({entities}) AND is_final"
                f" AND window_start >= {since}", timeout=600, settle=15, minimum=1000)  # fmt: skip
    wait_stable(stack, f"SELECT count() FROM incidents WHERE entity_id IN ({entities}) AND kind = 'rule'"
                f" AND last_window_end > {since}", timeout=300, settle=15, minimum=len(fleet.faults))  # fmt: skip
    _, rows = query(
        stack,
        "SELECT entity_id, rule, started, last_window_end, peak, explanation FROM incidents"
        f" WHERE entity_id IN ({entities}) AND kind = 'rule'"
        f" AND started < '{end + SLACK:%Y-%m-%d %H:%M:%S}' AND last_window_end > '{start - SLACK:%Y-%m-%d %H:%M:%S}'"
        " ORDER BY started",
    )
    missing = []
    for fault in fleet.faults:
        hits = [
            r for r in rows
            if r[0] == fault.entity_id and r[1] == fault.rule
            and _ts(r[2]) < fault.end + SLACK and _ts(r[3]) > fault.start - SLACK
        ]  # fmt: skip
        if not hits:
            missing.append(f"{fault.platform} {fault.entity_id} {fault.rule} {fault.start:%d %H:%M} +{fault.minutes}")
        assert all(r[5] for r in hits), "every flag explains itself"
    # nothing else: a rule incident of a fault's entity and rule lies in that fault
    stray = [
        r for r in rows
        if not any(r[0] == f.entity_id and r[1] == f.rule and _ts(r[2]) < f.end + SLACK
                   and _ts(r[3]) > f.start - SLACK for f in fleet.faults)
        and any(r[0] == f.entity_id and r[1] == f.rule for f in fleet.faults)
    ]  # fmt: skip

    _, per_platform = query(stack, INCIDENTS_SQL)
    report = stack.state_dir / "test-artifacts" / "demo-incidents.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text("\n".join(" | ".join(str(c) for c in row) for row in [*per_platform, *rows]) + "\n")
    assert not missing, (missing, rows)
    assert not stray, stray
    platforms = {p for p, _, _ in per_platform}
    assert {f.platform for f in fleet.faults} <= platforms, per_platform

    # every source reached its table
    for table, where in (
        ("zvm_guest_samples", "zvm_system = 'ZVMA'"),
        ("zvm_guest_samples", "zvm_system = 'ZVMB'"),
        ("zvm_system_samples", "zvm_system IN ('ZVMA', 'ZVMB')"),
        ("lpar_samples", "1"),
        ("hpm_samples", "1"),
        ("net_port_samples", "aggregation = 'ent8'"),
        ("sysstat_samples", "host_id IN ('webn01', 'webs01')"),
        ("host_configs", "source = 'linux-bonding'"),
    ):
        assert int(scalar(stack, f"SELECT count() FROM {table} WHERE {where}")) > 0, (table, where)
    letters = f"SELECT count() FROM dead_letters WHERE startsWith(origin_file, '{tmp_path}')"
    assert int(scalar(stack, letters)) == 0


def _ts(value: object) -> datetime:
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    return datetime.fromisoformat(str(value)).replace(tzinfo=UTC)
