-- Raw CPU snapshots (schemas/cpu_sample.avsc). Re-ingesting a snapshot replaces it: the sorting key
-- is the snapshot's identity, and ReplacingMergeTree keeps one row per key.
CREATE TABLE IF NOT EXISTS cpu_samples
(
    host_id         LowCardinality(String),
    hostname        LowCardinality(String),
    ts              DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    interval_s      Float64,
    source          LowCardinality(String),
    user_pct        Nullable(Float64),
    sys_pct         Nullable(Float64),
    wait_pct        Nullable(Float64),
    idle_pct        Nullable(Float64),
    steal_pct       Nullable(Float64),
    cpus            Nullable(Int32),
    physc           Nullable(Float64),
    entitled        Nullable(Float64),
    virtual_cpus    Nullable(Int32),
    origin_file     String,
    origin_snapshot String,
    ingested_at     DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, ts);

-- Windowed metrics from Flink (schemas/derived_metric.avsc). A window can arrive more than once
-- (early result, then final); the newest emitted_at wins.
CREATE TABLE IF NOT EXISTS derived_metrics
(
    entity_id    LowCardinality(String),
    entity_name  LowCardinality(String),
    metric       LowCardinality(String),
    window_start DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    window_end   DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    value        Float64 CODEC(Gorilla, ZSTD),
    samples      Int32,
    is_final     Bool,
    emitted_at   DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(emitted_at)
PARTITION BY toYYYYMM(window_start)
ORDER BY (entity_id, metric, window_start);

-- Input that could not be decoded, from collectors (file, line, byte offset) and from the sink.
CREATE TABLE IF NOT EXISTS dead_letters
(
    source      LowCardinality(String),
    origin_file String,
    line        Int64,
    byte_offset Int64,
    error       String,
    raw         String,
    detected_at DateTime64(3, 'UTC')
)
ENGINE = ReplacingMergeTree(detected_at)
ORDER BY (source, origin_file, byte_offset, line);
