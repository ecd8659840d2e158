"""CP monitor reader and collector against records built from IBM's published layouts.

The builder below holds IBM's offsets as literals next to the page each was read on; it does NOT
use the reader's layout table (a wrong offset in the table would round-trip through a writer built
from it). Offsets IBM's text did not confirm are marked UNVERIFIED here too, with their evidence.
No public real capture exists.
"""

from __future__ import annotations

import random
import struct
import time
import tracemalloc
from datetime import UTC, datetime

import pytest

from fleetperf import config
from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm.monitor import Damage, MonreaderStream, MonRecord, read_any, tod_to_unix_us
from fleetperf.sources.zvm.monitor_records import WITHHELD_GUEST_CPU, Options, records_of_bytes

VM = "https://www.vm.ibm.com/pubs"
SUPPORT = "https://www.ibm.com/support/pages/zvm/pubs"
T0 = datetime(2011, 9, 12, 10, 0, tzinfo=UTC)
EPOCH_1900_TO_1970_S = 2208988800

# ---------------------------------------------------------------------------------------------------
# IBM's layouts as literals: (record, IBM field) -> (offset, length, type), with the page
# ---------------------------------------------------------------------------------------------------
# MRHDR, every page (e.g. VM/mon620/MRUSEACT.HTML): 0 MRHDRLEN u2, 2 MRHDRZER u2, 4 MRHDRDM u1, 5 *,
# 6 MRHDRRC u2, 8 MRHDRTOD char 8 (TOD clock), 16 * char 4; data from 20 (offsets count from record start)
MRHDR = struct.Struct(">HHBBHQ4x")
IBM_ROWS: dict[tuple[str, str], tuple[int, int, str, str]] = {
    ("MRUSEACT", "USEACT_VMDUSER"): (20, 8, "Character", f"{VM}/mon620/MRUSEACT.HTML"),
    ("MRUSEACT", "USEACT_VMDCPUAD"): (28, 2, "Unsigned", f"{VM}/mon620/MRUSEACT.HTML"),
    ("MRUSEACT", "USEACT_VMDSLIST"): (32, 1, "Bitstring", f"{VM}/mon620/MRUSEACT.HTML"),  # not a timer
    ("MRUSELON", "USELON_VMDUSER"): (20, 8, "Character", f"{VM}/mon640/MRUSELON.HTML"),
    ("MRUSELON", "USELON_VMDCPUAD"): (28, 2, "Unsigned", f"{VM}/mon640/MRUSELON.HTML"),
    ("MRUSELOF", "USELOF_VMDUSER"): (20, 8, "Character", f"{VM}/mon620/MRUSELOF.HTML"),
    ("MRUSELOF", "USELOF_VMDCPUAD"): (28, 2, "Unsigned", f"{VM}/mon620/MRUSELOF.HTML"),
    ("MRSYTPRP", "SYTPRP_PFXCPUAD"): (20, 2, "Unsigned", f"{VM}/mon640/MRSYTPRP.HTML"),
    ("MRSYTPRP", "SYTPRP_PFXPRBTM"): (24, 8, "Character", f"{VM}/mon640/MRSYTPRP.HTML"),  # "advances down"
    ("MRSYTPRP", "SYTPRP_PFXUTIME"): (32, 8, "Character", f"{VM}/mon640/MRSYTPRP.HTML"),
    ("MRSYTASG", "SYTASG_CAL90FUL"): (20, 4, "Unsigned", f"{VM}/mon740/MRSYTASG.HTML"),
    ("MRSYTASG", "SYTASG_CAL91FUL"): (24, 4, "Unsigned", f"{VM}/mon740/MRSYTASG.HTML"),
    ("MRSYTASG", "SYTASG_CALSLTA1"): (28, 4, "Unsigned", f"{VM}/mon740/MRSYTASG.HTML"),
    ("MRSYTUSR", "SYTUSR_SYSUSRS"): (20, 4, "Unsigned", f"{VM}/mon640/MRSYTUSR.HTML"),
    ("MRSYTUSR", "SYTUSR_SRMCDORM"): (24, 4, "Unsigned", f"{VM}/mon640/MRSYTUSR.HTML"),
    ("MRSYTSCG", "SYTSCG_SRMCDISP"): (20, 2, "Unsigned", f"{VM}/mon710/MRSYTSCG.HTML"),
    ("MRMTRSYS", "MTRSYS_HCPCPEID"): (28, 8, "Character", f"{VM}/mon620/MRMTRSYS.HTML"),
}
# IBM's "Structure" lengths used below: MRUSEACT 508 (VM/mon620/MRUSEACT.HTML), MRSYTPRP 352
# (VM/mon640/MRSYTPRP.HTML), MRUSELON 180 (VM/mon640/MRUSELON.HTML), MRUSELOF 496
# (VM/mon620/MRUSELOF.HTML), MRSYTUSR 108 (VM/mon640/MRSYTUSR.HTML), MRSYTASG 112
# (VM/mon740/MRSYTASG.HTML), MRMTRSYS 428 (VM/mon620/MRMTRSYS.HTML), MRMTREND 20
# (SUPPORT/mon730/mrmtrend.html), MRMTREOF 20 (SUPPORT/mon730/mrmtreof.html)
USEACT_LEN, SYTPRP_LEN, USELON_LEN, USELOF_LEN, SYTUSR_LEN, SYTASG_LEN, MTRSYS_LEN = 508, 352, 180, 496, 108, 112, 428
# UNVERIFIED (no IBM row read): MRUSEACT VMDTTIME/VMDVTIME at 36/44 (zpmd's z/VM 5.3 MRUSELOF struct,
# packed; IBM's 6.2 row at 32 is the 1-byte VMDSLIST, so 32/40 cannot be right); MRSYTPRP PFXTOTWT at
# 68 (zpmd); MRMTRSYS system id at 88; MRAPLSDT header 20/22/24/32/48 (sums to IBM's Structure 52)
USEACT_VMDTTIME, USEACT_VMDVTIME, SYTPRP_PFXTOTWT, MTRSYS_SYSTEM_ID = 36, 44, 68, 88
# Complement form (VM/perf/tips/vcputime.html; PFXPRBTM "starts at x'7FFFFFFFF_00000000' and advances
# down"): a timer holds START - accrued. Any start gives the same deltas; two different ones are used.
START_A, START_B = 0x7FFFFFFF_00000000, 0x7FFFFFF0_12345000
# MONWRITE control record (VM/cp640/MWTBK.HTML): 40 MWTCAFLG x'E2' sample, 44 MWTCASTR, 48 MWTCAEND
FRAME = 4096


