"""Cpu samples, derived metrics (the job's window records and the per-metric ones of older jobs)
and anomaly flags read by the engine (sink.ENGINE_DECODED, issue 24
goal 1: a fleet's backfill is mostly these small records) store exactly the rows of their records.

The expected rows are written out here from the records this test encodes (not through the sink's
RowMapper); the Python path (engine_decode=False) runs beside it as a second check. Edge values
that a type mapping could get wrong are in the records: NULLs of every nullable column, negative
and fractional numbers, a timestamp with milliseconds, an empty string, non-ASCII text, false. A
newer schema version with one more field (BACKWARD compatible) is read too, and a broken message
among good ones is a dead letter alone.
"""

from __future__ import annotations

import io
import json
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer

from fleetperf import config
from fleetperf.warehouse.sink import ENGINE_DECODED, Sink, TransientError, UndecodableError
from tests.unit.test_sink_durability import Consumer, Msg

SETTINGS = config.load({})
T0 = datetime(2026, 3, 31, 23, 59, 59, 123000, tzinfo=UTC)  # milliseconds, and a month boundary


def _schemas(key: str) -> tuple[dict[str, Any], dict[str, Any]]:
    v1 = json.loads(SETTINGS.topic(key).schema_text())
    v2 = {**v1, "fields": [*v1["fields"], {"name": "note", "type": "string", "default": ""}]}
    return v1, v2


IDS = {
    31: ("cpu_samples", _schemas("cpu_samples")[0]),
    32: ("cpu_samples", _schemas("cpu_samples")[1]),
    41: ("derived_metrics", _schemas("derived_metrics")[0]),
    42: ("derived_metrics", _schemas("derived_metrics")[1]),
    43: ("derived_windows", _schemas("derived_windows")[0]),
    44: ("derived_windows", _schemas("derived_windows")[1]),
    51: ("anomaly_flags", _schemas("anomaly_flags")[0]),
    52: ("anomaly_flags", _schemas("anomaly_flags")[1]),
}
# the other collectors' topics (records made from their schemas below): ids 61, 62; 71, 72; ...
OTHER_KEYS = (
    "sysstat_samples",
    "zvm_guest_samples",
    "zvm_system_samples",
    "lpar_samples",
    "hpm_samples",
    "net_port_samples",
    "host_configs",
)
OTHER_IDS = {key: (61 + 10 * n, 62 + 10 * n) for n, key in enumerate(OTHER_KEYS)}
for _key, (_v1, _v2) in OTHER_IDS.items():
    IDS[_v1], IDS[_v2] = ((_key, schema) for schema in _schemas(_key))
PARSED = {sid: parse_schema(schema) for sid, (_key, schema) in IDS.items()}


def registry(schema_id: int) -> Any:  # noqa: ANN401
    if schema_id not in PARSED:
        raise UndecodableError(f"schema id {schema_id} is unknown to the registry (404)")
    return PARSED[schema_id]


def frame(record: dict[str, Any], schema_id: int) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\0" + schema_id.to_bytes(4, "big"))
    schemaless_writer(buf, PARSED[schema_id], record)
    return buf.getvalue()


def cpu_sample(i: int) -> dict[str, Any]:
    aix = i % 2 == 0
    return {
        "host_id": f"02ABCDE-{i}" if aix else f"lnx-ümlaut-{i}",
        "hostname": f"host{i}",
        "ts": T0 + timedelta(seconds=30 * i),
        "interval_s": 30.0,
        "source": "nmon" if aix else "sadc",
        "user_pct": 12.5 + i,
        "sys_pct": 0.0,
        "wait_pct": None,
        "idle_pct": 87.25 - i,
        "steal_pct": None if aix else 0.1 * i,
        "cpus": 8,
        "physc": 0.125 * i if aix else None,
        "entitled": 1.5 if aix else None,
        "virtual_cpus": 2 if aix else None,
        "pool_cpus": 16.0 if aix else None,
        "pool_idle": -0.0 if aix else None,
        "origin_file": "" if i == 3 else f"/perf/h{i}.nmon",
        "origin_snapshot": f"T{i:04d}",
        **({"note": "v2"} if i % 3 == 1 else {}),
    }


