-- Anomaly flags as the Flink job writes them (schemas/anomaly_flag.avsc): every flagged final
-- window carries its incident; the incident's last window is written again with incident_end once
-- the metric is back to normal (ReplacingMergeTree keeps that later row).
ALTER TABLE anomaly_flags ADD COLUMN IF NOT EXISTS kind LowCardinality(String) DEFAULT 'rule' AFTER rule;
ALTER TABLE anomaly_flags ADD COLUMN IF NOT EXISTS incident_start DateTime64(3, 'UTC') AFTER incident_id;
ALTER TABLE anomaly_flags ADD COLUMN IF NOT EXISTS incident_end Nullable(DateTime64(3, 'UTC')) AFTER incident_start;
ALTER TABLE anomaly_flags ADD COLUMN IF NOT EXISTS incident_peak Float64 AFTER incident_end;
ALTER TABLE anomaly_flags ADD COLUMN IF NOT EXISTS incident_windows Int32 AFTER incident_peak;
ALTER TABLE anomaly_flags MODIFY TTL toDateTime(emitted_at) + INTERVAL 400 DAY;

-- One row per incident: entity, metric, rule, first and last flagged window, worst value, open or closed.
CREATE VIEW IF NOT EXISTS incidents AS
SELECT
    incident_id,
    any(entity_id) AS entity_id,
    any(entity_name) AS entity_name,
    any(metric) AS metric,
    any(rule) AS rule,
    any(kind) AS kind,
    any(severity) AS severity,
    min(window_start) AS started,
    max(window_end) AS last_window_end,
    maxOrNull(incident_end) AS ended,
    isNull(maxOrNull(incident_end)) AS is_open,
    count() AS windows,
    argMax(observed, badness) AS peak,
    any(threshold) AS threshold,
    argMax(explanation, window_start) AS explanation
FROM
(
    -- how far a window is from normal: distance from the baseline, or beyond the rule's threshold
    SELECT
        *,
        if(kind = 'baseline', abs(observed - ifNull(baseline, observed)),
           if(observed >= ifNull(threshold, 0), observed, -observed)) AS badness
    FROM anomaly_flags FINAL
)
GROUP BY incident_id;
