"""Parsed hpmstat / entstat output -> Avro records (schemas/hpm_sample.avsc, net_port_sample.avsc)."""

from __future__ import annotations

from collections.abc import Iterator

from fleetperf.ingest.identity import HostIdentity
from fleetperf.ingest.records import Emitted
from fleetperf.sources.aix.entstat import EntstatReport
from fleetperf.sources.aix.hpmstat import HpmSample


def report_ends(samples: list[HpmSample], end_ms: int) -> list[int | None]:
    """End (epoch ms) of each report of one output: the last ends at end_ms (when the capture was
    written or the command returned); hpmstat runs its reports back to back, so each earlier one
    ended when the next began: that one's end minus its wall clock time. None where a later report
    prints no wall clock time (its start, so everything before it, is unknown)."""
    ends: list[int | None] = [None] * len(samples)
    end: int | None = end_ms
    for k in range(len(samples) - 1, -1, -1):
        if end is None:
            break
        ends[k] = end
        wall = samples[k].wall_s
        end = end - round(wall * 1000) if wall is not None else None
    return ends


def hpm_records(samples: list[HpmSample], who: HostIdentity, ts_ms: int, origin: str) -> Iterator[Emitted]:
    """One record per report, each at its own end time (report_ends); a report whose time is
    unknown is left out (collect.from_text dead-letters it)."""
    for s, end in zip(samples, report_ends(samples, ts_ms), strict=True):
        if end is None:
            continue
        yield Emitted(
            "hpm_samples",
            {
                "host_id": who.host_id,
                "hostname": who.hostname,
                "ts": end,
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