def _tod(seconds_after_t0: float) -> int:
    us = round(T0.timestamp() * 1_000_000) + round(seconds_after_t0 * 1_000_000)
    return (us + EPOCH_1900_TO_1970_S * 1_000_000) << 12  # TOD bit 51 = 1 microsecond


def _units(seconds: float) -> int:
    return round(seconds * 1e6) << 12  # CPU timer: bit 51 = 1 microsecond


def _ebcdic8(text: str) -> bytes:
    return text.ljust(8).encode("cp037")


def record(domain: int, number: int, tod: int, length: int, puts: tuple[tuple[int, str, object], ...] = ()) -> bytes:
    buf = bytearray(length)
    MRHDR.pack_into(buf, 0, length, 0, domain, 0, number, tod)
    for offset, fmt, value in puts:
        struct.pack_into(">" + fmt, buf, offset, value)
    return bytes(buf)


def mruseact(user: str, vcpu: int, tod: int, ttime: int, vtime: int, length: int = USEACT_LEN) -> bytes:
    return record(4, 3, tod, length, ((20, "8s", _ebcdic8(user)), (28, "H", vcpu),
                                      (USEACT_VMDTTIME, "Q", ttime), (USEACT_VMDVTIME, "Q", vtime)))  # fmt: skip


def mruselon(user: str, tod: int) -> bytes:
    return record(4, 1, tod, USELON_LEN, ((20, "8s", _ebcdic8(user)), (28, "H", 0)))


def mruselof(user: str, tod: int) -> bytes:
    return record(4, 2, tod, USELOF_LEN, ((20, "8s", _ebcdic8(user)), (28, "H", 0)))


def mrsytprp(cpu: int, tod: int, prbtm: int, wait: int) -> bytes:
    return record(0, 2, tod, SYTPRP_LEN, ((20, "H", cpu), (24, "Q", prbtm), (32, "Q", prbtm - _units(1)),
                                          (SYTPRP_PFXTOTWT, "Q", wait)))  # fmt: skip


def mrsytusr(tod: int, logged: int, dormant: int) -> bytes:
    return record(0, 8, tod, SYTUSR_LEN, ((20, "I", logged), (24, "I", dormant)))


def mrsytasg(tod: int, full90: int, spool90: int, slots: int) -> bytes:
    return record(0, 6, tod, SYTASG_LEN, ((20, "I", full90), (24, "I", spool90), (28, "I", slots)))


