-- Issue 25: Capacity's fit, series and pool size were anchored on today(), so a frame known only
-- from archives (e.g. nmon files of 2011) had no forecast, no headroom and no pool. Each frame's
-- windows now end at its own newest data; for a frame reporting today nothing changes.

-- Least squares through the frame's last 180 days of data (docs/capacity.md).
CREATE OR REPLACE VIEW capacity_forecast_fit AS
SELECT frame, days, last_day, fit.1 AS slope_per_day, fit.2 AS intercept, residual_sd, last_peak
FROM
(
    SELECT
        p.frame AS frame,
        count() AS days,
        max(p.day) AS last_day,
        simpleLinearRegression(toFloat64(toRelativeDayNum(p.day)), p.physc_p95_sum) AS fit,
        -- least squares: residual variance = var(y) - slope^2 var(x)
        sqrt(greatest(0, varPop(p.physc_p95_sum) - pow(fit.1, 2) * varPop(toFloat64(toRelativeDayNum(p.day)))))
            AS residual_sd,
        argMax(p.physc_p95_sum, p.day) AS last_peak
    FROM frame_daily_physc AS p
    INNER JOIN (SELECT frame, max(day) AS frame_last FROM frame_daily_physc GROUP BY frame) AS l
        ON l.frame = p.frame
    WHERE p.day >= l.frame_last - toIntervalDay(180)
    GROUP BY p.frame
);

-- The pool size per frame: the largest pool its LPARs reported in their last 7 days of samples.
CREATE OR REPLACE VIEW frame_pool_size AS
SELECT
    e.frame AS frame,
    max(c.pool_cpus) AS pool_cpus
FROM cpu_samples AS c
INNER JOIN fleet_entities AS e ON e.entity_id = c.host_id
INNER JOIN
(
    SELECT host_id, max(ts) AS last_ts FROM cpu_samples WHERE pool_cpus IS NOT NULL GROUP BY host_id
) AS l ON l.host_id = c.host_id
WHERE c.pool_cpus IS NOT NULL AND c.ts >= l.last_ts - INTERVAL 7 DAY
GROUP BY e.frame;

-- Actual daily peaks of the frame's last year of data and the fitted/projected trend with its band.
CREATE OR REPLACE VIEW capacity_forecast_series AS
SELECT p.frame AS frame, p.day AS day, p.physc_p95_sum AS actual, NULL AS trend, NULL AS lower, NULL AS upper
FROM frame_daily_physc AS p
INNER JOIN (SELECT frame, max(day) AS frame_last FROM frame_daily_physc GROUP BY frame) AS l ON l.frame = p.frame
WHERE p.day >= l.frame_last - toIntervalDay(365)
UNION ALL
SELECT
    f.frame AS frame,
    f.last_day - toIntervalDay(180) + toIntervalDay(n.number) AS day,
    NULL AS actual,
    f.slope_per_day * toRelativeDayNum(day) + f.intercept AS trend,
    trend - 2 * f.residual_sd AS lower,
    trend + 2 * f.residual_sd AS upper
FROM capacity_forecast_fit AS f
CROSS JOIN numbers(271) AS n
WHERE f.days >= 2 AND day >= f.last_day - toIntervalDay(f.days);
