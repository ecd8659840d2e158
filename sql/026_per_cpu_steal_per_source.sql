-- cpu_steal_per_cpu_minute grouped the sysstat_samples rows by host, minute and CPU only, so a guest
-- seen by both a sadc file and z/VM APPLDATA in the same minute got one row averaging the two
-- collectors under whichever source name came first. Each collector keeps its own row now (the
-- nmon branch is one source already), so the two can be compared rather than blended.
CREATE OR REPLACE VIEW cpu_steal_per_cpu_minute AS
SELECT host_id, minute, cpu, source, steal_pct, samples
FROM
(
    SELECT host_id, toStartOfMinute(ts) AS minute, toString(toInt32OrZero(entity) - 1) AS cpu,
           'nmon' AS source, avg(value) AS steal_pct, count() AS samples
    FROM nmon_values FINAL
    WHERE section = 'CPU' AND entity != 'ALL' AND metric = 'Steal%' AND value IS NOT NULL
    GROUP BY host_id, minute, cpu
    UNION ALL
    SELECT host_id, toStartOfMinute(ts) AS minute, item AS cpu, toString(source) AS source,
           sum(metrics['steal'] * coalesce(interval_s, 1)) / sum(coalesce(interval_s, 1)) AS steal_pct,
           count() AS samples
    FROM sysstat_samples FINAL
    WHERE section = 'cpu-load-all' AND item != 'all' AND steal_trusted
    GROUP BY host_id, minute, cpu, source
);