def mrmtrsys(tod: int, system: str) -> bytes:
    return record(1, 4, tod, MTRSYS_LEN, ((28, "8s", _ebcdic8("7.3.0")), (MTRSYS_SYSTEM_ID, "8s", _ebcdic8(system))))


def mrmtrend(tod: int) -> bytes:
    return record(1, 11, tod, 20)


def frames(records: list[bytes]) -> list[bytes]:
    """Records in 4K frames; a frame that cannot take the next record ends with MRMTREOF and zeros."""
    out, frame = [], bytearray()
    for rec in records:
        if len(frame) + len(rec) + 20 > FRAME:
            frame += record(1, 13, struct.unpack_from(">Q", frame, 8)[0], 20)
            out.append(bytes(frame.ljust(FRAME, b"\0")))
            frame = bytearray()
        frame += rec
    if frame:
        out.append(bytes(frame.ljust(FRAME, b"\0")))
    return out


def monwrite(records: list[bytes], frames_per_control: int = 3) -> bytes:
    """MONWRITE output: a control record (MWTBK) before each run of data frames."""
    data, out = frames(records), bytearray()
    for i in range(0, len(data), frames_per_control):
        run = data[i : i + frames_per_control]
        control = bytearray(FRAME)
        control[40] = 0xE2
        struct.pack_into(">ii", control, 44, 0x100000 + i * FRAME, 0x100000 + (i + len(run)) * FRAME - 1)
        out += control + b"".join(run)
    return bytes(out)


def monreader(records: list[bytes], frames_per_element: int = 2) -> bytes:
    """/dev/monreader: per element 12 bytes (two non-zero types, reserved, start, end inclusive) + frames."""
    data, out = frames(records), bytearray()
    for i in range(0, len(data), frames_per_element):
        run = b"".join(data[i : i + frames_per_element])
        start = 0x7F000000 + i * FRAME
        out += struct.pack(">BBHII", 2, 1, 0, start, start + len(run) - 1) + run
    return bytes(out)


# ---------------------------------------------------------------------------------------------------
# the seed's FCX112 example from monitor records
# ---------------------------------------------------------------------------------------------------
SHARES = ((0, 0.75, START_A), (1, 0.25, START_B))  # each guest's time split over two virtual CPUs


def _interval(at: float, users: dict[str, tuple[float, float]], cpus: dict[int, tuple[float, float]]) -> list[bytes]:
    """One interval ending `at` s after T0: MRUSEACT per virtual CPU (timers accrued since logon, in
    complement form), MRSYTPRP per processor (emulation, wait; complement), MRSYTUSR, MRMTREND."""
    out = []
    for user, (total, virtual) in users.items():
        for vcpu, share, start in SHARES:
            out.append(
                mruseact(user, vcpu, _tod(at - 1), start - _units(total * share), start - _units(virtual * share))
            )
    for cpu, (wait, emulation) in cpus.items():
        out.append(mrsytprp(cpu, _tod(at - 1), START_A - _units(emulation), START_B - _units(wait)))
    out.append(mrsytusr(_tod(at - 1), 42, 30))
    out.append(mrmtrend(_tod(at)))
    return out


def fcx112_monitor_data(system: str = "VMLINUX7") -> list[bytes]:
    """Seed 004 L899-926 (FCX112): LNKDB2 TCPU .823 VCPU .818, LNKIHS .012/.011, RSCS .002/.001 in a
    60 s interval, as the timers of two samples."""
    base = {"LNKDB2": (500.0, 400.0), "LNKIHS": (20.0, 15.0), "RSCS": (3.0, 2.0)}
    used = [(0.823, 0.818), (0.012, 0.011), (0.002, 0.001)]
    after = {u: (t + d[0], v + d[1]) for (u, (t, v)), d in zip(base.items(), used, strict=True)}
    cpus0 = {0: (1000.0, 800.0), 1: (1100.0, 700.0)}
    cpus1 = {0: (1000.0 + 45.0, 800.0 + 12.0), 1: (1100.0 + 30.0, 700.0 + 25.0)}  # 15 s and 30 s busy
    return [mrmtrsys(_tod(-5), system)] + _interval(0, base, cpus0) + _interval(60, after, cpus1)


def _out(data: bytes, **options: object) -> tuple[list, dict[str, int]]:
    emitted, counts = records_of_bytes(data, "MONDATA", Options(**options))  # type: ignore[arg-type]
    return list(emitted), counts


def _topic(out: list, topic: str) -> list[dict]:
    return [e.record for e in out if e.topic_key == topic]


