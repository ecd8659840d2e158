"""Anomaly flags end to end: a simulated fleet with injected faults (known hosts, times,
magnitudes) through nmon files, Kafka, Flink (windows -> flags) and ClickHouse. Every injected
fault must be found, and nothing else flagged: the precision and recall are written to
<state>/test-artifacts/flags-precision-recall.txt for the closing note."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, wait_stable
from fleetperf.config import Settings
from fleetperf.demo.simulate import Fault, Host, write_fleet
from fleetperf.ingest.publish import ingest

pytestmark = pytest.mark.integration

START = datetime(2026, 1, 5, 6, 0)
HOURS = 6
# a fault counts as found by an incident of its host that overlaps it (plus the windows the
# incident may need to close after the fault ends)
SLACK = timedelta(minutes=5)

FLEET = [
    Host("fl-linux-a", False, 4, 40.0),
    Host("fl-linux-b", False, 4, 30.0, steal_bias=2.0),  # steal bursts of ~6 % every 30 minutes: its normal
    Host("fl-linux-c", False, 8, 50.0, steal_bias=0.5),
    Host("fl-aix-d", True, 16, 30.0, entitled=4.0, virtual_cpus=4, serial="02FLAGD", lpar_id=4),
    Host("fl-aix-e", True, 16, 60.0, entitled=4.0, virtual_cpus=4, serial="02FLAGE", lpar_id=5),
]
FAULTS = (
    Fault("fl-linux-a", START + timedelta(minutes=150), 40, steal=30.0),
    Fault("fl-linux-c", START + timedelta(minutes=240), 30, steal=18.0),
    Fault("fl-aix-d", START + timedelta(minutes=200), 40, busy=95.0),
)


def test_injected_faults_are_flagged_and_nothing_else(stack: Settings, tmp_path: Path) -> None:
    files = write_fleet(tmp_path / "fleet", FLEET, START, timedelta(hours=HOURS), 60, random.Random(3), FAULTS)
    summary = ingest(stack, [str(f) for f in files], UTC, progress=False)
    assert summary.errors == 0

    names = ", ".join(f"'{h.name}'" for h in FLEET)
    # windows become final as each file's clock moves on; the faults lie hours before the files end
    wait_stable(
        stack,
        f"SELECT count() FROM derived_metrics_v WHERE entity_name IN ({names}) AND is_final",
        timeout=240,
        settle=10,
        minimum=len(FLEET) * HOURS * 60 * 8 // 10,
    )
    wait_stable(stack, f"SELECT count() FROM anomaly_flags WHERE entity_name IN ({names})", timeout=120, settle=10)
    _, incidents = query(
        stack,
        "SELECT entity_name, metric, rule, started, last_window_end, peak, explanation FROM incidents "
        f"WHERE entity_name IN ({names}) ORDER BY started",
    )
    true_positive = 0
    found: set[Fault] = set()
    for entity, _metric, _rule, started, last_end, _peak, explanation in incidents:
        assert explanation, "every flag explains itself"
        begin, end = _ts(started), _ts(last_end)
        hits = [
            f
            for f in FAULTS
            if f.host == entity and begin < f.start + timedelta(minutes=f.minutes) + SLACK and end > f.start
        ]
        true_positive += bool(hits)
        found.update(hits)
    precision = true_positive / len(incidents) if incidents else 0.0
    recall = len(found) / len(FAULTS)
    report = stack.state_dir / "test-artifacts" / "flags-precision-recall.txt"
    report.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"faults {len(FAULTS)}, incidents {len(incidents)}, precision {precision:.2f}, recall {recall:.2f}"]
    lines += [" | ".join(str(c) for c in row) for row in incidents]
    report.write_text("\n".join(lines) + "\n")
    assert recall == 1.0, lines
    assert precision == 1.0, lines
    # the rule incidents name their rule and source; the AIX fault shows as a baseline change
    rules = {(row[0], row[2]) for row in incidents}
    assert ("fl-linux-a", "steal_high") in rules and ("fl-linux-c", "steal_high") in rules
    assert ("fl-aix-d", "baseline") in rules


def _ts(value: object) -> datetime:
    if isinstance(value, datetime):
        return value.replace(tzinfo=None)
    return datetime.fromisoformat(str(value)).replace(tzinfo=None)
