"""The compiled Avro encoders (avro_plan.py) against fastavro, a library we did not write: on
records made from every topic's schema (NULLs, empty and non-empty maps and arrays, arrays of
records, extremes of int and long, non-ASCII text, false), plus long strings, maps and arrays whose
counts need two-byte varints, the bytes are fastavro's and fastavro's reader reads the record back.
A record the compiled encoder does not take is fastavro's to encode or refuse, as before."""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from fleetperf import config
from fleetperf.avro_plan import UnsupportedSchemaError, compile_encoder, writer
from tests.unit.test_sink_engine_rows import made

SETTINGS = config.load({})
KEYS = sorted(SETTINGS.topics)


def fastavro_bytes(parsed: Any, record: dict[str, Any]) -> bytes:  # noqa: ANN401
    buf = io.BytesIO()
    schemaless_writer(buf, parsed, record)
    return buf.getvalue()


def schema_of(key: str) -> dict[str, Any]:
    return json.loads(SETTINGS.topic(key).schema_text())


def grown(record: dict[str, Any], n: int) -> dict[str, Any]:
    """The record with every string n times longer and every map and array n times the entries."""
    out = {}
    for k, v in record.items():
        if isinstance(v, str):
            out[k] = v * n
        elif isinstance(v, dict) and v:
            out[k] = {f"{mk}{i}": mv for i in range(n) for mk, mv in v.items()}
        elif isinstance(v, list) and v:
            out[k] = [grown(x, 1) if isinstance(x, dict) else x for x in v] * n
        else:
            out[k] = v
    return out


@pytest.mark.parametrize("key", KEYS)
def test_every_topics_records_encode_to_fastavros_bytes(key: str) -> None:
    schema = schema_of(key)
    parsed = parse_schema(schema)
    encode = compile_encoder(schema)
    records = [made(schema, i, key) for i in range(40)]
    records += [grown(r, 70) for r in records[:8]]  # counts and lengths of two varint bytes and more
    checked = 0
    for record in records:
        body = encode(record)
        assert body == fastavro_bytes(parsed, record), record
        assert schemaless_reader(io.BytesIO(body), parsed) == schemaless_reader(
            io.BytesIO(fastavro_bytes(parsed, record)), parsed
        )
        checked += 1
    assert checked == 48


def test_numbers_at_their_limits_and_timestamps_as_datetimes() -> None:
    schema = {
        "type": "record",
        "name": "Edge",
        "fields": [
            {"name": "l", "type": "long"},
            {"name": "i", "type": ["null", "int"]},
            {"name": "d", "type": "double"},
            {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "s", "type": "string", "default": "x"},
            {"name": "nd", "type": ["null", "double"], "default": None},
        ],
    }
    parsed, encode = parse_schema(schema), compile_encoder(schema)
    t0 = datetime(1969, 12, 31, 23, 59, 59, 999500, tzinfo=UTC)
    for n, value in enumerate([0, 1, -1, 63, 64, -64, -65, 127, 128, 2**31 - 1, -(2**31), 2**63 - 1, -(2**63)]):
        small = value if -(2**31) <= value < 2**31 else None
        record = {"l": value, "i": small if n % 2 else None, "d": float(value), "t": t0 + timedelta(days=n), "s": "é"}
        record["nd"] = value if n % 3 else float(value)  # an int for ["null", "double"] too
        assert encode(record) == fastavro_bytes(parsed, record), record
    for special in (float("inf"), float("-inf"), -0.0, 5e-324, True):
        record = {"l": True, "i": None, "d": special, "t": 1_700_000_000_123}
        assert encode(record) == fastavro_bytes(parsed, record), record  # and "s" from its default