@pytest.mark.parametrize("form", [monwrite, monreader])
def test_fcx112_example_from_ibm_layout_records_with_the_unverified_cpu_fields(form) -> None:  # noqa: ANN001
    out, counts = _out(form(fcx112_monitor_data()), unverified=True)
    guests = {g["userid"]: g for g in _topic(out, "zvm_guest_samples")}
    assert set(guests) == {"LNKDB2", "LNKIHS", "RSCS"}
    assert all(g["zvm_system"] == "VMLINUX7" and g["interval_s"] == 60.0 for g in guests.values())
    floor = float(config.load()["flink"]["tv_min_virtual_seconds"])  # the Flink job's guard
    db2, ihs, rscs = guests["LNKDB2"], guests["LNKIHS"], guests["RSCS"]
    assert (round(db2["tcpu_s"], 6), round(db2["vcpu_s"], 6)) == (0.823, 0.818)
    assert round(db2["tcpu_s"] / db2["vcpu_s"], 2) == 1.01
    assert round(ihs["tcpu_s"] / ihs["vcpu_s"], 2) == 1.09 and ihs["vcpu_s"] >= floor
    assert round(rscs["vcpu_s"], 6) == 0.001 and rscs["vcpu_s"] < floor  # no ratio downstream
    (system,) = _topic(out, "zvm_system_samples")
    assert system["online_cpus"] == 2 and round(system["busy_pct"], 6) == round(45 / 120 * 100, 6)
    assert round(system["total_cpu_s"], 6) == 45.0 and round(system["virtual_cpu_s"], 6) == 37.0
    assert system["users_logged"] == 42
    assert counts["MRUSEACT"] == 12 and not _topic(out, "dead_letters")


def test_by_default_only_ibm_confirmed_fields_are_published() -> None:
    out, counts = _out(monwrite(fcx112_monitor_data()))
    assert not _topic(out, "zvm_guest_samples")  # MRUSEACT timers unverified: withheld, and counted
    assert counts[WITHHELD_GUEST_CPU] == 12
    (system,) = _topic(out, "zvm_system_samples")
    assert system["zvm_system"] == "ZVM"  # MRMTRSYS's system id offset is unverified
    assert round(system["virtual_cpu_s"], 6) == 37.0 and system["online_cpus"] == 2  # PFXPRBTM: verified
    assert system["busy_pct"] is None and system["total_cpu_s"] is None  # wait time unverified
    assert system["users_logged"] == 42
    out, _ = _out(monwrite(fcx112_monitor_data()), system="ZVMA")
    assert _topic(out, "zvm_system_samples")[0]["zvm_system"] == "ZVMA"


def test_the_layout_table_cites_ibm_for_every_field_and_agrees_with_ibms_rows() -> None:
    types = {"Character": ("ebcdic", "raw", "cputimer", "tod"), "Unsigned": ("u",), "Bitstring": ("raw", "u")}
    seen = set()
    for layout in lay.LAYOUTS.values():
        assert layout.lengths and all(u.startswith("https://www") for u in layout.urls), layout.name
        for f in layout.fields:
            assert f.url and f.offset >= 20 and f.size > 0, (layout.name, f.name)
            if f.verified:
                assert f.levels and "ibm.com" in f.url, (layout.name, f.name)
                offset, length, kind, _ = IBM_ROWS[(layout.name, f.ibm_name)]
                assert (f.offset, f.size) == (offset, length) and f.type.startswith(types[kind]), f.name
                seen.add((layout.name, f.ibm_name))
    assert seen == set(IBM_ROWS) - {("MRUSEACT", "USEACT_VMDSLIST")}
    useact = lay.LAYOUTS[(4, 3)]
    assert not [f for f in useact.fields if f.offset in (32, 40)]  # 32 is IBM's 1-byte VMDSLIST
    assert {f.name for f in useact.fields if not f.verified} == {"total_cpu_time", "virtual_cpu_time"}
    assert all(f.direction == "down" for f in useact.fields if f.type == "cputimer")
    prbtm = next(f for f in lay.LAYOUTS[(0, 2)].fields if f.ibm_name == "SYTPRP_PFXPRBTM")
    assert prbtm.verified and prbtm.direction == "down" and prbtm.direction_verified


