"""A file recorded here and now by Debian's sysstat (sadc) under CPU and network load: every CPU
(incl. steal), memory and per-interface network figure of ours equals `sadf -j` of the same package."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetperf.sources.sysstat.rates import disk_name
from fleetperf.sources.sysstat.records import Options, records_of_file
from fleetperf.stack import install
from tests.integration.sadc_recording import record

SAMPLES = 6


@pytest.fixture(scope="module")
def fresh_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    _, sadf = install.sysstat()
    path = record(tmp_path_factory.mktemp("sadc") / "sa-fresh", SAMPLES)
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    sadf_json = subprocess.run(
        [str(sadf), "-j", str(path), "--", "-u", "ALL", "-P", "ALL", "-r", "ALL", "-S", "-n", "DEV,EDEV", "-d"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    version = subprocess.run([str(sadf), "-V"], capture_output=True, text=True).stdout.split()[2]
    return path, sadf_json, version


def _local_disk_names() -> dict[str, str]:
    """sadf names this machine's disks from /sys (vda); a file read elsewhere cannot: ours are
    sysstat.ioconf's names for SCSI disks and devM-N otherwise. Map one to the other."""
    names = {}
    for dev in Path("/sys/dev/block").iterdir():
        major, minor = (int(x) for x in dev.name.split(":"))
        uevent = dict(line.split("=", 1) for line in (dev / "uevent").read_text().split() if "=" in line)
        if "DEVNAME" in uevent:
            names[uevent["DEVNAME"]] = disk_name(major, minor)
    return names


def _sadf_rows(text: str) -> dict[tuple[str, str, str], dict]:
    disks = _local_disk_names()
    host = json.loads(text)["sysstat"]["hosts"][0]
    rows = {}
    for stats in host["statistics"]:
        t = stats["timestamp"]["time"]
        for cpu in next(v for k, v in stats.items() if k.startswith("cpu-load")):
            rows[("cpu-load-all", t, cpu["cpu"])] = {k: v for k, v in cpu.items() if k != "cpu"}
        rows[("memory", t, "")] = stats["memory"]
        for d in stats.get("disk", []):
            name = disks.get(d["disk-device"], d["disk-device"])
            rows[("disk", t, name)] = {k: d[k] for k in ("tps", "rkB", "wkB", "dkB", "areq-sz", "aqu-sz", "await",
                                                       "util-percent")}  # fmt: skip
        for section in ("net-dev", "net-edev"):
            for iface in stats["network"][section]:
                rows[(section, t, iface["iface"])] = {k: v for k, v in iface.items() if k != "iface"}
    return rows


def test_fresh_file_equals_sadf_json(fresh_file: tuple[Path, str, str]) -> None:
    path, sadf_json, _version = fresh_file
    expected = _sadf_rows(sadf_json)
    ours = {}
    for e in records_of_file(path, Options()):  # the definitions of the sysstat that wrote it
        assert e.topic_key != "dead_letters", e.record
        if e.topic_key == "sysstat_samples":
            r = e.record
            t = datetime.fromtimestamp(r["ts"] / 1000, UTC).strftime("%H:%M:%S")
            ours[(r["section"], t, r["item"])] = r["metrics"]
    assert len({k[1] for k in expected}) == SAMPLES - 1
    assert set(expected) <= set(ours)
    compared = 0
    for key, row in expected.items():
        for name, value in row.items():
            got = ours[key][name]
            if isinstance(value, int):
                assert int(got) == value, f"{key} {name}: ours {got}, sadf {value}"
            else:
                assert format(got, ".2f") == format(value, ".2f"), f"{key} {name}: ours {got}, sadf {value}"
            compared += 1
    # the load was seen: one CPU busy, traffic on lo
    cpu_all = [v for k, v in ours.items() if k[0] == "cpu-load-all" and k[2] == "all"]
    assert max(v["usr"] + v["sys"] for v in cpu_all) > 20
    assert max(v["rxkB"] for k, v in ours.items() if k[0] == "net-dev" and k[2] == "lo") > 100
    assert "steal" in cpu_all[0]
    assert compared > 200
