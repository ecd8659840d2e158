-- Issue 24, goal 5 (dashboards at 1,000 hosts x a year of 5-minute data): every chart over all
-- history read the rollup states (metrics_hourly, metrics_daily) and finalised them on each query.
-- Finalising a quantileTDigest state costs ~6 us (hourly) and ~65 us (daily), so charts of p95
-- grew with the history kept (docs/warehouse.md, 1,000 hosts x 60 days: top offenders 14 s cold),
-- and hourly charts returned more points than their row limit at a year (8,760 hours per series).
--
-- metrics_daily_final keeps one finalised row per (entity, metric, day): the daily rollup's values
-- and what the hourly rollup says about that day (hours, sum / max of the hourly means, max of the
-- hourly p95, first and last hour), so day-grain charts give the same figures as the hourly and
-- daily queries they replace. A refreshable materialized view recomputes, every 15 seconds, only
-- the keys that changed (rollup_changes, written by a materialized view on metrics_daily: the sink's
-- final windows and `rollups rebuild` both land there). New final windows reach these charts one
-- refresh later (plus its run time), as they reach a chart cached by Superset (data_cache_seconds).
-- Not built: reading the keys changed since the last refresh from the states in the same view (a
-- UNION ALL of the finalised rows NOT IN the changed keys and the changed keys IN the states) was
-- exact at any moment, but chDB 26.9 dropped rows of it under GROUP BY with a WHERE on
-- entity_name while a changed key's parts were unmerged (seen in tests/unit/test_dashboard_precomputed.py).