def test_the_readme_states_each_fields_verification() -> None:
    readme = (config.REPO_ROOT / "src" / "fleetperf" / "sources" / "zvm" / "README.md").read_text()
    for layout in lay.LAYOUTS.values():
        row = readme[readme.index(f"{layout.domain}.{layout.record} {layout.name}") :]
        for f in layout.fields:
            assert f.name in row[: row.find("\n| 1", 1) if row.find("\n| 1", 1) > 0 else None], (layout.name, f.name)
    assert "6.1" in lay.LEVELS and "7.5" in lay.LEVELS


def test_a_guest_whose_cpu_did_not_move_is_a_sample_of_zero_seconds() -> None:
    idle = {"IDLE": (7.0, 5.0)}
    data = _interval(0, idle, {}) + _interval(60, idle, {}) + _interval(120, {"IDLE": (7.5, 5.25)}, {})
    out, _ = _out(monwrite(data), unverified=True)
    got = [(g["tcpu_s"], g["vcpu_s"]) for g in _topic(out, "zvm_guest_samples")]
    assert got == [(0.0, 0.0), (0.5, 0.25)]


def test_logon_and_logoff_records_start_a_new_session_and_a_rising_timer_is_refused() -> None:
    # LNX1 logs off and on inside the second interval: its timers restart near their start value
    # (they go up); the logon/logoff records say so, so that interval only sets a new base.
    a = _interval(0, {"LNX1": (100.0, 90.0), "LNX2": (10.0, 9.0)}, {})
    b = [mruselof("LNX1", _tod(20)), mruselon("LNX1", _tod(21))]
    b += _interval(60, {"LNX1": (0.5, 0.4), "LNX2": (11.0, 9.5)}, {})
    c = _interval(120, {"LNX1": (0.9, 0.6), "LNX2": (10.5, 9.6)}, {})  # LNX2's total goes up: not a logoff
    out, _ = _out(monwrite(a + b + c), unverified=True)
    got = [
        (g["userid"], g["ts"], round(g["tcpu_s"], 6), round(g["vcpu_s"], 6)) for g in _topic(out, "zvm_guest_samples")
    ]
    t60, t120 = (round(T0.timestamp() * 1000) + s * 1000 for s in (60, 120))
    assert got == [("LNX2", t60, 1.0, 0.5), ("LNX1", t120, 0.4, 0.2)]
    (letter,) = _topic(out, "dead_letters")
    assert "LNX2" in letter["error"] and "moved up" in letter["error"]


def test_a_user_missing_from_an_interval_logged_off() -> None:
    a = _interval(0, {"GONE": (50.0, 40.0)}, {})
    b = _interval(60, {}, {})  # not sampled: logged off
    c = _interval(120, {"GONE": (0.3, 0.2)}, {}) + _interval(180, {"GONE": (0.4, 0.25)}, {})
    out, _ = _out(monwrite(a + b + c), unverified=True)
    got = [(round(g["tcpu_s"], 6), round(g["vcpu_s"], 6)) for g in _topic(out, "zvm_guest_samples")]
    assert got == [(0.1, 0.05)] and not _topic(out, "dead_letters")


def test_a_length_no_zvm_level_has_is_a_dead_letter_with_its_length() -> None:
    ok = mruseact("LNX", 0, _tod(1), START_A, START_A)
    odd = mruseact("LNX", 0, _tod(1), START_A, START_A, length=450)  # IBM: 440 at 6.1, 508 at 6.2
    short = mruseact("LNX", 0, _tod(1), START_A, START_A, length=100)
    later = mruseact("LNX", 0, _tod(1), START_A, START_A, length=620)  # a later level or APAR: longer
    reader, items = read_any(monwrite([ok, odd, short, later, mrmtrend(_tod(2))]), unverified=True)
    items = list(items)
    damage = [i for i in items if isinstance(i, Damage)]
    assert [("450 bytes" in d.message, "100 bytes" in d.message) for d in damage] == [(True, False), (False, True)]
    assert all("no z/VM level has this length" in d.message for d in damage)
    recs = [i for i in items if isinstance(i, MonRecord) and i.domain == 4]
    assert [(r.length, r.level) for r in recs] == [(508, "6.2"), (620, None)]
    assert reader.counts["damaged"] == 2


