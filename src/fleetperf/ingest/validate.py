"""Shared checks for values read from text: what may be published as a number or a time.

Source-agnostic on purpose (nmon, sysstat, Toolkit reports, AIX collectors): a collector says what
a value is (any finite number, a non-negative count or rate, a percentage) and gets back the
number or a short reason; it then publishes null for that field and a dead letter naming file,
line and field, and the rest of its record as usual.

Rules (README of each source points here):
- a number is ASCII `[+-]digits[.digits][e[+-]digits]` as Python's float() reads it, at most
  MAX_NUMBER_CHARS characters; `1_0` (which float() takes as 10) is not a number;
- NaN and ±Infinity (also what overflows, `1e400`, a long digit string) are never published;
- a count or rate is never negative; a ratio written as NaN (0/0) is no value (null, no error);
- a percentage lies in [0, 100 + PERCENT_TOLERANCE] (nmon rounds each column to one decimal, so
  a sum of rounded parts can pass 100 by a little);
- a timestamp lies in [EARLIEST, now + LATEST_AHEAD].
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from enum import IntEnum

MAX_NUMBER_CHARS = 64
PERCENT_TOLERANCE = 0.5
EARLIEST = datetime(1990, 1, 1, tzinfo=UTC)
LATEST_AHEAD = timedelta(days=1)

NOT_A_NUMBER = "not a finite number"
MAX_INT32 = 2**31 - 1


class Kind(IntEnum):
    """What a numeric field measures; the code is also what the nmon native scanner receives."""

    ANY = 0  # any finite number
    NON_NEGATIVE = 1  # a count, a rate, a size
    PERCENT = 2  # 0..100 (+ tolerance)
    RATIO = 3  # non-negative, and a written NaN means "no value" (a ratio over zero: 0/0)
    SMALL_COUNT = 4  # a count published as a 32-bit int (Avro "int"): 0..MAX_INT32


def parse_number(text: bytes | str) -> float | str:
    """`text` already stripped and not empty: the float, or why it is not one (a str)."""
    if len(text) > MAX_NUMBER_CHARS:
        return f"number too long ({len(text)} characters)"
    if (b"_" if isinstance(text, bytes) else "_") in text or not text.isascii():
        return NOT_A_NUMBER
    try:
        value = float(text)
    except ValueError:
        return NOT_A_NUMBER
    return value if math.isfinite(value) else NOT_A_NUMBER


def no_value(text: bytes, kind: int) -> bool:
    """A RATIO written as NaN (`-nan`: Linux nmon's % used of a file system of size 0) is an
    empty cell, not an error."""
    return kind == Kind.RATIO and text.lower() in (b"nan", b"-nan", b"+nan")


def out_of_range(value: float, kind: int) -> str | None:
    """Why a finite value cannot be what `kind` says, or None."""
    if kind >= Kind.NON_NEGATIVE and value < 0:
        return "negative"
    if kind == Kind.PERCENT and value > 100 + PERCENT_TOLERANCE:
        return "above 100 %"
    if kind == Kind.SMALL_COUNT and value > MAX_INT32:
        return f"above {MAX_INT32}"
    return None


def finite_or_none(value: float | None) -> float | None:
    """For values computed rather than read (ratios, sums): never publish NaN or Infinity."""
    return value if value is not None and math.isfinite(value) else None


def latest_ms(now_ms: int | None = None) -> int:
    return (int(time.time() * 1000) if now_ms is None else now_ms) + int(LATEST_AHEAD.total_seconds() * 1000)


def earliest_ms() -> int:
    return int(EARLIEST.timestamp() * 1000)


def timestamp_problem(ts_ms: int, now_ms: int | None = None) -> str | None:
    """Why an epoch-ms time is not plausible for a measurement, or None."""
    if ts_ms < earliest_ms():
        return f"before {EARLIEST:%Y-%m-%d}"
    if ts_ms > latest_ms(now_ms):
        return "more than a day in the future"
    return None


def year_plausible(year: int) -> bool:
    """A cheap check before building a datetime (year 1 or 9999 in a zone can overflow)."""
    return EARLIEST.year <= year <= datetime.now(UTC).year + 1