def derived_metric(i: int) -> dict[str, Any]:
    return {
        "entity_id": f"lpar{i % 3}",
        "entity_name": "" if i == 4 else f"LPAR Ü{i % 3}",
        "metric": ("busy_pct", "steal_pct", "physc")[i % 3],
        "window_start": T0 + timedelta(minutes=i),
        "window_end": T0 + timedelta(minutes=i + 1),
        "value": -1.5e-7 if i == 2 else 1e12 + i,
        "samples": 2**31 - 1 if i == 1 else i,
        "is_final": i % 4 != 0,
        "emitted_at": T0 + timedelta(minutes=i + 1, milliseconds=7),
        **({"note": "v2"} if i % 3 == 1 else {}),
    }


def derived_window(i: int) -> dict[str, Any]:
    """The job's record of window i (derived_window.avsc): one to four metrics."""
    return {
        "entity_id": f"lpar{i % 3}",
        "entity_name": "" if i == 4 else f"LPAR Ü{i % 3}",
        "window_start": T0 + timedelta(minutes=i),
        "window_end": T0 + timedelta(minutes=i + 1),
        "is_final": i % 4 != 0,
        "emitted_at": T0 + timedelta(minutes=i + 1, milliseconds=7),
        "metrics": [
            {
                "metric": ("busy_pct", "steal_pct", "physc", "entc_pct")[k],
                "value": -1.5e-7 if i == 2 else 1e12 + i + k / 8,
                "samples": 2**31 - 1 if i == 1 else i + k,
            }
            for k in range(1 + i % 4)
        ],
        **({"note": "v2"} if i % 3 == 1 else {}),
    }


def anomaly_flag(i: int) -> dict[str, Any]:
    baseline = i % 2 == 1
    return {
        "entity_id": f"lpar{i % 3}",
        "entity_name": "" if i == 4 else f"LPAR Ü{i % 3}",
        "metric": ("busy_pct", "steal_pct", "physc")[i % 3],
        "rule": "baseline" if baseline else f"rule-{i}",
        "kind": "baseline" if baseline else "rule",
        "window_start": T0 + timedelta(minutes=i),
        "window_end": T0 + timedelta(minutes=i + 1),
        "observed": -1.5e-7 if i == 2 else 97.125 + i,
        "threshold": None if i == 3 else 90.0,
        "baseline": 12.5 if baseline else None,
        "severity": ("warning", "critical")[i % 2],
        "explanation": f"steal {i} % > 10 % (DOMAIN.md §4 — ü)",
        "incident_id": f"lpar{i % 3}|m|r|{i}",
        "incident_start": T0 + timedelta(minutes=i - 2),
        "incident_end": T0 + timedelta(minutes=i + 1) if i % 4 == 0 else None,
        "incident_peak": 99.5,
        "incident_windows": 2**31 - 1 if i == 1 else i,
        "emitted_at": T0 + timedelta(minutes=i + 1, milliseconds=7),
        **({"note": "v2"} if i % 3 == 1 else {}),
    }


def naive(ts: datetime) -> datetime:
    return ts.astimezone(UTC).replace(tzinfo=None)


# written out from the records above, in the table's column order (the schemas' fields)
CPU_COLUMNS = [f["name"] for f in IDS[31][1]["fields"]]
DERIVED_COLUMNS = [f["name"] for f in IDS[41][1]["fields"]]
FLAG_COLUMNS = [f["name"] for f in IDS[51][1]["fields"]]


def expected(records: list[dict[str, Any]], columns: list[str]) -> list[tuple]:
    return sorted(
        (tuple(naive(r[c]) if isinstance(r[c], datetime) else r[c] for c in columns) for r in records), key=repr
    )


def stored(ch: Any, table: str, columns: list[str]) -> list[tuple]:  # noqa: ANN401
    return sorted(ch.query(f"SELECT {', '.join(columns)} FROM {table}").result_rows, key=repr)


def _run(settings: config.Settings, ch: Any, msgs: list[Msg], engine: bool = True) -> tuple[Sink, Consumer]:  # noqa: ANN401
    sink = Sink(settings, ch, fetch=registry, engine_decode=engine)
    sink.batch_rows = 4  # several batches, several containers
    sink.batch_seconds = 3600.0
    consumer = Consumer()
    for i in range(0, len(msgs), 5):
        for m in msgs[i : i + 5]:
            sink.add(consumer, m)
        sink.flush_due(consumer)
    sink.flush_due(consumer, force=True)
    return sink, consumer