def test_a_bit_flip_in_the_first_header_of_a_monwrite_frame_is_a_dead_letter_not_a_control_record() -> None:
    data = monwrite(fcx112_monitor_data(), frames_per_control=8)
    clean = [i for i in read_any(data, unverified=True)[1] if isinstance(i, MonRecord)]
    second = FRAME * 2  # the control record, the first data frame, then this frame
    assert any(r.offset == second for r in clean)
    for byte, bit in ((2, 0), (4, 4), (0, 7)):  # MRHDRZER, MRHDRDM (+16: no such domain), MRHDRLEN (+32768)
        broken = bytearray(data)
        broken[second + byte] ^= 1 << bit
        reader, items = read_any(bytes(broken), unverified=True)
        items = list(items)
        damage = [i for i in items if isinstance(i, Damage)]
        assert len(damage) == 1 and damage[0].offset == second and "frame at offset" in damage[0].message
        assert "reading went on" in damage[0].message and "MONWRITE control records" in reader.counts
        kept = [r.offset for r in items if isinstance(r, MonRecord)]
        assert kept == [r.offset for r in clean if r.offset != second]  # only the flipped record is lost


def test_monwrite_control_records_are_counted_and_empty_frames_skipped() -> None:
    data = monwrite(fcx112_monitor_data(), frames_per_control=1)
    reader, items = read_any(data + bytes(FRAME))
    assert not [i for i in items if isinstance(i, Damage)]
    assert reader.counts["MONWRITE control records"] == len(frames(fcx112_monitor_data()))
    assert reader.counts["empty frames"] == 1


def test_damage_inside_a_frame_is_reported_with_its_offset_and_reading_goes_on() -> None:
    data = monwrite(fcx112_monitor_data())
    clean = [i for i in read_any(data, unverified=True)[1] if isinstance(i, MonRecord)]
    victim = next(r for r in clean if r.domain == 4 and r.offset % FRAME)  # in the middle of a frame
    broken = bytearray(data)
    broken[victim.offset + 4] = 42  # domain 42 does not exist
    items = list(read_any(bytes(broken), unverified=True)[1])
    damage = [i for i in items if isinstance(i, Damage)]
    assert [d.offset for d in damage] == [victim.offset] and "domain 42" in damage[0].message
    assert len([i for i in items if isinstance(i, MonRecord)]) == len(clean) - 1
    cut = data[: FRAME + 500]  # the file ends inside a frame, inside a record
    items = list(read_any(cut)[1])
    assert any(isinstance(i, Damage) and "file ends inside the frame" in i.message for i in items)


def test_unknown_records_are_skipped_by_length_counted_and_kept_raw() -> None:
    odd = record(5, 99, _tod(1), 24, ((20, "I", 7),))
    reader, items = read_any(monwrite([odd, mrmtrend(_tod(2))]))
    got = [i for i in items if isinstance(i, MonRecord)]
    assert [(r.domain, r.record, r.known) for r in got] == [(5, 99, False), (1, 11, True)]
    assert got[0].raw == odd and reader.counts["unknown 5.99"] == 1


def test_storage_and_user_records_decode_the_ibm_confirmed_fields() -> None:
    recs = [mrsytasg(_tod(1), 3, 1, 0xFFFFFFFF), mrsytusr(_tod(1), 17, 9), mrmtrend(_tod(2))]
    got = {(r.domain, r.record): r.fields for r in read_any(monwrite(recs))[1] if isinstance(r, MonRecord)}
    assert got[(0, 6)] == {"paging_90pct_full_count": 3, "spool_90pct_full_count": 1, "paging_slots_total": 0xFFFFFFFF}
    assert got[(0, 8)] == {"users_logged": 17, "users_dormant": 9}


@pytest.mark.parametrize(
    "when",
    [
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2026, 11, 23, 1, 2, 3, 456789, tzinfo=UTC),  # microseconds survive
        datetime(2042, 9, 17, 23, 53, 47, 370495, tzinfo=UTC),  # the last microsecond before the TOD wraps
    ],
)
def test_tod_of_the_header_is_utc_microseconds(when: datetime) -> None:
    us = round(when.timestamp() * 1_000_000)
    tod = (us + EPOCH_1900_TO_1970_S * 1_000_000) << 12
    assert tod < 1 << 64 and tod_to_unix_us(tod) == us
    (item,) = [i for i in read_any(monwrite([mrmtrend(tod)]))[1] if isinstance(i, MonRecord)]
    assert item.unix_us == us


def test_monreader_stream_in_chunks_of_any_size_gives_every_record_once() -> None:
    records = fcx112_monitor_data() * 30
    stream = monreader(records, frames_per_element=3)
    whole = [(r.domain, r.record, r.fields) for r in read_any(stream)[1] if isinstance(r, MonRecord)]
    assert len([w for w in whole if w[:2] != (1, 13)]) == len(records)
    rnd = random.Random(7)
    for _ in range(5):
        feeder, got, pos = MonreaderStream(), [], 0
        while pos < len(stream):
            step = rnd.choice([1, 3, 12, 13, 100, 4095, 4096, 9000])
            got.extend(i for i in feeder.feed(stream[pos : pos + step]) if isinstance(i, MonRecord))
            pos += step
        got.extend(i for i in feeder.finish() if isinstance(i, MonRecord))
        assert [(r.domain, r.record, r.fields) for r in got] == whole


