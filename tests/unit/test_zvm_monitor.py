"""CP monitor collector against records written per the published layouts (no public capture exists)."""

from __future__ import annotations

import random
from datetime import UTC, datetime

import pytest

from fleetperf import config
from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm import monitor_writer as w
from fleetperf.sources.zvm.monitor import (
    Damage,
    MonreaderStream,
    MonRecord,
    decode_fields,
    read_any,
    tod_to_unix_us,
    unix_us_to_tod,
)
from fleetperf.sources.zvm.monitor_records import Options, records_of_bytes

T0 = datetime(2011, 9, 12, 10, 0, tzinfo=UTC)


def _us(dt: datetime) -> int:
    return round(dt.timestamp() * 1_000_000)


def _tod(seconds_after_t0: float) -> int:
    return unix_us_to_tod(_us(T0) + round(seconds_after_t0 * 1_000_000))


def _timer(seconds: float) -> int:
    return round(seconds * 1e6) << 12


@pytest.mark.parametrize(
    "when",
    [
        datetime(1900, 1, 1, tzinfo=UTC),  # TOD zero
        datetime(1970, 1, 1, tzinfo=UTC),
        datetime(2026, 11, 23, 1, 2, 3, 456789, tzinfo=UTC),  # microseconds survive
        datetime(2042, 9, 17, 23, 53, 47, 370495, tzinfo=UTC),  # the last microsecond before the TOD wraps
    ],
)
def test_tod_round_trip(when: datetime) -> None:
    us = _us(when)
    tod = unix_us_to_tod(us)
    assert 0 <= tod < 1 << 64
    assert tod_to_unix_us(tod) == us
    rec = w.record(1, 11, tod)
    (item,) = [i for i in read_any(w.monwrite_file([rec]))[1] if isinstance(i, MonRecord)]
    assert datetime.fromtimestamp(item.unix_us / 1e6, UTC).replace(microsecond=item.unix_us % 1_000_000) == when


@pytest.mark.parametrize("userid", ["LNXDB2", "$ALLOC$", "TCP@IP#1", "RSCS", "A"])
def test_every_layout_round_trips_with_ebcdic_user_ids(userid: str) -> None:
    rnd = random.Random(userid)
    written = []
    for (domain, number), layout in lay.LAYOUTS.items():
        if (domain, number) == (1, 13):
            continue  # end of frame: the writer puts it where a frame ends
        values = {}
        for f in layout.fields:
            if f.type.startswith("ebcdic"):
                values[f.name] = userid
            elif f.type.startswith("raw"):
                values[f.name] = bytes(rnd.randrange(256) for _ in range(f.size))
            elif f.type[0] == "s":
                values[f.name] = rnd.randrange(-(1 << (8 * f.size - 1)), 1 << (8 * f.size - 1))
            else:
                values[f.name] = rnd.randrange(1 << (8 * f.size))
        written.append(((domain, number), values, w.record(domain, number, _tod(len(written)), values)))
    raw = w.monwrite_file([r for _, _, r in written])
    assert raw[4096:4100] != raw[:4]  # a control page first, then frames
    for (key, values, rec), got in zip(written, (i for i in read_any(raw)[1] if isinstance(i, MonRecord)), strict=True):
        assert (got.domain, got.record) == key
        assert got.fields == values
        assert decode_fields(lay.LAYOUTS[key].fields, rec, 0) == values
    assert "LNXDB2".encode(lay.EBCDIC) == bytes.fromhex("d3d5e7c4c2f2")  # EBCDIC indeed


def _interval(at: float, users: dict[str, tuple[float, float]], cpus: dict[int, tuple[float, float]]) -> list[bytes]:
    """One sample interval ending `at` s after T0: MRUSEACT per user (its time split over two
    virtual CPUs), MRSYTPRP per processor (wait, emulation time), then MRMTREND."""
    out = []
    for user, (total, virtual) in users.items():
        for vcpu, share in ((0, 0.75), (1, 0.25)):
            values = {"userid": user, "vcpu_address": vcpu, "total_cpu_time": _timer(total * share),
                      "virtual_cpu_time": _timer(virtual * share)}  # fmt: skip
            out.append(w.record(4, 3, _tod(at - 1), values))
    for cpu, (wait, emulation) in cpus.items():
        out.append(w.record(0, 2, _tod(at - 1), {"cpu_address": cpu, "wait_time": _timer(wait),
                                                  "problem_state_time": _timer(emulation)}))  # fmt: skip
    out.append(w.record(1, 11, _tod(at)))
    return out


