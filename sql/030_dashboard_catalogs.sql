-- Issue 24, goal 5 (dashboards at 1,000 hosts x a year of 5-minute data): fleet_entities, joined by
-- every chart on entity_hourly / entity_daily and by the capacity views, aggregated all of
-- metrics_daily (6,550 series x 365 days = 2.4 M rows) and scanned the whole z/VM sample tables
-- (26 M guest rows a year) on every chart query. It now reads small catalogs kept current by
-- materialized views on insert: one row per entity once merged. The figures are the same: the
-- catalog keeps what fleet_entities took from the rollup (name, metrics, first and last day of
-- final windows) and the set of z/VM systems and guests that have samples.

-- Every entity with final windows (what metrics_daily holds), its name, metrics and days.
CREATE TABLE IF NOT EXISTS entity_catalog
(
    entity_id   LowCardinality(String),
    entity_name SimpleAggregateFunction(anyLast, String),
    metrics     SimpleAggregateFunction(groupUniqArrayArray, Array(String)),
    first_day   SimpleAggregateFunction(min, Date),
    last_day    SimpleAggregateFunction(max, Date)
)
ENGINE = AggregatingMergeTree
ORDER BY entity_id
SETTINGS non_replicated_deduplication_window = 10000;

-- the same filter and day as metrics_daily_mv (sql/005)
CREATE MATERIALIZED VIEW IF NOT EXISTS entity_catalog_mv TO entity_catalog AS
SELECT
    entity_id,
    anyLast(entity_name) AS entity_name,
    groupUniqArray(toString(metric)) AS metrics,
    min(toDate(window_start)) AS first_day,
    max(toDate(window_start)) AS last_day
FROM derived_metrics
WHERE is_final
GROUP BY entity_id;

-- z/VM systems and guests that have samples (fleet_entities' platform of an entity without inventory).
CREATE TABLE IF NOT EXISTS zvm_entities
(
    kind      LowCardinality(String),
    entity_id String
)
ENGINE = ReplacingMergeTree
ORDER BY (kind, entity_id)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS zvm_system_entities_mv TO zvm_entities AS
SELECT DISTINCT 'system' AS kind, toString(zvm_system) AS entity_id
FROM zvm_system_samples;

CREATE MATERIALIZED VIEW IF NOT EXISTS zvm_guest_entities_mv TO zvm_entities AS
SELECT DISTINCT 'guest' AS kind, toString(guest_id) AS entity_id
FROM zvm_guest_samples;

-- What is stored already (the views above see new inserts only). Both are idempotent (min, max,
-- sets; a replacing key), so a row the sink inserts meanwhile may be counted by both at no harm.
INSERT INTO entity_catalog (entity_id, entity_name, metrics, first_day, last_day)
SELECT entity_id, anyLast(entity_name), groupUniqArray(toString(metric)), min(day), max(day)
FROM metrics_daily
GROUP BY entity_id;

INSERT INTO zvm_entities (kind, entity_id)
SELECT DISTINCT 'system', toString(zvm_system) FROM zvm_system_samples;

INSERT INTO zvm_entities (kind, entity_id)
SELECT DISTINCT 'guest', toString(guest_id) FROM zvm_guest_samples;

-- sql/015's fleet_entities on the catalogs.
CREATE OR REPLACE VIEW fleet_entities AS
SELECT
    d.entity_id AS entity_id,
    any(d.entity_name) AS entity_name,
    multiIf(any(f.platform) != '', any(f.platform),
            hasAny(groupUniqArrayArray(d.metrics), ['entc_pct', 'physc', 'slb_miss_rate']), 'aix',
            d.entity_id IN (SELECT entity_id FROM zvm_entities WHERE kind = 'system')
                OR hasAny(groupUniqArrayArray(d.metrics),
                          ['capture_ratio', 'users_in_elist', 'paging_xstore_rate', 'paging_dasd_rate']), 'zvm-system',
            d.entity_id IN (SELECT entity_id FROM zvm_entities WHERE kind = 'guest')
                OR has(groupUniqArrayArray(d.metrics), 'tv_ratio'), 'zvm-guest',
            has(groupUniqArrayArray(d.metrics), 'lacp_active_ports'), 'aggregation',
            'linux') AS platform,
    if(any(f.site) != '', any(f.site), 'unassigned') AS site,
    multiIf(any(f.frame) != '', any(f.frame), position(d.entity_id, '/') > 0,
            splitByChar('/', d.entity_id)[1], 'standalone') AS frame,
    toDateTime(min(d.first_day), 'UTC') AS first_day,
    toDateTime(max(d.last_day), 'UTC') AS last_day
FROM entity_catalog AS d
LEFT JOIN fleet_hierarchy AS f ON f.host_id = d.entity_id
GROUP BY d.entity_id;
