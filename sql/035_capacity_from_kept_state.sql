-- Issue 24, goal 5: the Capacity dashboard's views over all history, on kept state instead of raw rows.
--
-- lpar_sizing grouped every hourly rollup row of every LPAR (finalising its states) and read every
-- entitled CPU sample; frame_pool_size read every CPU sample with a pool size twice. At 1,000 hosts x
-- a year that is 3.5 M hourly states and 2 x 42 M samples per Capacity load. They now read
-- entity_daily (sql/034, finalised per day, with the day's hourly figures) and two small states kept
-- by materialized views on insert into cpu_samples. The figures are those of sql/015 and sql/016:
-- - peak-hour physc = max of the hourly means = max over days of the day's max hourly mean; the mean
--   of the hourly means = sum of the days' hourly mean sums / their hours;
-- - the pool size of a host's last 7 days of samples: the largest pool value whose newest sample is
--   within 7 days of the host's newest sample with a pool (kept per host and pool value: max(ts));
-- - the newest entitlement of a host's samples: argMax state per host.
-- Like the queries they replace they read the samples without FINAL (max and argMax over a sample
-- stored twice give the same result). The states are not cut by cpu_samples' 400-day TTL: a host
-- whose samples all expired keeps its last pool and entitlement.

CREATE TABLE IF NOT EXISTS host_pool_state
(
    host_id   LowCardinality(String),
    pool_cpus Float64,
    last_ts   SimpleAggregateFunction(max, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (host_id, pool_cpus);

CREATE MATERIALIZED VIEW IF NOT EXISTS host_pool_state_mv TO host_pool_state AS
SELECT host_id, assumeNotNull(pool_cpus) AS pool_cpus, max(ts) AS last_ts
FROM (SELECT host_id, pool_cpus, ts FROM cpu_samples WHERE pool_cpus IS NOT NULL)
GROUP BY host_id, pool_cpus;

CREATE TABLE IF NOT EXISTS host_entitled_state
(
    host_id  LowCardinality(String),
    entitled AggregateFunction(argMax, Float64, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY host_id;

CREATE MATERIALIZED VIEW IF NOT EXISTS host_entitled_state_mv TO host_entitled_state AS
SELECT host_id, argMaxState(assumeNotNull(entitled), ts) AS entitled
FROM (SELECT host_id, entitled, ts FROM cpu_samples WHERE entitled IS NOT NULL)
GROUP BY host_id;

-- what is stored already (the views above see new inserts only)
INSERT INTO host_pool_state
SELECT host_id, assumeNotNull(pool_cpus), max(ts)
FROM cpu_samples
WHERE pool_cpus IS NOT NULL
GROUP BY host_id, assumeNotNull(pool_cpus);

INSERT INTO host_entitled_state
SELECT host_id, argMaxState(assumeNotNull(entitled), ts)
FROM cpu_samples
WHERE entitled IS NOT NULL
GROUP BY host_id;

-- sql/016's frame_pool_size on the kept state (same columns)
CREATE OR REPLACE VIEW frame_pool_size AS
SELECT
    e.frame AS frame,
    max(s.pool_cpus) AS pool_cpus
FROM
(
    SELECT host_id, pool_cpus, max(last_ts) AS last_ts FROM host_pool_state GROUP BY host_id, pool_cpus
) AS s
INNER JOIN fleet_entities AS e ON e.entity_id = s.host_id
INNER JOIN (SELECT host_id, max(last_ts) AS last_ts FROM host_pool_state GROUP BY host_id) AS l
    ON l.host_id = s.host_id
WHERE s.last_ts >= l.last_ts - INTERVAL 7 DAY
GROUP BY e.frame;

-- sql/015's lpar_sizing on the daily rows (same columns)
CREATE OR REPLACE VIEW lpar_sizing AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    coalesce(toFloat64OrNull(any(i.entitled_capacity)), any(c.sample_entitled)) AS entitled,
    maxIf(h.hourly_avg_max, h.metric = 'physc') AS peak_hour_physc,
    maxIf(h.max_value, h.metric = 'physc') AS peak_physc,
    maxIfOrNull(h.max_value, h.metric = 'vps_needed') AS vps_needed,
    sumIf(h.hourly_avg_sum, h.metric = 'physc') / sumIf(h.hours, h.metric = 'physc') AS mean_physc,
    minIf(h.first_hour, h.metric = 'physc') AS first_hour,
    maxIf(h.last_hour, h.metric = 'physc') AS last_hour
FROM entity_daily AS h
LEFT JOIN host_inventory AS i ON i.host_id = h.entity_id
LEFT JOIN
(
    -- Nullable as sql/015's argMax of a Nullable column: a host without samples joins as NULL, not 0
    SELECT host_id, CAST(argMaxMerge(entitled), 'Nullable(Float64)') AS sample_entitled
    FROM host_entitled_state
    GROUP BY host_id
) AS c ON c.host_id = h.entity_id
WHERE h.metric IN ('physc', 'vps_needed')
GROUP BY h.entity_id
HAVING countIf(h.metric = 'physc') > 0;
