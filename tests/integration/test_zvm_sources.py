"""z/VM through the whole pipeline: Toolkit reports and monitor-style counters -> Kafka -> Flink ->
ClickHouse. The same guest CPU times give the same T/V whichever source carried them."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, wait_stable
from fleetperf.config import Settings
from fleetperf.ingest.publish import ingest, source_options
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.perfkit.records import Options, records_of_file
from fleetperf.sources.zvm.cpu_deltas import GuestCpuCounters, GuestCpuDeltas
from tests.unit.test_perfkit import DATA

pytestmark = pytest.mark.integration


# CPU timers count down from this value (complement form; IBM tip vm.ibm.com/perf/tips/vcputime.html)
TIMER_START = 0x7FFFFFFF_00000000


def _units(seconds: float) -> int:
    return round(seconds * 1e6) << 12


def test_tv_ratio_from_toolkit_and_monitor_records(stack: Settings, tmp_path: Path) -> None:
    report = tmp_path / "VMLINUX7.fcx112.txt"
    report.write_text((DATA / "fcx112_user.txt").read_text())
    # a system name no other test uses: other tests publish the same report for VMLINUX7
    named = Options(system="ZVMTEST1")
    summary = ingest(stack, [str(report)], named.tz, progress=False, options=source_options(zvm_system=named.system))
    assert (summary.files, summary.errors) == (1, 0)
    again = ingest(stack, [str(report)], named.tz, progress=False, options=source_options(zvm_system=named.system))
    assert again.skipped == 1  # a re-run publishes nothing twice

    # the same CPU times for LNKDB2 and RSCS as cumulative CPU-timer counters of another system
    end = next(e.record["ts"] for e in records_of_file(report, Options()) if e.topic_key == "zvm_guest_samples")
    deltas = GuestCpuDeltas()
    producer = AvroProducer(stack)
    for userid, tcpu, vcpu in (("LNKDB2", 0.823, 0.818), ("RSCS", 0.002, 0.001)):
        for ts, (t, v) in ((end - 60_000, (50.0, 40.0)), (end, (50.0 + tcpu, 40.0 + vcpu))):
            timers = {0: (TIMER_START - _units(t), TIMER_START - _units(v))}
            for e in deltas.feed(GuestCpuCounters("MONSYS", userid, ts, timers, f"capture:{ts}")):
                producer.send(e.topic_key, e.record, key=e.key)
    system = [
        e
        # one record per 5-minute row (window_s=None), so each window holds exactly one row's T/V
        for e in records_of_file(
            DATA / "fcx225_syssumlog.txt", Options(system="ZVMSUM", day=date(2011, 9, 21), window_s=None)
        )
        if e.topic_key == "zvm_system_samples"
    ]
    for e in system:
        producer.send(e.topic_key, e.record, key=e.key)
    producer.flush()

    wait_stable(stack, "SELECT count() FROM zvm_guest_samples WHERE zvm_system = 'ZVMTEST1'", timeout=60, minimum=22)
    wait_stable(
        stack,
        "SELECT count(DISTINCT entity_id) FROM derived_metrics_v WHERE metric = 'tv_ratio' AND entity_id IN "
        "('ZVMTEST1/LNKDB2', 'MONSYS/LNKDB2', 'ZVMTEST1/LNKIHS', 'ZVMSUM')",
        timeout=120,
        minimum=4,
    )
    wait_stable(
        stack,
        "SELECT count() FROM derived_metrics_v WHERE metric = 'tv_ratio' AND entity_id = 'ZVMSUM'",
        timeout=120,
        minimum=len(system),
    )
    _, rows = query(
        stack,
        "SELECT entity_id, round(value, 6) FROM derived_metrics_v WHERE metric = 'tv_ratio' "
        "AND entity_id IN ('ZVMTEST1/LNKDB2', 'MONSYS/LNKDB2', 'ZVMTEST1/LNKIHS', 'ZVMTEST1/RSCS', 'MONSYS/RSCS')"
        " ORDER BY entity_id",
    )
    tv = dict(map(tuple, rows))
    assert tv["ZVMTEST1/LNKDB2"] == tv["MONSYS/LNKDB2"] == round(0.823 / 0.818, 6)
    assert round(tv["ZVMTEST1/LNKDB2"], 2) == 1.01 and round(tv["ZVMTEST1/LNKIHS"], 2) == 1.09
    assert "ZVMTEST1/RSCS" not in tv and "MONSYS/RSCS" not in tv  # guarded: .001 s of virtual time
    # a system's T/V from FCX225 (one 5-minute interval per window) is what the report printed
    _, sys_rows = query(
        stack,
        "SELECT round(value, 6) FROM derived_metrics_v WHERE entity_id = 'ZVMSUM' AND metric = 'tv_ratio' "
        "ORDER BY window_start",
    )
    assert [r[0] for r in sys_rows] == [pytest.approx(e.record["tv_ratio_reported"], abs=1e-6) for e in system]
