-- Issue 24 goal 1: nmon values stored per (host, section, snapshot) instead of one row per value.
--
-- Measured (engine alone, the sink's inserts of a 42 MB AIX nmon file: 7,480 snapshots, 5.97 M
-- values, 114 MB of Avro, medians of 3 on a loaded 2-core machine, CPU seconds): the long form of
-- sql/003 + 017 cost 4.7 s per 42 MB, of which reading the Avro 1.0 s and writing 5.97 M rows into
-- nmon_values (sorted by 5 columns, 4 of them LowCardinality) about 2.8 s. The same snapshots as
-- 329 k rows of (host, section, snapshot) holding that section's rows as arrays: 0.6 s above the
-- read. Codecs (LZ4 instead of ZSTD: -0.6 s) or another key order (ts second: -0.6 s) on the long
-- form saved far less. The labels view exploded every row of the snapshot to keep the 7 of 129
-- that have labels (0.9 s); it now keeps those rows first.
--
-- What stays: nmon_values_v (every value, long form, deduplicated) has the same columns as before
-- and reads nmon_sections; nmon_labels is unchanged. The long-form table nmon_values stays a table
-- (writable as before: its rows are in nmon_values_v too), but the sink no longer writes it and
-- its rows move into nmon_sections below. nmon_values_raw is every value as stored, duplicates
-- included until a background merge (what `SELECT ... FROM nmon_values` without FINAL showed).
--
-- nmon_sections' key (host_id, section, ts) is a section's identity in a snapshot: a re-ingested
-- snapshot replaces its sections. Queries by host and section read that section's rows only; a
-- filter on entity or metric is applied after the explode (one host's CPU values of a 7,480-snapshot
-- file: 80 ms, 31 ms in the long form; every value of it: 216 ms, 425 ms in the long form).
CREATE TABLE IF NOT EXISTS nmon_sections
(
    host_id     LowCardinality(String),
    section     LowCardinality(String),
    ts          DateTime64(3, 'UTC') CODEC(Delta, ZSTD),
    rows        Array(Tuple(entities Array(String), metrics Array(String), values Array(Nullable(Float64)))),
    ingested_at DateTime64(3, 'UTC') DEFAULT now64(3)
)
ENGINE = ReplacingMergeTree(ingested_at)
PARTITION BY toYYYYMM(ts)
ORDER BY (host_id, section, ts)
TTL toDateTime(ingested_at) + INTERVAL 400 DAY
SETTINGS non_replicated_deduplication_window = 10000;

-- The snapshot's rows sorted by section and split where the section changes: one row per section
-- (grouping with arrayJoin over the distinct sections copied every row once per section: 6x the
-- cost). A row whose entities or metrics are neither one name nor one per value fails the whole
-- insert before anything of its block is written (the labels view checks the same), and the sink
-- dead-letters that message (sql/017). The sink's insert_deduplication_token reaches nmon_sections
-- through this view, as it reached nmon_values.
CREATE MATERIALIZED VIEW IF NOT EXISTS nmon_sections_from_snapshots TO nmon_sections
(
    host_id String,
    section String,
    ts      DateTime64(3, 'UTC'),
    rows    Array(Tuple(entities Array(String), metrics Array(String), values Array(Nullable(Float64))))
)
AS SELECT host_id, section, ts, section_rows AS rows
FROM
(
    SELECT
        host_id,
        ts,
        tupleElement(g[1], 'section') AS section,
        arrayMap(r -> (r.entities, r.metrics, r.values), g) AS section_rows
    FROM
    (
        SELECT host_id, ts, arraySort(r -> r.section, rows) AS sorted
        FROM nmon_snapshots_in
        WHERE throwIf(NOT arrayAll(
            x -> (length(x.entities) = 1 OR length(x.entities) = length(x.values))
                 AND (length(x.metrics) = 1 OR length(x.metrics) = length(x.values)), rows),
            'an nmon row whose entities or metrics are neither one name nor one per value') = 0
    )
    ARRAY JOIN arraySplit(
        (r, starts) -> starts,
        sorted,
        arrayMap((r, i) -> i = 1 OR r.section != tupleElement(sorted[i - 1], 'section'), sorted, arrayEnumerate(sorted))) AS g
);

-- Labels: the rows that have any are kept before the explode (7 of 129 per AIX snapshot).
CREATE MATERIALIZED VIEW IF NOT EXISTS nmon_labels_of_snapshots TO nmon_labels
(
    host_id String,
    ts      DateTime64(3, 'UTC'),
    section String,
    entity  String,
    label   String,
    text    String
)
AS SELECT
    host_id,
    ts,
    r.section AS section,
    if(empty(r.entities), '', r.entities[1]) AS entity,
    l.1 AS label,
    l.2 AS text
