"""nmon parser against the real third-party files of the corpus and against edge cases."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest

from fleetperf.sources.nmon.parser import parse_file


def by_topic(path: Path, **kw) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {"cpu_samples": [], "nmon_snapshots": [], "host_configs": [], "dead_letters": []}
    for e in parse_file(path, **kw):
        out[e.topic_key].append(e.record)
    return out


def records(path: Path, **kw) -> tuple[list[dict], list[dict]]:
    """Typed CPU samples and dead letters."""
    out = by_topic(path, **kw)
    return out["cpu_samples"], out["dead_letters"]


def ms(text: str) -> int:
    return int(datetime.strptime(text, "%Y-%m-%d %H:%M:%S").replace(tzinfo=UTC).timestamp() * 1000)


def test_aix_lpar_physc_and_entitlement(corpus: Path) -> None:
    path = corpus / "nmon" / "aix71_aixlpar_nmon2influxdb.nmon"
    good, bad = records(path)
    # its JFSFILE and JFSINODE headers name 9 file systems and their data lines carry 31 values:
    # the 22 past the header have no name; the first such line of each header is a dead letter
    # that says so (read here apart)
    lines = path.read_text(encoding="latin-1").splitlines()
    long = [n for n, line in enumerate(lines, 1) if line.startswith(("JFSFILE,T", "JFSINODE,T"))]
    assert len(long) == 2 * 187 and {len(lines[n - 1].split(",")) for n in long} == {33}  # tag, Tnnnn, 31 values
    assert [(b["line"], b["error"]) for b in bad] == [
        (n, f"{lines[n - 1].split(',')[0]}: 22 values past the header's 9 columns (not published; later lines"
            " of this header alike are not reported again)")
        for n in long[:2]
    ]  # fmt: skip
    assert len(good) == 187
    t2 = next(r for r in good if r["origin_snapshot"] == "T0002")
    # LPAR,T0002,1.429,7,28,16,1.30,...   CPU_ALL,T0002,33.1,31.4,0.1,35.4,,28
    assert (t2["physc"], t2["entitled"], t2["virtual_cpus"]) == (1.429, 1.30, 7)
    # LPAR,T0002,1.429,7,28,16,1.30,128,0.00,...: a 16-processor pool, PoolIdle 0 (no pool authority)
    assert (t2["pool_cpus"], t2["pool_idle"]) == (16.0, 0.0)
    assert (t2["user_pct"], t2["sys_pct"], t2["wait_pct"], t2["idle_pct"]) == (33.1, 31.4, 0.1, 35.4)
    assert t2["steal_pct"] is None
    assert t2["host_id"] == "0123456A-6"  # SerialNumber + LPAR number survive host renames
    assert t2["hostname"] == "aixlpar"
    assert good[0]["ts"] == ms("2016-02-10 17:28:10")
    assert t2["interval_s"] == 300.0


def test_linux_steal_column(corpus: Path) -> None:
    good, bad = records(corpus / "nmon" / "linux_fc21_nmon15h_nmon2influxdb.nmon")
    assert bad == []
    # 48 ZZZZ lines, the last one with no data after it (nmon stopped mid-snapshot)
    assert len(good) == 47
    t3 = next(r for r in good if r["origin_snapshot"] == "T0003")
    assert (t3["user_pct"], t3["sys_pct"], t3["wait_pct"], t3["idle_pct"], t3["steal_pct"], t3["cpus"]) == (
        23.4,
        4.4,
        14.0,
        58.3,
        0.0,
        4,
    )
    assert t3["ts"] == ms("2015-08-18 10:25:26")


def test_nmon13_has_no_steal_column(corpus: Path) -> None:
    good, bad = records(corpus / "nmon" / "linux_ubuntu_nmon13g_pyNmonAnalyzer.nmon")
    assert bad == [] and len(good) == 120
    assert {r["steal_pct"] for r in good} == {None}
    assert good[0]["user_pct"] == 6.5 and good[0]["cpus"] == 6


@pytest.mark.parametrize(
    "name,count", [("linux_centos7_kvm_nmon16g_small.nmon", 6), ("linux_centos7_kvm_nmon16g_1000snap.nmon", 1000)]
)
def test_centos_files(corpus: Path, name: str, count: int) -> None:
    good, bad = records(corpus / "nmon" / name)
    assert bad == [] and len(good) == count
    assert {r["host_id"] for r in good} == {"VM-12-13-centos"}


def test_gzip_input_and_time_zone(tmp_path: Path, corpus: Path) -> None:
    src = corpus / "nmon" / "linux_centos7_kvm_nmon16g_small.nmon"
    gz = tmp_path / "small.nmon.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain, _ = records(src)
    packed, _ = records(gz, tz=ZoneInfo("Europe/Berlin"))
    assert len(packed) == len(plain)
    # same wall clock in Berlin (UTC+2 in June) is two hours earlier in UTC
    assert plain[0]["ts"] - packed[0]["ts"] == 2 * 3600 * 1000


def test_data_before_its_zzzz_line_and_garbage(tmp_path: Path) -> None:
    f = tmp_path / "odd.nmon"
    f.write_text(
        "AAA,host,odd\nAAA,interval,60\n"
        "CPU_ALL,CPU Total odd,User%  ,Sys%  ,Wait%,Idle%,Steal%,Busy,CPUs\n"
        "CPU_ALL,T0001,1.0,2.0,0.0,96.0,1.0,,2\n"
        "ZZZZ,T0001,00:01:00,01-JAN-2024\n"
        "\x00\x01binary junk\n"
        "ZZZZ,T0002,00:02:00,01-JAN-2024\n"
        "CPU_ALL,T0002,5.0,x,0.0,90.0,5.0,,2\n"
        "CPU_ALL,T0003,3.0,3.0,0.0,93.0,1.0,,2\n"
    )
    good, bad = records(f)
    # T0002 arrives with Sys% null; the rest of its row as written
    assert [r["origin_snapshot"] for r in good] == ["T0001", "T0002"]
    assert good[0]["user_pct"] == 1.0 and good[0]["steal_pct"] == 1.0  # header blanks stripped
    assert (good[1]["user_pct"], good[1]["sys_pct"], good[1]["idle_pct"]) == (5.0, None, 90.0)
    assert [(b["line"], b["error"].split(":")[0]) for b in bad] == [
        (6, "not an nmon line (no section tag)"),
        (8, "CPU Sys%"),
        (9, "snapshot T0003"),
    ]
    assert "1 data lines without a valid ZZZZ time line" in bad[2]["error"]
    assert bad[0]["byte_offset"] == len("".join(f.read_text().splitlines(keepends=True)[:5]).encode())


def test_etherchannel_members_from_lsattr_text(tmp_path: Path) -> None:
    f = tmp_path / "ec.nmon"
    f.write_text(
        "AAA,host,vios1\nAAA,interval,60\nAAA,SerialNumber,0ABCDEF\nAAA,LPARNumberName,2,vios1\n"
        "AAA,MachineType,IBM,8231-E2B\n"
        "BBBP,100,lsattr -El ent8\n"
        'BBBP,101,lsattr -El ent8,"adapter_names   ent0,ent2,ent4,ent6 EtherChannel Adapters True"\n'
        'BBBP,102,lsattr -El ent8,"hash_mode       default             Determines packet hash    True"\n'
        "CPU_ALL,CPU Total vios1,User%,Sys%,Wait%,Idle%,Busy,PhysicalCPUs\n"
        "ZZZZ,T0001,00:01:00,01-JAN-2024\nCPU_ALL,T0001,1.0,2.0,0.0,97.0,,8\n"
    )
    [config] = by_topic(f)["host_configs"]
    assert config["host_id"] == "0ABCDEF-2"
    assert config["attributes"]["aggregation.ent8.members"] == "ent0,ent2,ent4,ent6"
    assert config["attributes"]["frame_id"] == "8231-E2B*0ABCDEF"
    assert "adapter_names" in config["config_text"]["lsattr -El ent8"]


def test_rows_name_a_shared_entity_or_metric_once(corpus: Path) -> None:
    from fleetperf.warehouse.rows import nmon_row_values

    snaps = by_topic(corpus / "nmon" / "aix71_aixlpar_nmon2influxdb.nmon")["nmon_snapshots"]
    t2 = next(s for s in snaps if s["origin_snapshot"] == "T0002")

    def row(section: str, entity: str | None = None) -> dict:
        return next(r for r in t2["rows"] if r["section"] == section and (entity is None or entity in r["entities"]))

    # CPU01,T0002,24.5,26.2,2.8,46.6 under CPU01,CPU 1 aixlpar,User%,Sys%,Wait%,Idle%
    cpu = row("CPU", "1")
    assert (cpu["entities"], cpu["metrics"]) == (["1"], ["User%", "Sys%", "Wait%", "Idle%"])
    assert list(nmon_row_values(cpu))[1] == ("1", "Sys%", 26.2)
    # DISKBUSY,T0002,0.0,0.2,0.7,... under DISKBUSY,Disk %Busy aixlpar,hdisk6,hdisk2,hdisk1,...
    disk = row("DISKBUSY")
    assert disk["metrics"] == ["DISKBUSY"] and disk["entities"][:3] == ["hdisk6", "hdisk2", "hdisk1"]
    assert list(nmon_row_values(disk))[2] == ("hdisk1", "DISKBUSY", 0.7)
    # NET,T0002,0.0,2.0,... under NET,Network I/O aixlpar,en1-read-KB/s,en0-read-KB/s,...: parallel
    net = row("NET", "en0")
    assert len(net["entities"]) == len(net["metrics"]) == len(net["values"]) == 6
    assert list(nmon_row_values(net))[1] == ("en0", "read-KB/s", 2.0)
    # MEMNEW,T0002,9.1,70.7,...: host-wide
    mem = row("MEMNEW")
    assert mem["entities"] == [""] and list(nmon_row_values(mem))[1] == ("", "FScache%", 70.7)
    # TOP,2687140,T0002,0.40,0.00,0.40,16,...,syncd,Unclassified
    top = row("TOP", "2687140 syncd")
    assert top["entities"] == ["2687140 syncd"]
    assert ("2687140 syncd", "Threads", 16.0) in list(nmon_row_values(top))
    # every value of the file is reachable as (entity, metric, value)
    for snap in snaps:
        for r in snap["rows"]:
            assert len(list(nmon_row_values(r))) == len(r["values"])


# The same assertions on the project's own files (src/fleetperf/sources/nmon/testdata/, README.md
# there), so a clone without the third-party corpus checks them too. Expected values are the
# numbers written in those files (file and line cited).

TESTDATA = Path(__file__).resolve().parents[2] / "src" / "fleetperf" / "sources" / "nmon" / "testdata"


def test_own_aix_lpar_physc_and_entitlement() -> None:
    good, bad = records(TESTDATA / "powerlpar_topas.nmon")
    assert bad == [] and len(good) == 3
    t2 = next(r for r in good if r["origin_snapshot"] == "T0002")
    # powerlpar_topas.nmon line 40: LPAR,T0002,2.215,4,16,32,1.50,128,0.00,...
    assert (t2["physc"], t2["entitled"], t2["virtual_cpus"]) == (2.215, 1.50, 4)
    assert (t2["pool_cpus"], t2["pool_idle"]) == (32.0, 0.0)
    # line 39: CPU_ALL,T0002,32.1,21.4,0.1,44.4,,16 under "User%  ,Sys%  ,..." (blanks stripped)
    assert (t2["user_pct"], t2["sys_pct"], t2["wait_pct"], t2["idle_pct"], t2["cpus"]) == (32.1, 21.4, 0.1, 44.4, 16)
    assert t2["steal_pct"] is None
    assert t2["host_id"] == "78ABC12-9" and t2["hostname"] == "powerlpar"
    assert good[0]["ts"] == ms("2024-03-05 08:05:00") and t2["interval_s"] == 300.0


def test_own_linux_steal_column_and_quirks() -> None:
    out = by_topic(TESTDATA / "linuxvm_nmon16.nmon")
    good, bad = out["cpu_samples"], out["dead_letters"]
    # -1 in PROC/MEM, a negative VM delta, DISKBUSY 101.0 and -nan in JFSFILE are no errors
    assert bad == []
    # 5 ZZZZ lines, the last one with no data after it
    assert len(good) == 4 and {r["host_id"] for r in good} == {"linuxvm"}
    t3 = next(r for r in good if r["origin_snapshot"] == "T0003")
    # linuxvm_nmon16.nmon line 50: CPU_ALL,T0003,18.5,3.0,0.5,75.5,1.5,,2
    assert (t3["user_pct"], t3["sys_pct"], t3["wait_pct"], t3["idle_pct"], t3["steal_pct"], t3["cpus"]) == (
        18.5,
        3.0,
        0.5,
        75.5,
        1.5,
        2,
    )
    assert t3["ts"] == ms("2022-09-18 12:01:02")
    snap = next(s for s in out["nmon_snapshots"] if s["origin_snapshot"] == "T0003")
    rows = {r["section"]: r for r in snap["rows"]}
    assert rows["DISKBUSY"]["values"] == [101.0, 0.0, 6.0, None]  # line 55; the trailing comma: an empty cell
    assert rows["JFSFILE"]["values"] == [41.2, 22.0, None, None]  # line 56: -nan is no value
    assert rows["PROC"]["values"][3] == -1.0  # line 53: nmon's "not available" is kept as written


def test_own_nmon13_has_no_steal_column() -> None:
    good, bad = records(TESTDATA / "oldbox_nmon13.nmon")
    assert bad == [] and len(good) == 3
    assert {r["steal_pct"] for r in good} == {None}
    assert good[0]["user_pct"] == 1.5 and good[0]["cpus"] == 2  # line 13: CPU_ALL,T0001,1.5,1.0,0.0,96.5,,2


def test_own_gzip_input_and_time_zone(tmp_path: Path) -> None:
    src = TESTDATA / "linuxvm_nmon16.nmon"
    gz = tmp_path / "linuxvm.nmon.gz"
    gz.write_bytes(gzip.compress(src.read_bytes()))
    plain, _ = records(src)
    packed, _ = records(gz, tz=ZoneInfo("Europe/Berlin"))
    assert len(packed) == len(plain) == 4
    # the same wall clock in Berlin (UTC+2 in September) is two hours earlier in UTC
    assert plain[0]["ts"] - packed[0]["ts"] == 2 * 3600 * 1000


def test_own_rows_name_a_shared_entity_or_metric_once() -> None:
    from fleetperf.warehouse.rows import nmon_row_values

    snaps = by_topic(TESTDATA / "powerlpar_topas.nmon")["nmon_snapshots"]
    t2 = next(s for s in snaps if s["origin_snapshot"] == "T0002")

    def row(section: str, entity: str | None = None) -> dict:
        return next(r for r in t2["rows"] if r["section"] == section and (entity is None or entity in r["entities"]))

    # line 38: CPU01,T0002,32.5,20.0,0.2,46.3 under CPU01,CPU 1 powerlpar,User%,Sys%,Wait%,Idle%
    cpu = row("CPU", "1")
    assert (cpu["entities"], cpu["metrics"]) == (["1"], ["User%", "Sys%", "Wait%", "Idle%"])
    assert list(nmon_row_values(cpu))[1] == ("1", "Sys%", 20.0)
    # line 43: DISKBUSY,T0002,0.0,0.2,1.7 under DISKBUSY,Disk %Busy powerlpar,hdisk2,hdisk0,hdisk1
    disk = row("DISKBUSY")
    assert disk["metrics"] == ["DISKBUSY"] and disk["entities"] == ["hdisk2", "hdisk0", "hdisk1"]
    assert list(nmon_row_values(disk))[2] == ("hdisk1", "DISKBUSY", 1.7)
    # line 42: NET,T0002,1.5,2.0,0.5,1.0 under en0-read-KB/s,en1-read-KB/s,...: parallel lists
    net = row("NET", "en0")
    assert len(net["entities"]) == len(net["metrics"]) == len(net["values"]) == 4
    assert list(nmon_row_values(net))[1] == ("en1", "read-KB/s", 2.0)
    # line 41: MEMNEW,T0002,30.1,60.7,...: host-wide
    mem = row("MEMNEW")
    assert mem["entities"] == [""] and list(nmon_row_values(mem))[1] == ("", "FScache%", 60.7)
    # line 44: TOP,520342,T0002,2.40,2.00,0.40,12,...,oracle,Unclassified
    top = row("TOP", "520342 oracle")
    assert top["entities"] == ["520342 oracle"] and top["labels"]["WLMclass"] == "Unclassified"
    assert ("520342 oracle", "Threads", 12.0) in list(nmon_row_values(top))
    for snap in snaps:
        for r in snap["rows"]:
            assert len(list(nmon_row_values(r))) == len(r["values"])