def test_these_topics_are_read_by_the_engine_into_their_own_tables() -> None:
    for key in ("cpu_samples", "derived_metrics", "anomaly_flags"):
        assert ENGINE_DECODED[key] is None
    sink = Sink(SETTINGS, ch=None, fetch=registry)  # type: ignore[arg-type] - no insert here
    assert sink.engine_tables[SETTINGS.topic("cpu_samples").name] == "cpu_samples"
    assert sink.engine_tables[SETTINGS.topic("derived_metrics").name] == "derived_metrics"
    assert sink.engine_tables[SETTINGS.topic("anomaly_flags").name] == "anomaly_flags"
    # named columns: the others (ingested_at) take their defaults
    assert sink.engine_columns["derived_metrics"] == DERIVED_COLUMNS
    assert sink.engine_columns["nmon_snapshots_in"] is None


@pytest.mark.parametrize(
    ("key", "make", "ids", "columns"),
    [
        ("cpu_samples", cpu_sample, (31, 32), CPU_COLUMNS),
        ("derived_metrics", derived_metric, (41, 42), DERIVED_COLUMNS),
        ("anomaly_flags", anomaly_flag, (51, 52), FLAG_COLUMNS),
    ],
)
def test_engine_decoded_records_make_exactly_their_rows(
    warehouse: Any,  # noqa: ANN401
    key: str,
    make: Any,  # noqa: ANN401
    ids: tuple[int, int],
    columns: list[str],
) -> None:
    settings, ch = warehouse
    topic = settings.topic(key)
    records = [make(i) for i in range(9)]
    # two schema versions interleaved: one container per schema id and batch
    msgs = [Msg(topic.name, 0, i, frame(r, ids[1] if "note" in r else ids[0])) for i, r in enumerate(records)]
    sink, consumer = _run(settings, ch, msgs)
    assert consumer.committed == {(topic.name, 0): 9} and sink.undecodable == 0
    assert sink.rows_written == {topic.table: 9}
    assert stored(ch, topic.table, columns) == expected(records, columns)
    # the engine's rows got their ingested_at default (cpu_samples: the replacing version)
    if "ingested_at" in ch.query(f"SELECT * FROM {topic.table} LIMIT 0").column_names:
        assert ch.query(f"SELECT min(ingested_at) > '2026-01-01' FROM {topic.table}").result_rows == [(True,)]

    # the Python path into the same tables after a truncate: the same rows
    for table in (topic.table, "sink_batches"):
        ch.command(f"TRUNCATE TABLE {table}")
    python, _ = _run(settings, ch, msgs, engine=False)
    assert python.rows_written == {topic.table: 9}
    assert stored(ch, topic.table, columns) == expected(records, columns)


def window_rows(windows: list[dict[str, Any]]) -> list[tuple]:
    """The derived_metrics rows of window records, written out field by field (sql/039's view)."""
    rows = []
    for w in windows:
        for m in w["metrics"]:
            row = {**w, **m}
            rows.append(tuple(naive(row[c]) if isinstance(row[c], datetime) else row[c] for c in DERIVED_COLUMNS))
    return sorted(rows, key=repr)


def test_derived_windows_make_one_derived_metrics_row_per_metric(warehouse: Any) -> None:  # noqa: ANN401
    """The job's output since sql/039: the engine reads the window records into derived_windows_in
    and its view writes exactly the derived_metrics rows the per-metric records made; the Python
    path (a failed insert's fallback) stores the same rows."""
    settings, ch = warehouse
    topic = settings.topic("derived_windows")
    assert topic.table == "derived_windows_in" and ENGINE_DECODED["derived_windows"] is None
    records = [derived_window(i) for i in range(9)]
    msgs = [Msg(topic.name, 0, i, frame(r, 44 if "note" in r else 43)) for i, r in enumerate(records)]
    want = window_rows(records)
    assert len(want) == sum(1 + i % 4 for i in range(9)) == 21
    sink, consumer = _run(settings, ch, msgs)
    assert sink.engine_tables[topic.name] == "derived_windows_in"
    assert consumer.committed == {(topic.name, 0): 9} and sink.undecodable == 0
    assert sink.rows_written == {"derived_windows_in": 9}
    assert stored(ch, "derived_metrics", DERIVED_COLUMNS) == want
    assert ch.query("SELECT count() FROM derived_windows_in").result_rows == [(0,)]  # keeps nothing

    for table in ("derived_metrics", "sink_batches"):
        ch.command(f"TRUNCATE TABLE {table}")
    python, _ = _run(settings, ch, msgs, engine=False)
    assert python.rows_written == {"derived_windows_in": 9}
    assert stored(ch, "derived_metrics", DERIVED_COLUMNS) == want


