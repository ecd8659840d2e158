"""sysstat files through the whole pipeline: sadc file -> Kafka -> ClickHouse (every sar figure) and
-> Flink (steal_pct from the host's CPU line, like nmon's CPU_ALL)."""

from __future__ import annotations

import shutil
import time
import uuid
from collections import Counter
from datetime import UTC
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, scalar, wait_stable
from fleetperf.config import Settings
from fleetperf.ingest.publish import ingest, source_options
from fleetperf.sources.sysstat.records import Options, records_of_file
from tests.integration.following import following
from tests.integration.kafka_read import read_all
from tests.integration.sadc_recording import record

pytestmark = pytest.mark.integration


def test_sadc_files_land_in_the_warehouse_and_feed_steal(stack: Settings, corpus: Path, tmp_path: Path) -> None:
    fresh_host = f"sadc-{uuid.uuid4().hex[:8]}"
    fresh = record(tmp_path / "sa23", samples=8)
    fresh_options = Options(host_id=fresh_host)
    summary = ingest(stack, [str(fresh)], UTC, progress=False, options=source_options(sadc_host_id=fresh_host))
    assert (summary.files, summary.errors) == (1, 0)
    assert (
        ingest(stack, [str(fresh)], UTC, progress=False, options=source_options(sadc_host_id=fresh_host)).skipped == 1
    )

    # an old big-endian file too. Its records' times are 2^24 s apart where sar shows 1 s (dates in
    # 2039-2040): by default every record is a dead letter; read as sar shows it
    # (--sadc-trust-times), its two implausible intervals are dead letters and the rest lands
    ppc_host = f"ppc-{uuid.uuid4().hex[:8]}"
    ppc = tmp_path / "sa27"
    shutil.copy(corpus / "sysstat" / "binary" / "data-ppc-11.7.2", ppc)
    trusted = source_options(sadc_host_id=ppc_host, sadc_trust_times=True)
    ppc_summary = ingest(stack, [str(ppc)], UTC, progress=False, options=trusted)
    assert ppc_summary.errors == 2

    expected = [e.record for e in records_of_file(fresh, fresh_options) if e.topic_key == "sysstat_samples"]
    wait_stable(stack, f"SELECT count() FROM sysstat_samples WHERE host_id = '{fresh_host}'", 90, minimum=len(expected))
    assert int(scalar(stack, f"SELECT count() FROM sysstat_samples_v WHERE host_id = '{fresh_host}'")) == len(expected)
    steal = {r["ts"]: r["metrics"]["steal"] for r in expected if r["section"] == "cpu-load-all" and r["item"] == "all"}
    _, rows = query(
        stack,
        "SELECT toUnixTimestamp64Milli(ts), steal_pct, usr_pct FROM sysstat_cpu_v "
        f"WHERE host_id = '{fresh_host}' AND cpu = 'all' ORDER BY ts",
    )
    assert {int(r[0]): float(r[1]) for r in rows} == steal
    assert max(float(r[2]) for r in rows) > 20  # the spinning CPU
    wait_stable(stack, f"SELECT count() FROM sysstat_samples WHERE host_id = '{ppc_host}'", 90, minimum=20)

    # Flink: steal_pct per minute from the sadc host's CPU samples, interval-weighted
    cpu = [e.record for e in records_of_file(fresh, fresh_options) if e.topic_key == "cpu_samples"]
    wait_stable(
        stack,
        f"SELECT count() FROM derived_metrics_v WHERE entity_id = '{fresh_host}' AND metric = 'steal_pct'",
        120,
    )
    _, derived = query(
        stack,
        "SELECT toUnixTimestamp64Milli(window_start), toUnixTimestamp64Milli(window_end), value "
        f"FROM derived_metrics_v WHERE entity_id = '{fresh_host}' AND metric = 'steal_pct'",
    )
    for start, end, value in derived:
        inside = [c for c in cpu if int(start) <= c["ts"] < int(end)]
        weighted = sum(c["steal_pct"] * c["interval_s"] for c in inside) / sum(c["interval_s"] for c in inside)
        assert abs(float(value) - weighted) < 1e-9


def test_follow_publishes_a_file_sadc_is_appending_to_exactly_once(stack: Settings, tmp_path: Path) -> None:
    source = record(tmp_path / "recorded", samples=6)
    data = source.read_bytes()
    live = tmp_path / "live" / f"sa{uuid.uuid4().hex[:6]}"
    live.parent.mkdir()
    live.write_bytes(b"")

    # sadc appends record by record; here in odd pieces, and the follower is restarted half way
    pieces = [data[i : i + 1500] for i in range(0, len(data), 1500)]
    half = len(pieces) // 2
    for part in (pieces[:half], pieces[half:]):
        with following(stack, live.parent, poll=0.1, finish_idle=60):
            for piece in part:
                with open(live, "ab") as handle:
                    handle.write(piece)
                time.sleep(0.15)
            time.sleep(1.0)

    expected = Counter(
        (r["section"], r["item"], r["ts"])
        for r in (e.record for e in records_of_file(source, Options()) if e.topic_key == "sysstat_samples")
    )
    got = Counter(
        (r["section"], r["item"], round(r["ts"].timestamp() * 1000))  # Kafka's reader gives datetimes
        for r in read_all(stack, "sysstat_samples")
        if r["origin_file"] == live.name
    )
    assert got == expected and set(got.values()) == {1}