FROM
(
    SELECT host_id, ts, arrayFilter(x -> notEmpty(x.labels), rows) AS labelled
    FROM nmon_snapshots_in
    WHERE throwIf(NOT arrayAll(
        x -> (length(x.entities) = 1 OR length(x.entities) = length(x.values))
             AND (length(x.metrics) = 1 OR length(x.metrics) = length(x.values)), rows),
        'an nmon row whose entities or metrics are neither one name nor one per value') = 0
)
ARRAY JOIN labelled AS r
ARRAY JOIN r.labels AS l;

-- The new views are in place before the old ones go: an insert in between is written twice (the
-- same keys, replaced on merge), never missed.
DROP VIEW IF EXISTS nmon_labels_from_snapshots;
DROP VIEW IF EXISTS nmon_values_from_snapshots;

-- The long-form rows move into nmon_sections (one row per host, section, snapshot; one tuple per
-- entity: one name, a metric per value) and the table is emptied, so a snapshot ingested again
-- later replaces them instead of doubling them. Re-runnable: the copy of a second run has the same
-- keys and ingested_at (replaced on merge), and it finds the table empty once it was emptied.
INSERT INTO nmon_sections (host_id, section, ts, rows, ingested_at)
SELECT host_id, section, ts, groupArray((entities, metrics, values)) AS rows, max(at) AS ingested_at
FROM
(
    SELECT
        host_id, section, ts,
        [toString(entity)] AS entities,
        arrayMap(x -> toString(x.1), mv) AS metrics,
        arrayMap(x -> x.2, mv) AS values,
        at
    FROM
    (
        -- groupArray skips NULLs: the values go in as (metric, value) tuples, never NULL themselves
        SELECT host_id, section, ts, entity, groupArray((metric, value)) AS mv, max(ingested_at) AS at
        FROM nmon_values FINAL
        GROUP BY host_id, section, ts, entity
    )
)
GROUP BY host_id, section, ts;

TRUNCATE TABLE IF EXISTS nmon_values;

-- sql/026's view read the long-form table with FINAL; the same query over the stable view.
CREATE OR REPLACE VIEW cpu_steal_per_cpu_minute AS
SELECT host_id, minute, cpu, source, steal_pct, samples
FROM
(
    SELECT host_id, toStartOfMinute(ts) AS minute, toString(toInt32OrZero(entity) - 1) AS cpu,
           'nmon' AS source, avg(value) AS steal_pct, count() AS samples
    FROM nmon_values_v
    WHERE section = 'CPU' AND entity != 'ALL' AND metric = 'Steal%' AND value IS NOT NULL
    GROUP BY host_id, minute, cpu
    UNION ALL
    SELECT host_id, toStartOfMinute(ts) AS minute, item AS cpu, toString(source) AS source,
           sum(metrics['steal'] * coalesce(interval_s, 1)) / sum(coalesce(interval_s, 1)) AS steal_pct,
           count() AS samples
    FROM sysstat_samples FINAL
    WHERE section = 'cpu-load-all' AND item != 'all' AND steal_trusted
    GROUP BY host_id, minute, cpu, source
);

-- Every value, long form: a row's entities and metrics are one name for all its values or one per
-- value (nmon_snapshot.avsc). One ARRAY JOIN over the flattened (entity, metric, value) triples.
CREATE OR REPLACE VIEW nmon_values_v AS
SELECT host_id, ts, section, entity, metric, value
FROM nmon_values FINAL
UNION ALL
SELECT host_id, ts, section, v.1 AS entity, v.2 AS metric, v.3 AS value
FROM nmon_sections FINAL
ARRAY JOIN arrayFlatten(arrayMap(r -> arrayZip(
    if(length(r.entities) = 1, arrayResize(r.entities, length(r.values), r.entities[1]), r.entities),
    if(length(r.metrics) = 1, arrayResize(r.metrics, length(r.values), r.metrics[1]), r.metrics),
    r.values), rows)) AS v;

-- The same without FINAL: what is stored, duplicates included until a background merge replaces
-- them (the sink's replay tests count these).
CREATE OR REPLACE VIEW nmon_values_raw AS
SELECT host_id, ts, section, entity, metric, value, ingested_at
FROM nmon_values
UNION ALL
SELECT host_id, ts, section, v.1 AS entity, v.2 AS metric, v.3 AS value, ingested_at
FROM nmon_sections
ARRAY JOIN arrayFlatten(arrayMap(r -> arrayZip(
    if(length(r.entities) = 1, arrayResize(r.entities, length(r.values), r.entities[1]), r.entities),
    if(length(r.metrics) = 1, arrayResize(r.metrics, length(r.values), r.metrics[1]), r.metrics),
    r.values), rows)) AS v;
