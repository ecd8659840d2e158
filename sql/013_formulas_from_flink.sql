-- One home per formula (issue 18): the views read what the Flink job computed instead of
-- recomputing it with a formula of their own.

-- vps_needed is the job's (CpuWindowAccumulator: roundup of the window's peak physc, a hair over a
-- whole processor not counted, + vpm_xvcpus, at least 1); the view takes the hourly rollup's
-- largest value of it. NULL for an LPAR whose physc windows predate the metric.
CREATE OR REPLACE VIEW lpar_sizing AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    any(i.entitled_capacity) AS entitled,
    maxIf(h.avg_value, h.metric = 'physc') AS peak_hour_physc,
    maxIf(h.max_value, h.metric = 'physc') AS peak_physc,
    maxIfOrNull(h.max_value, h.metric = 'vps_needed') AS vps_needed,
    avgIf(h.avg_value, h.metric = 'physc') AS mean_physc,
    minIf(h.hour, h.metric = 'physc') AS first_hour,
    maxIf(h.hour, h.metric = 'physc') AS last_hour
FROM entity_hourly AS h
LEFT JOIN host_inventory AS i ON i.host_id = h.entity_id
WHERE h.metric IN ('physc', 'vps_needed')
GROUP BY h.entity_id
HAVING countIf(h.metric = 'physc') > 0;

-- The incident's peak is the job's (FlagDetector: the worst value in the rule's direction, or the
-- farthest from the entity's median for a baseline flag), stamped on every flag of the incident;
-- the newest flag carries the final one.
CREATE OR REPLACE VIEW incidents AS
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
    argMax(incident_peak, (window_start, emitted_at)) AS peak,
    any(threshold) AS threshold,
    argMax(explanation, window_start) AS explanation
FROM anomaly_flags FINAL
GROUP BY incident_id;
