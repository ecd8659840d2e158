-- Issue 24, goal 5: aggregation_port_share (Network dashboard) read every entstat sample with FINAL
-- on each open: 100 aggregations x 2 ports x a year at 5 minutes = 21 M rows. What it shows (first and
-- last packet counters, the last sample and its LACP state per member port) is kept per port by a
-- materialized view on insert instead: min, max and argMax give the same figures whether a sample
-- is stored once or (before a merge or a replay) twice, as FINAL did.
CREATE TABLE IF NOT EXISTS net_port_share_state
(
    host_id      LowCardinality(String),
    hostname     LowCardinality(String),
    aggregation  String,
    adapter      LowCardinality(String),
    tx_min       SimpleAggregateFunction(min, Nullable(Int64)),
    tx_max       SimpleAggregateFunction(max, Nullable(Int64)),
    rx_min       SimpleAggregateFunction(min, Nullable(Int64)),
    rx_max       SimpleAggregateFunction(max, Nullable(Int64)),
    last_sample  SimpleAggregateFunction(max, DateTime64(3, 'UTC')),
    actor_sync   AggregateFunction(argMax, String, DateTime64(3, 'UTC')),
    partner_sync AggregateFunction(argMax, String, DateTime64(3, 'UTC'))
)
ENGINE = AggregatingMergeTree
ORDER BY (host_id, aggregation, adapter, hostname)
SETTINGS non_replicated_deduplication_window = 10000;

CREATE MATERIALIZED VIEW IF NOT EXISTS net_port_share_state_mv TO net_port_share_state AS
SELECT
    host_id,
    hostname,
    assumeNotNull(aggregation) AS aggregation,
    adapter,
    min(tx_packets) AS tx_min,
    max(tx_packets) AS tx_max,
    min(rx_packets) AS rx_min,
    max(rx_packets) AS rx_max,
    max(ts) AS last_sample,
    argMaxState(ifNull(actor_sync, ''), ts) AS actor_sync,
    argMaxState(ifNull(partner_sync, ''), ts) AS partner_sync
-- filtered in a subquery: in this SELECT `aggregation` names the assumeNotNull alias, and a WHERE on
-- it would let every sample of a port outside an aggregation through as aggregation ''
FROM (SELECT * FROM net_port_samples WHERE aggregation IS NOT NULL)
GROUP BY host_id, hostname, aggregation, adapter;

-- what is stored already (the view above sees new inserts only)
INSERT INTO net_port_share_state
SELECT
    host_id, hostname, assumeNotNull(aggregation), adapter,
    min(tx_packets), max(tx_packets), min(rx_packets), max(rx_packets), max(ts),
    argMaxState(ifNull(actor_sync, ''), ts), argMaxState(ifNull(partner_sync, ''), ts)
FROM net_port_samples
WHERE aggregation IS NOT NULL
GROUP BY host_id, hostname, aggregation, adapter;

-- sql/008's aggregation_port_share on the kept state (same columns and types)
CREATE OR REPLACE VIEW aggregation_port_share AS
SELECT
    host_id, hostname, CAST(aggregation, 'Nullable(String)') AS aggregation, adapter,
    max(tx_max) - min(tx_min) AS tx_moved,
    max(rx_max) - min(rx_min) AS rx_moved,
    CAST(max(last_sample) AS DateTime64(3, 'UTC')) AS last_sample,
    argMaxMerge(actor_sync) AS actor_sync,
    argMaxMerge(partner_sync) AS partner_sync
FROM net_port_share_state
GROUP BY host_id, hostname, net_port_share_state.aggregation, adapter;
