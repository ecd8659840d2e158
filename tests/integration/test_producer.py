"""The producer against the real registry: failed deliveries surface even though successful ones
are not reported back to Python (delivery.report.only.error)."""

from __future__ import annotations

import pytest

from fleetperf.config import Settings
from fleetperf.kafka_avro import AvroProducer
from fleetperf.sources.nmon import native_parser

pytestmark = pytest.mark.integration


def test_a_failed_delivery_fails_the_flush(stack: Settings, corpus) -> None:
    # the registry is real; the broker address is a port nobody listens on
    producer = AvroProducer(stack, **{"bootstrap.servers": "127.0.0.1:9", "message.timeout.ms": 1500})
    emitted = next(native_parser.parse_file(corpus / "nmon" / "linux_centos7_kvm_nmon16g_small.nmon"))
    if emitted.encoded is not None:
        producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key)
    else:
        producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    with pytest.raises(RuntimeError, match="delivery failed"):
        producer.flush(timeout=30)
    assert producer.errors and "timed out" in producer.errors[0].lower()


def test_good_deliveries_flush_clean(stack: Settings, corpus) -> None:
    producer = AvroProducer(stack)
    for emitted in native_parser.parse_file(corpus / "nmon" / "linux_centos7_kvm_nmon16g_small.nmon"):
        if emitted.encoded is not None:
            producer.send_encoded(emitted.topic_key, emitted.encoded, key=emitted.key)
        else:
            producer.send(emitted.topic_key, emitted.record, key=emitted.key)
    producer.flush(timeout=30)
    assert producer.errors == []
