"""The bonding source: a saved /proc/net/bonding file recognised by content and read into the
aggregation attributes the warehouse's link_aggregation_members view reads; the live collector
reads every bond of a directory."""

from __future__ import annotations

import argparse
from pathlib import Path

from fleetperf.ingest.publish import Candidate, classify
from fleetperf.sources import registry

# the layout the Linux bonding driver prints (drivers/net/bonding/bond_procfs.c), values ours
BOND0 = """\
Ethernet Channel Bonding Driver: v5.14.0

Bonding Mode: IEEE 802.3ad Dynamic link aggregation
Transmit Hash Policy: layer3+4 (1)
MII Status: up
MII Polling Interval (ms): 100

802.3ad info
LACP active: on
LACP rate: fast
Aggregator selection policy (ad_select): stable

Slave Interface: eth0
MII Status: up
Speed: 10000 Mbps
Aggregator ID: 1

Slave Interface: eth1
MII Status: down
Speed: 10000 Mbps
Aggregator ID: 2
"""


def _opts(**kw: object) -> argparse.Namespace:
    return argparse.Namespace(host_id="lnx-1", hostname="lnx1", **kw)


def test_a_saved_bond_file_is_recognised_and_read(tmp_path: Path) -> None:
    saved = tmp_path / "bond0"
    saved.write_text(BOND0)
    source, problem = classify(Candidate(saved, explicit=True))
    assert (source.name if source else None, problem) == ("bonding", None)
    [config] = list(registry.get("bonding").read(saved, _opts()))
    attrs = config.record["attributes"]
    assert attrs["aggregation.bond0.members"] == "eth0,eth1"
    assert attrs["aggregation.bond0.mode"] == "IEEE 802.3ad Dynamic link aggregation"
    assert attrs["aggregation.bond0.hash_policy"] == "layer3+4 (1)"
    assert (attrs["aggregation.bond0.eth0.mii_status"], attrs["aggregation.bond0.eth1.mii_status"]) == ("up", "down")
    assert config.record["host_id"] == "lnx-1"


def test_the_live_collector_reads_every_bond_once(tmp_path: Path) -> None:
    (tmp_path / "bond0").write_text(BOND0)
    (tmp_path / "bond1").write_text(BOND0.replace("eth0", "eth2").replace("eth1", "eth3"))
    [batch] = list(registry.get("bonding").collect(_opts(proc_dir=str(tmp_path), interval=1.0, once=True)))
    [config] = batch
    attrs = config.record["attributes"]
    assert (attrs["aggregation.bond0.members"], attrs["aggregation.bond1.members"]) == ("eth0,eth1", "eth2,eth3")
