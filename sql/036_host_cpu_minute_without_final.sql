-- Issue 24, goal 5: the Host drill-down's minute chart (host_cpu_minute over yesterday and today).
--
-- sql/015's view read derived_metrics FINAL: FINAL merged every row of the month's partition in the
-- range (derived_metrics is sorted by entity first, so a time range prunes by partition only), then
-- grouped. At 1,000 hosts x a year (bench/dashboards.py data): count() over two days 0.131 s with
-- FINAL, 0.009 s without. The deduplication FINAL did is done by the grouping itself: of the rows of
-- one (entity, minute, metric) the one emitted last, as ReplacingMergeTree(emitted_at) keeps
-- (argMaxIf). Only the five metrics the view shows are read; a host-minute with none of them is not a
-- row (it was one, all NULL).
--
-- hostname is a grouping key (it was any(entity_name)): the chart's series limit joins the view with
-- its 10 busiest hostnames, and the engine applies that join's filter before the grouping only on a
-- key. The chart's SQL: 0.75 s (sql/015) -> 0.54 s (argMaxIf, hostname an aggregate) -> 0.30 s, the
-- same rows. A minute emitted again under another name (a file ingested again after the host was
-- renamed) shows once per name until the background merge keeps the last emission.
CREATE OR REPLACE VIEW host_cpu_minute AS
SELECT
    entity_id AS host_id,
    entity_name AS hostname,
    window_start AS minute,
    argMaxIfOrNull(value, emitted_at, metric = 'steal_pct') AS steal_pct,
    argMaxIfOrNull(value, emitted_at, metric = 'entc_pct') AS entc_pct,
    argMaxIfOrNull(value, emitted_at, metric = 'physc') AS physc,
    countIf(metric = 'steal_pct') > 0 AS has_steal,
    countIf(metric = 'entc_pct') > 0 AS has_entc,
    argMaxIfOrNull(value, emitted_at, metric = 'busy_pct') AS busy_pct,
    argMaxIfOrNull(value, emitted_at, metric = 'cpu_cores') AS cpu_cores
FROM derived_metrics
WHERE metric IN ('steal_pct', 'entc_pct', 'physc', 'busy_pct', 'cpu_cores')
GROUP BY entity_id, entity_name, window_start;