def test_a_broken_derived_window_is_a_dead_letter_and_its_batch_goes_in(warehouse: Any) -> None:  # noqa: ANN401
    settings, ch = warehouse
    topic = settings.topic("derived_windows")
    records = [{k: v for k, v in derived_window(i).items() if k != "note"} for i in range(6)]
    values = [frame(r, 43) for r in records]
    values[3] = values[3][:-5]  # the last metric cut short: does not decode
    msgs = [Msg(topic.name, 0, o, v) for o, v in enumerate(values)]
    sink, consumer = _run(settings, ch, msgs)
    assert consumer.committed == {(topic.name, 0): 6} and sink.undecodable == 1
    assert stored(ch, "derived_metrics", DERIVED_COLUMNS) == window_rows(records[:3] + records[4:])
    assert ch.query("SELECT kafka_offset FROM dead_letters FINAL").result_rows == [(3,)]


def _crash_then_replay(
    settings: config.Settings,
    ch: Any,  # noqa: ANN401
    key: str,
    records: list[dict[str, Any]],
    schema_id: int,
) -> tuple[Sink, list[tuple], list[tuple]]:
    """The records as one batch inserted by the Python path whose commit fails (a crash before the
    commit), then by a sink reading them through the engine, which replays the recorded range: the
    replaying sink and (derived_metrics rows, final windows in the hourly rollup) after each."""
    topic = settings.topic(key)
    msgs = [Msg(topic.name, 0, i, frame(r, schema_id)) for i, r in enumerate(records)]

    def feed(sink: Sink, consumer: Consumer) -> None:
        sink.batch_rows, sink.batch_seconds = 100, 3600.0  # one batch
        for m in msgs:
            sink.add(consumer, m)
        sink.flush_due(consumer, force=True)

    crashed = Consumer()
    crashed.fail_commit = True
    with pytest.raises(RuntimeError):
        feed(Sink(settings, ch, fetch=registry, engine_decode=False), crashed)
    assert crashed.committed == {}
    counts = "SELECT (SELECT count() FROM derived_metrics), (SELECT sum(windows) FROM metrics_hourly_v)"
    once = ch.query(counts).result_rows
    replay = Sink(settings, ch, fetch=registry)
    consumer = Consumer()
    feed(replay, consumer)
    assert consumer.committed == {(topic.name, 0): len(msgs)} and replay.replayed_batches == 1
    return replay, once, ch.query(counts).result_rows


def made(schema: Any, i: int, name: str) -> Any:  # noqa: ANN401
    """A value of an Avro type for record i, varied over i: NULLs, empty and non-empty maps and
    arrays, extremes of int and long, tiny, negative and large doubles, non-ASCII text, false."""
    if isinstance(schema, list):  # ["null", T]
        return None if i % 3 == 1 else made(schema[1], i, name)
    if isinstance(schema, dict):
        kind = schema["type"]
        if schema.get("logicalType") == "timestamp-millis":
            return T0 + timedelta(seconds=30 * i, milliseconds=i)
        if kind == "record":
            return {f["name"]: made(f["type"], i + n, f["name"]) for n, f in enumerate(schema["fields"])}
        if kind == "map":
            return {f"{name}-{k}-ü": made(schema["values"], i + k, name) for k in range(i % 4)}
        if kind == "array":
            return [made(schema["items"], i + k, name) for k in range(i % 3)]
        return made(kind, i, name)
    return {
        "string": ("", f"{name}-{i}", f"LNX Ü{i} — ü", f"0{i}"),
        "long": (0, -1, 2**62 + i, 2**53 + 1),
        "int": (0, -7, 2**31 - 1, -(2**31)),
        "double": (0.0, -1.5e-7, 1e12 + 0.5, 97.125),
        "boolean": (False, True, True, False),
    }[schema][i % 4]


def flat(value: Any) -> Any:  # noqa: ANN401
    """A stored or expected value in one comparable form: maps and records as sorted items, arrays
    and tuples as tuples, timestamps naive UTC."""
    if isinstance(value, datetime):
        return naive(value)
    if isinstance(value, dict):
        return tuple(sorted((k, flat(v)) for k, v in value.items()))
    if isinstance(value, list | tuple):
        return tuple(flat(v) for v in value)
    return value


