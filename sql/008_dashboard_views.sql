-- Views the Superset dashboards read (dashboards/spec.py). Long time ranges read the hourly and
-- daily rollups, never the 1-minute rows.

-- Every entity that has metrics, with its place in the fleet. Hosts known from their
-- configuration (fleet_hierarchy) keep theirs; others are placed by the metrics they have.
CREATE VIEW IF NOT EXISTS fleet_entities AS
SELECT
    d.entity_id AS entity_id,
    any(d.entity_name) AS entity_name,
    multiIf(any(f.platform) != '', any(f.platform),
            hasAny(groupUniqArray(d.metric), ['entc_pct', 'physc', 'slb_miss_rate']), 'aix',
            has(groupUniqArray(d.metric), 'busy_pct'), 'zvm-system',
            has(groupUniqArray(d.metric), 'tv_ratio'), 'zvm-guest',
            has(groupUniqArray(d.metric), 'lacp_active_ports'), 'aggregation',
            'linux') AS platform,
    if(any(f.site) != '', any(f.site), 'unassigned') AS site,
    multiIf(any(f.frame) != '', any(f.frame), position(d.entity_id, '/') > 0,
            splitByChar('/', d.entity_id)[1], 'standalone') AS frame,
    -- DateTime, not Date: a time range ending "now" must include today
    toDateTime(min(d.day), 'UTC') AS first_day,
    toDateTime(max(d.day), 'UTC') AS last_day
FROM metrics_daily_v AS d
LEFT JOIN fleet_hierarchy AS f ON f.host_id = d.entity_id
GROUP BY d.entity_id;

-- Hourly rollup with the entity's place: trends, top offenders, drill-down.
CREATE VIEW IF NOT EXISTS entity_hourly AS
SELECT
    h.hour AS hour, h.entity_id AS entity_id, h.entity_name AS entity_name, h.metric AS metric,
    h.avg_value AS avg_value, h.min_value AS min_value, h.max_value AS max_value,
    h.p95_value AS p95_value, h.windows AS windows,
    e.platform AS platform, e.site AS site, e.frame AS frame
FROM metrics_hourly_v AS h
LEFT JOIN fleet_entities AS e ON e.entity_id = h.entity_id;

-- Daily rollup with the entity's place: capacity over months and years. The day is a DateTime
-- (midnight UTC) so that a dashboard time range ending "now" includes today.
CREATE VIEW IF NOT EXISTS entity_daily AS
SELECT
    toDateTime(d.day, 'UTC') AS day, d.entity_id AS entity_id, d.entity_name AS entity_name, d.metric AS metric,
    d.avg_value AS avg_value, d.max_value AS max_value, d.p95_value AS p95_value,
    e.platform AS platform, e.site AS site, e.frame AS frame
FROM metrics_daily_v AS d
LEFT JOIN fleet_entities AS e ON e.entity_id = d.entity_id;

-- Processors a frame's LPARs used per day, stacked (sum over LPARs of their daily p95 and mean
-- physc), the frame's shared pool size where nmon reported it.
CREATE VIEW IF NOT EXISTS frame_daily_physc AS
SELECT
    frame, day,
    sum(p95_value) AS physc_p95_sum,
    sum(avg_value) AS physc_avg_sum,
    count() AS lpars
FROM entity_daily
WHERE metric = 'physc'
GROUP BY frame, day;

-- Capacity forecast per frame (docs/capacity.md): least-squares line through the last 180 days
-- of daily stacked p95 physc, its residual standard deviation, and the projection 90 days on with
-- a ±2σ band. days_to_exhaustion: when the trend line reaches the pool size (NULL: flat/falling
-- trend, unknown pool, or fewer than 7 days of history).
CREATE VIEW IF NOT EXISTS capacity_forecast_fit AS
SELECT frame, days, last_day, fit.1 AS slope_per_day, fit.2 AS intercept, residual_sd, last_peak
FROM
(
    SELECT
        frame,
        count() AS days,
        max(day) AS last_day,
        simpleLinearRegression(toFloat64(toRelativeDayNum(day)), physc_p95_sum) AS fit,
        -- least squares: residual variance = var(y) - slope^2 var(x)
        sqrt(greatest(0, varPop(physc_p95_sum) - pow(fit.1, 2) * varPop(toFloat64(toRelativeDayNum(day)))))
            AS residual_sd,
        argMax(physc_p95_sum, day) AS last_peak
    FROM frame_daily_physc
    WHERE day >= today() - 180
    GROUP BY frame
);

