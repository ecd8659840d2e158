-- The pool size per frame from the typed CPU samples (pool_cpus, migration 010) instead of the
-- long-form nmon_values: one row per snapshot to read instead of hundreds, on every Capacity load.
CREATE OR REPLACE VIEW frame_pool_size AS
SELECT
    e.frame AS frame,
    max(c.pool_cpus) AS pool_cpus
FROM cpu_samples AS c
INNER JOIN fleet_entities AS e ON e.entity_id = c.host_id
WHERE c.pool_cpus IS NOT NULL AND c.ts >= now() - INTERVAL 7 DAY
GROUP BY e.frame;
