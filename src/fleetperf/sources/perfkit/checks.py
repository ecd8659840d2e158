"""Plausibility limits of the values the Toolkit records publish: the shared rules of
`fleetperf.ingest.validate` (finite, percentage tolerance, plausible timestamps) plus the limits of
what a Toolkit report describes (guest CPUs, Avro int fields, shares).

A value outside its limits is not published: the field becomes null and a dead letter names file,
line and field. The limits are wide on purpose: they catch what cannot be (a non-finite number, a
busy percentage of 250, a 400-digit figure), never a busy but real system.
"""

from __future__ import annotations

import math

from fleetperf.ingest.validate import PERCENT_TOLERANCE as PCT_TOLERANCE

# A z/VM guest has at most 64 virtual processors; a z/VM system at most a few hundred logical ones.
MAX_GUEST_CPUS = 64
MAX_SYSTEM_CPUS = 256
MAX_RATE = 1e9  # I/O, paging, spool operations per second
MAX_COUNT = 1e6  # users
PCT = (0.0, 100.0 + PCT_TOLERANCE)

# field -> (low, high), both inclusive
LIMITS: dict[str, tuple[float, float]] = {
    # guests (FCX112, FCX162)
    "cpu_pct": (0.0, 100.0 * MAX_GUEST_CPUS + PCT_TOLERANCE),
    "tcpu_s": (0.0, math.inf),  # bounded by the interval in records.py
    "vcpu_s": (0.0, math.inf),
    "tv_ratio": (0.0, 100.0),
    "virtual_io_rate": (0.0, MAX_RATE),
    "dasd_io_rate": (0.0, MAX_RATE),
    "avoided_io_rate": (0.0, MAX_RATE),
    "diag98_io_rate": (0.0, MAX_RATE),
    "ur_io_rate": (0.0, MAX_RATE),
    "paging_rate": (0.0, MAX_RATE),
    # systems (FCX225)
    "busy_pct": PCT,
    "capture_ratio": (0.0, 1.0 + PCT_TOLERANCE / 100),
    "online_cpus": (0.0, MAX_SYSTEM_CPUS),
    "users_logged": (0.0, MAX_COUNT),
    "users_active": (0.0, MAX_COUNT),
    "users_in_elist": (0.0, MAX_COUNT),
    "io_rate": (0.0, MAX_RATE),
    "dasd_resp_ms": (0.0, 1e6),
    "paging_xstore_rate": (0.0, MAX_RATE),
    "paging_dasd_rate": (0.0, MAX_RATE),
    "spool_page_rate": (0.0, MAX_RATE),
    "mdc_insert_rate": (0.0, MAX_RATE),
    # partitions (FCX126): Avro int fields and percentages of one engine
    "lpar_number": (0, 255),
    "proc_count": (0, 1024),
    "weight": (0, 999),
    "cpu": (0, 1023),
    "load_pct": PCT,
    "ovhd_pct": PCT,
    "susp_pct": PCT,
    "vmld_pct": PCT,
    "logld_pct": PCT,
}
# SET SHARE: relative 1..10000, absolute up to 100 %
SHARE_RELATIVE = (0.0, 10000.0)
SHARE_ABSOLUTE = (0.0, 100.0)


def problem(name: str, value: object) -> str | None:
    """Why `value` of field `name` cannot be published, or None when it can (or is not a number)."""
    if isinstance(value, tuple) and name == "share":
        number, absolute = value
        low, high = SHARE_ABSOLUTE if absolute else SHARE_RELATIVE
        return _outside(name, number, low, high)
    if not isinstance(value, int | float) or isinstance(value, bool):
        return None
    low, high = LIMITS.get(name, (0.0, math.inf))
    return _outside(name, value, low, high)


def _outside(name: str, value: float, low: float, high: float) -> str | None:
    if isinstance(value, float) and not math.isfinite(value):
        return f"{name} is not a finite number"
    if value < low or value > high:
        shown = f"{float(value):.6g}" if abs(value) < 1e300 else "a huge number"
        return f"{name} {shown} outside [{low:g}, {high:g}]"
    return None
