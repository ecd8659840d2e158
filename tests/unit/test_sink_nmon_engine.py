"""nmon snapshots decoded by the engine (issue 24 goal 1, sql/017) keep every guarantee of the sink.

The sink hands the Avro bodies of nmon snapshots to chDB as an object container and sql/017's
views explode them. The expected rows are written out here from the records this test encodes
(not through the sink's RowMapper); the Python path (engine_decode=False) is run beside it as a
second check. Durability: replayed ranges, a failed insert, a crash between the engine insert and
the dead letters, and broken messages among good ones (nothing of a broken message is stored).
"""

from __future__ import annotations

import base64
import io
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from fastavro import parse_schema, reader, schemaless_writer

from fleetperf import config
from fleetperf.warehouse.clickhouse import migrate
from fleetperf.warehouse.sink import Sink, TransientError, UndecodableError, object_container
from tests.conftest import embedded_settings
from tests.unit.test_sink_durability import Consumer, FailingInserts, Msg

TOPIC = "fleetperf.nmon-snapshots.v1"
T0 = datetime(2026, 3, 31, 23, 58, tzinfo=UTC)  # snapshots cross a month: two parts per insert
SCHEMA = json.loads(config.load({}).topic("nmon_snapshots").schema_text())
# A later version of the schema with one more field (BACKWARD compatible): the engine skips it.
SCHEMA_V2 = {**SCHEMA, "fields": [*SCHEMA["fields"], {"name": "note", "type": "string", "default": ""}]}
IDS = {21: parse_schema(SCHEMA), 22: parse_schema(SCHEMA_V2)}


class Registry:
    def __init__(self) -> None:
        self.down = False

    def __call__(self, schema_id: int) -> Any:  # noqa: ANN401
        if self.down:
            raise TransientError("registry unreachable (test)")
        if schema_id not in IDS:
            raise UndecodableError(f"schema id {schema_id} is unknown to the registry (404)")
        return IDS[schema_id]


def snapshot(i: int, host: str = "lpar7", broken: bool = False) -> dict[str, Any]:
    rows = [
        # host-wide: one entity for all values, a metric per value, an empty cell
        {
            "section": "CPU_ALL",
            "entities": [""],
            "metrics": ["User%", "Sys%", "Idle%"],
            "values": [10.0 + i, 2.5, None],
        },
        # columns are entities: one metric (the section) for all values
        {"section": "DISKBUSY", "entities": ["hdisk0", "hdisk1"], "metrics": ["DISKBUSY"], "values": [1.0, 2.0 * i]},
        # a process: one entity, text columns as labels
        {
            "section": "TOP",
            "entities": [f"{100 + i} ksh"],
            "metrics": ["%CPU", "ResText"],
            "values": [0.5, 100.0],
            "labels": {"Command": "ksh", "WLMclass": "Unclassified"},
        },
    ]
    if broken:  # two entities for three values: neither one name nor one per value
        rows.append(
            {
                "section": "NET",
                "entities": ["en0", "en1"],
                "metrics": ["a", "b", "c"],
                "values": [1.0, 2.0, 3.0],
                "labels": {"Command": "broken"},
            }
        )
    return {
        "host_id": host,
        "hostname": host,
        "ts": T0 + timedelta(minutes=i),
        "interval_s": 60.0,
        "origin_file": "/perf/lpar7.nmon",
        "origin_snapshot": f"T{i:04d}",
        "rows": [{"labels": {}, **r} for r in rows],
        **({"note": "v2"} if i % 2 else {}),
    }


def frame(record: dict[str, Any], schema_id: int = 21) -> bytes:
    buf = io.BytesIO()
    buf.write(b"\0" + schema_id.to_bytes(4, "big"))
    schemaless_writer(buf, IDS[schema_id], record)
    return buf.getvalue()


