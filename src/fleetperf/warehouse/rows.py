"""Decoded Avro record -> ClickHouse rows. Most topics map one record to one row of the table named
in config (columns = the schema's fields); nmon snapshots explode into long-form values and labels."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from fleetperf.config import Settings

Row = list[Any]
Builder = Callable[[dict[str, Any]], Iterator[tuple[str, Row]]]

NMON_VALUE_COLUMNS = ["host_id", "ts", "section", "entity", "metric", "value"]
NMON_LABEL_COLUMNS = ["host_id", "ts", "section", "entity", "label", "text"]
# Where a dead letter was read from Kafka and, for a message the sink could not decode, the
# message's full key and value in base64 (sql/014): enough to produce it again as it was.
KAFKA_DEAD_LETTER_COLUMNS = ["kafka_topic", "kafka_partition", "kafka_offset", "kafka_key_base64", "kafka_value_base64"]


def nmon_row_values(row: dict[str, Any]) -> Iterator[tuple[str, str, float | None]]:
    """(entity, metric, value) of every value of an NmonRow: entities and metrics are parallel to
    the values or a single name that holds for all of them."""
    values = row["values"]
    entities, metrics = row["entities"], row["metrics"]
    n = len(values)
    if len(entities) == 1 and n != 1:
        entities = entities * n
    if len(metrics) == 1 and n != 1:
        metrics = metrics * n
    return zip(entities, metrics, values, strict=True)


def _nmon_snapshot(record: dict[str, Any]) -> Iterator[tuple[str, Row]]:
    host, ts = record["host_id"], record["ts"]
    for row in record["rows"]:
        section = row["section"]
        for entity, metric, value in nmon_row_values(row):
            yield "nmon_values", [host, ts, section, entity, metric, value]
        labels = row["labels"]
        if labels:
            entity = row["entities"][0] if row["entities"] else ""
            for label, text in labels.items():
                yield "nmon_labels", [host, ts, section, entity, label, text]


# The Null table the views of sql/017 and 033 read: the Python path (engine_decode=False) inserts
# the snapshots it decoded there, so both paths store through the same views (one row per host,
# section and snapshot in nmon_sections; the long-form rows above only validate the record).
NMON_SNAPSHOT_IN_COLUMNS = ["host_id", "ts", "rows"]


def nmon_snapshot_in_row(record: dict[str, Any]) -> Row:
    """An NmonSnapshot as a row of nmon_snapshots_in (rows: tuples in the table's field order)."""
    rows = [(r["section"], r["entities"], r["metrics"], r["values"], r.get("labels") or {}) for r in record["rows"]]
    return [record["host_id"], record["ts"], rows]


_LPAR_CPU_FIELDS = ("cpu", "cpu_type", "busy_pct", "ovhd_pct", "susp_pct", "vmld_pct", "logld_pct")


def _tuples_of(field: str, inner: tuple[str, ...]):  # noqa: ANN202
    # Array(Tuple(...)) columns take tuples in the tuple's declared order
    def convert(record: dict[str, Any]) -> dict[str, Any]:
        return {**record, field: [tuple(item.get(k) for k in inner) for item in record[field]]}

    return convert


_CONVERT = {
    "lpar_samples": _tuples_of("cpus", _LPAR_CPU_FIELDS),
    # derived_windows_in (sql/039), whose view splits the array into derived_metrics rows
    "derived_windows": _tuples_of("metrics", ("metric", "value", "samples")),
}


def derived_metric_records(record: dict[str, Any]) -> list[dict[str, Any]]:
    """A decoded record of Flink's derived topics as one dict per metric, the fields of
    derived_metric.avsc: a derived_window.avsc record (the job's output since sql/039) gives one per
    metric of its window, a derived_metric.avsc record (older jobs) itself. What derived_metrics
    stores of either, for the benchmarks and tests that read Kafka."""
    if "metrics" not in record:
        return [record]
    shared = {k: v for k, v in record.items() if k != "metrics"}
    return [{**shared, **m} for m in record["metrics"]]


class RowMapper:
    def __init__(self, settings: Settings) -> None:
        self.columns: dict[str, list[str]] = {
            "nmon_values": NMON_VALUE_COLUMNS,
            "nmon_labels": NMON_LABEL_COLUMNS,
            "nmon_snapshots_in": NMON_SNAPSHOT_IN_COLUMNS,
        }
        self.builders: dict[str, Builder] = {}
        self.dead_letter_topic = settings.topic("dead_letters").name
        for topic in settings.topics.values():
            if topic.key == "nmon_snapshots":
                self.builders[topic.name] = _nmon_snapshot
                continue
            fields = list(topic.field_names)
            self.columns[topic.table] = fields
            self.builders[topic.name] = _single(topic.table, fields, _CONVERT.get(topic.key))
        self.dead_letter_fields = list(self.columns["dead_letters"])
        self.columns["dead_letters"] = self.dead_letter_fields + KAFKA_DEAD_LETTER_COLUMNS

    def rows(
        self, topic: str, record: dict[str, Any], partition: int = -1, offset: int = -1
    ) -> Iterator[tuple[str, Row]]:
        """The rows of one decoded record; a collector's dead letter gets its Kafka coordinates
        (its bytes decoded, so there is nothing to keep for a replay)."""
        if topic == self.dead_letter_topic:
            return ((t, [*row, topic, partition, offset, "", ""]) for t, row in self.builders[topic](record))
        return self.builders[topic](record)


def _single(table: str, fields: list[str], convert=None) -> Builder:  # noqa: ANN001
    def build(record: dict[str, Any]) -> Iterator[tuple[str, Row]]:
        if convert is not None:
            record = convert(record)
        yield table, [record.get(f) for f in fields]

    return build
