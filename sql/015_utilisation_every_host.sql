-- Issue 25: a CPU utilisation family for every host (busy_pct, cpu_cores from the Flink job's
-- UtilisationWindow), so hosts without steal or entitlement are fleet entities like the others.

-- One row per host and minute. A metric the host does not report is NULL, not 0.0 (maxIf gave 0.0
-- for an x86 host's entc/physc, which pulled fleet averages down).
CREATE OR REPLACE VIEW host_cpu_minute AS
SELECT
    entity_id AS host_id,
    any(entity_name) AS hostname,
    window_start AS minute,
    maxIfOrNull(value, metric = 'steal_pct') AS steal_pct,
    maxIfOrNull(value, metric = 'entc_pct') AS entc_pct,
    maxIfOrNull(value, metric = 'physc') AS physc,
    countIf(metric = 'steal_pct') > 0 AS has_steal,
    countIf(metric = 'entc_pct') > 0 AS has_entc,
    maxIfOrNull(value, metric = 'busy_pct') AS busy_pct,
    maxIfOrNull(value, metric = 'cpu_cores') AS cpu_cores
FROM derived_metrics FINAL
GROUP BY entity_id, window_start;

-- Every entity that has metrics. busy_pct no longer says "z/VM system" (every host has it now): a
-- z/VM system or guest is known by the z/VM tables it comes from or by the metrics only z/VM has;
-- a host with busy_pct / cpu_cores only is 'linux'.
CREATE OR REPLACE VIEW fleet_entities AS
SELECT
    d.entity_id AS entity_id,
    any(d.entity_name) AS entity_name,
    multiIf(any(f.platform) != '', any(f.platform),
            hasAny(groupUniqArray(d.metric), ['entc_pct', 'physc', 'slb_miss_rate']), 'aix',
            d.entity_id IN (SELECT zvm_system FROM zvm_system_samples)
                OR hasAny(groupUniqArray(d.metric), ['capture_ratio', 'users_in_elist', 'paging_xstore_rate',
                                                     'paging_dasd_rate']), 'zvm-system',
            d.entity_id IN (SELECT guest_id FROM zvm_guest_samples) OR has(groupUniqArray(d.metric), 'tv_ratio'),
                'zvm-guest',
            has(groupUniqArray(d.metric), 'lacp_active_ports'), 'aggregation',
            'linux') AS platform,
    if(any(f.site) != '', any(f.site), 'unassigned') AS site,
    multiIf(any(f.frame) != '', any(f.frame), position(d.entity_id, '/') > 0,
            splitByChar('/', d.entity_id)[1], 'standalone') AS frame,
    -- DateTime, not Date: a time range ending "now" must include today
    toDateTime(min(d.day), 'UTC') AS first_day,
    toDateTime(max(d.day), 'UTC') AS last_day
FROM metrics_daily_v AS d
LEFT JOIN fleet_hierarchy AS f ON f.host_id = d.entity_id
GROUP BY d.entity_id;

-- Entitlement sizing per LPAR: the entitlement of the host's configuration where it has one, else
-- the newest entitled capacity its CPU samples carried (nmon LPAR 'entitled'), so an AIX LPAR known
-- only from its nmon files shows its entitlement too.
CREATE OR REPLACE VIEW lpar_sizing AS
SELECT
    h.entity_id AS entity_id, any(h.entity_name) AS entity_name, any(h.frame) AS frame,
    coalesce(toFloat64OrNull(any(i.entitled_capacity)), any(c.sample_entitled)) AS entitled,
    maxIf(h.avg_value, h.metric = 'physc') AS peak_hour_physc,
    maxIf(h.max_value, h.metric = 'physc') AS peak_physc,
    maxIfOrNull(h.max_value, h.metric = 'vps_needed') AS vps_needed,
    avgIf(h.avg_value, h.metric = 'physc') AS mean_physc,
    minIf(h.hour, h.metric = 'physc') AS first_hour,
    maxIf(h.hour, h.metric = 'physc') AS last_hour
FROM entity_hourly AS h
LEFT JOIN host_inventory AS i ON i.host_id = h.entity_id
LEFT JOIN
(
    SELECT host_id, argMax(entitled, ts) AS sample_entitled
    FROM cpu_samples
    WHERE entitled IS NOT NULL
    GROUP BY host_id
) AS c ON c.host_id = h.entity_id
WHERE h.metric IN ('physc', 'vps_needed')
GROUP BY h.entity_id
HAVING countIf(h.metric = 'physc') > 0;