def expected_values(indices: list[int]) -> list[tuple]:
    """Written out from snapshot(): 3 CPU_ALL + 2 DISKBUSY + 2 TOP values per snapshot."""
    out = []
    for i in indices:
        ts = (T0 + timedelta(minutes=i)).replace(tzinfo=None)
        out += [
            ("lpar7", ts, "CPU_ALL", "", "User%", 10.0 + i),
            ("lpar7", ts, "CPU_ALL", "", "Sys%", 2.5),
            ("lpar7", ts, "CPU_ALL", "", "Idle%", None),
            ("lpar7", ts, "DISKBUSY", "hdisk0", "DISKBUSY", 1.0),
            ("lpar7", ts, "DISKBUSY", "hdisk1", "DISKBUSY", 2.0 * i),
            ("lpar7", ts, "TOP", f"{100 + i} ksh", "%CPU", 0.5),
            ("lpar7", ts, "TOP", f"{100 + i} ksh", "ResText", 100.0),
        ]
    return sorted(out, key=repr)


def expected_labels(indices: list[int]) -> list[tuple]:
    out = []
    for i in indices:
        ts = (T0 + timedelta(minutes=i)).replace(tzinfo=None)
        out += [
            ("lpar7", ts, "TOP", f"{100 + i} ksh", "Command", "ksh"),
            ("lpar7", ts, "TOP", f"{100 + i} ksh", "WLMclass", "Unclassified"),
        ]
    return sorted(out, key=repr)


def stored(ch: Any, final: bool = True) -> tuple[list[tuple], list[tuple]]:  # noqa: ANN401
    f = " FINAL" if final else ""
    # nmon_values_v / nmon_values_raw: every value, deduplicated / as stored (sql/033)
    view = "nmon_values_v" if final else "nmon_values_raw"
    values = ch.query(f"SELECT host_id, ts, section, entity, metric, value FROM {view}").result_rows
    labels = ch.query(f"SELECT host_id, ts, section, entity, label, text FROM nmon_labels{f}").result_rows
    return sorted(values, key=repr), sorted(labels, key=repr)


def _sink(settings: config.Settings, ch: Any, batch_rows: int = 50000, engine: bool = True) -> Sink:  # noqa: ANN401
    sink = Sink(settings, ch, fetch=Registry(), engine_decode=engine)
    sink.batch_rows = batch_rows
    sink.batch_seconds = 3600.0  # cut by size only
    return sink


def _feed(sink: Sink, consumer: Consumer, msgs: list[Msg], chunk: int) -> None:
    for i in range(0, len(msgs), chunk):
        for m in msgs[i : i + chunk]:
            sink.add(consumer, m)
        sink.flush_due(consumer)
    sink.flush_due(consumer, force=True)


def test_the_object_container_is_read_by_an_independent_avro_reader() -> None:
    records = [snapshot(i) for i in range(3)]
    bodies = [frame(r)[5:] for r in records]
    data = object_container(json.dumps(SCHEMA).encode(), bodies)
    read = list(reader(io.BytesIO(data)))
    assert [r["origin_snapshot"] for r in read] == ["T0000", "T0001", "T0002"]
    assert read[2]["rows"][1]["values"] == [1.0, 4.0]


@pytest.mark.parametrize("size", [0, 62, 63, 64, 127, 4094, 4095, 4096, 4097, 70_000])
def test_block_sizes_on_both_sides_of_the_looked_up_ones_read_back(size: int) -> None:
    # the sizes below 4096 are looked up (sink._SMALL_VARINTS), the others encoded; zig-zag takes a
    # second byte from 64 on, a third from 8192; the independent reader checks every block's size
    # against its sync marker
    schema = {"type": "record", "name": "R", "fields": [{"name": "s", "type": "string"}]}
    parsed = parse_schema(schema)
    texts = ["x" * n for n in (size, max(0, size - 3), size + 1)]
    bodies = []
    for text in texts:
        buf = io.BytesIO()
        schemaless_writer(buf, parsed, {"s": text})
        bodies.append(buf.getvalue())
    assert len(bodies[0]) >= size  # the body is the text and its own length prefix
    data = object_container(json.dumps(schema).encode(), bodies)
    assert [r["s"] for r in reader(io.BytesIO(data))] == texts


