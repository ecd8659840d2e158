-- Issue 23 item 4: the sink never drops data (src/fleetperf/warehouse/README.md, "Sink durability").

-- 1. A message the sink cannot decode keeps where it was and ALL its bytes (base64), so it can be
-- replayed once its schema or decoder is fixed. Collector dead letters leave these at the defaults.
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS kafka_topic LowCardinality(String) DEFAULT '';
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS kafka_partition Int32 DEFAULT -1;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS kafka_offset Int64 DEFAULT -1;
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS kafka_key_base64 String DEFAULT '' CODEC(ZSTD);
ALTER TABLE dead_letters ADD COLUMN IF NOT EXISTS kafka_value_base64 String DEFAULT '' CODEC(ZSTD);

-- 2. Insert deduplication. The sink gives every insert a token naming its (topic, partition,
-- offset range); a non-replicated MergeTree remembers the tokens of its last N inserted blocks
-- only when this window is > 0 (default 0). The rollup tables need it too: an insert into
-- derived_metrics reaches them through the materialized views, and on ClickHouse 26.9 (chDB 4.4,
-- measured in tests/unit/test_sink_durability.py) a block dropped as a duplicate in the source is
-- still pushed through the views unless the view's target deduplicates as well.
ALTER TABLE nmon_values MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE nmon_labels MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE host_configs MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE net_port_samples MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE zvm_guest_samples MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE zvm_system_samples MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE lpar_samples MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE derived_metrics MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE anomaly_flags MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE dead_letters MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE metrics_hourly MODIFY SETTING non_replicated_deduplication_window = 10000;
ALTER TABLE metrics_daily MODIFY SETTING non_replicated_deduplication_window = 10000;

-- The offset ranges the sink cut, written before their rows are inserted: after a crash (or a
-- consumer group reset) the sink cuts the same ranges again, so the tokens match and ClickHouse
-- drops what it already has. Kept 30 days (longer than any replay the dedup window covers).
CREATE TABLE IF NOT EXISTS sink_batches
(
    topic        LowCardinality(String),
    partition    Int32,
    first_offset Int64,
    last_offset  Int64,
    messages     Int64,
    planned_at   DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(planned_at)
ORDER BY (topic, partition, first_offset)
TTL toDateTime(planned_at) + INTERVAL 30 DAY;

-- 3. Keys with the source. nmon, sadc and z/VM APPLDATA can all describe one host and second: keyed
-- without the source, their cpu_samples rows replaced each other; sysstat_samples has the same
-- overlap (sadc and APPLDATA); hpm_samples kept one report per host and second whatever its PMU
-- group. ClickHouse cannot change a sorting key's existing columns in place, so each table is
-- copied into a new one with the new key and swapped in by name (views resolve tables by name when
-- queried, so cpu_samples_v, frame_pool_size, hpm_rates, sysstat_*_v keep working). Re-runnable:
-- a leftover copy from an interrupted run is dropped first (after the EXCHANGE it holds the old
-- table, whose rows the new one already has).
DROP TABLE IF EXISTS cpu_samples_rekey;
CREATE TABLE cpu_samples_rekey AS cpu_samples
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, ts, source)
TTL toDateTime(ingested_at) + INTERVAL 400 DAY
SETTINGS non_replicated_deduplication_window = 10000;
INSERT INTO cpu_samples_rekey SELECT * FROM cpu_samples;
EXCHANGE TABLES cpu_samples AND cpu_samples_rekey;
DROP TABLE IF EXISTS cpu_samples_rekey;

DROP TABLE IF EXISTS hpm_samples_rekey;
CREATE TABLE hpm_samples_rekey AS hpm_samples
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, ts, source, ifNull(pmu_group, -1), counting_mode)
SETTINGS non_replicated_deduplication_window = 10000;
INSERT INTO hpm_samples_rekey SELECT * FROM hpm_samples;
EXCHANGE TABLES hpm_samples AND hpm_samples_rekey;
DROP TABLE IF EXISTS hpm_samples_rekey;

DROP TABLE IF EXISTS sysstat_samples_rekey;
CREATE TABLE sysstat_samples_rekey AS sysstat_samples
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, section, item, ts, source)
SETTINGS non_replicated_deduplication_window = 10000;
INSERT INTO sysstat_samples_rekey SELECT * FROM sysstat_samples;
EXCHANGE TABLES sysstat_samples AND sysstat_samples_rekey;
DROP TABLE IF EXISTS sysstat_samples_rekey;
