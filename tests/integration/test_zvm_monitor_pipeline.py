"""CP monitor data through the whole pipeline: a MONWRITE file via `ingest`, and a monreader
capture read live in odd-sized chunks, -> Kafka -> Flink (T/V) -> ClickHouse."""

from __future__ import annotations

import io
import random
import uuid
from datetime import UTC
from pathlib import Path

import pytest

from fleetperf.cli.sql_client import query, scalar, wait_stable
from fleetperf.config import Settings
from fleetperf.ingest.publish import ingest, source_options
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.zvm.monitor_live import follow
from fleetperf.sources.zvm.monitor_records import Collector, Options
from tests import zvm_writer as w
from tests.unit.test_zvm_monitor import fcx112_monitor_data as _fcx112_monitor_data

pytestmark = pytest.mark.integration


class _OddReads(io.RawIOBase):
    """A capture handed out in reads of random sizes, like a device."""

    def __init__(self, data: bytes, seed: int) -> None:
        self.data, self.pos, self.rnd = data, 0, random.Random(seed)

    def read(self, n: int = -1) -> bytes:
        step = min(n if n > 0 else len(self.data), self.rnd.choice([1, 7, 12, 500, 4096, 5000]))
        chunk = self.data[self.pos : self.pos + step]
        self.pos += len(chunk)
        return chunk


def test_monitor_file_and_live_stream_give_tv_ratio(stack: Settings, tmp_path: Path) -> None:
    system = f"MON{uuid.uuid4().hex[:5].upper()}"
    path = tmp_path / "monitor.monwrite"
    path.write_bytes(w.monwrite_file(_fcx112_monitor_data(system)))
    summary = ingest(stack, [str(path)], UTC, progress=False, options=source_options(zvm_unverified=True))
    assert (summary.files, summary.errors) == (1, 0)
    assert ingest(stack, [str(path)], UTC, progress=False, options=source_options(zvm_unverified=True)).skipped == 1

    live = f"LIV{uuid.uuid4().hex[:5].upper()}"
    producer = AvroProducer(stack)
    capture = _OddReads(w.monreader_stream(_fcx112_monitor_data(live)), seed=3)
    sent = 0
    for emitted in follow(capture, Collector("capture", Options(unverified=True)), stop_at_end=True):
        producer.send(emitted.topic_key, emitted.record, key=emitted.key)
        sent += 1
    producer.flush()
    assert sent == 4  # 3 guests + the system, once each

    for name in (system, live):
        wait_stable(stack, f"SELECT count() FROM zvm_guest_samples WHERE zvm_system = '{name}'", 90, minimum=3)
        # exactly once: the raw table (no FINAL) holds each guest's interval a single time
        assert int(scalar(stack, f"SELECT count() FROM zvm_guest_samples WHERE zvm_system = '{name}'")) == 3
    ids = ", ".join(f"'{s}/{u}'" for s in (system, live) for u in ("LNKDB2", "LNKIHS", "RSCS"))
    wait_stable(
        stack,
        f"SELECT count(DISTINCT entity_id) FROM derived_metrics_v WHERE metric = 'tv_ratio' AND entity_id IN ({ids})",
        120,
        minimum=4,
    )
    _, rows = query(
        stack,
        f"SELECT entity_id, value FROM derived_metrics_v WHERE metric = 'tv_ratio' AND entity_id IN ({ids})",
    )
    tv = {r[0]: float(r[1]) for r in rows}
    for name in (system, live):
        assert round(tv[f"{name}/LNKDB2"], 6) == round(0.823 / 0.818, 6)
        assert round(tv[f"{name}/LNKIHS"], 2) == 1.09
        assert f"{name}/RSCS" not in tv  # .001 s of virtual time: below the floor, no ratio
    wait_stable(stack, f"SELECT count() FROM zvm_system_samples WHERE zvm_system = '{system}'", 60)
    busy = float(scalar(stack, f"SELECT any(busy_pct) FROM zvm_system_samples WHERE zvm_system = '{system}'"))
    assert round(busy, 6) == 37.5
