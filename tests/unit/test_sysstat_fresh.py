"""A file recorded here, at test time, by the machine's own sysstat (Debian's sadc): every figure we
publish equals that sysstat's `sadf -j -- -A` (the sar of the version that wrote the file, whose
memused definition we must follow). Skipped, saying why, where sysstat is not installed."""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fleetperf.sources.sysstat.reader import open_bytes
from fleetperf.sources.sysstat.records import Options, records_of_file
from tests import sar_text

SADC = Path("/usr/lib/sysstat/sadc")
SADF = Path("/usr/bin/sadf")
SAMPLES = 5
ENV = {**os.environ, "LC_ALL": "C", "TZ": "UTC"}


def _sadf(path: Path, *args: str) -> str:
    return subprocess.run([str(SADF), *args, str(path)] if not args or args[0] != "-j" else
                          [str(SADF), "-j", str(path), "--", *args[1:]],
                          check=True, capture_output=True, text=True, env=ENV, timeout=120).stdout  # fmt: skip


@pytest.fixture(scope="module")
def fresh(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not (SADC.exists() and SADF.exists()):
        pytest.skip(f"sysstat is not installed ({SADC}, {SADF}): apt-get install sysstat to run this test")
    from tests.integration.sadc_recording import record

    return record(tmp_path_factory.mktemp("sadc") / "sa-fresh", SAMPLES, sadc=SADC)


def _ours(path: Path, options: Options) -> dict[tuple[str, str, str], dict[str, float]]:
    out = {}
    for e in records_of_file(path, options):
        assert e.topic_key != "dead_letters", e.record
        if e.topic_key == "sysstat_samples":
            r = e.record
            t = datetime.fromtimestamp(r["ts"] / 1000, UTC).strftime("%H:%M:%S")
            out[(r["section"], t, r["item"])] = r["metrics"]
    return out


def _equal(ours: float, theirs: float) -> bool:
    if isinstance(theirs, int):  # %llu / %u (exact) or %.0f (MBfsfree ...: rounded)
        return format(ours, ".0f") == str(theirs)
    return format(ours, ".2f") == format(theirs, ".2f")


def test_memused_follows_the_sysstat_that_wrote_the_file(fresh: Path) -> None:
    version = open_bytes(fresh.read_bytes()).header.version
    sadf_version = subprocess.run([str(SADF), "-V"], capture_output=True, text=True, env=ENV).stdout.split()[2]
    assert version == sadf_version  # the oracle is the sar of the version that wrote the file
    expected = sar_text.sadf_json_rows(_sadf(fresh, "-j", "-r"))
    ours = _ours(fresh, Options())
    rows = [k for k in expected if k[0] == "memory"]
    assert len(rows) == SAMPLES - 1
    for key in rows:
        for name in ("memused", "memused-percent"):
            got, want = ours[key][name], expected[key][name]
            assert _equal(got, want), f"{key} {name}: ours {got}, sadf {want}"


def test_every_published_figure_equals_sadf_json(fresh: Path) -> None:
    expected = sar_text.sadf_json_rows(_sadf(fresh, "-j", "-A"))
    disks = sar_text.local_disk_names()
    expected = {(s, t, disks.get(i, i) if s == "disk" else i): v for (s, t, i), v in expected.items()}
    ours = _ours(fresh, Options())
    assert ours, "no figures"
    compared, different = 0, []
    for key, row in ours.items():
        theirs = expected.get(key)
        assert theirs is not None, f"sadf has no {key}"
        for name, value in row.items():
            if name not in theirs:
                continue  # raw counters we keep beside sar's figures (rx_bytes ...)
            compared += 1
            if not _equal(value, theirs[name]):
                different.append(f"{key} {name}: ours {value}, sadf {theirs[name]}")
    assert compared > 1000
    assert len(different) <= compared // 1000, different  # >= 99.9 % equal at two decimals
    # every section sadf -A prints is published
    assert {k[0] for k in expected} <= {k[0] for k in ours}, {k[0] for k in expected} - {k[0] for k in ours}