def test_a_broken_monitor_control_element_is_a_dead_letter_and_the_next_one_is_read() -> None:
    records = fcx112_monitor_data() * 4
    stream = bytearray(monreader(records, frames_per_element=1))
    clean = [r for r in read_any(bytes(stream))[1] if isinstance(r, MonRecord)]
    second = 12 + FRAME  # the second element's control element
    stream[second : second + 2] = b"\0\0"  # its type bytes
    items = list(read_any(bytes(stream))[1])
    damage = [i for i in items if isinstance(i, Damage)]
    assert [d.offset for d in damage] == [second] and "monitor control element" in damage[0].message
    kept = [r.offset for r in items if isinstance(r, MonRecord)]
    assert kept == [r.offset for r in clean if not second < r.offset < second + 12 + FRAME]


def _replay_seconds(mb: int) -> float:
    """A monreader capture of `mb` MB replayed whole (`parse`/`ingest` of a capture file) and in 64 KB
    reads (`collect --file`); the better of two runs."""
    element = monreader([mruseact("LNX", 0, _tod(1), START_A, START_A)] * 64, frames_per_element=8)
    capture = element * (mb * (1 << 20) // len(element))
    per_element = sum(1 for _ in MonreaderStream().feed(element))
    best = float("inf")
    for _ in range(2):
        t = time.process_time()
        n = sum(1 for _ in read_any(capture)[1])
        feeder = MonreaderStream()
        for pos in range(0, len(capture), 1 << 16):
            n += sum(1 for _ in feeder.feed(capture[pos : pos + (1 << 16)]))
        best = min(best, time.process_time() - t)
        assert n == 2 * len(capture) // len(element) * per_element
    return best


def test_replaying_a_monreader_capture_is_linear_in_its_size() -> None:
    small, large = _replay_seconds(10), _replay_seconds(40)
    assert large / small < 6, (small, large)  # 4x the data; quadratic slicing gave ~7x for 2x


# ---------------------------------------------------------------------------------------------------
# APPLDATA (Linux's appldata_os record; MRAPLSDT header offsets UNVERIFIED, see the module docstring)
# ---------------------------------------------------------------------------------------------------
def _cpu(user: int, system: int, idle: int, steal: int) -> dict[str, int]:
    return {"user": user, "nice": 0, "system": system, "idle": idle, "irq": 1, "softirq": 1, "iowait": 0,
            "steal": steal}  # fmt: skip


def appldata_os(user: str, tod: int, cpus: list[dict[str, int]], *, torn: bool = False) -> bytes:
    """MRAPLSDT (IBM Structure 52; header rows not read: 20 CALDATOF s2, 22 CALDATLN s2, 24 user id,
    32 product id 16, 48 status) + Linux appldata_os_data (52-byte head, 36 bytes per CPU, mod level 01)."""
    keys = ("user", "nice", "system", "idle", "irq", "softirq", "iowait", "steal")
    head = struct.pack(">QIIIIII", tod, 7, 8 if torn else 7, len(cpus), 36, 52, 2) + bytes(20)
    data = head + b"".join(struct.pack(">9I", *(c[k] for k in keys), i) for i, c in enumerate(cpus))
    product = "LNXAPPL".encode("cp037") + struct.pack(">HBHHH", 0, 2, 0, 0, 1)
    fixed = record(10, 2, tod, 52, ((20, "h", 52), (22, "h", len(data)), (24, "8s", _ebcdic8(user)),
                                    (32, "16s", product)))  # fmt: skip
    whole = bytearray(fixed + data)
    struct.pack_into(">H", whole, 0, len(whole))
    return bytes(whole)


def appldata_capture(system: str = "ZVMA", user: str = "LNXWEB1") -> bytes:
    """A monreader capture of three intervals of one Linux guest's APPLDATA OS: the second interval
    has CPU 0 with 600 of 6000 jiffies stolen (10 %) and CPU 1 with 1500 (25 %); the third is torn.
    Decoded only with Options(unverified=True) (the MRAPLSDT header offsets are unverified)."""
    recs = [mrmtrsys(_tod(-5), system)]
    recs += [appldata_os(user, _tod(-1), [_cpu(100, 50, 800, 10), _cpu(200, 20, 700, 30)]), mrmtrend(_tod(0))]
    recs += [appldata_os(user, _tod(59), [_cpu(2100, 1050, 3200, 610), _cpu(1700, 520, 3200, 1530)]),
             mrmtrend(_tod(60))]  # fmt: skip
    recs += [appldata_os(user, _tod(119), [_cpu(4000, 1100, 5000, 700)] * 2, torn=True), mrmtrend(_tod(120))]
    return monreader(recs)


def test_appldata_os_gives_per_cpu_steal_and_torn_records_are_refused() -> None:
    out, _ = _out(appldata_capture(), unverified=True)
    per_cpu = {r["item"]: r["metrics"] for r in _topic(out, "sysstat_samples")}
    assert round(per_cpu["0"]["steal"], 6) == 10.0 and round(per_cpu["1"]["steal"], 6) == 25.0
    assert round(per_cpu["all"]["steal"], 6) == 17.5
    (cpu,) = _topic(out, "cpu_samples")
    assert cpu["host_id"] == "ZVMA/LNXWEB1" and round(cpu["steal_pct"], 6) == 17.5 and cpu["interval_s"] == 60.0
    (letter,) = _topic(out, "dead_letters")
    assert "torn" in letter["error"] and letter["byte_offset"] > 0
    out, _ = _out(appldata_capture())  # by default: nothing from the unverified header
    assert not _topic(out, "cpu_samples") and not _topic(out, "sysstat_samples")


# ---------------------------------------------------------------------------------------------------
# seeded fuzz: mutants of the files above never raise, hang or grow memory without bound
# ---------------------------------------------------------------------------------------------------
def _mutants(seed: int, n: int) -> list[bytes]:
    rnd = random.Random(seed)
    linux = appldata_os("LNXF", _tod(30), [_cpu(1, 2, 3, 4)] * 3)
    logons = [mruselof("LNX1", _tod(20)), mruselon("LNX1", _tod(21)), mrsytasg(_tod(22), 1, 2, 3)]
    bases = [monwrite(fcx112_monitor_data()), monreader(fcx112_monitor_data()), appldata_capture(),
             monwrite(fcx112_monitor_data()[:8] + [linux] + logons + fcx112_monitor_data()[8:])]  # fmt: skip
    headers = {id(b): [r.offset for r in read_any(b, unverified=True)[1] if isinstance(r, MonRecord)] for b in bases}
    out = []
    for _ in range(n):
        base = rnd.choice(bases)
        data = bytearray(base)
        kind = rnd.randrange(6)
        if kind == 5:  # a bit flip or an absurd length in a record header
            at = rnd.choice(headers[id(base)])
            if rnd.random() < 0.5:
                data[at + rnd.randrange(20)] ^= 1 << rnd.randrange(8)
            else:
                struct.pack_into(">H", data, at, rnd.choice([0, 19, 20, 21, 439, 441, 4096, 0xFFFF]))
        elif kind == 0:  # bit flips
            for _ in range(rnd.randint(1, 8)):
                data[rnd.randrange(len(data))] ^= 1 << rnd.randrange(8)
        elif kind == 1:  # truncation
            del data[rnd.randrange(len(data)) :]
        elif kind == 2:  # an absurd record length at a record-ish position
            at = rnd.randrange(0, len(data) - 2)
            struct.pack_into(">H", data, at, rnd.choice([0, 1, 19, 21, 4095, 4097, 0xFFFF]))
        elif kind == 3:  # an absurd monitor control element / MWTBK address
            at = rnd.choice([0, 4, 8, 44, 48])
            struct.pack_into(">I", data, at, rnd.choice([0, 1, 0x7FFFFFFF, 0xFFFFFFFF]))
        else:  # a run of garbage
            at = rnd.randrange(len(data))
            data[at : at + 64] = bytes(rnd.randrange(256) for _ in range(64))
        out.append(bytes(data))
    return out


def test_fuzzed_monitor_data_never_raises_hangs_or_grows_memory() -> None:
    mutants = _mutants(2026, 300)
    tracemalloc.start()
    started = time.perf_counter()
    try:
        for i, data in enumerate(mutants):
            t = time.perf_counter()
            for unverified in (False, True):
                out, _ = _out(data, unverified=unverified)
                for letter in _topic(out, "dead_letters"):
                    assert letter["error"] and letter["byte_offset"] >= 0
            assert time.perf_counter() - t < 5, f"mutant {i} took too long"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 64 << 20, peak
    assert time.perf_counter() - started < 240
