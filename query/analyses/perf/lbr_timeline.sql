-- lbr_timeline: where did the time go, window by window, with branch
-- entries counted as samples? (Ono et al. 2014, time-series performance
-- analysis.) `timeline` over the
-- points of `_lbr_sample` (the samples and their branch entries'
-- pseudo-samples, each at the end of its slice, weighing its time in ns).
--
-- Parameters: $window_ns (required), $by (`function` (default), `module`,
-- `process`), $top (default 10), $event (default: all), $method, $ghz
-- (see lbr_samples.sql).
WITH k AS (
  SELECT x.capture,
         window_start(x.t_ns, $window_ns) AS w,
         CASE
           WHEN COALESCE($by, 'function') = 'module' THEN COALESCE(l.module, '[unknown]')
           WHEN COALESCE($by, 'function') = 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           ELSE COALESCE(l.function, '[unknown]')
         END AS key,
         x.weight_ns AS cost,
         x.method
  FROM _lbr_sample x
  LEFT JOIN stack_entry l ON l.segment = x.segment AND l.stack_id = x.stack_id AND l.pos = 0
  WHERE ($event IS NULL OR x.event = $event) AND x.t_ns IS NOT NULL
),
tot AS (SELECT capture, key, sum(cost) AS c FROM k GROUP BY capture, key),
top AS (
  SELECT capture, key FROM (
    SELECT capture, key, row_number() OVER (PARTITION BY capture ORDER BY c DESC, key) AS rn FROM tot)
  WHERE rn <= COALESCE($top, 10)
),
g AS (
  SELECT k.capture, k.w, COALESCE(top.key, '[other]') AS key, count(*) AS samples,
         CAST(sum(k.cost) AS BIGINT) AS cost, max(k.method) AS method
  FROM k LEFT JOIN top ON top.capture = k.capture AND top.key = k.key
  GROUP BY k.capture, k.w, COALESCE(top.key, '[other]')
)
SELECT
  capture,                                        -- capture
  CAST(w AS DOUBLE) / 1e9 AS window_start_s,      -- start of the window, s after the origin
  key,                                            -- function, module or comm[pid]; [other]
  samples,                                        -- samples and pseudo-samples in the window
  cost,                                           -- the time they carry, ns
  round(100.0 * cost / sum(cost) OVER (PARTITION BY capture, w), 2) AS share_pct,  -- share of the window's time, %
  method                                          -- 0-3 or cycles
FROM g
ORDER BY capture, w, cost DESC, key
