"""hpmstat and entstat records through Kafka into ClickHouse: SLB rates and aggregation members in SQL."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, wait_stable
from fleetperf.config import PACKAGE_ROOT, Settings
from fleetperf.ingest.aggregations import inventory_records
from fleetperf.ingest.identity import HostIdentity
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.aix.collect import from_file

pytestmark = pytest.mark.integration
TESTDATA = PACKAGE_ROOT / "sources" / "aix" / "testdata"


def test_slb_rates_and_aggregation_members_in_sql(stack: Settings, tmp_path: Path) -> None:
    # the seed's reports as the project typed them (sources/aix/testdata/README.md: seed 000
    # L8279-8335 and L12820-13060)
    hpm = TESTDATA / "hpmstat_before_lsa.txt"
    ent = TESTDATA / "entstat_8023ad.txt"
    inv = tmp_path / "inventory.toml"
    inv.write_text('[hosts."AIXTEST-1".aggregations]\nent9 = ["ent3", "ent5"]\n')
    who = HostIdentity("AIXTEST-1", "aixtest")
    producer = AvroProducer(stack)
    records = [
        *from_file("hpmstat", hpm, who, 1_700_000_000_000),
        *from_file("entstat", ent, who, 1_700_000_000_000),
        *inventory_records(inv),
    ]
    for e in records:
        producer.send(e.topic_key, e.record, key=e.key)
    producer.flush()

    wait_stable(stack, "SELECT count() FROM hpm_samples WHERE host_id = 'AIXTEST-1'", timeout=60)
    _, rates = query(
        stack,
        "SELECT round(dslb_miss_rate, 3), round(ierat_miss_rate, 3), round(cpi, 3), "
        "round(mips, 3) FROM hpm_rates WHERE host_id = 'AIXTEST-1'",
    )
    assert rates == [[1.295, 0.374, 11.876, 34.877]]
    wait_stable(stack, "SELECT count() FROM net_port_samples WHERE host_id = 'AIXTEST-1'", timeout=60, minimum=3)
    wait_stable(stack, "SELECT count() FROM host_configs WHERE host_id = 'AIXTEST-1'", timeout=60)
    _, members = query(
        stack,
        "SELECT aggregation, members, members_source FROM link_aggregation_members "
        "WHERE host_id = 'AIXTEST-1' ORDER BY aggregation",
    )
    assert members == [["ent2", ["ent0", "ent1"], "entstat"], ["ent9", ["ent3", "ent5"], "inventory"]]
    _, sync = query(
        stack,
        "SELECT adapter, actor_sync, partner_sync, lacp_counters['Received LACPDUs'] "
        "FROM net_port_samples FINAL WHERE host_id = 'AIXTEST-1' AND aggregation = 'ent2' "
        "ORDER BY adapter",
    )
    assert sync == [["ent0", "IN_SYNC", "IN_SYNC", 47], ["ent1", "IN_SYNC", "IN_SYNC", 47]]
    # the Flink job turns the report into windowed SLB metrics (an early result: the stream went quiet)
    wait_stable(stack, "SELECT count() FROM derived_metrics_v WHERE entity_id = 'AIXTEST-1'", timeout=90, minimum=6)
    _, derived = query(
        stack, "SELECT metric, round(value, 3) FROM derived_metrics_v WHERE entity_id = 'AIXTEST-1' ORDER BY metric"
    )
    assert derived == [
        ["cpi", 11.876],
        ["dslb_miss_rate", 1.295],
        ["ierat_miss_rate", 0.374],
        ["islb_miss_rate", 0.0],
        ["mips", 34.877],
        ["slb_miss_rate", 1.295],
    ]


def _etherchannel_capture(counts: dict[str, tuple[int, int]]) -> str:
    text = "ETHERNET STATISTICS (ent8) :\nDevice Type: IEEE 802.3ad Link Aggregation\n"
    text += "Aggregation status: Aggregated\nHash mode: Default (destination IP address)\n"
    for port, (tx, rx) in counts.items():
        text += f"ETHERNET STATISTICS ({port}) :\nDevice Type: 10 Gigabit Ethernet Adapter\n"
        text += f"Packets: {tx:<38}Packets: {rx}\n"
    return text


def test_lacp_hash_skew_from_two_entstat_captures(stack: Settings, tmp_path: Path) -> None:
    # 000 L6069-6177 (hash_mode default): the packets each port moved between two captures
    moved = {
        "ent0": (811028335, 1239805118),
        "ent1": (1127872165, 2184361773),
        "ent4": (8604105240, 2203568387),
        "ent6": (19992956659, 4671940746),
    }
    start = {port: (1000 + i, 2000 + i) for i, port in enumerate(moved)}
    later = {port: (start[port][0] + tx, start[port][1] + rx) for port, (tx, rx) in moved.items()}
    who = HostIdentity("VIOSTEST-2", "vios1")
    producer = AvroProducer(stack)
    for n, (counts, ts) in enumerate(((start, 1_700_000_010_000), (later, 1_700_000_070_000))):
        capture = tmp_path / f"entstat_{n}.txt"
        capture.write_text(_etherchannel_capture(counts))
        for e in from_file("entstat", capture, who, ts):
            producer.send(e.topic_key, e.record, key=e.key)
    producer.flush()
    where = "entity_id = 'VIOSTEST-2|ent8'"
    wait_stable(stack, f"SELECT count() FROM derived_metrics_v WHERE {where}", timeout=90, minimum=5)
    _, rows = query(stack, f"SELECT metric, round(value, 4) FROM derived_metrics_v WHERE {where} ORDER BY metric")
    tx_skew = round(19992956659 / 30535962399 * 4, 4)
    rx_skew = round(4671940746 / 10299676024 * 4, 4)
    assert dict(map(tuple, rows))["lacp_hash_skew_tx"] == tx_skew  # 65.47 % of 4 ports
    assert dict(map(tuple, rows))["lacp_hash_skew_rx"] == rx_skew
    assert dict(map(tuple, rows))["lacp_active_ports"] == 4
