-- Issue 25: a host known from its configuration took its platform from what that configuration
-- says (AIX level, z/VM system of a guest), else 'linux' -- so a z/VM system or a VIOS placed on a
-- site by an inventory became 'linux' and left the z/VM charts. An inventory (or any configuration)
-- may now name the platform: attribute 'platform' (aix, zvm-system, zvm-guest, linux, aggregation)
-- wins; without it nothing changes.
CREATE OR REPLACE VIEW fleet_hierarchy AS
SELECT
    host_id,
    hostname,
    if(latest_attributes['site'] != '', latest_attributes['site'], 'unassigned') AS site,
    if(frame_id != '', frame_id, if(latest_attributes['cpc'] != '', latest_attributes['cpc'], 'standalone')) AS frame,
    multiIf(latest_attributes['platform'] != '', latest_attributes['platform'],
            latest_attributes['os_version'] LIKE '7.%' OR latest_attributes['AAA/AIX'] != '', 'aix',
            latest_attributes['zvm_system'] != '', 'zvm-guest', 'linux') AS platform,
    latest_attributes['zvm_system'] AS zvm_system,
    entitled_capacity,
    first_seen,
    last_config_at
FROM host_inventory;
