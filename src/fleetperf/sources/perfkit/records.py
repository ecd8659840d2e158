"""Report tables -> Avro records of the z/VM entities: guest (FCX112, FCX162), z/VM system (FCX225),
logical partition (FCX126). The same topics take the CP monitor collector's records."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.ingest.validate import timestamp_problem
from fleetperf.sources.perfkit import checks
from fleetperf.sources.perfkit.parser import Row, Scan, Table, scan_file

SOURCE = "perfkit"
MAX_INTERVAL_S = 86400.0  # no Toolkit interval is longer than a day


@dataclass(frozen=True)
class Options:
    """What a report may not say about itself; given by the user (CLI flags)."""

    system: str | None = None  # z/VM system name (--zvm-system)
    cpc: str | None = None  # CPC (frame) identity for FCX126
    day: date | None = None  # date of the report when it prints none
    at: time | None = None  # end of the interval for reports that print no interval
    interval_s: float | None = None  # interval of a one-row log report
    tz: tzinfo = ZoneInfo("UTC")
    guest: str | None = None  # FCX162 saved without its "Resource Usage Log for User X" line (--zvm-guest)
    # guest and system samples cut at these boundaries (the Flink window, [flink] window_seconds, which
    # the pipeline's PerfkitSource passes): a window then holds the part of each interval measured
    # inside it. None: one record per report row, as the report prints it.
    window_s: float | None = 60.0

    def __post_init__(self) -> None:
        # a window under a second would cut a day-long interval into millions of pieces
        if self.window_s is not None and not 1.0 <= self.window_s <= 86400.0:
            raise ValueError(f"window of {self.window_s} s: between 1 s and a day, or None")
        if self.interval_s is not None and not 0 < self.interval_s <= MAX_INTERVAL_S:
            raise ValueError(f"--interval-seconds {self.interval_s}: more than 0 and at most a day")


class ReportError(ValueError):
    """A table whose rows cannot become records because of what the report says (bad interval ...):
    a dead letter, the rest of the file goes on."""


class MissingOptionError(ReportError):
    """Tables that need an option the user did not pass (--date, --zvm-system ...). Raised by
    records_of_scan / records_of_file before anything of the file is yielded: the file failed as a
    whole (the pipeline's file errors are ValueErrors), nothing of it was sent, a re-run with the
    option reads it from the start."""


def records_of_file(path: Path, options: Options) -> Iterator[Emitted]:
    yield from records_of_scan(scan_file(path), options)


def records_of_scan(scan: Scan, options: Options) -> Iterator[Emitted]:
    """Records and dead letters of every table, numbered in file order (Emitted.snapshot: the
    position a re-run resumes after). Raises MissingOptionError, before yielding anything, when a
    table needs an option (its message names the file, each table's line and the flag to pass):
    all or nothing, so that positions never shift between a failed run and the re-run with the
    option. The scan holds the file's rows already; its records are built before the first yield."""
    emitted = list(_records(scan, options))
    for n, e in enumerate(emitted, start=1):
        yield Emitted(e.topic_key, e.record, e.key, snapshot=n)


def _records(scan: Scan, options: Options) -> Iterator[Emitted]:
    name = Path(scan.path).name
    for problem in scan.problems:
        yield dead_letter(SOURCE, scan.path, problem.line, problem.offset, problem.message, _bytes(problem.raw))
    missing: list[str] = []
    for table in scan.tables:
        builder = _BUILDERS[table.layout.fcx]
        ctx = _Ctx(scan.path, name, options, table)
        try:
            yield from builder(ctx)
        except MissingOptionError as exc:
            missing.append(f"{table.layout.fcx} table at line {table.line}: {exc}")
        except ReportError as exc:
            first = table.rows[0] if table.rows else None
            yield dead_letter(
                SOURCE,
                scan.path,
                table.line,
                first.offset if first else 0,
                f"{table.layout.fcx} table at line {table.line}: {exc}",
                "",
            )
    if missing:
        raise MissingOptionError(f"{scan.path}: " + "; ".join(missing))


def _bytes(text: str) -> bytes:
    # the file is read with surrogateescape: give dead_letter the bytes, it decodes them for Avro
    return text.encode("utf-8", "surrogateescape")


@dataclass
class _Ctx:
    path: str
    name: str
    options: Options
    table: Table

    def dead(self, row: Row, message: str) -> Emitted:
        text = f"{self.table.layout.fcx}: {message}"  # file, line and offset are fields of the dead letter
        return dead_letter(SOURCE, self.path, row.line, row.offset, text, _bytes(row.raw))

    def clean(self, row: Row, fields: Iterable[str]) -> tuple[dict[str, Any], list[Emitted]]:
        """The row's values with each implausible or unreadable one set to None, and a dead letter
        for each (the rest of the row is published)."""
        values = dict(row.values)
        letters = [self.dead(row, f"{f} not readable as a number: published as null") for f in row.unreadable]
        for f in fields:
            why = checks.problem(f, values.get(f))
            if why:
                values[f] = None
                letters.append(self.dead(row, f"{why}: published as null"))
        return values, letters


def _system(ctx: _Ctx) -> str:
    system = ctx.options.system or ctx.table.context.get("system")
    if not system and ctx.table.context.get("serial"):
        system = f"SER{ctx.table.context['serial']}"
    if not system:
        raise MissingOptionError("the report names no z/VM system: pass --zvm-system NAME")
    return str(system)


def _day(ctx: _Ctx) -> date:
    day = ctx.options.day or ctx.table.context.get("date")
    if day is None:
        bad = ctx.table.context.get("bad_date")
        if bad:
            # damaged data, not a missing option: this table is a dead letter, the file goes on
            raise ReportError(f"its date {bad} is not a calendar date: table skipped (--date reads it)")
        raise MissingOptionError("the report prints no date: pass --date YYYY-MM-DD")
    return day


_CLOCK = re.compile(r"(\d\d):(\d\d):(\d\d)\Z")


def clock_seconds(text: str | None) -> int | None:
    """Seconds since midnight of a Toolkit time: 24:00:00 (and the leap second 23:59:60) is the end
    of the day, i.e. 86400; None for what is no time of day (29:99:99, '-', '')."""
    m = _CLOCK.match(text or "")
    if not m:
        return None
    h, mi, s = (int(g) for g in m.groups())
    if (h, mi, s) in ((24, 0, 0), (23, 59, 60)):
        return 86400
    if h > 23 or mi > 59 or s > 59:
        return None
    return h * 3600 + mi * 60 + s


def _ms(day: date, seconds: float, tz: tzinfo, after: int | None = None) -> int:
    """Epoch ms of `seconds` past midnight (wall clock) of `day`; ReportError when implausible.
    A wall clock `tz` shows twice (the hour summer time's end repeats) is its first showing, or its
    second when `after` (the row before, epoch ms) is already at or past the first."""
    at = datetime.combine(day, time(), tz) + timedelta(seconds=seconds)
    if after is not None:
        later = at.replace(fold=1)
        if later.utcoffset() != at.utcoffset() and at.timestamp() * 1000 <= after < later.timestamp() * 1000:
            at = later
    ms = int(at.timestamp() * 1000)
    why = timestamp_problem(ms)
    if why:
        raise ReportError(f"time {at.isoformat()} {why}")
    return ms


def _snapshot_time(ctx: _Ctx) -> tuple[int, float | None]:
    """End (epoch ms) and length of the one interval a snapshot report (FCX112, FCX126) covers."""
    day = _day(ctx)
    options = ctx.options
    if "interval" in ctx.table.context:
        first, last = ctx.table.context["interval"]
        start, end = clock_seconds(first), clock_seconds(last)
        if start is None or end is None:
            raise ReportError(f"interval {first}-{last} is not a time of day")
        if end == start:
            raise ReportError(f"interval {first}-{last} has no length")
        if end < start:
            end += 86400  # runs over midnight
        end_ms = _ms(day, end, options.tz)
        return end_ms, (end_ms - _ms(day, start, options.tz)) / 1000
    if options.at is None:
        raise MissingOptionError("the report prints no interval: pass --at HH:MM:SS (end of the interval)")
    at = options.at
    return _ms(day, at.hour * 3600 + at.minute * 60 + at.second, options.tz), options.interval_s


def _log_times(ctx: _Ctx, rows: list[Row]) -> tuple[list[tuple[Row, int, float]], list[Emitted]]:
    """(row, end ms, length s) for each row of an interval log (FCX162, FCX225), and dead letters
    for rows without a usable time. The day rolls over when the time of day goes back, unless the
    zone (--tz) shows that time twice and its second showing is after the row before (summer time's
    end sets the clock back an hour: rolled over, the rows after it were published a day late). A
    row's length is the log's usual interval (or the shorter gap to the row before)."""
    day = _day(ctx)
    letters: list[Emitted] = []
    timed: list[tuple[Row, int]] = []  # (row, end ms)
    offset = 0
    last = -1  # seconds since midnight of `day` of the row before
    for row in rows:
        text = row.values.get("end_time")
        seconds = clock_seconds(text)
        if seconds is None:
            letters.append(ctx.dead(row, f"end time {text!r} is not a time of day" if text else "no end time"))
            continue
        at = offset + seconds
        before = timed[-1] if timed else None
        try:
            ms = _ms(day, at, ctx.options.tz, before[1] if before else None)
            if before is not None and at < last and ms <= before[1]:
                offset += 86400  # past midnight
                at += 86400
                ms = _ms(day, at, ctx.options.tz, before[1])
        except ReportError as exc:
            letters.append(ctx.dead(row, str(exc)))
            continue
        if before is not None and ms == before[1]:
            letters.append(ctx.dead(row, f"end time {text} repeats the one of line {before[0].line}"))
            continue
        timed.append((row, ms))
        last = at
    gaps = [(b - a) / 1000 for (_, a), (_, b) in zip(timed, timed[1:], strict=False)]
    usual = ctx.options.interval_s or (Counter(gaps).most_common(1)[0][0] if gaps else None)
    if usual is None and timed:
        raise MissingOptionError("one interval only, its length is unknown: pass --interval-seconds")
    return [(row, ms, float(min(gaps[k - 1], usual) if k else usual)) for k, (row, ms) in enumerate(timed)], letters


def _pieces(end_ms: int, length_s: float, window_s: float | None) -> list[tuple[int, float, float]]:
    """The interval (end_ms - length, end_ms] cut at the window boundaries: (ts, seconds, fraction)
    per piece. A piece's ts is its end, or 1 ms before it when the end is a window boundary, so
    that the tumbling window holding ts (Flink takes the one whose start <= ts) is the one the
    piece was measured in."""
    total = round(length_s * 1000)
    if not window_s or total <= 0:
        return [(end_ms, length_s, 1.0)]
    step = round(window_s * 1000)
    out = []
    start = end_ms - total
    while start < end_ms:
        stop = min(end_ms, (start // step + 1) * step)
        out.append((stop - 1 if stop % step == 0 else stop, (stop - start) / 1000, (stop - start) / total))
        start = stop
    return out


def _checked_length(ctx: _Ctx, row: Row, length: float | None) -> Emitted | None:
    if length is not None and not 0 < length <= MAX_INTERVAL_S:
        return ctx.dead(row, f"interval of {length:g} s is not a Toolkit interval (0 to {MAX_INTERVAL_S:g} s)")
    return None


def _origin(name: str, row: Row) -> str:
    return f"{name}:{row.line}"


_GUEST_FIELDS = (
    "cpu_pct",
    "tcpu_s",
    "vcpu_s",
    "tv_ratio",
    "virtual_io_rate",
    "dasd_io_rate",
    "paging_rate",
    "share",
)


def _guests(ctx: _Ctx, system: str, userid: str, row: Row, end_ms: int, length: float) -> Iterator[Emitted]:
    """The guest's row as records, one per window piece of its interval (CPU seconds split by time)."""
    bad = _checked_length(ctx, row, length)
    if bad:
        yield bad
        return
    v, letters = ctx.clean(row, _GUEST_FIELDS)
    yield from letters
    for f in ("tcpu_s", "vcpu_s"):
        if v.get(f) is not None and v[f] > checks.MAX_GUEST_CPUS * length:
            yield ctx.dead(
                row, f"{f} {v[f]:g} more than {checks.MAX_GUEST_CPUS} CPUs x {length:g} s: published as null"
            )
            v[f] = None
    share = v.get("share")
    for ts, seconds, fraction in _pieces(end_ms, length, ctx.options.window_s):
        record = {
            "guest_id": f"{system}/{userid}",
            "zvm_system": system,
            "userid": userid,
            "ts": ts,
            "interval_s": seconds,
            "source": f"{SOURCE}:{ctx.table.layout.fcx}",
            "tcpu_s": _part(v.get("tcpu_s"), fraction),
            "vcpu_s": _part(v.get("vcpu_s"), fraction),
            "cpu_pct": v.get("cpu_pct"),
            "tv_ratio_reported": v.get("tv_ratio"),
            "virtual_io_rate": v.get("virtual_io_rate"),
            "dasd_io_rate": v.get("dasd_io_rate"),
            "paging_rate": v.get("paging_rate"),
            "user_status": v.get("user_status"),
            "share": share[0] if share else None,
            "share_absolute": share[1] if share else None,
            "origin": _origin(ctx.name, row),
        }
        yield Emitted("zvm_guest_samples", record, key=record["guest_id"])


def _part(amount: float | None, fraction: float) -> float | None:
    # amounts (CPU seconds) split by time; rates and percentages are the interval's average in each piece
    return None if amount is None else amount * fraction


def _fcx112(ctx: _Ctx) -> Iterator[Emitted]:
    system = _system(ctx)
    ts, interval_s = _snapshot_time(ctx)
    if interval_s is None:
        raise MissingOptionError("interval length unknown: pass --interval-seconds")
    for row in ctx.table.rows:
        if row.kind != "row":
            continue  # >>Mean>> averages all users: not an entity
        yield from _guests(ctx, system, row.values["userid"], row, ts, interval_s)


def _fcx162(ctx: _Ctx) -> Iterator[Emitted]:
    system = _system(ctx)
    userid = ctx.table.context.get("userid") or ctx.options.guest
    if not userid:
        raise MissingOptionError("no 'Resource Usage Log for User' line names the guest: pass --zvm-guest USERID")
    rows = [r for r in ctx.table.rows if r.kind == "row"]
    timed, letters = _log_times(ctx, rows)
    yield from letters
    for row, ts, interval_s in timed:
        yield from _guests(ctx, system, userid, row, ts, interval_s)


_SYSTEM_FIELDS = (
    "busy_pct",
    "tv_ratio",
    "capture_ratio",
    "online_cpus",
    "users_logged",
    "users_active",
    "io_rate",
    "dasd_resp_ms",
    "users_in_elist",
    "paging_xstore_rate",
    "paging_dasd_rate",
)


def _fcx225(ctx: _Ctx) -> Iterator[Emitted]:
    system = _system(ctx)
    rows = [r for r in ctx.table.rows if r.kind == "row"]
    timed, letters = _log_times(ctx, rows)
    yield from letters
    for row, end_ms, interval_s in timed:
        bad = _checked_length(ctx, row, interval_s)
        if bad:
            yield bad
            continue
        v, letters = ctx.clean(row, _SYSTEM_FIELDS)
        yield from letters
        total = virtual = None
        if v["busy_pct"] is not None and v.get("online_cpus") is not None:
            total = v["busy_pct"] / 100 * v["online_cpus"] * interval_s
            if v["tv_ratio"]:
                virtual = total / v["tv_ratio"]
        for ts, seconds, fraction in _pieces(end_ms, interval_s, ctx.options.window_s):
            record = {
                "zvm_system": system,
                "ts": ts,
                "interval_s": seconds,
                "source": f"{SOURCE}:FCX225",
                "busy_pct": v["busy_pct"],
                "online_cpus": v.get("online_cpus"),
                "tv_ratio_reported": v["tv_ratio"],
                "capture_ratio": v.get("capture_ratio"),
                "total_cpu_s": _part(total, fraction),
                "virtual_cpu_s": _part(virtual, fraction),
                "users_logged": v.get("users_logged"),
                "users_active": v.get("users_active"),
                "users_in_elist": v.get("users_in_elist"),
                "io_rate": v.get("io_rate"),
                "dasd_resp_ms": v.get("dasd_resp_ms"),
                "paging_xstore_rate": v.get("paging_xstore_rate"),
                "paging_dasd_rate": v.get("paging_dasd_rate"),
                "origin": _origin(ctx.name, row),
            }
            yield Emitted("zvm_system_samples", record, key=system)


_CPU_FIELDS = ("busy_pct", "ovhd_pct", "susp_pct", "vmld_pct", "logld_pct")


def _cpu(v: dict[str, Any]) -> dict[str, Any]:
    return {"cpu": v["cpu"], "cpu_type": v.get("cpu_type"), **{f: v.get(f) for f in _CPU_FIELDS}}


def _fcx126(ctx: _Ctx) -> Iterator[Emitted]:
    cpc = ctx.options.cpc or ctx.table.context.get("cpc_model")
    if not cpc:
        raise MissingOptionError("the report names no CPC (processor type and model): pass --cpc")
    ts, interval_s = _snapshot_time(ctx)
    if interval_s is not None and not 0 < interval_s <= MAX_INTERVAL_S:
        raise ReportError(f"interval of {interval_s:g} s is not a Toolkit interval")
    current: dict[str, Any] | None = None
    for row in ctx.table.rows:
        raw_weight = row.values.get("weight")
        v, letters = ctx.clean(row, ("lpar_number", "proc_count", "cpu", "load_pct", *_CPU_FIELDS))
        if raw_weight and raw_weight[0] is not None and checks.problem("weight", raw_weight[0]):
            letters.append(ctx.dead(row, f"{checks.problem('weight', raw_weight[0])}: published as null"))
            v["weight"] = None
        yield from letters
        if row.kind == "continuation":
            if current is not None and v.get("cpu") is not None:
                current["cpus"].append(_cpu(v))
            continue
        if current is not None:
            yield Emitted("lpar_samples", current, key=current["lpar_id"])
            current = None
        if v.get("lpar_number") is None or v.get("proc_count") is None:
            continue  # required by the record: the partition's row was dead-lettered above
        weight, dedicated = v.get("weight") or (None, False)
        current = {
            "lpar_id": f"{cpc}/{v['partition']}",
            "cpc": cpc,
            "partition": v["partition"],
            "lpar_number": v["lpar_number"],
            "upid": v.get("upid"),
            "proc_count": v["proc_count"],
            "weight": weight,
            "dedicated": dedicated,
            "wait_completion": v.get("wait_completion"),
            "capped": v.get("capped"),
            "load_pct": v.get("load_pct"),
            "collected_in": ctx.table.context.get("collected_in"),
            "ts": ts,
            "interval_s": interval_s,
            "source": f"{SOURCE}:FCX126",
            "cpus": [_cpu(v)] if v.get("cpu") is not None else [],
            "origin": _origin(ctx.name, row),
        }
    if current is not None:
        yield Emitted("lpar_samples", current, key=current["lpar_id"])


_BUILDERS = {"FCX112": _fcx112, "FCX162": _fcx162, "FCX225": _fcx225, "FCX126": _fcx126}