def expected_flat(records: list[dict[str, Any]], columns: list[str]) -> list[tuple]:
    # an array of records is an Array(Tuple) of named elements, which the client returns as dicts
    return sorted((tuple(flat(r[c]) for c in columns) for r in records), key=repr)


def stored_flat(ch: Any, table: str, columns: list[str]) -> list[tuple]:  # noqa: ANN401
    rows = ch.query(f"SELECT {', '.join(columns)} FROM {table}").result_rows
    return sorted((tuple(flat(v) for v in row) for row in rows), key=repr)


@pytest.mark.parametrize("key", OTHER_KEYS)
def test_the_other_collectors_records_are_read_by_the_engine_into_exactly_their_rows(
    warehouse: Any,  # noqa: ANN401
    key: str,
) -> None:
    settings, ch = warehouse
    topic = settings.topic(key)
    assert ENGINE_DECODED[key] is None
    v1, v2 = OTHER_IDS[key]
    schema = IDS[v1][1]
    columns = [f["name"] for f in schema["fields"]]
    records = [made(schema, i, key) for i in range(12)]
    for i, r in enumerate(records):  # a distinct sorting key per record, whatever the table's
        r.update({c: T0 + timedelta(minutes=i) for c in ("ts",) if c in r})
        if "origin_file" in r:  # host_configs: ORDER BY (host_id, origin_file), no time (a merge
            r["origin_file"] += f"#{i}"  # would replace records 0, 4 and 8, all ("", ""), by one)
        if i % 3 == 2:
            r["note"] = "v2"
    msgs = [Msg(topic.name, 0, i, frame(r, v2 if "note" in r else v1)) for i, r in enumerate(records)]
    sink, consumer = _run(settings, ch, msgs)
    assert sink.engine_tables[topic.name] == topic.table
    assert consumer.committed == {(topic.name, 0): 12} and sink.undecodable == 0
    assert sink.rows_written == {topic.table: 12}
    want = expected_flat(records, columns)
    assert stored_flat(ch, topic.table, columns) == want
    ch.command(f"OPTIMIZE TABLE {topic.table} FINAL")  # a merge keeps them all: the keys are distinct
    assert stored_flat(ch, topic.table, columns) == want
    assert ch.query(f"SELECT min(ingested_at) > '2026-01-01' FROM {topic.table}").result_rows == [(True,)]

    # the Python path into the same table after a truncate: the same rows
    for table in (topic.table, "sink_batches"):
        ch.command(f"TRUNCATE TABLE {table}")
    python, _ = _run(settings, ch, msgs, engine=False)
    assert python.engine_tables == {} and python.rows_written == {topic.table: 12}
    assert stored_flat(ch, topic.table, columns) == want


def test_a_broken_derived_metric_is_a_dead_letter_and_its_batch_goes_in(warehouse: Any) -> None:  # noqa: ANN401
    settings, ch = warehouse
    topic = settings.topic("derived_metrics")
    records = [derived_metric(i) for i in range(6)]
    good = frame(records[2], 41)
    values = [frame(r, 41) for r in records]
    values[2] = good[: len(good) - 9]  # the Avro body cut short: does not decode
    values[4] = b"\0\0\0\0\x63" + values[4][5:]  # schema id 99: unknown (404)
    msgs = [Msg(topic.name, 1, o, v) for o, v in enumerate(values)]
    sink, consumer = _run(settings, ch, msgs)
    assert consumer.committed == {(topic.name, 1): 6} and sink.undecodable == 2
    kept = [r for i, r in enumerate(records) if i not in (2, 4)]
    assert stored(ch, "derived_metrics", DERIVED_COLUMNS) == expected(kept, DERIVED_COLUMNS)
    offsets = ch.query("SELECT kafka_offset FROM dead_letters FINAL ORDER BY kafka_offset").result_rows
    assert offsets == [(2,), (4,)]


def test_a_registry_outage_on_an_engine_decoded_topic_commits_nothing(warehouse: Any) -> None:  # noqa: ANN401
    settings, ch = warehouse
    topic = settings.topic("cpu_samples")

    def down(_schema_id: int) -> Any:  # noqa: ANN401
        raise TransientError("registry unreachable (test)")

    sink = Sink(settings, ch, fetch=down)
    consumer = Consumer()
    with pytest.raises(TransientError):
        sink.add(consumer, Msg(topic.name, 0, 0, frame(cpu_sample(0), 31)))
    assert consumer.committed == {} and sink.undecodable == 0
    assert ch.query("SELECT count() FROM cpu_samples").result_rows == [(0,)]
    assert ch.query("SELECT count() FROM dead_letters").result_rows == [(0,)]


