-- Deduplicated views: what dashboards and ad-hoc SQL should read.
CREATE VIEW IF NOT EXISTS cpu_samples_v AS
SELECT * EXCEPT (ingested_at) FROM cpu_samples FINAL;

CREATE VIEW IF NOT EXISTS derived_metrics_v AS
SELECT * FROM derived_metrics FINAL;

-- One row per host and minute with the CPU metrics side by side (for charts and capacity SQL).
CREATE VIEW IF NOT EXISTS host_cpu_minute AS
SELECT
    entity_id AS host_id,
    any(entity_name) AS hostname,
    window_start AS minute,
    maxIf(value, metric = 'steal_pct') AS steal_pct,
    maxIf(value, metric = 'entc_pct') AS entc_pct,
    maxIf(value, metric = 'physc') AS physc,
    countIf(metric = 'steal_pct') > 0 AS has_steal,
    countIf(metric = 'entc_pct') > 0 AS has_entc
FROM derived_metrics FINAL
GROUP BY entity_id, window_start;
