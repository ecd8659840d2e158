-- Issue 24, goal 5: the dashboards' "Entity" filter offered the names entity_hourly shows; an entity
-- can have more than one (a z/VM guest is 'lnxa01' to nmon and 'ZVMA/LNXA01' to the CP monitor),
-- and fleet_entities keeps one. Every name of every entity with final windows, kept by a
-- materialized view on insert, so the filter's choices stay those names without grouping a year of
-- hourly rollups on every dashboard load.
CREATE TABLE IF NOT EXISTS entity_names
(
    entity_id   LowCardinality(String),
    entity_name String
)
ENGINE = ReplacingMergeTree
ORDER BY (entity_id, entity_name)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS entity_names_mv TO entity_names AS
SELECT DISTINCT entity_id, toString(entity_name) AS entity_name
FROM derived_metrics
WHERE is_final;

-- what is stored already: the names the hourly rollup shows
INSERT INTO entity_names (entity_id, entity_name)
SELECT DISTINCT entity_id, toString(entity_name) FROM metrics_hourly;
