-- z/VM guests, z/VM systems and IBM Z logical partitions (schemas/zvm_guest_sample.avsc,
-- zvm_system_sample.avsc, lpar_sample.avsc). Every z/VM source writes these: Performance Toolkit
-- reports today, the CP monitor collector later. A re-read report replaces its rows (same key).
CREATE TABLE IF NOT EXISTS zvm_guest_samples
(
    guest_id          LowCardinality(String),
    zvm_system        LowCardinality(String),
    userid            LowCardinality(String),
    ts                DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    interval_s        Float64,
    source            LowCardinality(String),
    tcpu_s            Nullable(Float64),
    vcpu_s            Nullable(Float64),
    cpu_pct           Nullable(Float64),
    tv_ratio_reported Nullable(Float64),
    virtual_io_rate   Nullable(Float64),
    dasd_io_rate      Nullable(Float64),
    paging_rate       Nullable(Float64),
    user_status       Nullable(String),
    share             Nullable(Float64),
    share_absolute    Nullable(Bool),
    origin            String,
    ingested_at       DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (guest_id, ts, source)
TTL toDateTime(ingested_at) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS zvm_system_samples
(
    zvm_system         LowCardinality(String),
    ts                 DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    interval_s         Float64,
    source             LowCardinality(String),
    busy_pct           Nullable(Float64),
    online_cpus        Nullable(Float64),
    tv_ratio_reported  Nullable(Float64),
    capture_ratio      Nullable(Float64),
    total_cpu_s        Nullable(Float64),
    virtual_cpu_s      Nullable(Float64),
    users_logged       Nullable(Float64),
    users_active       Nullable(Float64),
    users_in_elist     Nullable(Float64),
    io_rate            Nullable(Float64),
    dasd_resp_ms       Nullable(Float64),
    paging_xstore_rate Nullable(Float64),
    paging_dasd_rate   Nullable(Float64),
    origin             String,
    ingested_at        DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (zvm_system, ts, source)
TTL toDateTime(ingested_at) + INTERVAL 400 DAY;

CREATE TABLE IF NOT EXISTS lpar_samples
(
    lpar_id         LowCardinality(String),
    cpc             LowCardinality(String),
    partition       LowCardinality(String),
    lpar_number     Int32,
    upid            Nullable(String),
    proc_count      Int32,
    weight          Nullable(Int32),
    dedicated       Bool,
    wait_completion Nullable(Bool),
    capped          Nullable(Bool),
    load_pct        Nullable(Float64),
    collected_in    Nullable(String),
    ts              DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    interval_s      Nullable(Float64),
    source          LowCardinality(String),
    cpus            Array(Tuple(
                        cpu Int32, cpu_type Nullable(String), busy_pct Nullable(Float64),
                        ovhd_pct Nullable(Float64), susp_pct Nullable(Float64),
                        vmld_pct Nullable(Float64), logld_pct Nullable(Float64))),
    origin          String,
    ingested_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (lpar_id, ts, source)
TTL toDateTime(ingested_at) + INTERVAL 400 DAY;

-- One row per logical processor of a partition and interval.
CREATE VIEW IF NOT EXISTS lpar_cpus_v AS
SELECT
    lpar_id, cpc, partition, ts, dedicated, weight,
    cpu.cpu AS cpu, cpu.cpu_type AS cpu_type, cpu.busy_pct AS busy_pct, cpu.ovhd_pct AS ovhd_pct,
    cpu.susp_pct AS susp_pct, cpu.vmld_pct AS vmld_pct, cpu.logld_pct AS logld_pct
FROM lpar_samples FINAL
ARRAY JOIN cpus AS cpu;