CREATE TABLE IF NOT EXISTS metrics_daily_final
(
    entity_id      LowCardinality(String),
    metric         LowCardinality(String),
    day            Date,
    entity_name    String,
    windows        UInt64,
    avg_value      Float64,
    min_value      Float64,
    max_value      Float64,
    p95_value      Float64,
    hours          UInt64,
    hourly_avg_sum Float64,
    hourly_avg_max Float64,
    hourly_p95_max Float64,
    first_hour     DateTime('UTC'),
    last_hour      DateTime('UTC'),
    computed_at    DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
PARTITION BY toYear(day)
-- charts filter on the metric first
ORDER BY (metric, entity_id, day);

-- Keys of the daily rollup touched by an insert (every insert into metrics_daily, whoever makes it).
CREATE TABLE IF NOT EXISTS rollup_changes
(
    entity_id  LowCardinality(String),
    metric     LowCardinality(String),
    day        Date,
    changed_at DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY changed_at
-- a refresh reads the last minutes only; kept longer so a warehouse stopped for days catches up
TTL toDateTime(changed_at) + INTERVAL 30 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS rollup_changes_mv TO rollup_changes AS
SELECT DISTINCT entity_id, metric, day, now64(3, 'UTC') AS changed_at
FROM metrics_daily;

-- Every key, finalised once (what is stored already; the view above sees new inserts only).
INSERT INTO metrics_daily_final
SELECT
    d.entity_id, d.metric, d.day, d.entity_name, d.windows, d.avg_value, d.min_value, d.max_value, d.p95_value,
    h.hours, h.hourly_avg_sum, h.hourly_avg_max, h.hourly_p95_max, h.first_hour, h.last_hour,
    now64(3, 'UTC')
FROM
(
    SELECT
        entity_id, metric, day, anyLast(entity_name) AS entity_name, countMerge(windows) AS windows,
        avgMerge(avg_value) AS avg_value, min(min_value) AS min_value, max(max_value) AS max_value,
        quantileTDigestMerge(0.95)(p95_value) AS p95_value
    FROM metrics_daily
    GROUP BY entity_id, metric, day
) AS d
LEFT JOIN
(
    SELECT
        entity_id, metric, toDate(hour) AS day, count() AS hours, sum(avg_value) AS hourly_avg_sum,
        max(avg_value) AS hourly_avg_max, max(p95_value) AS hourly_p95_max,
        min(hour) AS first_hour, max(hour) AS last_hour
    FROM
    (
        SELECT entity_id, metric, hour, avgMerge(avg_value) AS avg_value,
               quantileTDigestMerge(0.95)(p95_value) AS p95_value
        FROM metrics_hourly
        GROUP BY entity_id, metric, hour
    )
    GROUP BY entity_id, metric, day
) AS h ON h.entity_id = d.entity_id AND h.metric = d.metric AND h.day = d.day;

-- Every 15 seconds: the keys changed since the newest refresh (a minute of slack: the views of one
-- insert write metrics_hourly, metrics_daily and rollup_changes one after the other, and a key
-- computed twice is only replaced by the same figures). A refresh that did not run (warehouse
-- stopped) leaves max(computed_at) behind, so the next one takes everything changed since.
CREATE MATERIALIZED VIEW IF NOT EXISTS metrics_daily_final_refresh
REFRESH EVERY 15 SECOND APPEND TO metrics_daily_final AS
SELECT
    d.entity_id AS entity_id, d.metric AS metric, d.day AS day, d.entity_name AS entity_name,
    d.windows AS windows, d.avg_value AS avg_value, d.min_value AS min_value, d.max_value AS max_value,
    d.p95_value AS p95_value, h.hours AS hours, h.hourly_avg_sum AS hourly_avg_sum,
    h.hourly_avg_max AS hourly_avg_max, h.hourly_p95_max AS hourly_p95_max, h.first_hour AS first_hour,
    h.last_hour AS last_hour, now64(3, 'UTC') AS computed_at
FROM
(
    SELECT
        entity_id, metric, day, anyLast(entity_name) AS entity_name, countMerge(windows) AS windows,
        avgMerge(avg_value) AS avg_value, min(min_value) AS min_value, max(max_value) AS max_value,
        quantileTDigestMerge(0.95)(p95_value) AS p95_value
    FROM metrics_daily
    WHERE (entity_id, metric, day) IN (
        SELECT entity_id, metric, day FROM rollup_changes
        WHERE changed_at >= (SELECT max(computed_at) FROM metrics_daily_final) - INTERVAL 1 MINUTE)
    GROUP BY entity_id, metric, day
) AS d
LEFT JOIN
(
    SELECT
        entity_id, metric, toDate(hour) AS day, count() AS hours, sum(avg_value) AS hourly_avg_sum,
        max(avg_value) AS hourly_avg_max, max(p95_value) AS hourly_p95_max,
        min(hour) AS first_hour, max(hour) AS last_hour
    FROM
    (
        SELECT entity_id, metric, hour, avgMerge(avg_value) AS avg_value,
               quantileTDigestMerge(0.95)(p95_value) AS p95_value
        FROM metrics_hourly
        WHERE (entity_id, metric, toDate(hour)) IN (
            SELECT entity_id, metric, day FROM rollup_changes
            WHERE changed_at >= (SELECT max(computed_at) FROM metrics_daily_final) - INTERVAL 1 MINUTE)
        GROUP BY entity_id, metric, hour
    )
    GROUP BY entity_id, metric, day
) AS h ON h.entity_id = d.entity_id AND h.metric = d.metric AND h.day = d.day;

-- The finalised rows (one per key whatever the merges did yet).
CREATE OR REPLACE VIEW metrics_daily_final_v AS
SELECT
    entity_id, metric, day, entity_name, windows, avg_value, min_value, max_value, p95_value, hours,
    hourly_avg_sum, hourly_avg_max, hourly_p95_max, first_hour, last_hour
FROM metrics_daily_final FINAL;

-- The dashboards read the finalised rows through views of their own; entity_daily (sql/027) and the
-- capacity views on it stay as they were, exact at any moment for SQL and the CLI. entity_daily_final:
-- entity_daily's columns on the finalised rows, plus the day's hourly figures for the charts that
-- showed hourly points over all history and now show days.
CREATE OR REPLACE VIEW entity_daily_final AS
SELECT
    toDateTime(d.day, 'UTC') AS day, d.entity_id AS entity_id, d.entity_name AS entity_name, d.metric AS metric,
    d.avg_value AS avg_value, d.max_value AS max_value, d.p95_value AS p95_value, d.windows AS windows,
    e.platform AS platform, e.site AS site, e.frame AS frame,
    d.min_value AS min_value, d.hours AS hours, d.hourly_avg_sum AS hourly_avg_sum,
    d.hourly_avg_max AS hourly_avg_max, d.hourly_p95_max AS hourly_p95_max,
    d.first_hour AS first_hour, d.last_hour AS last_hour
FROM metrics_daily_final_v AS d
LEFT JOIN fleet_entities AS e ON e.entity_id = d.entity_id;

-- sql/027's frame_daily_physc and capacity_forecast_fit, sql/016's capacity_forecast_series and
-- sql/008's capacity_forecast on entity_daily_final (the same text, other sources): Capacity's charts.
CREATE OR REPLACE VIEW frame_daily_physc_final AS
SELECT
    frame, day,
    sum(p95_value) AS physc_p95_sum,
    sum(avg_value) AS physc_avg_sum,
    count() AS lpars,
    sum(windows) / count() AS windows_per_lpar
FROM entity_daily_final
WHERE metric = 'physc'
GROUP BY frame, day;

CREATE OR REPLACE VIEW capacity_forecast_fit_final AS
SELECT frame, days, last_day, fit.1 AS slope_per_day, fit.2 AS intercept, residual_sd, last_peak
FROM
(
    SELECT
        p.frame AS frame,
        count() AS days,
        max(p.day) AS last_day,
        simpleLinearRegression(toFloat64(toRelativeDayNum(p.day)), p.physc_p95_sum) AS fit,
        sqrt(greatest(0, varPop(p.physc_p95_sum) - pow(fit.1, 2) * varPop(toFloat64(toRelativeDayNum(p.day)))))
            AS residual_sd,
        argMax(p.physc_p95_sum, p.day) AS last_peak
    FROM frame_daily_physc_final AS p
    INNER JOIN
    (
        SELECT q.frame AS frame, max(q.windows_per_lpar) AS best, any(m.frame_last) AS frame_last
        FROM frame_daily_physc_final AS q
        INNER JOIN (SELECT frame, max(day) AS frame_last FROM frame_daily_physc_final GROUP BY frame) AS m
            ON m.frame = q.frame
        WHERE q.day >= m.frame_last - toIntervalDay(180)
        GROUP BY q.frame
    ) AS c ON c.frame = p.frame
    WHERE p.day >= c.frame_last - toIntervalDay(180) AND p.windows_per_lpar >= 0.9 * c.best
    GROUP BY p.frame
);

CREATE OR REPLACE VIEW capacity_forecast_series_final AS
SELECT p.frame AS frame, p.day AS day, p.physc_p95_sum AS actual, NULL AS trend, NULL AS lower, NULL AS upper
FROM frame_daily_physc_final AS p
INNER JOIN (SELECT frame, max(day) AS frame_last FROM frame_daily_physc_final GROUP BY frame) AS l
    ON l.frame = p.frame
WHERE p.day >= l.frame_last - toIntervalDay(365)
UNION ALL
SELECT
    f.frame AS frame,
    f.last_day - toIntervalDay(180) + toIntervalDay(n.number) AS day,
    NULL AS actual,
    f.slope_per_day * toRelativeDayNum(day) + f.intercept AS trend,
    trend - 2 * f.residual_sd AS lower,
    trend + 2 * f.residual_sd AS upper
FROM capacity_forecast_fit_final AS f
CROSS JOIN numbers(271) AS n
WHERE f.days >= 2 AND day >= f.last_day - toIntervalDay(f.days);

CREATE OR REPLACE VIEW capacity_forecast_final AS
SELECT
    f.frame AS frame, f.days AS days, f.last_day AS last_day, f.slope_per_day AS slope_per_day,
    f.residual_sd AS residual_sd, f.last_peak AS last_peak, p.pool_cpus AS pool_cpus,
    p.pool_cpus - f.last_peak AS headroom_cpus,
    if(f.days >= 7 AND f.slope_per_day > 0 AND p.pool_cpus > 0,
       greatest(0, (p.pool_cpus - (f.slope_per_day * toRelativeDayNum(f.last_day) + f.intercept)) / f.slope_per_day),
       NULL) AS days_to_exhaustion,
    if(days_to_exhaustion IS NULL, NULL, f.last_day + toIntervalDay(toUInt32(days_to_exhaustion))) AS exhaustion_date
FROM capacity_forecast_fit_final AS f
LEFT JOIN frame_pool_size AS p ON p.frame = f.frame;

-- sql/008's incident_metrics_hourly by day (the Anomalies dashboard over all history).
CREATE OR REPLACE VIEW incident_metrics_daily AS
SELECT *
FROM entity_daily_final
WHERE (entity_id, metric) IN (SELECT entity_id, metric FROM anomaly_flags);
