-- Retention: raw samples and 1-minute metrics are kept 400 days after they were loaded; the
-- rollups are kept. The clock is the load time, not the sample time: a backfill of last year's
-- archive must not be deleted as it arrives.
ALTER TABLE cpu_samples MODIFY TTL toDateTime(ingested_at) + INTERVAL 400 DAY;
ALTER TABLE nmon_values MODIFY TTL toDateTime(ingested_at) + INTERVAL 400 DAY;
ALTER TABLE nmon_labels MODIFY TTL toDateTime(ingested_at) + INTERVAL 400 DAY;
ALTER TABLE derived_metrics MODIFY TTL toDateTime(emitted_at) + INTERVAL 400 DAY;

-- Hourly and daily rollups of the derived metrics, fed by materialized views on insert. Only
-- final window results are rolled up (an early result is replaced by its final one in
-- derived_metrics, but an MV sees every insert). A final window delivered twice (sink replay,
-- Flink restart) is counted twice here until `fleetperf rollups rebuild` recomputes the range
-- from derived_metrics FINAL.
CREATE TABLE IF NOT EXISTS metrics_hourly
(
    entity_id   LowCardinality(String),
    metric      LowCardinality(String),
    hour        DateTime('UTC'),
    entity_name SimpleAggregateFunction(anyLast, String),
    windows     AggregateFunction(count),
    avg_value   AggregateFunction(avg, Float64),
    min_value   SimpleAggregateFunction(min, Float64),
    max_value   SimpleAggregateFunction(max, Float64),
    p95_value   AggregateFunction(quantileTDigest(0.95), Float64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYYYYMM(hour)
ORDER BY (entity_id, metric, hour);

CREATE MATERIALIZED VIEW IF NOT EXISTS metrics_hourly_mv TO metrics_hourly AS
SELECT
    entity_id,
    metric,
    toStartOfHour(window_start) AS hour,
    anyLast(entity_name) AS entity_name,
    countState() AS windows,
    avgState(value) AS avg_value,
    min(value) AS min_value,
    max(value) AS max_value,
    quantileTDigestState(0.95)(value) AS p95_value
FROM derived_metrics
WHERE is_final
GROUP BY entity_id, metric, hour;

CREATE TABLE IF NOT EXISTS metrics_daily
(
    entity_id   LowCardinality(String),
    metric      LowCardinality(String),
    day         Date,
    entity_name SimpleAggregateFunction(anyLast, String),
    windows     AggregateFunction(count),
    avg_value   AggregateFunction(avg, Float64),
    min_value   SimpleAggregateFunction(min, Float64),
    max_value   SimpleAggregateFunction(max, Float64),
    p95_value   AggregateFunction(quantileTDigest(0.95), Float64)
)
ENGINE = AggregatingMergeTree
PARTITION BY toYear(day)
ORDER BY (entity_id, metric, day);

CREATE MATERIALIZED VIEW IF NOT EXISTS metrics_daily_mv TO metrics_daily AS
SELECT
    entity_id,
    metric,
    toDate(window_start) AS day,
    anyLast(entity_name) AS entity_name,
    countState() AS windows,
    avgState(value) AS avg_value,
    min(value) AS min_value,
    max(value) AS max_value,
    quantileTDigestState(0.95)(value) AS p95_value
FROM derived_metrics
WHERE is_final
GROUP BY entity_id, metric, day;

CREATE VIEW IF NOT EXISTS metrics_hourly_v AS
SELECT
    entity_id, metric, hour, anyLast(entity_name) AS entity_name, countMerge(windows) AS windows,
    avgMerge(avg_value) AS avg_value, min(min_value) AS min_value, max(max_value) AS max_value,
    quantileTDigestMerge(0.95)(p95_value) AS p95_value
FROM metrics_hourly
GROUP BY entity_id, metric, hour;

CREATE VIEW IF NOT EXISTS metrics_daily_v AS
SELECT
    entity_id, metric, day, anyLast(entity_name) AS entity_name, countMerge(windows) AS windows,
    avgMerge(avg_value) AS avg_value, min(min_value) AS min_value, max(max_value) AS max_value,
    quantileTDigestMerge(0.95)(p95_value) AS p95_value
FROM metrics_daily
GROUP BY entity_id, metric, day;

-- Anomaly flags (issue #9 writes them): one row per entity, metric, rule and window.
CREATE TABLE IF NOT EXISTS anomaly_flags
(
    entity_id    LowCardinality(String),
    entity_name  LowCardinality(String),
    metric       LowCardinality(String),
    rule         LowCardinality(String),
    window_start DateTime64(3, 'UTC'),
    window_end   DateTime64(3, 'UTC'),
    observed     Float64,
    threshold    Nullable(Float64),
    baseline     Nullable(Float64),
    severity     LowCardinality(String),
    explanation  String,
    incident_id  String,
    emitted_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(emitted_at)
PARTITION BY toYYYYMM(window_start)
ORDER BY (entity_id, metric, rule, window_start);

-- Fleet hierarchy: site -> frame/CEC (or CPC) -> LPAR / z/VM system -> guest. Identity is host_id
-- (serial + LPAR id where the platform gives them), so a renamed host stays one entity.
CREATE VIEW IF NOT EXISTS fleet_hierarchy AS
SELECT
    host_id,
    hostname,
    if(latest_attributes['site'] != '', latest_attributes['site'], 'unassigned') AS site,
    if(frame_id != '', frame_id, if(latest_attributes['cpc'] != '', latest_attributes['cpc'], 'standalone')) AS frame,
    multiIf(latest_attributes['os_version'] LIKE '7.%' OR latest_attributes['AAA/AIX'] != '', 'aix',
            latest_attributes['zvm_system'] != '', 'zvm-guest', 'linux') AS platform,
    latest_attributes['zvm_system'] AS zvm_system,
    entitled_capacity,
    first_seen,
    last_config_at
FROM host_inventory;
