-- Issue 25: Capacity's trend was fitted through every day of a frame's last 180, the day still in
-- progress (or a file's first and last half-days) included. A part-day's p95 is that of the hours it
-- has, usually lower: on the demo's 3-day history the trend fell to -40 cores. The fit now takes the
-- days whose coverage (windows per LPAR) is at least 90 % of the frame's best day in the same 180 days;
-- the actual series still shows every day. Coverage is relative, so 5-minute and 1-minute sources
-- alike have full days.
CREATE OR REPLACE VIEW entity_daily AS
SELECT
    toDateTime(d.day, 'UTC') AS day, d.entity_id AS entity_id, d.entity_name AS entity_name, d.metric AS metric,
    d.avg_value AS avg_value, d.max_value AS max_value, d.p95_value AS p95_value, d.windows AS windows,
    e.platform AS platform, e.site AS site, e.frame AS frame
FROM metrics_daily_v AS d
LEFT JOIN fleet_entities AS e ON e.entity_id = d.entity_id;

CREATE OR REPLACE VIEW frame_daily_physc AS
SELECT
    frame, day,
    sum(p95_value) AS physc_p95_sum,
    sum(avg_value) AS physc_avg_sum,
    count() AS lpars,
    sum(windows) / count() AS windows_per_lpar
FROM entity_daily
WHERE metric = 'physc'
GROUP BY frame, day;

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
    INNER JOIN
    (
        SELECT q.frame AS frame, max(q.windows_per_lpar) AS best, any(m.frame_last) AS frame_last
        FROM frame_daily_physc AS q
        INNER JOIN (SELECT frame, max(day) AS frame_last FROM frame_daily_physc GROUP BY frame) AS m
            ON m.frame = q.frame
        WHERE q.day >= m.frame_last - toIntervalDay(180)
        GROUP BY q.frame
    ) AS c ON c.frame = p.frame
    WHERE p.day >= c.frame_last - toIntervalDay(180) AND p.windows_per_lpar >= 0.9 * c.best
    GROUP BY p.frame
);
