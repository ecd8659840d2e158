"""A file recorded here and now by Debian's sysstat (sadc -S XALL) under CPU and network load: every
figure sadf -j -- -A of the same package prints for an item we publish equals ours (disk's backward-
compatible duplicates aside)."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetperf.sources.sysstat.records import Options, records_of_file
from fleetperf.stack import install
from tests import sar_text
from tests.integration.sadc_recording import record

SAMPLES = 6


@pytest.fixture(scope="module")
def fresh_file(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str]:
    _, sadf = install.sysstat()
    path = record(tmp_path_factory.mktemp("sadc") / "sa-fresh", SAMPLES)
    env = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}
    sadf_json = subprocess.run(
        [str(sadf), "-j", str(path), "--", "-A"],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    ).stdout
    version = subprocess.run([str(sadf), "-V"], capture_output=True, text=True).stdout.split()[2]
    return path, sadf_json, version


def _sadf_rows(text: str) -> dict[tuple[str, str, str], dict]:
    disks = sar_text.local_disk_names()
    return {(s, t, disks.get(i, i) if s == "disk" else i): v for (s, t, i), v in sar_text.sadf_json_rows(text).items()}


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
    compat = {("disk", n) for n in ("rd_sec", "wr_sec", "dc_sec", "avgrq-sz", "avgqu-sz")}  # sadf's duplicates
    for key, row in expected.items():
        for name, value in row.items():
            if (key[0], name) in compat:
                continue
            got = ours[key][name]
            if isinstance(value, int):  # %llu (exact) or %.0f (rounded)
                assert format(got, ".0f") == str(value), f"{key} {name}: ours {got}, sadf {value}"
            else:
                assert format(got, ".2f") == format(value, ".2f"), f"{key} {name}: ours {got}, sadf {value}"
            compared += 1
    # the load was seen: one CPU busy, traffic on lo
    cpu_all = [v for k, v in ours.items() if k[0] == "cpu-load-all" and k[2] == "all"]
    assert max(v["usr"] + v["sys"] for v in cpu_all) > 20
    assert max(v["rxkB"] for k, v in ours.items() if k[0] == "net-dev" and k[2] == "lo") > 100
    assert "steal" in cpu_all[0]
    assert compared > 1000
