-- Issue 24 goal 1: the sink hands nmon snapshots to the engine as Avro (schemas/nmon_snapshot.avsc,
-- the writer schema of each message from the registry) instead of decoding and exploding them in
-- Python. Measured on a 10.6 MB AIX nmon file (1.49 M values, bench/backfill.py): decode in fastavro
-- + one Python list per value + clickhouse-connect's Native encoding took 11 s of CPU per 10 MB
-- (0.8 MB/s); the engine reading the Avro and exploding it here takes about 1 s.
--
-- nmon_snapshots_in keeps nothing (Null engine): an insert only feeds the two views below, which
-- write exactly the rows the Python mapper wrote before (src/fleetperf/warehouse/rows.py, still
-- used to find a broken message when an insert fails). The sink's insert_deduplication_token
-- reaches nmon_values and nmon_labels through the views (deduplicate_blocks_in_dependent_
-- materialized_views=1; both targets have the window of sql/014), so a replayed batch is dropped
-- there. Only fields the views need are columns; the engine skips the others of the writer schema.
CREATE TABLE IF NOT EXISTS nmon_snapshots_in
(
    host_id String,
    ts      DateTime64(3, 'UTC'),
    rows    Array(Tuple(
                section  String,
                entities Array(String),
                metrics  Array(String),
                values   Array(Nullable(Float64)),
                labels   Map(String, String)))
)
ENGINE = Null;

-- A row's entities and metrics are parallel to its values or one name for all of them
-- (nmon_snapshot.avsc). arrayZip refuses arrays of different lengths, so a row that is neither
-- fails the whole insert before anything of its block is written, and the sink dead-letters that
-- message (as the Python mapper's strict zip did).
CREATE MATERIALIZED VIEW IF NOT EXISTS nmon_values_from_snapshots TO nmon_values
(
    host_id String,
    ts      DateTime64(3, 'UTC'),
    section String,
    entity  String,
    metric  String,
    value   Nullable(Float64)
)
AS SELECT
    host_id,
    ts,
    r.section AS section,
    v.1 AS entity,
    v.2 AS metric,
    v.3 AS value
FROM nmon_snapshots_in
ARRAY JOIN rows AS r
ARRAY JOIN arrayZip(
    if(length(r.entities) = 1, arrayResize(r.entities, length(r.values), r.entities[1]), r.entities),
    if(length(r.metrics) = 1, arrayResize(r.metrics, length(r.values), r.metrics[1]), r.metrics),
    r.values) AS v;

-- Labels (TOP Command, WLMclass, text columns): the same check over every row of the block before
-- any label is written, so a broken message leaves no labels behind whichever view runs first.
CREATE MATERIALIZED VIEW IF NOT EXISTS nmon_labels_from_snapshots TO nmon_labels
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
    SELECT host_id, ts, rows
    FROM nmon_snapshots_in
    WHERE throwIf(NOT arrayAll(
        x -> (length(x.entities) = 1 OR length(x.entities) = length(x.values))
             AND (length(x.metrics) = 1 OR length(x.metrics) = length(x.values)), rows),
        'an nmon row whose entities or metrics are neither one name nor one per value') = 0
)
ARRAY JOIN rows AS r
ARRAY JOIN r.labels AS l;