CREATE VIEW IF NOT EXISTS frame_pool_size AS
SELECT
    e.frame AS frame,
    max(v.value) AS pool_cpus
FROM nmon_values_v AS v
INNER JOIN fleet_entities AS e ON e.entity_id = v.host_id
WHERE v.section = 'LPAR' AND v.metric = 'poolCPUs' AND v.ts >= now() - INTERVAL 7 DAY
GROUP BY e.frame;

CREATE VIEW IF NOT EXISTS capacity_forecast AS
SELECT
    f.frame AS frame, f.days AS days, f.last_day AS last_day, f.slope_per_day AS slope_per_day,
    f.residual_sd AS residual_sd, f.last_peak AS last_peak, p.pool_cpus AS pool_cpus,
    p.pool_cpus - f.last_peak AS headroom_cpus,
    if(f.days >= 7 AND f.slope_per_day > 0 AND p.pool_cpus > 0,
       greatest(0, (p.pool_cpus - (f.slope_per_day * toRelativeDayNum(f.last_day) + f.intercept)) / f.slope_per_day),
       NULL) AS days_to_exhaustion,
    if(days_to_exhaustion IS NULL, NULL, f.last_day + toIntervalDay(toUInt32(days_to_exhaustion))) AS exhaustion_date
FROM capacity_forecast_fit AS f
LEFT JOIN frame_pool_size AS p ON p.frame = f.frame;

-- Actual daily peaks and the fitted/projected trend with its band, one row per frame and day.
CREATE VIEW IF NOT EXISTS capacity_forecast_series AS
SELECT frame, day, physc_p95_sum AS actual, NULL AS trend, NULL AS lower, NULL AS upper
FROM frame_daily_physc
WHERE day >= today() - 365
UNION ALL
SELECT
    f.frame AS frame,
    f.last_day - toIntervalDay(180) + toIntervalDay(n.number) AS day,
    NULL AS actual,
    f.slope_per_day * toRelativeDayNum(day) + f.intercept AS trend,
    trend - 2 * f.residual_sd AS lower,
    trend + 2 * f.residual_sd AS upper
FROM capacity_forecast_fit AS f
CROSS JOIN numbers(271) AS n
WHERE f.days >= 2 AND day >= f.last_day - toIntervalDay(f.days);

-- Entitlement sizing per LPAR (seed 000 L2264, L2309): EC ~ mean use in the peak hour, VPs ~ peak.
CREATE VIEW IF NOT EXISTS lpar_sizing AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    any(i.entitled_capacity) AS entitled,
    max(h.avg_value) AS peak_hour_physc,
    max(h.max_value) AS peak_physc,
    ceil(max(h.max_value)) AS vps_needed,
    avg(h.avg_value) AS mean_physc,
    min(h.hour) AS first_hour,
    max(h.hour) AS last_hour
FROM entity_hourly AS h
LEFT JOIN host_inventory AS i ON i.host_id = h.entity_id
WHERE h.metric = 'physc'
GROUP BY h.entity_id;

-- Share of each member port in its aggregation's packets over the ports' sample history.
CREATE VIEW IF NOT EXISTS aggregation_port_share AS
SELECT
    host_id, hostname, aggregation, adapter,
    max(tx_packets) - min(tx_packets) AS tx_moved,
    max(rx_packets) - min(rx_packets) AS rx_moved,
    max(ts) AS last_sample,
    argMax(ifNull(actor_sync, ''), ts) AS actor_sync,
    argMax(ifNull(partner_sync, ''), ts) AS partner_sync
FROM net_port_samples FINAL
WHERE aggregation IS NOT NULL
GROUP BY host_id, hostname, aggregation, adapter;

-- The hourly metrics behind the incidents (the Anomalies dashboard drills from incident to entity).
CREATE VIEW IF NOT EXISTS incident_metrics_hourly AS
SELECT *
FROM entity_hourly
WHERE (entity_id, metric) IN (SELECT entity_id, metric FROM anomaly_flags);
