-- Issue 24, goal 5: the Capacity dashboard's forecast and headroom charts.
--
-- sql/034's capacity_forecast_fit_final computed frame_daily_physc_final three times (the days, each
-- frame's last day, the best coverage of its last 180 days) and capacity_forecast_series_final twice
-- more; the forecast chart's series limit (a join on the same view) doubles that: ten groupings of a
-- year of every LPAR's daily rows per open. Each frame's last day and best coverage are now window
-- functions over one read. The figures are those of sql/034 (tests/unit/test_dashboard_precomputed.py
-- compares them with the views on the rollup states, sql/016 and sql/027).
CREATE OR REPLACE VIEW capacity_forecast_fit_final AS
SELECT frame, days, last_day, fit.1 AS slope_per_day, fit.2 AS intercept, residual_sd, last_peak
FROM
(
    SELECT
        frame,
        count() AS days,
        max(day) AS last_day,
        simpleLinearRegression(toFloat64(toRelativeDayNum(day)), physc_p95_sum) AS fit,
        sqrt(greatest(0, varPop(physc_p95_sum) - pow(fit.1, 2) * varPop(toFloat64(toRelativeDayNum(day)))))
            AS residual_sd,
        argMax(physc_p95_sum, day) AS last_peak
    FROM
    (
        -- the window runs after this level's WHERE: the best coverage of the last 180 days
        SELECT frame, day, physc_p95_sum, windows_per_lpar, max(windows_per_lpar) OVER (PARTITION BY frame) AS best
        FROM
        (
            SELECT frame, day, physc_p95_sum, windows_per_lpar, max(day) OVER (PARTITION BY frame) AS frame_last
            FROM frame_daily_physc_final
        )
        WHERE day >= frame_last - toIntervalDay(180)
    )
    WHERE windows_per_lpar >= 0.9 * best
    GROUP BY frame
);

CREATE OR REPLACE VIEW capacity_forecast_series_final AS
SELECT frame, day, physc_p95_sum AS actual, NULL AS trend, NULL AS lower, NULL AS upper
FROM
(
    SELECT frame, day, physc_p95_sum, max(day) OVER (PARTITION BY frame) AS frame_last
    FROM frame_daily_physc_final
)
WHERE day >= frame_last - toIntervalDay(365)
UNION ALL
SELECT
    f.frame AS frame,
    f.last_day - toIntervalDay(180) + toIntervalDay(n.number) AS day,
    NULL AS actual,
    f.slope_per_day * toRelativeDayNum(day) + f.intercept AS trend,
    trend - 2 * f.residual_sd AS lower,
    trend + 2 * f.residual_sd AS upper
FROM capacity_forecast_fit_final AS f
CROSS JOIN numbers(271) AS n
WHERE f.days >= 2 AND day >= f.last_day - toIntervalDay(f.days);
