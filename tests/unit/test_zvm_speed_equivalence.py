"""The reader's precompiled per-layout plans (one struct per layout, the length rule worked out once)
against the layout table read the plain way: every field sliced at its offset, every length judged
by RecordLayout.check_length and need. Guards the speed-ups in sources/zvm/monitor.py."""

from __future__ import annotations

import pytest

from fleetperf.sources.zvm import monitor_layouts as lay
from fleetperf.sources.zvm.monitor import Damage, MonRecord, _plan, read_any
from tests.unit.test_zvm_monitor import _mutants, appldata_capture, fcx112_monitor_data, monreader, monwrite


def _field(f: lay.Field, data: bytes, at: int) -> object:
    raw = data[at + f.offset : at + f.offset + f.size]
    if f.type.startswith("ebcdic"):
        return raw.decode(lay.EBCDIC).rstrip(" \0")
    if f.type.startswith("raw"):
        return raw
    return int.from_bytes(raw, "big", signed=f.type.startswith("s"))


def _reference(layout: lay.RecordLayout, data: bytes, at: int, unverified: bool) -> dict[str, object]:
    fields = sorted(layout.decoded(unverified), key=lambda f: f.offset)
    return {f.name: _field(f, data, at) for f in fields}


@pytest.mark.parametrize("unverified", [False, True])
def test_the_length_rule_of_each_plan_is_check_length_and_need_for_every_length(unverified: bool) -> None:
    for layout in lay.LAYOUTS.values():
        plan = _plan(layout, unverified)
        need = layout.need(layout.decoded(unverified))
        assert plan.need == need
        for length in range(1 << 16):
            level, why = layout.check_length(length)
            passes = not why and length >= need
            fast = plan.level_of.get(length)
            assert (length >= plan.need and (fast is not None or length >= plan.min_ok)) == passes, (layout, length)
            if passes:
                assert fast == level, (layout.name, length)


@pytest.mark.parametrize("unverified", [False, True])
def test_decoded_records_are_the_table_read_field_by_field(unverified: bool) -> None:
    two_captures = monreader(fcx112_monitor_data()[:3]) + appldata_capture()
    inputs = [monwrite(fcx112_monitor_data()), monreader(fcx112_monitor_data()), appldata_capture(), two_captures]
    inputs += _mutants(7, 120)
    decoded = appldata = 0
    for data in inputs:
        for item in read_any(data, unverified)[1]:
            if isinstance(item, Damage):
                assert item.message and item.offset >= 0
                continue
            assert isinstance(item, MonRecord)
            layout = lay.LAYOUTS.get((item.domain, item.record))
            if layout is None:
                assert item.fields is None and len(item.raw) == item.length
                continue
            # the record's offset is in the data, or (monreader) in the stream it was read from
            at = item.offset
            assert data[at : at + 2] == item.length.to_bytes(2, "big")
            fields = _reference(layout, data, at, unverified)
            assert item.fields == fields and list(item.fields) == list(fields)
            assert item.level == layout.check_length(item.length)[0]
            if item.appldata and "error" not in item.appldata:
                head = {f.name: _field(f, data, at + fields["data_offset"]) for f in lay.APPLDATA_OS}
                first, size = at + fields["data_offset"] + head["cpu_offset"], head["per_cpu_size"]
                wanted = [f for f in lay.APPLDATA_OS_CPU if f.offset + f.size <= size]
                cpus = [{f.name: _field(f, data, first + i * size) for f in wanted} for i in range(head["nr_cpus"])]
                assert item.appldata == head | {"cpus": cpus, "mod_lvl": item.appldata["mod_lvl"]}
                appldata += 1
            decoded += 1
    assert decoded > 1000 and (appldata > 10 or not unverified)
