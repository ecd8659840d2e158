"""The dashboards, compactly: datasets (warehouse views), charts and dashboard layouts.

`python dashboards/build.py` turns this into the Superset import bundle in dashboards/bundle/
(YAML, stable UUIDs derived from the names); the warehouse start imports that bundle. Charts over
all history read entity_daily_final and the capacity views on it (finalised daily rows, sql/034,
refreshed every 15 s) at day grain: a chart that showed hourly points shows per day the figure of
that day's hours (highest hourly mean, highest hourly p95, mean of the hourly means), so it returns
at most 366 points per series for a year and reads no rollup state. Charts over a recent range
(Host drill-down) keep hourly and minute rows.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# ---------------------------------------------------------------- datasets


@dataclass(frozen=True)
class Dataset:
    name: str  # the warehouse view
    time_column: str | None
    description: str = ""


DATASETS = {
    d.name: d
    for d in (
        Dataset(
            "entity_hourly",
            "hour",
            "Hourly rollup of every derived metric with the entity's platform, site and frame.",
        ),
        Dataset(
            "incident_metrics_hourly",
            "hour",
            "entity_hourly of the entities and metrics that have incidents.",
        ),
        Dataset(
            "entity_daily",
            "day",
            "Daily rollup of every derived metric (capacity over months and years).",
        ),
        Dataset(
            "entity_daily_final",
            "day",
            "entity_daily on the finalised daily rows (sql/034, refreshed every 15 s), with the day's hourly"
            " figures: hours, sum and max of the hourly means, max of the hourly p95. Charts over all history"
            " read it.",
        ),
        Dataset(
            "incident_metrics_daily",
            "day",
            "entity_daily of the entities and metrics that have incidents.",
        ),
        Dataset(
            "fleet_entities",
            "last_day",
            "Every entity with metrics and its place in the fleet.",
        ),
        Dataset(
            "incidents",
            "started",
            "Anomaly incidents: consecutive flagged windows of one entity, metric and rule.",
        ),
        Dataset(
            "frame_daily_physc",
            "day",
            "Processors used per frame and day: sum over its LPARs of the daily p95 and mean physc.",
        ),
        Dataset(
            "capacity_forecast_series_final",
            "day",
            "Daily stacked p95 physc per frame, the fitted linear trend and its ±2σ band, 90 days ahead.",
        ),
        Dataset(
            "capacity_forecast_final",
            "last_day",
            "Per frame: trend of daily peaks, headroom to the shared pool and projected exhaustion.",
        ),
        Dataset(
            "lpar_sizing_final",
            "last_hour",
            "Entitlement sizing: EC ~ mean physc of the peak hour, VPs ~ peak physc"
            " (IBM Power Systems Performance Guide, LPAR entitlement).",
        ),
        Dataset(
            "lpar_cpus_daily",
            "day",
            "Per CPC partition, CPU type and day: sum and count of %Busy, the logical CPUs (FCX126; sql/035).",
        ),
        Dataset(
            "lpar_cpus_v",
            "ts",
            "Logical processors of the CPC's partitions (FCX126).",
        ),
        Dataset(
            "aggregation_port_share",
            "last_sample",
            "Packets each member port moved over its sample history, and its latest LACP state.",
        ),
        Dataset(
            "entity_names",
            None,
            "Every name of every entity with metrics (the Entity filter's choices).",
        ),
        Dataset(
            "host_cpu_minute",
            "minute",
            "Per host and minute: steal %, entc %, physc (1-minute rows: for short ranges only).",
        ),
    )
}

# ---------------------------------------------------------------- charts


def sql_metric(expression: str, label: str) -> dict[str, Any]:
    return {"expressionType": "SQL", "sqlExpression": expression, "label": label, "hasCustomLabel": True}


def where(expression: str) -> dict[str, Any]:
    return {"clause": "WHERE", "expressionType": "SQL", "sqlExpression": expression}


@dataclass(frozen=True)
class Chart:
    key: str
    title: str
    viz: str  # line, area, bar, table, big_number, pie
    dataset: str
    metrics: tuple[dict[str, Any], ...] = ()
    groupby: tuple[str, ...] = ()
    filters: tuple[str, ...] = ()
    columns: tuple[str, ...] = ()  # raw table
    order_by: str | None = None  # raw table: column, descending
    description: str = ""
    y_format: str = ",.2f"
    row_limit: int = 10000
    extra: dict[str, Any] = field(default_factory=dict)
    # False: the dashboard's time range does not apply (the forecast reaches into the future)
    time_filtered: bool = True


_METRIC_IN = "metric IN ({})"


def _in(*names: str) -> str:
    return _METRIC_IN.format(", ".join(f"'{n}'" for n in names))


CHARTS = {
    c.key: c
    for c in (
        # fleet overview
        Chart("entities", "Entities reporting", "big_number", "fleet_entities", (sql_metric("count()", "entities"),)),
        Chart(
            "by_platform",
            "Entities by platform",
            "pie",
            "fleet_entities",
            (sql_metric("count()", "entities"),),
            ("platform",),
        ),
        Chart(
            "fleet_trend",
            "Fleet utilisation trend (daily mean of hourly means)",
            "line",
            "entity_daily_final",
            # = avg(avg_value) of entity_hourly at day grain (tests/unit/test_dashboard_precomputed.py)
            (sql_metric("sum(hourly_avg_sum) / sum(hours)", "mean"),),
            ("metric",),
            (_in("steal_pct", "entc_pct", "busy_pct"),),
            description="Mean over entities and hours of the hourly mean, per day: steal %, entitlement consumed %,"
            " CPU busy % (busy: every host of every source).",
        ),
        Chart(
            "top_offenders",
            "Top offenders (hourly p95)",
            "table",
            "entity_daily_final",
            (sql_metric("max(hourly_p95_max)", "worst hourly p95"),),
            ("entity_name", "metric"),
            (_in("steal_pct", "tv_ratio", "slb_miss_rate", "lacp_hash_skew_tx", "lacp_hash_skew_rx"),),
            row_limit=25,
        ),
        Chart(
            "open_incidents",
            "Open incidents",
            "table",
            "incidents",
            columns=("entity_name", "metric", "rule", "severity", "started", "peak", "explanation"),
            filters=("is_open",),
            order_by="started",
            row_limit=200,
        ),
        # capacity
        Chart(
            "frame_stacked",
            "Processors used per frame (stacked daily p95 of its LPARs)",
            "area",
            "entity_daily_final",
            (sql_metric("sum(p95_value)", "physc p95"),),
            ("entity_name",),
            ("metric = 'physc'",),
            description="Cumulative utilisation: each LPAR's daily p95 physc, stacked"
            " (Linux on System z Performance Tuning, 8.1.6 Capacity planning view).",
            extra={"stack": "Stack"},
        ),
        Chart(
            "forecast",
            "Capacity forecast: daily peak, linear trend and ±2σ band",
            "line",
            "capacity_forecast_series_final",
            (
                sql_metric("max(actual)", "daily peak"),
                sql_metric("max(trend)", "trend"),
                sql_metric("max(lower)", "lower (−2σ)"),
                sql_metric("max(upper)", "upper (+2σ)"),
            ),
            ("frame",),
            description="docs/capacity.md: least squares on 180 days of daily stacked p95 physc.",
            time_filtered=False,
            # 25 frames x (a year + 90 days ahead): 11,400 points; the default 10,000 cut the lines
            # at 1,000 hosts x 365 days (bench/dashboards.py data: 11,375 day x frame points for the
            # top 25 frames)
            row_limit=20_000,
        ),
        Chart(
            "cores_by_platform",
            "CPU consumed per platform (daily mean cores, every host)",
            "area",
            "entity_daily_final",
            (sql_metric("sum(avg_value)", "cores"),),
            ("platform",),
            ("metric = 'cpu_cores'",),
            description="cpu_cores of every host, stacked by platform: AIX physc, Linux and x86 busy x CPUs,"
            " z/VM guests' CPU seconds per second, z/VM systems' busy x processors.",
            extra={"stack": "Stack"},
        ),
        Chart(
            "headroom",
            "Headroom and projected exhaustion per frame",
            "table",
            "capacity_forecast_final",
            columns=(
                "frame",
                "days",
                "last_peak",
                "pool_cpus",
                "headroom_cpus",
                "slope_per_day",
                "residual_sd",
                "exhaustion_date",
            ),
            order_by="last_peak",
        ),
        Chart(
            "sizing",
            "LPAR entitlement vs peak-hour physc",
            "table",
            "lpar_sizing_final",
            columns=("entity_name", "frame", "entitled", "peak_hour_physc", "peak_physc", "vps_needed", "mean_physc"),
            order_by="peak_hour_physc",
        ),
        # z/VM
        Chart(
            "tv_guests",
            "T/V ratio by guest and system",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "T/V"),),
            ("entity_name",),
            ("metric = 'tv_ratio'",),
        ),
        Chart(
            "cp_overhead",
            "CP overhead % by guest and system",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "CP overhead %"),),
            ("entity_name",),
            ("metric = 'cp_overhead_pct'",),
        ),
        Chart(
            "zvm_system",
            "z/VM systems: busy %, eligible list, paging",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "value"),),
            ("entity_name", "metric"),
            # every host has busy_pct now: this chart is the z/VM systems'
            (_in("busy_pct", "users_in_elist", "paging_xstore_rate", "paging_dasd_rate"), "platform = 'zvm-system'"),
        ),
        Chart(
            "cpc_partitions",
            "CPC partitions: mean %Busy per logical CPU (FCX126)",
            "table",
            "lpar_cpus_daily",
            # = avg(busy_pct), count(DISTINCT cpu) of lpar_cpus_v (tests/unit/test_dashboard_precomputed.py)
            (
                sql_metric("sum(busy_sum) / sum(busy_n)", "mean %Busy"),
                sql_metric("length(groupUniqArrayArray(cpus))", "logical CPUs"),
            ),
            ("cpc", "partition", "cpu_type"),
        ),
        # POWER
        Chart(
            "entc",
            "Entitlement consumed % by LPAR",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "entc %"),),
            ("entity_name",),
            ("metric = 'entc_pct'",),
        ),
        Chart(
            "physc",
            "Physical processors consumed by LPAR",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "physc"),),
            ("entity_name",),
            ("metric = 'physc'",),
        ),
        Chart(
            "slb",
            "SLB / ERAT miss rate (% of instructions)",
            "line",
            "entity_daily_final",
            (sql_metric("max(hourly_avg_max)", "% per instruction"),),
            ("entity_name", "metric"),
            (_in("slb_miss_rate", "ierat_miss_rate"),),
            y_format=",.3f",
        ),
        # network
        Chart(
            "lacp_skew",
            "LACP hash skew per aggregation (max share × ports)",
            "line",
            "entity_daily_final",
            (sql_metric("max(max_value)", "skew"),),
            ("entity_name", "metric"),
            (_in("lacp_hash_skew_tx", "lacp_hash_skew_rx"),),
        ),
        Chart(
            "port_shares",
            "Member port shares of transmitted packets",
            "table",
            "aggregation_port_share",
            (
                sql_metric("sum(tx_moved)", "tx packets"),
                sql_metric("sum(rx_moved)", "rx packets"),
            ),
            ("hostname", "aggregation", "adapter", "actor_sync", "partner_sync"),
        ),
        # anomalies
        Chart(
            "incident_timeline",
            "Incidents started per hour, by rule",
            "bar",
            "incidents",
            (sql_metric("count()", "incidents"),),
            ("rule",),
            extra={"time_grain_sqla": "PT1H", "stack": "Stack"},
        ),
        Chart(
            "incident_list",
            "Incidents (click a row to filter the entity's metrics)",
            "table",
            "incidents",
            (sql_metric("max(peak)", "peak"), sql_metric("sum(windows)", "windows")),
            ("entity_name", "metric", "rule", "severity", "started", "ended", "explanation"),
            row_limit=500,
        ),
        Chart(
            "incident_entity",
            "Metrics of the entities with incidents (daily max)",
            "line",
            "incident_metrics_daily",
            (sql_metric("max(max_value)", "daily max"),),
            ("entity_name", "metric"),
        ),
        # host drill-down
        Chart(
            "host_metrics",
            "Metrics of the selected entities (hourly mean)",
            "line",
            "entity_hourly",
            (sql_metric("avg(avg_value)", "mean"),),
            ("entity_name", "metric"),
        ),
        Chart(
            "host_minutes",
            "CPU busy %, steal % and entc % per minute (short ranges)",
            "line",
            "host_cpu_minute",
            (
                sql_metric("max(busy_pct)", "busy %"),
                sql_metric("max(steal_pct)", "steal %"),
                sql_metric("max(entc_pct)", "entc %"),
            ),
            ("hostname",),
            # without an entity chosen: the 10 hosts with the most steal, not the whole fleet
            extra={"time_grain_sqla": "PT1M", "series_limit": 10},
            # 10 hosts x 2,880 minutes (yesterday and today at 1-minute windows): 28,800 points
            row_limit=30_000,
        ),
        Chart(
            "host_incidents",
            "Incidents of the selected entities",
            "table",
            "incidents",
            columns=("entity_name", "metric", "rule", "started", "ended", "peak", "explanation"),
            order_by="started",
        ),
    )
}

# ---------------------------------------------------------------- dashboards


@dataclass(frozen=True)
class Dashboard:
    slug: str
    title: str
    rows: tuple[tuple[str, ...], ...]  # chart keys per row (widths split the 12 columns)
    # "No filter": every chart shows all the history present, so archives backfilled from past years
    # are visible at once (README, Dashboards, "Time range"). Dashboards reading the hourly/daily
    # rollups keep it; one reading minute rows takes a recent range instead. A recent range goes from
    # a midnight to tomorrow's midnight: Superset's "Last week" ends at today's midnight, and "now" /
    # "7 days ago" move every second (no chart cache hit ever).
    time_range: str = "No filter"
    select_filters: tuple[tuple[str, str, str], ...] = ()  # (label, dataset, column)
    description: str = ""


# The filters' choices come from fleet_entities (one row per entity) and entity_names (every name an
# entity has, as entity_hourly shows them); they apply by column name to
# every chart in scope. Reading them from entity_hourly grouped a year of hourly rollups (57 M rows
# at 1,000 hosts) for each filter on every dashboard load (bench/dashboards.py).
_HOST_FILTERS = (
    ("Site", "fleet_entities", "site"),
    ("Frame / CPC / z/VM system", "fleet_entities", "frame"),
    ("Platform", "fleet_entities", "platform"),
    ("Entity", "entity_names", "entity_name"),
)

DASHBOARDS = (
    Dashboard(
        "fleet-overview",
        "Fleet overview",
        (("entities", "by_platform", "fleet_trend"), ("top_offenders", "open_incidents")),
        select_filters=_HOST_FILTERS[:3],
    ),
    Dashboard(
        "capacity",
        "Capacity",
        (("frame_stacked", "forecast"), ("cores_by_platform", "headroom"), ("sizing",)),
        select_filters=(("Frame", "fleet_entities", "frame"),),
    ),
    Dashboard(
        "zvm",
        "z/VM",
        (("tv_guests", "cp_overhead"), ("zvm_system", "cpc_partitions")),
        select_filters=_HOST_FILTERS[1:2],
    ),
    Dashboard("power", "POWER", (("entc", "physc"), ("slb",)), select_filters=_HOST_FILTERS[1:2]),
    Dashboard("network", "Network", (("lacp_skew", "port_shares"),)),
    Dashboard(
        "anomalies",
        "Anomalies",
        (("incident_timeline",), ("incident_list",), ("incident_entity",)),
        select_filters=(("Rule", "incidents", "rule"), ("Severity", "incidents", "severity")),
    ),
    Dashboard(
        "host-drilldown",
        "Host drill-down",
        (("host_metrics",), ("host_minutes", "host_incidents")),
        time_range='DATEADD(DATETIME("today"), -1, day) : tomorrow',
        select_filters=_HOST_FILTERS,
    ),
)
