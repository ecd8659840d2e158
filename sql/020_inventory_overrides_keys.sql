-- Issue 25: an inventory (`./fleetperf inventory`, host_configs with source 'inventory') is documented
-- to override what hosts report, but host_inventory took the newest configuration record whole: an
-- inventory giving an AIX LPAR its site replaced the attributes its nmon reported (frame_id,
-- entitled_capacity, AAA/AIX), so the LPAR lost its frame, its entitlement and became platform
-- 'linux'. The inventory's keys now override the same keys of the newest reported configuration;
-- the reported keys it does not name are kept. Without an inventory nothing changes.
CREATE OR REPLACE VIEW host_inventory AS
SELECT
    host_id,
    argMax(hc.hostname, hc.ts) AS latest_hostname,
    mapUpdate(argMaxIf(hc.attributes, hc.ts, hc.source != 'inventory'),
              argMaxIf(hc.attributes, hc.ts, hc.source = 'inventory')) AS latest_attributes,
    latest_hostname AS hostname,
    latest_attributes['frame_id'] AS frame_id,
    latest_attributes['entitled_capacity'] AS entitled_capacity,
    latest_attributes['smt_mode'] AS smt_mode,
    min(hc.ts) AS first_seen,
    max(hc.ts) AS last_config_at
FROM host_configs AS hc FINAL
GROUP BY host_id;