def _fcx112_monitor_data(system: str = "VMLINUX7") -> list[bytes]:
    """Seed 004 L899-926 (FCX112): LNKDB2 TCPU .823 VCPU .818, LNKIHS .012/.011, RSCS .002/.001 in
    a 60 s interval, as cumulative counters of two samples."""
    base = {"LNKDB2": (500.0, 400.0), "LNKIHS": (20.0, 15.0), "RSCS": (3.0, 2.0)}
    after = {u: (t + d[0], v + d[1]) for (u, (t, v)), d in zip(
        base.items(), [(0.823, 0.818), (0.012, 0.011), (0.002, 0.001)], strict=True)}  # fmt: skip
    config_records = [w.record(1, 4, _tod(-5), {"system_id": system, "systod_ipl": _tod(-86400)})]
    cpus0 = {0: (1000.0, 800.0), 1: (1100.0, 700.0)}
    cpus1 = {0: (1000.0 + 45.0, 800.0 + 12.0), 1: (1100.0 + 30.0, 700.0 + 25.0)}  # 15 s and 30 s busy
    return config_records + _interval(0, base, cpus0) + _interval(60, after, cpus1)


def test_fcx112_example_from_monitor_counters() -> None:
    emitted, counts = records_of_bytes(w.monwrite_file(_fcx112_monitor_data()), "MONDATA", Options())
    out = list(emitted)
    guests = {e.record["userid"]: e.record for e in out if e.topic_key == "zvm_guest_samples"}
    assert set(guests) == {"LNKDB2", "LNKIHS", "RSCS"}
    assert all(g["zvm_system"] == "VMLINUX7" and g["interval_s"] == 60.0 for g in guests.values())
    floor = float(config.load()["flink"]["tv_min_virtual_seconds"])  # the Flink job's guard
    db2, ihs, rscs = guests["LNKDB2"], guests["LNKIHS"], guests["RSCS"]
    assert (round(db2["tcpu_s"], 6), round(db2["vcpu_s"], 6)) == (0.823, 0.818)
    assert round(db2["tcpu_s"] / db2["vcpu_s"], 2) == 1.01
    assert round(ihs["tcpu_s"] / ihs["vcpu_s"], 2) == 1.09 and ihs["vcpu_s"] >= floor
    assert round(rscs["vcpu_s"], 6) == 0.001 and rscs["vcpu_s"] < floor  # no ratio downstream
    (system,) = [e.record for e in out if e.topic_key == "zvm_system_samples"]
    assert system["online_cpus"] == 2 and round(system["busy_pct"], 6) == round(45 / 120 * 100, 6)
    assert round(system["total_cpu_s"], 6) == 45.0 and round(system["virtual_cpu_s"], 6) == 37.0
    assert counts["MRUSEACT"] == 12 and counts["frames skipped (control records)"] == 1


def _records_and_damage(data: bytes) -> tuple[list[MonRecord], list[Damage]]:
    items = list(read_any(data)[1])
    return [i for i in items if isinstance(i, MonRecord)], [i for i in items if isinstance(i, Damage)]


def test_damage_is_reported_with_its_offset_and_reading_goes_on() -> None:
    good = _fcx112_monitor_data()
    clean, _ = _records_and_damage(w.monwrite_file(good))
    data = bytearray(w.monwrite_file(good))
    victim = next(r for r in clean if r.domain == 4)  # an MRUSEACT in the middle of a frame
    data[victim.offset + 4] = 42  # domain 42 does not exist
    records, damage = _records_and_damage(bytes(data))
    assert [d.offset for d in damage] == [victim.offset]
    assert "domain 42" in damage[0].message and "reading went on" in damage[0].message
    assert len(records) == len(clean) - 1  # only the broken record is lost
    assert [r.offset for r in records if r.offset != victim.offset] == [r.offset for r in records]

    data = bytearray(w.monwrite_file(good))
    data[victim.offset : victim.offset + 2] = (5000).to_bytes(2, "big")  # length runs past the frame
    records, damage = _records_and_damage(bytes(data))
    assert damage[0].offset == victim.offset and "runs past" in damage[0].message
    assert len(records) == len(clean) - 1

    cut = w.monwrite_file(good)[: 4096 + 500]  # the file ends inside a frame, inside a record
    records, damage = _records_and_damage(cut)
    assert "runs past" in damage[0].message and 4096 < damage[0].offset < 4096 + 500
    assert damage[-1].offset == 4096 and "file ends inside the frame" in damage[-1].message
    assert [r.offset for r in records] == [r.offset for r in clean if r.offset + r.length <= 4096 + 500]


