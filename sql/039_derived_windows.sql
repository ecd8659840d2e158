-- Issue 24, goal 1: the Flink job writes one record per entity and window, all its metrics in an
-- array (schemas/derived_window.avsc), instead of one record per metric. On a fleet's backlog
-- (50 simulated nmon hosts x 48 h at 60 s, about 4.3 metrics per window) a third of the job's CPU
-- was writing those records to Kafka, about 6 us each, and the sink's cost grows with the number
-- of messages too (docs/warehouse.md, "Session 21" and "Session 22").
--
-- derived_windows_in keeps nothing (Null engine), as nmon_snapshots_in (sql/017): the sink inserts
-- the window records there, the engine reading their Avro itself (the Python path inserts the same
-- columns), and the view below writes exactly the rows the job's per-metric records made before.
-- The sink's insert_deduplication_token reaches derived_metrics and the views on it (rollups,
-- entity names, catalogs) through this view (deduplicate_blocks_in_dependent_materialized_views=1),
-- so a replayed batch is dropped there.
CREATE TABLE IF NOT EXISTS derived_windows_in
(
    entity_id    String,
    entity_name  String,
    window_start DateTime64(3, 'UTC'),
    window_end   DateTime64(3, 'UTC'),
    is_final     Bool,
    emitted_at   DateTime64(3, 'UTC'),
    metrics      Array(Tuple(metric String, value Float64, samples Int32))
)
ENGINE = Null;

CREATE MATERIALIZED VIEW IF NOT EXISTS derived_metrics_from_windows TO derived_metrics
(
    entity_id    String,
    entity_name  String,
    metric       String,
    window_start DateTime64(3, 'UTC'),
    window_end   DateTime64(3, 'UTC'),
    value        Float64,
    samples      Int32,
    is_final     Bool,
    emitted_at   DateTime64(3, 'UTC')
)
AS SELECT
    entity_id,
    entity_name,
    m.metric AS metric,
    window_start,
    window_end,
    m.value AS value,
    m.samples AS samples,
    is_final,
    emitted_at
FROM derived_windows_in
ARRAY JOIN metrics AS m;
