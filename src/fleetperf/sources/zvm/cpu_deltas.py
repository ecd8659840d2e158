"""Guests' CP monitor CPU timers -> per-interval zvm_guest_samples records.

IBM stores VMDTTIME and VMDVTIME (and their _MT1/_PRO variants) in complement form: "accrual is
reflected by the numeric value of the field decreasing ... delta_VMDVTIME = VMDVTIME(1) -
VMDVTIME(0)", i.e. the earlier value minus the later one
(https://www.vm.ibm.com/perf/tips/vcputime.html). A timer is a 64-bit CPU-timer value (bit 51 is
one microsecond, so value >> 12 = microseconds). The raw times are used (the fields without _MT1
or _PRO): IBM tracks them "for ALL users for their entire session" and they are what the hardware
CPU timer measured; the MT-1 equivalent and prorated times exist only from z/VM 6.3 and their
offsets were not found.

MRUSEACT is one record per virtual CPU, so deltas are taken per (guest, virtual CPU) and summed
per guest: summing complement values first would be off by the starting value whenever the set of
virtual CPUs changes. A guest's interval is published when every virtual CPU it has now had a
value at the previous interval end, in the same session. Sessions come from the user's own
records: a logon (domain 4 record 1) or logoff (domain 4 record 2) starts a new one, and so does a
user missing from an interval (it logged off). A timer that moved up is not a logoff: it cannot
happen to a complement-form timer of one session, so the interval is refused and said so. A guest
whose CPU did not move is a sample of 0 s.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from fleetperf.ingest.records import Emitted

CPU_TIMER_SHIFT = 12


def cpu_timer_seconds(units: int) -> float:
    return (units >> CPU_TIMER_SHIFT) / 1e6


def complement_delta(earlier: int, later: int) -> int | None:
    """CPU-timer units used between two readings of a complement-form timer; None when it moved
    up (not one session's timer)."""
    return earlier - later if later <= earlier else None


@dataclass(frozen=True)
class GuestCpuCounters:
    """One guest's timers at an interval end: per virtual CPU address, (total, virtual) raw CPU-timer
    values as the records carry them (complement form)."""

    zvm_system: str
    userid: str
    ts: int  # epoch ms of the interval end
    vcpus: dict[int, tuple[int, int]]
    origin: str
    source: str = "monitor:4.3"


@dataclass(frozen=True)
class Refused:
    """An interval of a guest that is not published, and why (for a dead letter)."""

    userid: str
    ts: int
    origin: str
    reason: str


class GuestCpuDeltas:
    """Feed each interval's guests in time order; yields one record per guest and complete interval."""

    def __init__(self) -> None:
        self.last: dict[tuple[str, str], GuestCpuCounters] = {}
        self.new_session: set[tuple[str, str]] = set()
        self.refused: list[Refused] = []
        self.sessions_started = 0

    def logon(self, zvm_system: str, userid: str) -> None:
        """The user's logon record: its next values start a new session (base only)."""
        self._restart((zvm_system, userid))

    def logoff(self, zvm_system: str, userid: str) -> None:
        """The user's logoff record: its values so far end with it."""
        self._restart((zvm_system, userid))

    def _restart(self, key: tuple[str, str]) -> None:
        if self.last.pop(key, None) is not None:
            self.sessions_started += 1
        self.new_session.add(key)

    def interval(self, zvm_system: str, ts: int, guests: list[GuestCpuCounters]) -> Iterator[Emitted]:
        """All guests sampled at one interval end; users missing from it logged off."""
        present = {(g.zvm_system, g.userid) for g in guests}
        for key in [k for k in self.last if k[0] == zvm_system and k not in present]:
            self._restart(key)  # disappeared: its next appearance is a new session
        for sample in guests:
            yield from self.feed(sample)

    def _refuse(self, sample: GuestCpuCounters, reason: str) -> None:
        self.refused.append(Refused(sample.userid, sample.ts, sample.origin, reason))

    def feed(self, sample: GuestCpuCounters) -> Iterator[Emitted]:
        key = (sample.zvm_system, sample.userid)
        before = None if key in self.new_session else self.last.get(key)
        self.new_session.discard(key)
        self.last[key] = sample
        if before is None or sample.ts <= before.ts:
            return
        if set(before.vcpus) != set(sample.vcpus):
            why = f"virtual CPUs changed from {sorted(before.vcpus)} to {sorted(sample.vcpus)}: the time of the"
            self._refuse(sample, why + " added or removed ones in this interval is unknown")
            return
        total = virtual = 0
        for vcpu, (t_now, v_now) in sample.vcpus.items():
            t_before, v_before = before.vcpus[vcpu]
            dt, dv = complement_delta(t_before, t_now), complement_delta(v_before, v_now)
            if dt is None or dv is None:
                why = f"CPU timer of virtual CPU {vcpu} moved up (complement-form timers only count down within"
                self._refuse(sample, why + " a session) without a logon or logoff record")
                return
            total += dt
            virtual += dv
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
