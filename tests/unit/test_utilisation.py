"""Issue 25 views on the real embedded engine (chDB): NULL instead of 0.0 for metrics a host does not
report, hosts with only the utilisation family are fleet entities, and Capacity's entitlement comes
from the LPAR's own nmon samples when its inventory has none."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fleetperf.ingest.records import Emitted
from fleetperf.warehouse.clickhouse import migrate
from tests.conftest import embedded_settings

# a fixed minute well inside one day: the daily rollup and the minute view agree on it
MINUTE_MS = int(datetime(2011, 3, 14, 10, 0, tzinfo=UTC).timestamp() * 1000)


def _derived(entity: str, metric: str, value: float, start_ms: int = MINUTE_MS) -> Emitted:
    return Emitted(
        "derived_metrics",
        {
            "entity_id": entity,
            "entity_name": entity,
            "metric": metric,
            "window_start": start_ms,
            "window_end": start_ms + 60_000,
            "value": value,
            "samples": 1,
            "is_final": True,
            "emitted_at": start_ms,
        },
    )


def _insert(ch: Any, embedded_path: Path, database: str, emitted: list[Emitted]) -> None:
    """The rows the sink would insert for these records, one insert block per table."""
    from fleetperf.warehouse.rows import RowMapper

    settings = embedded_settings(embedded_path, database)
    mapper = RowMapper(settings)
    rows: dict[str, list] = {}
    for e in emitted:
        for table, row in mapper.rows(settings.topic(e.topic_key).name, e.record):
            rows.setdefault(table, []).append(row)
    for table, batch in rows.items():
        ch.insert(table, batch, column_names=mapper.columns[table])


def _loaded(embedded_path: Path, database: str, emitted: list[Emitted]) -> Any:
    """A fresh warehouse database holding the rows the sink would insert for these records."""
    ch, _ = migrate(embedded_settings(embedded_path, database))
    _insert(ch, embedded_path, database, emitted)
    return ch


def test_host_cpu_minute_is_null_for_metrics_an_x86_host_does_not_have(embedded_path: Path) -> None:
    # a recent minute: the 1-minute rows of derived_metrics have a retention TTL
    now = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    ms = int(now.timestamp() * 1000)
    ch = _loaded(
        embedded_path,
        "util_minute",
        [
            _derived("x86web", "steal_pct", 2.5, ms),
            _derived("x86web", "busy_pct", 40.0, ms),
            _derived("x86web", "cpu_cores", 1.6, ms),
            _derived("aixdb", "physc", 1.25, ms),
            _derived("aixdb", "entc_pct", 62.5, ms),
            _derived("aixdb", "busy_pct", 50.0, ms),
            _derived("aixdb", "cpu_cores", 1.25, ms),
        ],
    )
    rows = ch.query(
        "SELECT host_id, steal_pct, entc_pct, physc, busy_pct, cpu_cores, has_steal, has_entc"
        " FROM host_cpu_minute ORDER BY host_id"
    ).result_rows
    assert [tuple(r) for r in rows] == [
        ("aixdb", None, 62.5, 1.25, 50.0, 1.25, False, True),
        ("x86web", 2.5, None, None, 40.0, 1.6, True, False),
    ]
    # the fleet mean of entc over the minute is the AIX LPAR's, not halved by an x86 0.0
    assert ch.query("SELECT avg(entc_pct) FROM host_cpu_minute").result_rows[0][0] == 62.5


def test_host_cpu_minute_takes_the_window_emitted_last_as_final_does(embedded_path: Path) -> None:
    """sql/036 reads derived_metrics without FINAL: a window emitted again (a replay with a later
    emitted_at, stored twice until a merge) shows its last value, as ReplacingMergeTree keeps it;
    a host-minute with none of the view's metrics is no row; one emitted again under another name
    shows once per name until the merge."""
    now = datetime.now(UTC).replace(second=0, microsecond=0) - timedelta(hours=1)
    ms = int(now.timestamp() * 1000)

    def again(entity: str, metric: str, value: float, emitted_ms: int) -> Emitted:
        e = _derived(entity, metric, value, ms)
        return Emitted(e.topic_key, e.record | {"emitted_at": emitted_ms})

    emitted = [
        again("lpar1", "busy_pct", 10.0, ms + 5_000),
        again("lpar1", "busy_pct", 20.0, ms + 9_000),  # the last emission, not the largest value
        again("lpar1", "busy_pct", 30.0, ms + 7_000),
        again("lpar1", "steal_pct", 4.0, ms + 5_000),
        _derived("zvm1", "tv_ratio", 1.2, ms),  # none of the view's metrics
    ]
    ch = _loaded(embedded_path, "util_minute_again", emitted[:1])
    ch.command("SYSTEM STOP MERGES derived_metrics")  # the rows stay apart until the test merges them
    # one insert each, as replays arrive (one insert block would be deduplicated on insert)
    for e in emitted[1:]:
        _insert(ch, embedded_path, "util_minute_again", [e])
    assert ch.query("SELECT count() FROM derived_metrics WHERE entity_id = 'lpar1'").result_rows[0][0] == 4
    rows = ch.query("SELECT host_id, hostname, busy_pct, steal_pct, has_steal FROM host_cpu_minute").result_rows
    assert [tuple(r) for r in rows] == [("lpar1", "lpar1", 20.0, 4.0, True)]
    final = ch.query(
        "SELECT value FROM derived_metrics FINAL WHERE entity_id = 'lpar1' AND metric = 'busy_pct'"
    ).result_rows
    assert final == [(20.0,)]

    renamed = _derived("lpar1", "busy_pct", 50.0, ms)
    renamed = Emitted(renamed.topic_key, renamed.record | {"emitted_at": ms + 11_000, "entity_name": "lpar1-new"})
    _insert(ch, embedded_path, "util_minute_again", [renamed])
    rows = ch.query("SELECT hostname, busy_pct, steal_pct FROM host_cpu_minute ORDER BY hostname").result_rows
    assert [tuple(r) for r in rows] == [("lpar1", 20.0, 4.0), ("lpar1-new", 50.0, None)]
    ch.command("SYSTEM START MERGES derived_metrics")
    ch.command("OPTIMIZE TABLE derived_metrics FINAL")
    rows = ch.query("SELECT hostname, busy_pct, steal_pct FROM host_cpu_minute ORDER BY hostname").result_rows
    # the merge kept busy_pct's last emission (the new name); steal_pct was emitted under the old one
    assert [tuple(r) for r in rows] == [("lpar1", None, 4.0), ("lpar1-new", 50.0, None)]


def test_a_host_with_only_busy_pct_is_a_linux_fleet_entity(embedded_path: Path) -> None:
    ch = _loaded(
        embedded_path,
        "util_entities",
        [
            # a CentOS VMware guest's nmon without Steal%: the utilisation family only
            _derived("centos7vm", "busy_pct", 35.0),
            _derived("centos7vm", "cpu_cores", 1.4),
            # a z/VM system: busy_pct too, but also metrics only z/VM has
            _derived("VMSYS1", "busy_pct", 80.0),
            _derived("VMSYS1", "capture_ratio", 0.95),
            _derived("VMSYS1/LINUX01", "cpu_cores", 0.2),
            _derived("VMSYS1/LINUX01", "tv_ratio", 1.1),
        ],
    )
    entities = dict(ch.query("SELECT entity_id, platform FROM fleet_entities").result_rows)
    assert entities == {"centos7vm": "linux", "VMSYS1": "zvm-system", "VMSYS1/LINUX01": "zvm-guest"}
    hourly = ch.query(
        "SELECT metric, avg_value FROM entity_hourly WHERE entity_id = 'centos7vm' ORDER BY metric"
    ).result_rows
    assert [tuple(r) for r in hourly] == [("busy_pct", 35.0), ("cpu_cores", 1.4)]


def _nmon_entitled(path: Path) -> tuple[str, float] | None:
    """host id and the last LPAR 'entitled' value of an AIX nmon file, read with the csv module."""
    meta: dict[str, str] = {}
    header: list[str] = []
    entitled = None
    with open(path, newline="") as handle:
        for row in csv.reader(handle):
            if row and row[0] == "AAA" and len(row) > 2:
                meta[row[1]] = row[2]
            elif row and row[0] == "LPAR":
                if not row[1].startswith("T"):
                    header = [h.strip() for h in row[2:]]
                else:
                    entitled = float(dict(zip(header, row[2:], strict=False))["entitled"])
    if entitled is None:
        return None
    return f"{meta['SerialNumber']}-{meta['LPARNumberName']}", entitled


def test_capacity_entitled_comes_from_nmon_when_the_inventory_has_none(embedded_path: Path, tmp_path: Path) -> None:
    from fleetperf.demo.simulate import simulate
    from fleetperf.sources.nmon.parser import parse_file

    start = datetime(2011, 3, 14, 10, 0)
    files = simulate(tmp_path, 4, start, timedelta(minutes=10), 60, 3)
    expected = dict(e for e in (_nmon_entitled(f) for f in files) if e is not None)
    assert expected  # the simulated fleet has AIX LPARs
    emitted = [e for f in files for e in parse_file(f, UTC)]
    # the case of the issue: no configuration record says what the LPAR is entitled to
    typed = [e for e in emitted if e.topic_key == "cpu_samples"]
    ms = int(start.replace(tzinfo=UTC).timestamp() * 1000)
    ch = _loaded(embedded_path, "util_entitled", typed + [_derived(h, "physc", 1.0, ms) for h in expected])
    rows = dict(ch.query("SELECT entity_id, entitled FROM lpar_sizing").result_rows)
    assert rows == expected


def test_capacity_of_a_frame_known_only_from_2011_archives(embedded_path: Path) -> None:
    # ten days of one LPAR's physc in March 2011, growing 0.1 processor a day: 1.0, 1.1, ... 1.9
    day0 = datetime(2011, 3, 1, 12, 0, tzinfo=UTC)
    records = [
        _derived("ARCH-LPAR", "physc", 1.0 + d / 10, int((day0 + timedelta(days=d)).timestamp() * 1000))
        for d in range(10)
    ]
    ch = _loaded(embedded_path, "util_archive", records)
    fit = ch.query("SELECT frame, days, slope_per_day, last_peak FROM capacity_forecast_fit").result_rows
    assert len(fit) == 1
    frame, days, slope, last_peak = fit[0]
    assert (frame, days) == ("standalone", 10)
    # the daily p95 is a quantile sketch's (Float32 inside): equal to a few parts in 10^8
    assert abs(slope - 0.1) < 1e-6 and abs(last_peak - 1.9) < 1e-6
    actual = ch.query("SELECT count() FROM capacity_forecast_series WHERE actual IS NOT NULL").result_rows
    assert actual[0][0] == 10


def test_capacity_trend_leaves_out_part_days(embedded_path: Path) -> None:
    """Five whole days of a flat 2.0 processors (hourly windows), then the day in progress with three
    quiet hours: the trend is flat through the whole days, not pulled down by the part-day, which
    still shows in the actual series."""
    day0 = datetime(2026, 3, 1, tzinfo=UTC)
    records = [
        _derived("FLAT-LPAR", "physc", 2.0, int((day0 + timedelta(days=d, hours=h)).timestamp() * 1000))
        for d in range(5)
        for h in range(24)
    ]
    records += [
        _derived("FLAT-LPAR", "physc", 0.5, int((day0 + timedelta(days=5, hours=h)).timestamp() * 1000))
        for h in range(3)
    ]
    ch = _loaded(embedded_path, "util_partday", records)
    [(days, last_day, slope, last_peak)] = ch.query(
        "SELECT days, last_day, slope_per_day, last_peak FROM capacity_forecast_fit"
    ).result_rows
    assert days == 5 and last_day.date() == (day0 + timedelta(days=4)).date()
    assert abs(slope) < 1e-6 and abs(last_peak - 2.0) < 1e-6
    actual = ch.query("SELECT count() FROM capacity_forecast_series WHERE actual IS NOT NULL").result_rows
    assert actual[0][0] == 6
