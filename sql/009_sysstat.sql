-- sysstat (sadc binary files): what sar prints, per host, section, item and interval
-- (schemas/sysstat_sample.avsc). The sorting key is the value's identity, so a re-read file
-- replaces itself. Long form by section keeps every activity queryable with one table:
--   SELECT ts, metrics['steal'] FROM sysstat_samples_v WHERE section = 'cpu-load-all' AND item = 'all'
CREATE TABLE IF NOT EXISTS sysstat_samples
(
    host_id         LowCardinality(String),
    hostname        LowCardinality(String),
    ts              DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    interval_s      Nullable(Float64),
    source          LowCardinality(String),
    section         LowCardinality(String),
    item            LowCardinality(String),
    metrics         Map(LowCardinality(String), Float64),
    sysstat_version LowCardinality(String),
    steal_trusted   Bool,
    origin_file     String,
    origin_offset   Int64,
    ingested_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, section, item, ts);

CREATE VIEW IF NOT EXISTS sysstat_samples_v AS
SELECT host_id, hostname, ts, interval_s, section, item, metrics, sysstat_version, steal_trusted
FROM sysstat_samples FINAL;

-- Per-CPU steal and busy from sadc files: the per-CPU view nmon's CPUnn gives for nmon hosts.
CREATE VIEW IF NOT EXISTS sysstat_cpu_v AS
SELECT host_id, ts, item AS cpu, metrics['steal'] AS steal_pct, 100 - metrics['idle'] AS busy_pct,
       metrics['usr'] AS usr_pct, metrics['sys'] AS sys_pct, metrics['iowait'] AS iowait_pct, steal_trusted
FROM sysstat_samples FINAL
WHERE section = 'cpu-load-all';
