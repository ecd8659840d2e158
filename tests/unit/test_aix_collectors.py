"""hpmstat and entstat parsers on outputs typed in the commands' layout with the figures of seed 000
(src/fleetperf/sources/aix/testdata, see its README; golden numbers in tests/golden.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fleetperf.ingest.aggregations import inventory_records, parse_proc_bonding
from fleetperf.sources.aix import entstat, hpmstat
from fleetperf.sources.aix.errors import CommandOutputError
from tests.golden import SLB_AFTER_LSA, SLB_BEFORE_LSA
from tests.oracles.lacp import hash_skew, lacp_in_sync
from tests.oracles.slb import slb_metrics

DATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "aix" / "testdata"


def _text(name: str) -> str:
    return (DATA / name).read_text()


@pytest.mark.parametrize(
    "name,counters,duration,rates",
    [
        (
            "hpmstat_before_lsa.txt",
            SLB_BEFORE_LSA,
            160.115119955,
            {"dslb_miss_rate": 1.295, "ierat_miss_rate": 0.374, "cpi": 11.876, "mips": 34.877},
        ),
        (
            "hpmstat_after_lsa.txt",
            SLB_AFTER_LSA,
            160.005281724,
            {"dslb_miss_rate": 0.001, "ierat_miss_rate": 0.008, "islb_miss_rate": 0.001, "cpi": 27.965, "mips": 14.821},
        ),
    ],
    ids=["before-LSA", "after-LSA"],
)
def test_hpmstat_counters_and_slb_rates(name, counters, duration, rates) -> None:  # noqa: ANN001
    [sample] = hpmstat.parse(_text(name))
    assert sample.counters == counters
    assert sample.group == 10 and sample.duration_s == duration
    assert sample.counting_mode == "user+kernel+hypervisor+runlatch"
    computed = slb_metrics(sample.counters, sample.duration_s)
    for name, value in rates.items():
        assert round(computed[name], 3) == value, name
    # PM_SLB_MISS = DSLB + ISLB, and our rates agree with hpmstat's own derived lines
    assert counters["PM_DSLB_MISS"] + counters["PM_ISLB_MISS"] == counters["PM_SLB_MISS"]
    assert round(computed["dslb_miss_rate"], 3) == sample.derived["Translation/% DSLB_Miss_Rate per inst"]
    assert round(computed["cpi"], 3) == sample.derived["General/Run cycles per run instruction"]


def test_hpmstat_bad_counter_is_an_error_with_its_line() -> None:
    text = "Group: 10\nCounting duration: 1.0 seconds\n PM_RUN_CYC (Run cycles) :   12x4\n"
    problems = hpmstat.read(text).problems
    assert [(p.line, p.message) for p in problems] == [
        (1, "report without counters: skipped"),  # its only counter was unreadable
        (3, "PM_RUN_CYC not an integer: left out"),
    ]
    with pytest.raises(CommandOutputError, match="line 1: report without counters"):
        hpmstat.parse(text)
    with pytest.raises(CommandOutputError, match="no hpmstat report"):
        hpmstat.parse("hello\n")


def test_entstat_8023ad_status_and_lacpdus() -> None:
    report = entstat.parse(_text("entstat_8023ad.txt"))
    assert report.aggregation_status == "Aggregated"
    assert report.hash_mode == "Source and destination TCP/UDP ports"
    agg = report.aggregation
    assert agg is not None and agg.name == "ent2" and agg.members == ["ent0", "ent1"]
    assert agg.device_type == "IEEE 802.3ad Link Aggregation"
    ports = [report.adapters["ent0"], report.adapters["ent1"]]
    assert all(lacp_in_sync(p.actor_state, p.partner_state) for p in ports)
    assert [p.lacp["Received LACPDUs"] for p in ports] == [47, 47]
    assert [p.lacp["Transmitted LACPDUs"] for p in ports] == [60, 61]
    assert report.aggregate_lacp["Received LACPDUs"] == 94 == sum(p.lacp["Received LACPDUs"] for p in ports)
    assert report.aggregate_lacp["Transmitted LACPDUs"] == 121 == sum(p.lacp["Transmitted LACPDUs"] for p in ports)
    assert ports[1].partner_state["LACP timeout"] == "Short" and ports[1].actor_state["LACP timeout"] == "Long"


def test_entstat_all_two_columns() -> None:
    report = entstat.parse(_text("entstat_all_ent8.txt"))
    assert report.adapters["ent8"].transmit["Packets"] == 121
    assert report.adapters["ent8"].receive["Packets"] == 111
    assert report.adapters["ent8"].receive["Bad Packets"] == 0  # right column only
    assert report.adapters["ent6"].transmit["Multicast Packets"] == 9
    assert report.adapters["ent0"].receive["Packets"] == 87


def test_hash_default_table_shares_from_member_counters() -> None:
    # 000 L6069-6177: per-port packets of the hash_mode default test, written as entstat -all prints them
    tx = {"ent0": 811028335, "ent1": 1127872165, "ent4": 8604105240, "ent6": 19992956659}
    rx = {"ent0": 1239805118, "ent1": 2184361773, "ent4": 2203568387, "ent6": 4671940746}
    text = "".join(f"ETHERNET STATISTICS ({p}) :\nPackets: {tx[p]:<36}Packets: {rx[p]}\n" for p in tx)
    report = entstat.parse(text)
    parsed_tx = {p: a.transmit["Packets"] for p, a in report.adapters.items()}
    parsed_rx = {p: a.receive["Packets"] for p, a in report.adapters.items()}
    assert parsed_tx == tx and parsed_rx == rx
    skew_tx = hash_skew(parsed_tx)
    # the table prints a total of 29408090234; recomputed from the members it is 30535962399
    assert skew_tx["total"] == 30535962399
    assert [round(v, 2) for v in skew_tx["shares"].values()] == [2.66, 3.69, 28.18, 65.47]
    assert [round(v) for v in hash_skew(parsed_rx)["shares"].values()] == [12, 21, 21, 45]
    assert skew_tx["active_ports"] == 4 and skew_tx["max_share_x_n"] > 2.5


def test_entstat_without_blocks_is_an_error() -> None:
    with pytest.raises(CommandOutputError, match="no 'ETHERNET STATISTICS"):
        entstat.parse("Packets: 5\n")
    with pytest.raises(CommandOutputError, match="line 2: Packets not an integer: left out"):
        entstat.parse("ETHERNET STATISTICS (ent0) :\nPackets: lots      Packets: 4\n")


def test_linux_bonding_and_inventory(tmp_path: Path) -> None:
    bond = parse_proc_bonding(
        "Ethernet Channel Bonding Driver: v3.7.1\n\nBonding Mode: IEEE 802.3ad Dynamic link aggregation\n"
        "Transmit Hash Policy: layer3+4 (1)\nMII Status: up\n\nSlave Interface: eth0\nMII Status: up\n"
        "Aggregator ID: 1\n\nSlave Interface: eth1\nMII Status: down\nAggregator ID: 2\n"
    )
    assert bond["members"] == "eth0,eth1"
    assert bond["hash_policy"] == "layer3+4 (1)"
    assert bond["eth1.mii_status"] == "down" and bond["eth1.aggregator_id"] == "2"
    inv = tmp_path / "inventory.toml"
    inv.write_text(
        '[hosts."0123456A-6"]\nhostname = "aixlpar"\n[hosts."0123456A-6".aggregations]\n'
        'ent8 = ["ent0", "ent2", "ent4", "ent6"]\n'
    )
    [record] = [e.record for e in inventory_records(inv)]
    assert record["attributes"] == {"aggregation.ent8.members": "ent0,ent2,ent4,ent6"}
    assert record["source"] == "inventory" and record["hostname"] == "aixlpar"