@pytest.mark.parametrize(
    ("key", "make", "schema_id", "table", "rows"),
    [
        ("derived_metrics", derived_metric, 41, "derived_metrics", 9),
        ("derived_windows", derived_window, 43, "derived_windows_in", 21),
    ],
)
def test_a_batch_the_python_path_inserted_is_dropped_when_the_engine_replays_it(
    warehouse: Any,  # noqa: ANN401
    key: str,
    make: Any,  # noqa: ANN401
    schema_id: int,
    table: str,
    rows: int,
) -> None:
    """A batch inserted by the Python path (an older sink decoded derived metrics in Python; this one
    falls back to it when an insert fails) but never committed (a crash before the commit), then
    replayed through the engine, must not count twice, in the rollups either: the per-metric
    records into derived_metrics, the job's window records through sql/039's view."""
    settings, ch = warehouse
    records = [{k: v for k, v in make(i).items() if k != "note"} | {"is_final": True} for i in range(9)]
    replay, once, again = _crash_then_replay(settings, ch, key, records, schema_id)
    assert once == [(rows, rows)]
    assert replay.rows_written == {table: 9}  # through the engine
    assert again == once


def test_a_writer_schema_without_a_nullable_field_stores_null_as_the_python_path_does(warehouse: Any) -> None:  # noqa: ANN401
    """A later schema version may drop a field (BACKWARD compatible when readers default it): the
    engine must not refuse such records, or the sink would retry the batch for ever (Python finds
    nothing broken in it)."""
    settings, ch = warehouse
    topic = settings.topic("cpu_samples")
    v1 = IDS[31][1]
    dropped = {**v1, "fields": [f for f in v1["fields"] if f["name"] not in ("pool_idle", "steal_pct")]}
    PARSED[33] = parse_schema(dropped)
    try:
        records = [
            {k: v for k, v in cpu_sample(i).items() if k not in ("pool_idle", "steal_pct", "note")} for i in range(4)
        ]
        msgs = [Msg(topic.name, 0, i, frame(r, 33)) for i, r in enumerate(records)]
        sink, consumer = _run(settings, ch, msgs)
        assert consumer.committed == {(topic.name, 0): 4} and sink.undecodable == 0
        assert sink.rows_written == {"cpu_samples": 4}
        full = [{**r, "pool_idle": None, "steal_pct": None} for r in records]
        assert stored(ch, "cpu_samples", CPU_COLUMNS) == expected(full, CPU_COLUMNS)
        for table in ("cpu_samples", "sink_batches"):
            ch.command(f"TRUNCATE TABLE {table}")
        _run(settings, ch, msgs, engine=False)
        assert stored(ch, "cpu_samples", CPU_COLUMNS) == expected(full, CPU_COLUMNS)
    finally:
        del PARSED[33]


def test_a_record_kafka_holds_twice_in_one_batch_is_one_raw_row_as_in_the_python_path(warehouse: Any) -> None:  # noqa: ANN401
    """After a broker's SIGKILL mid-ingest a record can be in the topic twice; within one insert
    the table keeps one row of a key (optimize_on_insert), which test_faults.py counts raw."""
    settings, ch = warehouse
    topic = settings.topic("cpu_samples")
    records = [cpu_sample(0), cpu_sample(1), cpu_sample(0), cpu_sample(2)]
    msgs = [Msg(topic.name, 0, i, frame(r, 31)) for i, r in enumerate(records)]
    for engine in (True, False):
        for table in ("cpu_samples", "sink_batches"):
            ch.command(f"TRUNCATE TABLE {table}")
        sink = Sink(settings, ch, fetch=registry, engine_decode=engine)
        sink.batch_rows, sink.batch_seconds = 100, 3600.0  # one batch, one insert
        consumer = Consumer()
        for m in msgs:
            sink.add(consumer, m)
        sink.flush_due(consumer, force=True)
        assert consumer.committed == {(topic.name, 0): 4}
        assert ch.query("SELECT count() FROM cpu_samples").result_rows == [(3,)], engine