def test_what_the_compiled_encoder_does_not_take_is_fastavros_to_encode_or_refuse() -> None:
    schema = schema_of("derived_metrics")
    parsed, encode = parse_schema(schema), writer(schema)
    good = made(schema, 3, "derived")
    # fastavro takes a float for an int field (it truncates) and an int for a double: the same bytes
    for odd in ({**good, "samples": 7.9}, {**good, "value": 3}, {**good, "is_final": 1}):
        assert encode(odd) == fastavro_bytes(parsed, odd)
    cpu = schema_of("cpu_samples")
    for bad, parsed_bad, encode_bad in [
        ({**good, "entity_name": 5}, parsed, encode),
        ({**good, "value": "x"}, parsed, encode),
        ({**good, "samples": 2**64}, parsed, encode),
        ({**made(cpu, 1, "cpu"), "cpus": 7.0}, parse_schema(cpu), writer(cpu)),  # no branch of ["null", "int"]
        ({**made(cpu, 1, "cpu"), "cpus": 2**31}, parse_schema(cpu), writer(cpu)),
    ]:
        with pytest.raises((TypeError, ValueError, OverflowError)) as ours:
            encode_bad(bad)
        with pytest.raises(type(ours.value)):
            fastavro_bytes(parsed_bad, bad)
    # a schema it does not compile is fastavro's alone
    other = {"type": "record", "name": "U", "fields": [{"name": "u", "type": ["int", "string"]}]}
    with pytest.raises(UnsupportedSchemaError):
        compile_encoder(other)
    assert writer(other)({"u": "a"}) == fastavro_bytes(parse_schema(other), {"u": "a"})


def test_cached_strings_and_timestamps_are_fastavros_bytes_and_the_caches_stay_bounded() -> None:
    """The compiled encoders keep the strings and timestamps they wrote (avro_plan._STRINGS,
    _TIMESTAMPS): a value written again, or one that equals a kept one without being of its type
    (True == 1, 1.0 == 1, a str subclass), gives fastavro's bytes, and the caches never grow past
    CACHE_ENTRIES however many distinct values pass."""
    from fleetperf import avro_plan

    class Name(str):
        pass

    schema = {
        "type": "record",
        "name": "Cached",
        "fields": [
            {"name": "s", "type": "string"},
            {"name": "ns", "type": ["null", "string"]},
            {"name": "t", "type": {"type": "long", "logicalType": "timestamp-millis"}},
            {"name": "m", "type": {"type": "map", "values": "double"}},
        ],
    }
    parsed, encode = parse_schema(schema), writer(schema)
    seen = 0
    for round_ in range(3):  # the second and third rounds hit what the first one kept
        for i in range(avro_plan.CACHE_ENTRIES + 500):
            name = f"host{i % 700}"
            record = {
                "s": name if i % 5 else Name(name),
                "ns": None if i % 7 == 0 else "é" * (i % 300),  # past CACHE_STRING_CHARS too
                "t": 1_700_000_000_000 + i * (1000 if round_ < 2 else 1),
                "m": {"usr": 1.5, f"cpu{i % 3}": float(i)},
            }
            if i % 11 == 0:
                record["t"] = [True, 1, 1.0, datetime(2026, 1, 1, tzinfo=UTC)][i % 4]
            assert encode(record) == fastavro_bytes(parsed, record), record
            assert len(avro_plan._STRINGS) <= avro_plan.CACHE_ENTRIES
            assert len(avro_plan._TIMESTAMPS) <= avro_plan.CACHE_ENTRIES
            seen += 1
    assert seen == 3 * (avro_plan.CACHE_ENTRIES + 500)
    assert all(len(s) <= avro_plan.CACHE_STRING_CHARS for s in avro_plan._STRINGS)
    assert all(type(s) is str for s in avro_plan._STRINGS)
    # a value of another type that equals a kept string or timestamp is never taken for it
    avro_plan._STRINGS["5"] = b"\x025"
    with pytest.raises((TypeError, ValueError, AttributeError)):
        encode({"s": 5, "ns": None, "t": 1, "m": {}})
    with pytest.raises((TypeError, ValueError, AttributeError)):
        fastavro_bytes(parsed, {"s": 5, "ns": None, "t": 1, "m": {}})
