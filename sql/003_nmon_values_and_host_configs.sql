-- Every nmon value, long form (schemas/nmon_snapshot.avsc exploded by the sink): one row per
-- host, section, entity, metric and snapshot. The sorting key is the value's identity, so a
-- re-ingested snapshot replaces itself. LowCardinality names and Delta/Gorilla codecs keep a
-- year of fleet history small; partitions by month make retention a DROP PARTITION.
CREATE TABLE IF NOT EXISTS nmon_values
(
    host_id     LowCardinality(String),
    ts          DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    section     LowCardinality(String),
    entity      LowCardinality(String),
    metric      LowCardinality(String),
    value       Nullable(Float64) CODEC(Gorilla, ZSTD),
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, section, entity, metric, ts);

-- Text columns of nmon rows (TOP Command and WLMclass, text in unknown sections).
CREATE TABLE IF NOT EXISTS nmon_labels
(
    host_id     LowCardinality(String),
    ts          DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    section     LowCardinality(String),
    entity      String,
    label       LowCardinality(String),
    text        String,
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, section, entity, label, ts);

-- Host configuration per source file (schemas/host_config.avsc); the newest file per host wins in host_inventory.
CREATE TABLE IF NOT EXISTS host_configs
(
    host_id     LowCardinality(String),
    hostname    LowCardinality(String),
    ts          DateTime64(3, 'UTC'),
    source      LowCardinality(String),
    origin_file String,
    attributes  Map(String, String),
    config_text Map(String, String),
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
ORDER BY (host_id, origin_file);

CREATE VIEW IF NOT EXISTS nmon_values_v AS
SELECT host_id, ts, section, entity, metric, value FROM nmon_values FINAL;

-- One row per host: latest known name and configuration.
CREATE VIEW IF NOT EXISTS host_inventory AS
SELECT
    host_id,
    argMax(hc.hostname, hc.ts) AS latest_hostname,
    argMax(hc.attributes, hc.ts) AS latest_attributes,
    latest_hostname AS hostname,
    latest_attributes['frame_id'] AS frame_id,
    latest_attributes['entitled_capacity'] AS entitled_capacity,
    latest_attributes['smt_mode'] AS smt_mode,
    min(hc.ts) AS first_seen,
    max(hc.ts) AS last_config_at
FROM host_configs AS hc FINAL
GROUP BY host_id;