def test_unknown_records_are_skipped_by_length_counted_and_kept_raw() -> None:
    odd = w.record(5, 99, _tod(1), payload=b"\x01\x02\x03\x04")
    reader, items = read_any(w.monwrite_file([odd, w.record(1, 11, _tod(2))]))
    got = [i for i in items if isinstance(i, MonRecord)]
    assert [(r.domain, r.record, r.known) for r in got] == [(5, 99, False), (1, 11, True)]
    assert got[0].raw == odd and reader.counts["unknown 5.99"] == 1


def test_monreader_stream_in_chunks_of_any_size_gives_every_record_once() -> None:
    records = _fcx112_monitor_data() * 30  # enough for several frames and control elements
    decoded = _records_and_damage(w.monreader_stream(records))[0]
    whole = [(r.offset, r.domain, r.record, r.fields) for r in decoded]
    assert len([r for r in decoded if (r.domain, r.record) != (1, 13)]) == len(records)  # + end-of-frame records
    stream = w.monreader_stream(records, frames_per_element=3)
    rnd = random.Random(7)
    for _ in range(5):
        feeder = MonreaderStream()
        got, pos = [], 0
        while pos < len(stream):
            step = rnd.choice([1, 3, 12, 13, 100, 4095, 4096, 9000])
            got.extend(i for i in feeder.feed(stream[pos : pos + step]) if isinstance(i, MonRecord))
            pos += step
        got.extend(i for i in feeder.finish() if isinstance(i, MonRecord))
        assert [(r.domain, r.record, r.fields) for r in got] == [(d, n, f) for _, d, n, f in whole]
    assert not [i for i in MonreaderStream().feed(stream) if isinstance(i, Damage)]


def _cpu(user: int, system: int, idle: int, steal: int) -> dict[str, int]:
    return {"user": user, "nice": 0, "system": system, "idle": idle, "irq": 1, "softirq": 1, "iowait": 0,
            "steal": steal}  # fmt: skip


def appldata_capture(system: str = "ZVMA", user: str = "LNXWEB1") -> bytes:
    """A monreader capture of three intervals of one Linux guest's APPLDATA OS: the second interval
    has CPU 0 with 600 of 6000 jiffies stolen (10 %) and CPU 1 with 1500 (25 %); the third is torn."""
    recs = [w.record(1, 4, _tod(-5), {"system_id": system})]
    recs += [w.appldata_os(user, _tod(-1), [_cpu(100, 50, 800, 10), _cpu(200, 20, 700, 30)]), w.record(1, 11, _tod(0))]
    recs += [w.appldata_os(user, _tod(59), [_cpu(2100, 1050, 3200, 610), _cpu(1700, 520, 3200, 1530)]),
             w.record(1, 11, _tod(60))]  # fmt: skip
    recs += [w.appldata_os(user, _tod(119), [_cpu(4000, 1100, 5000, 700)] * 2, torn=True), w.record(1, 11, _tod(120))]
    return w.monreader_stream(recs)


def test_appldata_os_gives_per_cpu_steal_and_torn_records_are_refused() -> None:
    out = list(records_of_bytes(appldata_capture(), "capture", Options())[0])
    per_cpu = {e.record["item"]: e.record["metrics"] for e in out if e.topic_key == "sysstat_samples"}
    assert round(per_cpu["0"]["steal"], 6) == 10.0 and round(per_cpu["1"]["steal"], 6) == 25.0
    assert round(per_cpu["all"]["steal"], 6) == 17.5
    (cpu,) = [e.record for e in out if e.topic_key == "cpu_samples"]
    assert cpu["host_id"] == "ZVMA/LNXWEB1" and round(cpu["steal_pct"], 6) == 17.5 and cpu["interval_s"] == 60.0
    (letter,) = [e.record for e in out if e.topic_key == "dead_letters"]
    assert "torn" in letter["error"] and letter["byte_offset"] > 0
