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

-- sql/015's lpar_sizing (exact at any moment, hourly states) with the samples' entitlement from the kept state
CREATE OR REPLACE VIEW lpar_sizing AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    coalesce(toFloat64OrNull(any(i.entitled_capacity)), any(c.sample_entitled)) AS entitled,
    maxIf(h.avg_value, h.metric = 'physc') AS peak_hour_physc,
    maxIf(h.max_value, h.metric = 'physc') AS peak_physc,
    maxIfOrNull(h.max_value, h.metric = 'vps_needed') AS vps_needed,
    avgIf(h.avg_value, h.metric = 'physc') AS mean_physc,
    minIf(h.hour, h.metric = 'physc') AS first_hour,
    maxIf(h.hour, h.metric = 'physc') AS last_hour
FROM entity_hourly AS h
LEFT JOIN host_inventory AS i ON i.host_id = h.entity_id
LEFT JOIN
(
    SELECT host_id, CAST(argMaxMerge(entitled), 'Nullable(Float64)') AS sample_entitled
    FROM host_entitled_state
    GROUP BY host_id
) AS c ON c.host_id = h.entity_id
WHERE h.metric IN ('physc', 'vps_needed')
GROUP BY h.entity_id
HAVING countIf(h.metric = 'physc') > 0;

-- sql/015's lpar_sizing on the finalised daily rows (same columns): Capacity's sizing chart
CREATE OR REPLACE VIEW lpar_sizing_final AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    coalesce(toFloat64OrNull(any(i.entitled_capacity)), any(c.sample_entitled)) AS entitled,
    maxIf(h.hourly_avg_max, h.metric = 'physc') AS peak_hour_physc,
    maxIf(h.max_value, h.metric = 'physc') AS peak_physc,
    maxIfOrNull(h.max_value, h.metric = 'vps_needed') AS vps_needed,
    sumIf(h.hourly_avg_sum, h.metric = 'physc') / sumIf(h.hours, h.metric = 'physc') AS mean_physc,
    minIf(h.first_hour, h.metric = 'physc') AS first_hour,
    maxIf(h.last_hour, h.metric = 'physc') AS last_hour
FROM entity_daily_final AS h
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

-- The z/VM dashboard's "CPC partitions" (mean %Busy per logical CPU over all history, FCX126) read
-- every logical processor of every partition sample with FINAL: 50 partitions x 6 CPUs x a year at
-- 5 minutes = 31 M rows per load. lpar_cpu_daily keeps per partition, CPU type and day the sum and
-- count of %Busy and the set of logical CPUs, computed from lpar_cpus_v (FINAL: a sample ingested
-- twice counts once, as before) for the (partition, day) keys that changed, by a refreshable view
-- like sql/034's. avg = sum / count and count(DISTINCT cpu) = the size of the union of the sets give
-- the former figures (tests/unit/test_dashboard_precomputed.py).
CREATE TABLE IF NOT EXISTS lpar_cpu_daily
(
    lpar_id     LowCardinality(String),
    cpc         LowCardinality(String),
    partition   LowCardinality(String),
    cpu_type    Nullable(String),
    day         Date,
    busy_sum    Float64,
    busy_n      UInt64,
    cpus        Array(Int32),
    computed_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(computed_at)
ORDER BY (lpar_id, day, cpc, partition, isNull(cpu_type), ifNull(cpu_type, ''));

CREATE TABLE IF NOT EXISTS lpar_changes
(
    lpar_id    LowCardinality(String),
    day        Date,
    changed_at DateTime64(3, 'UTC')
)
ENGINE = MergeTree
ORDER BY changed_at
TTL toDateTime(changed_at) + INTERVAL 30 DAY;

CREATE MATERIALIZED VIEW IF NOT EXISTS lpar_changes_mv TO lpar_changes AS
SELECT DISTINCT lpar_id, toDate(ts) AS day, now64(3, 'UTC') AS changed_at
FROM lpar_samples;

-- what is stored already
INSERT INTO lpar_cpu_daily
SELECT lpar_id, cpc, partition, cpu_type, toDate(ts), ifNull(sum(busy_pct), 0), count(busy_pct), groupUniqArray(cpu),
       now64(3, 'UTC')
FROM lpar_cpus_v
GROUP BY lpar_id, cpc, partition, cpu_type, toDate(ts);

-- reads lpar_samples itself (lpar_cpus_v's FINAL and ARRAY JOIN), not the view: on a cluster each
-- shard's refresh then reads its own samples (cluster_ddl.py points a materialized view at the
-- _local tables), not the whole cluster's
CREATE MATERIALIZED VIEW IF NOT EXISTS lpar_cpu_daily_refresh
REFRESH EVERY 15 SECOND APPEND TO lpar_cpu_daily AS
SELECT
    lpar_id, cpc, partition, c.cpu_type AS cpu_type, toDate(ts) AS day, ifNull(sum(c.busy_pct), 0) AS busy_sum,
    count(c.busy_pct) AS busy_n, groupUniqArray(c.cpu) AS cpus, now64(3, 'UTC') AS computed_at
FROM
(
    -- the array renamed: `cpus` names the result column here
    SELECT lpar_id, cpc, partition, ts, cpus AS cpu_list
    FROM lpar_samples FINAL
    WHERE (lpar_id, toDate(ts)) IN (
        SELECT lpar_id, day FROM lpar_changes
        WHERE changed_at >= (SELECT max(computed_at) FROM lpar_cpu_daily) - INTERVAL 1 MINUTE)
)
ARRAY JOIN cpu_list AS c
GROUP BY lpar_id, cpc, partition, cpu_type, day;

CREATE OR REPLACE VIEW lpar_cpus_daily AS
SELECT lpar_id, cpc, partition, cpu_type, toDateTime(day, 'UTC') AS day, busy_sum, busy_n, cpus
FROM lpar_cpu_daily FINAL;