def test_engine_decoded_snapshots_make_exactly_the_rows_of_the_records(warehouse: Any) -> None:
    settings, ch = warehouse
    # two schema versions interleaved in one batch: one container per schema id
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i), 22 if i % 2 else 21)) for i in range(6)]
    consumer = Consumer()
    sink = _sink(settings, ch, batch_rows=4)
    _feed(sink, consumer, msgs, chunk=3)
    assert consumer.committed == {(TOPIC, 0): 6}
    assert sink.rows_written == {"nmon_snapshots_in": 6} and sink.undecodable == 0
    assert stored(ch) == (expected_values(list(range(6))), expected_labels(list(range(6))))
    assert stored(ch, final=False) == stored(ch)  # no key twice: nothing for FINAL to hide

    # the Python path (before sql/017) into the same tables after a truncate: the same rows
    for table in ("nmon_sections", "nmon_values", "nmon_labels", "sink_batches"):
        ch.command(f"TRUNCATE TABLE {table}")
    _feed(_sink(settings, ch, engine=False), Consumer(), msgs, chunk=3)
    assert stored(ch) == (expected_values(list(range(6))), expected_labels(list(range(6))))


def test_a_replayed_range_of_snapshots_adds_no_row(warehouse: Any) -> None:
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 1, i, frame(snapshot(i))) for i in range(10)]
    _feed(_sink(settings, ch, batch_rows=4), Consumer(), msgs, chunk=5)
    once = stored(ch, final=False)
    assert once == (expected_values(list(range(10))), expected_labels(list(range(10))))
    # the group's offsets reset: other consume() sizes, the recorded ranges cut the same batches
    replay = _sink(settings, ch, batch_rows=1000)
    _feed(replay, Consumer(), msgs, chunk=3)
    assert replay.replayed_batches == 3
    assert stored(ch, final=False) == once  # the raw tables: not one row more, merged or not
    # control: without the recorded ranges the replay is cut otherwise and its blocks are new
    ch.command("TRUNCATE TABLE sink_batches")
    _feed(_sink(settings, ch, batch_rows=1000), Consumer(), msgs, chunk=3)
    assert len(stored(ch, final=False)[0]) == 2 * len(once[0])


def test_broken_snapshots_are_dead_letters_and_leave_no_value_or_label(warehouse: Any) -> None:
    settings, ch = warehouse
    # two schema versions: the broken messages are in one group, the other group goes in untouched
    good = {i: frame(snapshot(i), 22 if i in (1, 7) else 21) for i in (1, 2, 4, 6, 7)}
    truncated = frame(snapshot(3))
    bad = {
        0: frame(snapshot(0, broken=True)),  # decodes, makes no row: first of the batch
        3: truncated[: len(truncated) // 2],  # Avro body that does not read
        5: b"\0\0\0\0\x63" + good[4][5:],  # schema id 99: 404
        8: frame(snapshot(8, broken=True)),  # makes no row: last of the batch
    }
    values = {**good, **bad}
    msgs = [Msg(TOPIC, 2, o, values[o], f"key{o}".encode()) for o in sorted(values)]
    consumer = Consumer()
    sink = _sink(settings, ch)
    _feed(sink, consumer, msgs, chunk=20)
    assert consumer.committed == {(TOPIC, 2): 9} and sink.undecodable == 4
    assert stored(ch) == (expected_values(sorted(good)), expected_labels(sorted(good)))
    assert ch.query("SELECT count() FROM nmon_labels WHERE text = 'broken'").result_rows == [(0,)]
    rows = ch.query(
        "SELECT kafka_offset, kafka_value_base64, kafka_key_base64, error FROM dead_letters FINAL ORDER BY kafka_offset"
    ).result_rows
    assert [r[0] for r in rows] == [0, 3, 5, 8]
    for offset, value, key, _error in rows:
        assert base64.b64decode(value) == bad[offset] and base64.b64decode(key) == f"key{offset}".encode()
    errors = {r[0]: r[3] for r in rows}
    assert "makes no row" in errors[0] and "makes no row" in errors[8]
    assert "does not decode" in errors[3] and "(404)" in errors[5]


def test_trailing_bytes_after_a_record_are_read_as_the_python_decoder_reads_them(warehouse: Any) -> None:
    """fastavro's schemaless reader ignores bytes after the record; the engine must not reject
    such a message either (else its batch would fail forever while Python finds nothing broken)."""
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, 0, frame(snapshot(0)) + b"\x00\x01junk"), Msg(TOPIC, 0, 1, frame(snapshot(1)))]
    consumer = Consumer()
    sink = _sink(settings, ch)
    _feed(sink, consumer, msgs, chunk=5)
    assert consumer.committed == {(TOPIC, 0): 2} and sink.undecodable == 0
    assert stored(ch) == (expected_values([0, 1]), expected_labels([0, 1]))


