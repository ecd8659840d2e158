"""Parsed hpmstat / entstat output -> Avro records (schemas/hpm_sample.avsc, net_port_sample.avsc)."""

from __future__ import annotations

from collections.abc import Iterator

from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.records import Emitted
from fleetperf.sources.aix.entstat import EntstatReport
from fleetperf.sources.aix.hpmstat import HpmSample


def hpm_records(samples: list[HpmSample], who: HostIdentity, ts_ms: int, origin: str) -> Iterator[Emitted]:
    for s in samples:
        yield Emitted(
            "hpm_samples",
            {
                "host_id": who.host_id,
                "hostname": who.hostname,
                "ts": ts_ms,
                "source": "hpmstat",
                "pmu_group": s.group,
                "counting_mode": s.counting_mode,
                "duration_s": s.duration_s,
                "wall_s": s.wall_s,
                "counters": s.counters,
                "derived": s.derived,
                "origin": origin,
            },
            key=who.host_id,
        )


def net_port_records(report: EntstatReport, who: HostIdentity, ts_ms: int, origin: str) -> Iterator[Emitted]:
    agg = report.aggregation
    for name, a in report.adapters.items():
        is_agg = a is agg
        yield Emitted(
            "net_port_samples",
            {
                "host_id": who.host_id,
                "hostname": who.hostname,
                "ts": ts_ms,
                "source": "entstat",
                "adapter": name,
                "aggregation": a.aggregation,
                "device_type": a.device_type,
                "tx_packets": a.transmit.get("Packets"),
                "rx_packets": a.receive.get("Packets"),
                "tx_bytes": a.transmit.get("Bytes"),
                "rx_bytes": a.receive.get("Bytes"),
                "transmit": a.transmit,
                "receive": a.receive,
                "aggregation_status": report.aggregation_status if is_agg else None,
                "hash_mode": report.hash_mode if is_agg else None,
                "actor_sync": a.actor_state.get("Synchronization"),
                "partner_sync": a.partner_state.get("Synchronization"),
                "actor_state": a.actor_state,
                "partner_state": a.partner_state,
                "lacp_counters": report.aggregate_lacp if is_agg else a.lacp,
                "origin": origin,
            },
            key=who.host_id,
        )
