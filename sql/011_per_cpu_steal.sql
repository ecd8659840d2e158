-- Per-CPU steal per minute, whichever collector saw the CPU: nmon CPUnn (Steal%; nmon numbers CPUs
-- from 1, Linux from 0, so CPU001 is cpu '0'), sadc files and z/VM APPLDATA (sysstat_samples
-- cpu-load-all, interval-weighted). Windowed here rather than in Flink: one figure per CPU and
-- minute that no flag rule reads would multiply the job's keys by the CPU count for nothing.
CREATE VIEW IF NOT EXISTS cpu_steal_per_cpu_minute AS
SELECT host_id, minute, cpu, source, steal_pct, samples
FROM
(
    SELECT host_id, toStartOfMinute(ts) AS minute, toString(toInt32OrZero(entity) - 1) AS cpu,
           'nmon' AS source, avg(value) AS steal_pct, count() AS samples
    FROM nmon_values FINAL
    WHERE section = 'CPU' AND entity != 'ALL' AND metric = 'Steal%' AND value IS NOT NULL
    GROUP BY host_id, minute, cpu
    UNION ALL
    SELECT host_id, toStartOfMinute(ts) AS minute, item AS cpu, any(source) AS source,
           sum(metrics['steal'] * coalesce(interval_s, 1)) / sum(coalesce(interval_s, 1)) AS steal_pct,
           count() AS samples
    FROM sysstat_samples FINAL
    WHERE section = 'cpu-load-all' AND item != 'all' AND steal_trusted
    GROUP BY host_id, minute, cpu
);