def test_a_failed_engine_insert_commits_nothing_and_dead_letters_nothing(warehouse: Any) -> None:
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(5)]
    consumer = Consumer()
    failing = _sink(settings, FailingInserts(ch, "nmon_snapshots_in"))
    with pytest.raises(ConnectionError):
        _feed(failing, consumer, msgs, chunk=5)
    assert consumer.committed == {} and failing.undecodable == 0 and failing.insert_errors == 1
    assert stored(ch) == ([], [])
    _feed(_sink(settings, ch), consumer, msgs, chunk=5)
    assert consumer.committed == {(TOPIC, 0): 5}
    assert stored(ch) == (expected_values(list(range(5))), expected_labels(list(range(5))))
    assert ch.query("SELECT count() FROM dead_letters").result_rows == [(0,)]


def test_a_crash_after_the_engine_insert_of_a_batch_with_a_broken_message_doubles_nothing(warehouse: Any) -> None:
    settings, ch = warehouse
    values = [frame(snapshot(i, broken=i == 2)) for i in range(5)]
    msgs = [Msg(TOPIC, 0, i, v) for i, v in enumerate(values)]
    consumer = Consumer()
    # the snapshots went in (without the broken one), then ClickHouse fails on dead_letters
    crashing = _sink(settings, FailingInserts(ch, "dead_letters"))
    with pytest.raises(ConnectionError):
        _feed(crashing, consumer, msgs, chunk=5)
    assert consumer.committed == {}
    assert stored(ch) == (expected_values([0, 1, 3, 4]), expected_labels([0, 1, 3, 4]))
    # the retry cuts the same range: the snapshots are dropped as duplicates, the dead letter is added
    _feed(_sink(settings, ch, batch_rows=2), consumer, msgs, chunk=1)
    assert consumer.committed == {(TOPIC, 0): 5}
    assert stored(ch, final=False) == (expected_values([0, 1, 3, 4]), expected_labels([0, 1, 3, 4]))
    assert ch.query("SELECT kafka_offset FROM dead_letters").result_rows == [(2,)]


def test_a_registry_outage_holds_snapshots_without_dead_letters(warehouse: Any) -> None:
    settings, ch = warehouse
    msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(3)]
    consumer = Consumer()
    sink = _sink(settings, ch)
    sink.decode._fetch.down = True  # noqa: SLF001 - the test's registry
    with pytest.raises(TransientError):
        _feed(sink, consumer, msgs, chunk=3)
    assert consumer.committed == {} and sink.undecodable == 0
    _feed(_sink(settings, ch), consumer, msgs, chunk=3)
    assert stored(ch) == (expected_values([0, 1, 2]), expected_labels([0, 1, 2]))


