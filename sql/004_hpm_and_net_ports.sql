-- AIX PMU counter reports (schemas/hpm_sample.avsc), one row per host and report.
CREATE TABLE IF NOT EXISTS hpm_samples
(
    host_id       LowCardinality(String),
    hostname      LowCardinality(String),
    ts            DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    source        LowCardinality(String),
    pmu_group     Nullable(Int32),
    counting_mode LowCardinality(String),
    duration_s    Nullable(Float64),
    wall_s        Nullable(Float64),
    counters      Map(LowCardinality(String), Int64),
    derived       Map(LowCardinality(String), Float64),
    origin        String,
    ingested_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, ts);

-- Per-port network counters with aggregation membership and LACP state (schemas/net_port_sample.avsc).
CREATE TABLE IF NOT EXISTS net_port_samples
(
    host_id            LowCardinality(String),
    hostname           LowCardinality(String),
    ts                 DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    source             LowCardinality(String),
    adapter            LowCardinality(String),
    aggregation        Nullable(String),
    device_type        LowCardinality(String),
    tx_packets         Nullable(Int64),
    rx_packets         Nullable(Int64),
    tx_bytes           Nullable(Int64),
    rx_bytes           Nullable(Int64),
    transmit           Map(LowCardinality(String), Int64),
    receive            Map(LowCardinality(String), Int64),
    aggregation_status Nullable(String),
    hash_mode          Nullable(String),
    actor_sync         Nullable(String),
    partner_sync       Nullable(String),
    actor_state        Map(String, String),
    partner_state      Map(String, String),
    lacp_counters      Map(LowCardinality(String), Int64),
    origin             String,
    ingested_at        DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, adapter, ts);

-- SLB / ERAT miss rates per report (percent per instruction), CPI and MIPS; ratios of counters.
CREATE VIEW IF NOT EXISTS hpm_rates AS
SELECT
    host_id,
    hostname,
    ts,
    100 * counters['PM_DSLB_MISS'] / counters['PM_RUN_INST_CMPL'] AS dslb_miss_rate,
    100 * counters['PM_ISLB_MISS'] / counters['PM_RUN_INST_CMPL'] AS islb_miss_rate,
    100 * (counters['PM_DSLB_MISS'] + counters['PM_ISLB_MISS']) / counters['PM_RUN_INST_CMPL'] AS slb_miss_rate,
    100 * counters['PM_IERAT_MISS'] / counters['PM_RUN_INST_CMPL'] AS ierat_miss_rate,
    counters['PM_RUN_CYC'] / counters['PM_RUN_INST_CMPL'] AS cpi,
    counters['PM_RUN_INST_CMPL'] / duration_s / 1e6 AS mips
FROM hpm_samples FINAL
WHERE counters['PM_RUN_INST_CMPL'] > 0;

-- Ports of each link aggregation, from every source that knows them; the inventory file wins,
-- then what the host reports itself (entstat, Linux bonding), then nmon's configuration text.
CREATE VIEW IF NOT EXISTS link_aggregation_members AS
SELECT
    host_id,
    aggregation,
    argMax(members, (priority, ts)) AS members,
    argMax(source, (priority, ts)) AS members_source
FROM
(
    SELECT
        host_id,
        ts,
        source,
        multiIf(source = 'inventory', 3, source = 'nmon', 1, 2) AS priority,
        splitByChar('.', k)[2] AS aggregation,
        arraySort(splitByChar(',', v)) AS members
    FROM host_configs FINAL
    ARRAY JOIN mapKeys(attributes) AS k, mapValues(attributes) AS v
    WHERE startsWith(k, 'aggregation.') AND endsWith(k, '.members') AND v != ''
    UNION ALL
    SELECT
        host_id,
        max(ts) AS ts,
        'entstat' AS source,
        2 AS priority,
        assumeNotNull(member_of) AS aggregation,
        arraySort(groupUniqArray(adapter)) AS members
    FROM
    (
        SELECT host_id, ts, adapter, aggregation AS member_of
        FROM net_port_samples FINAL
        WHERE aggregation IS NOT NULL
    )
    GROUP BY host_id, member_of
)
GROUP BY host_id, aggregation;
