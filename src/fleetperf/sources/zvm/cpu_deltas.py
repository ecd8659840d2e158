"""Cumulative CP monitor CPU counters of a guest -> per-interval zvm_guest_samples records.

The CP monitor reports a guest's total and virtual CPU time as CPU-timer values accumulated since
logon (bit 51 of the 64-bit CPU timer is one microsecond, so value >> 12 = microseconds). A record
per interval is the difference of two samples; the first sample of a guest only sets the base,
and counters that went backwards mean the guest logged off and on: the new values count from that
logon, which lies inside the interval. The record decoding itself is issue #5's collector; this is
the part every monitor-based source shares, and what makes its T/V comparable with the Toolkit's.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fleetperf.ingest.records import Emitted

CPU_TIMER_SHIFT = 12


def cpu_timer_seconds(units: int) -> float:
    return (units >> CPU_TIMER_SHIFT) / 1e6


@dataclass(frozen=True)
class GuestCpuCounters:
    zvm_system: str
    userid: str
    ts: int  # epoch ms of the sample
    total_cpu_timer: int  # e.g. VMDTTIME, CPU-timer units since logon
    virtual_cpu_timer: int  # e.g. VMDVTIME
    origin: str
    source: str = "monitor:4.3"


class GuestCpuDeltas:
    """Feed samples in time order per guest; yields one record per complete interval."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], GuestCpuCounters] = {}
        self.resets = 0

    def feed(self, sample: GuestCpuCounters) -> Iterator[Emitted]:
        key = (sample.zvm_system, sample.userid)
        before = self.last.get(key)
        self.last[key] = sample
        if before is None or sample.ts <= before.ts:
            return
        total = sample.total_cpu_timer - before.total_cpu_timer
        virtual = sample.virtual_cpu_timer - before.virtual_cpu_timer
        if total < 0 or virtual < 0:
            self.resets += 1
            total, virtual = sample.total_cpu_timer, sample.virtual_cpu_timer
        guest_id = f"{sample.zvm_system}/{sample.userid}"
        record = {
            "guest_id": guest_id,
            "zvm_system": sample.zvm_system,
            "userid": sample.userid,
            "ts": sample.ts,
            "interval_s": (sample.ts - before.ts) / 1000,
            "source": sample.source,
            "tcpu_s": cpu_timer_seconds(total),
            "vcpu_s": cpu_timer_seconds(virtual),
            "cpu_pct": None,
            "tv_ratio_reported": None,
            "virtual_io_rate": None,
            "dasd_io_rate": None,
            "paging_rate": None,
            "user_status": None,
            "share": None,
            "share_absolute": None,
            "origin": sample.origin,
        }
        yield Emitted("zvm_guest_samples", record, key=guest_id)