def test_migration_033_moves_the_long_form_values_and_a_new_ingest_replaces_them(
    embedded_path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A warehouse migrated up to 032 (values one row each in the nmon_values table) keeps every
    value through sql/033: the stable views show the same rows, and the same snapshots ingested
    again afterwards replace them instead of doubling them."""
    import fleetperf.warehouse.clickhouse as clickhouse

    older = tmp_path / "sql"
    older.mkdir()
    for path in clickhouse.SQL_DIR.glob("[0-9][0-9][0-9]_*.sql"):
        if path.stem < "033":
            (older / path.name).symlink_to(path)
    database = "sinkeng_migration_033"
    settings = embedded_settings(embedded_path, database)
    with monkeypatch.context() as patch:
        patch.setattr(clickhouse, "SQL_DIR", older)
        ch, _ = migrate(settings)
    try:
        # snapshots 0-3 through the sink of 017 (long form), plus a value only the table has:
        # a NULL among them, as the long form stored empty cells
        msgs = [Msg(TOPIC, 0, i, frame(snapshot(i))) for i in range(4)]
        _feed(_sink(settings, ch), Consumer(), msgs, chunk=4)
        ts = (T0 + timedelta(minutes=9)).replace(tzinfo=None)
        ch.insert(
            "nmon_values",
            [["lpar7", ts, "MEM", "", "Real Free %", None], ["lpar7", ts, "MEM", "", "Virtual free %", 7.5]],
            column_names=["host_id", "ts", "section", "entity", "metric", "value"],
        )
        extra = [("lpar7", ts, "MEM", "", "Real Free %", None), ("lpar7", ts, "MEM", "", "Virtual free %", 7.5)]
        before = sorted(expected_values(list(range(4))) + extra, key=repr)
        assert stored(ch)[0] == before  # nmon_values_v of 003 over the table

        ch, ran = migrate(settings)
        assert ran[0] == "033_nmon_values_per_section"
        assert stored(ch) == (before, expected_labels(list(range(4))))
        assert stored(ch, final=False)[0] == before  # moved, not copied: no row twice
        assert ch.query("SELECT count() FROM nmon_values").result_rows == [(0,)]
        assert ch.query("SELECT count() FROM nmon_sections").result_rows == [(3 * 4 + 1,)]

        # the same snapshots again (a forced re-ingest: new offsets, new tokens) and two new ones
        again = [Msg(TOPIC, 0, 10 + i, frame(snapshot(i))) for i in range(6)]
        _feed(_sink(settings, ch), Consumer(), again, chunk=6)
        after = sorted(expected_values(list(range(6))) + extra, key=repr)
        assert stored(ch) == (after, expected_labels(list(range(6))))
        # the per-CPU steal view reads the stable view now (026's read the table with FINAL)
        ch.query("SELECT * FROM cpu_steal_per_cpu_minute LIMIT 1")
    finally:
        ch.command(f"DROP DATABASE IF EXISTS {database}")


def test_a_key_a_snapshot_repeats_is_kept_as_published_by_both_paths(warehouse: Any) -> None:
    """A header with empty column names (linux_fc21_nmon15h_nmon2influxdb's NETPACKET) gives one
    snapshot the same (entity, metric) twice. The long form kept one of them (whichever the merge
    chose); one row per section keeps every value the collector published, on both paths."""
    settings, ch = warehouse
    record = snapshot(0)
    record["rows"].append(
        {"section": "NETPACKET", "entities": ["", "", "lo"], "metrics": ["", "", "read/s"], "values": [1.0, 2.0, 3.0]}
    )
    record["rows"][-1]["labels"] = {}
    ts = T0.replace(tzinfo=None)
    repeated = [("lpar7", ts, "NETPACKET", "", "", 1.0), ("lpar7", ts, "NETPACKET", "", "", 2.0)]
    expected = sorted([*expected_values([0]), *repeated, ("lpar7", ts, "NETPACKET", "lo", "read/s", 3.0)], key=repr)
    for engine in (True, False):
        _feed(_sink(settings, ch, engine=engine), Consumer(), [Msg(TOPIC, 0, 0, frame(record))], chunk=1)
        assert stored(ch)[0] == expected
        ch.command("OPTIMIZE TABLE nmon_sections FINAL")
        assert stored(ch, final=False)[0] == expected
        for table in ("nmon_sections", "nmon_labels", "sink_batches"):
            ch.command(f"TRUNCATE TABLE {table}")


def test_a_section_split_across_a_snapshot_keeps_every_row_on_both_paths(warehouse: Any) -> None:
    """The engine groups a snapshot's rows by section (sql/033, split found as in sql/038): a section
    whose rows are not next to each other (TOP, CPU_ALL, TOP) is one group, and the first row's
    section starts one; the Python path, which writes one row per value, stores the same values."""
    settings, ch = warehouse
    record = snapshot(0)
    top = record["rows"][2]
    second_top = {**top, "entities": ["200 sshd"], "values": [1.5, 300.0], "labels": {"Command": "sshd"}}
    record["rows"] = [top, record["rows"][0], second_top, record["rows"][1]]
    results = []
    for engine in (True, False):
        _feed(_sink(settings, ch, engine=engine), Consumer(), [Msg(TOPIC, 0, 0, frame(record))], chunk=1)
        results.append(stored(ch))
        if engine:
            sections = ch.query("SELECT section, length(rows) FROM nmon_sections FINAL ORDER BY section").result_rows
            assert sections == [("CPU_ALL", 1), ("DISKBUSY", 1), ("TOP", 2)]
        for table in ("nmon_sections", "nmon_values", "nmon_labels", "sink_batches"):
            ch.command(f"TRUNCATE TABLE {table}")
    assert results[0] == results[1]
    values = results[0][0]
    assert {v[3] for v in values if v[2] == "TOP"} == {"100 ksh", "200 sshd"} and len(values) == 3 + 2 + 4


# nmon -T's command lines: Linux (nmon 16n's source: "UARG,%s,%07d,%s,%s") and AIX (IBM's "Process
# statistics" page: PID, PPID, COMM, THCOUNT, USER, GROUP, full command), three processes a snapshot
UARG_FILES = {
    "linux": (
        "UARG,+Time,PID,ProgName,FullCommand\n",
        [
            "UARG,T0001,0005040,java,java -Xmx4g -cp a.jar,b.jar Main\n",
            "UARG,T0001,0000077,kdamond.0,[kdamond.0]\n",
            "UARG,T0001,0012345,python3,python3 -c print(1,2)\n",
        ],
        4,
    ),
    "aix": (
        "UARG,+Time,PID,PPID,COMM,THCOUNT,USER,GROUP,FullCommand\n",
        [
            "UARG,T0001,5434012,1,oracle,20,oracle,dba,ora_pmon_PROD\n",
            "UARG,T0001,7016764,1,db2sysc,290,db2inst1,db2iadm1,db2sysc 0\n",
            "UARG,T0001,782527,1,java,61,was,was,java -Dx=a,b -jar app.jar\n",
        ],
        8,
    ),
}


@pytest.mark.parametrize("system", sorted(UARG_FILES))
def test_every_command_line_of_a_snapshot_is_kept_in_the_labels(
    warehouse: Any,  # noqa: ANN401
    tmp_path: Path,
    system: str,
) -> None:
    """UARG writes one line per process, all under one tag. Each row was entity '' and nmon_labels'
    key (host, section, entity, label, ts) the same for all: the ReplacingMergeTree kept one command
    line of each snapshot. Each process is now its own entity ('PID name', as TOP names it), through
    both parsers and both of the sink's paths; the oracle is the file's own lines."""
    from fleetperf.sources.nmon import native_parser, parser

    settings, ch = warehouse
    header, lines, rest = UARG_FILES[system]
    path = tmp_path / f"box_{system}.nmon"
    path.write_text(
        "AAA,progname,nmon\nAAA,host,box\nAAA,interval,60\nAAA,date,01-DEC-2026\n"
        + header
        + "ZZZZ,T0001,00:00:00,01-DEC-2026\n"
        + "".join(lines)
    )
    # the file's own fields: PID, the program's name (PID's neighbour on Linux, COMM on AIX) and
    # the rest of the line from the FullCommand column on
    written = []
    for line in lines:
        cells = line.rstrip("\n").split(",")
        name = cells[3] if system == "linux" else cells[4]
        written.append((f"{cells[2]} {name}", ",".join(cells[rest:])))
    kinds = {"python": list(parser.parse_file(path, UTC))}
    if native_parser.available():
        kinds["native"] = list(native_parser.parse_file(path, UTC))
    for kind, emitted in kinds.items():
        snaps = [e for e in emitted if e.topic_key == "nmon_snapshots"]
        assert len(snaps) == 1 and not [e for e in emitted if e.topic_key == "dead_letters"], kind
        body = snaps[0].encoded
        if body is None:
            buf = io.BytesIO()
            schemaless_writer(buf, IDS[21], snaps[0].record)
            body = buf.getvalue()
        msg = Msg(TOPIC, 0, 0, b"\0" + (21).to_bytes(4, "big") + body)
        for engine in (True, False):
            _feed(_sink(settings, ch, engine=engine), Consumer(), [msg], chunk=1)
            stored_lines = ch.query(
                "SELECT entity, text FROM nmon_labels FINAL WHERE section = 'UARG' AND label = 'FullCommand'"
                " ORDER BY entity"
            ).result_rows
            assert stored_lines == sorted(written), (kind, engine)
            for table in ("nmon_sections", "nmon_values", "nmon_labels", "sink_batches"):
                ch.command(f"TRUNCATE TABLE {table}")
