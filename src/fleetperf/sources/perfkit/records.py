"""Report tables -> Avro records of the z/VM entities: guest (FCX112, FCX162), z/VM system (FCX225),
logical partition (FCX126). The same topics take the CP monitor collector's records."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta, tzinfo
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

from fleetperf.ingest.records import Emitted, dead_letter
from fleetperf.sources.perfkit.parser import Row, Scan, Table, scan_file

SOURCE = "perfkit"


@dataclass(frozen=True)
class Options:
    """What a report may not say about itself; given by the user (CLI flags)."""

    system: str | None = None  # z/VM system name
    cpc: str | None = None  # CPC (frame) identity for FCX126
    day: date | None = None  # date of the report when it prints none
    at: time | None = None  # end of the interval for reports that print no interval
    interval_s: float | None = None  # interval of a one-row log report
    tz: tzinfo = ZoneInfo("UTC")


class ReportError(ValueError):
    """A table whose rows cannot become records (no date, no system name ...)."""


def records_of_file(path: Path, options: Options) -> Iterator[Emitted]:
    yield from records_of_scan(scan_file(path), options)


def records_of_scan(scan: Scan, options: Options) -> Iterator[Emitted]:
    name = Path(scan.path).name
    for problem in scan.problems:
        yield dead_letter(SOURCE, scan.path, problem.line, problem.offset, problem.message, problem.raw)
    for table in scan.tables:
        builder = _BUILDERS[table.layout.fcx]
        try:
            yield from builder(table, options, name)
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


def _system(table: Table, options: Options) -> str:
    system = options.system or table.context.get("system")
    if not system and table.context.get("serial"):
        system = f"SER{table.context['serial']}"
    if not system:
        raise ReportError("the report names no z/VM system: pass --system")
    return str(system)


def _day(table: Table, options: Options) -> date:
    day = options.day or table.context.get("date")
    if day is None:
        raise ReportError("the report prints no date: pass --date YYYY-MM-DD")
    return day


def _ms(day: date, clock: time, options: Options) -> int:
    return int(datetime.combine(day, clock, options.tz).timestamp() * 1000)


def _clock(text: str) -> time:
    return time.fromisoformat(text)


def _interval(table: Table, options: Options) -> tuple[int, float | None]:
    """End (epoch ms) and length of the one interval a snapshot report (FCX112, FCX126) covers."""
    day = _day(table, options)
    if "interval" in table.context:
        start, end = (_clock(t) for t in table.context["interval"])
        start_dt = datetime.combine(day, start, options.tz)
        end_dt = datetime.combine(day, end, options.tz)
        if end_dt <= start_dt:
            end_dt += timedelta(days=1)
        return int(end_dt.timestamp() * 1000), (end_dt - start_dt).total_seconds()
    if options.at is None:
        raise ReportError("the report prints no interval: pass --at HH:MM:SS (end of the interval)")
    return _ms(day, options.at, options), options.interval_s


def _log_times(table: Table, rows: list[Row], options: Options) -> list[tuple[int, float]]:
    """(end ms, length s) for each row of an interval log (FCX162, FCX225); midnight rolls the day."""
    day = _day(table, options)
    ends: list[datetime] = []
    for row in rows:
        end = datetime.combine(day, _clock(row.values["end_time"]), options.tz)
        if ends and end <= ends[-1]:
            day += timedelta(days=1)
            end += timedelta(days=1)
        ends.append(end)
    gaps = [(b - a).total_seconds() for a, b in zip(ends, ends[1:], strict=False)]
    if not gaps and options.interval_s is None:
        raise ReportError("one interval only, its length is unknown: pass --interval-seconds")
    out = []
    for k, end in enumerate(ends):
        length = gaps[k - 1] if k > 0 else (gaps[0] if gaps else options.interval_s)
        assert length is not None
        out.append((int(end.timestamp() * 1000), length))
    return out


def _origin(name: str, row: Row) -> str:
    return f"{name}:{row.line}"


def _guest(system: str, userid: str, ts: int, interval_s: float, fcx: str, v: dict[str, Any], origin: str) -> dict:
    share = v.get("share")
    return {
        "guest_id": f"{system}/{userid}",
        "zvm_system": system,
        "userid": userid,
        "ts": ts,
        "interval_s": interval_s,
        "source": f"{SOURCE}:{fcx}",
        "tcpu_s": v.get("tcpu_s"),
        "vcpu_s": v.get("vcpu_s"),
        "cpu_pct": v.get("cpu_pct"),
        "tv_ratio_reported": v.get("tv_ratio"),
        "virtual_io_rate": v.get("virtual_io_rate"),
        "dasd_io_rate": v.get("dasd_io_rate"),
        "paging_rate": v.get("paging_rate"),
        "user_status": v.get("user_status"),
        "share": share[0] if share else None,
        "share_absolute": share[1] if share else None,
        "origin": origin,
    }


def _fcx112(table: Table, options: Options, name: str) -> Iterator[Emitted]:
    system = _system(table, options)
    ts, interval_s = _interval(table, options)
    if interval_s is None:
        raise ReportError("interval length unknown: pass --interval-seconds")
    for row in table.rows:
        if row.kind != "row":
            continue  # >>Mean>> averages all users: not an entity
        record = _guest(system, row.values["userid"], ts, interval_s, "FCX112", row.values, _origin(name, row))
        yield Emitted("zvm_guest_samples", record, key=record["guest_id"])


def _fcx162(table: Table, options: Options, name: str) -> Iterator[Emitted]:
    system = _system(table, options)
    userid = table.context.get("userid")
    if not userid:
        raise ReportError("no 'Resource Usage Log for User' line names the guest")
    rows = [r for r in table.rows if r.kind == "row"]
    for row, (ts, interval_s) in zip(rows, _log_times(table, rows, options), strict=True):
        record = _guest(system, userid, ts, interval_s, "FCX162", row.values, _origin(name, row))
        yield Emitted("zvm_guest_samples", record, key=record["guest_id"])


def _fcx225(table: Table, options: Options, name: str) -> Iterator[Emitted]:
    system = _system(table, options)
    rows = [r for r in table.rows if r.kind == "row"]
    for row, (ts, interval_s) in zip(rows, _log_times(table, rows, options), strict=True):
        v = row.values
        total = virtual = None
        if v["busy_pct"] is not None and v.get("online_cpus") is not None:
            total = v["busy_pct"] / 100 * v["online_cpus"] * interval_s
            if v["tv_ratio"]:
                virtual = total / v["tv_ratio"]
        record = {
            "zvm_system": system,
            "ts": ts,
            "interval_s": interval_s,
            "source": f"{SOURCE}:FCX225",
            "busy_pct": v["busy_pct"],
            "online_cpus": v.get("online_cpus"),
            "tv_ratio_reported": v["tv_ratio"],
            "capture_ratio": v.get("capture_ratio"),
            "total_cpu_s": total,
            "virtual_cpu_s": virtual,
            "users_logged": v.get("users_logged"),
            "users_active": v.get("users_active"),
            "users_in_elist": v.get("users_in_elist"),
            "io_rate": v.get("io_rate"),
            "dasd_resp_ms": v.get("dasd_resp_ms"),
            "paging_xstore_rate": v.get("paging_xstore_rate"),
            "paging_dasd_rate": v.get("paging_dasd_rate"),
            "origin": _origin(name, row),
        }
        yield Emitted("zvm_system_samples", record, key=system)


_CPU_FIELDS = ("busy_pct", "ovhd_pct", "susp_pct", "vmld_pct", "logld_pct")


def _cpu(v: dict[str, Any]) -> dict[str, Any]:
    return {"cpu": v["cpu"], "cpu_type": v.get("cpu_type"), **{f: v.get(f) for f in _CPU_FIELDS}}


def _fcx126(table: Table, options: Options, name: str) -> Iterator[Emitted]:
    cpc = options.cpc or table.context.get("cpc_model")
    if not cpc:
        raise ReportError("the report names no CPC (processor type and model): pass --cpc")
    ts, interval_s = _interval(table, options)
    current: dict[str, Any] | None = None
    for row in table.rows:
        v = row.values
        if row.kind == "continuation":
            if current is not None and v.get("cpu") is not None:
                current["cpus"].append(_cpu(v))
            continue
        if current is not None:
            yield Emitted("lpar_samples", current, key=current["lpar_id"])
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
            "collected_in": table.context.get("collected_in"),
            "ts": ts,
            "interval_s": interval_s,
            "source": f"{SOURCE}:FCX126",
            "cpus": [_cpu(v)] if v.get("cpu") is not None else [],
            "origin": _origin(name, row),
        }
    if current is not None:
        yield Emitted("lpar_samples", current, key=current["lpar_id"])


_BUILDERS = {"FCX112": _fcx112, "FCX162": _fcx162, "FCX225": _fcx225, "FCX126": _fcx126}
