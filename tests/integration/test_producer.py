"""The producer against the real registry: failed deliveries surface even though successful ones
are not reported back to Python (delivery.report.only.error); a delivery that timed out is kept
and retried, never dropped (a flush that cannot finish says so)."""

from __future__ import annotations

import pytest

from fleetperf.config import PACKAGE_ROOT, Settings
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon import native_parser

pytestmark = pytest.mark.integration
NMON = PACKAGE_ROOT / "sources" / "nmon" / "testdata" / "linuxvm_nmon16.nmon"


def test_a_failed_delivery_fails_the_flush(stack: Settings) -> None:
    # the registry is real; the broker address is a port nobody listens on
    producer = AvroProducer(stack, **{"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 1500})
    emitted = next(native_parser.parse_file(NMON))
    if emitted.encoded is not None:
        producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key)
    else:
        producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    # the delivery times out (1.5 s) and is produced again: the flush cannot finish and says so
    with pytest.raises(RuntimeError, match="not delivered within 10s"):
        producer.flush(timeout=10)


def test_good_deliveries_flush_clean(stack: Settings) -> None:
    producer = AvroProducer(stack)
    for emitted in native_parser.parse_file(NMON):
        if emitted.encoded is not None:
            producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key)
        else:
            producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    producer.flush(timeout=30)
    assert producer.errors == []
