-- timeline: where did the time go, window by window? Samples per time
-- window and key (the leaf function, its module, or the process), the top
-- $top keys of each capture by name and the rest as `[other]`, with each
-- key's share of the window's cost. Windows are $window_ns wide and start
-- at each capture's origin (`time_base`, `perf_sample_t.t_ns`).
--
-- Parameters: $window_ns (required), $by (`function` (default), `module`,
-- `process`: comm[pid]), $top (default 10), and the sample selection of
-- stack_weight.sql except the weight: the cost is the period ($event,
-- $pid, $tid, $comm, $from_ns, $to_ns (time_ns), $capture).
WITH k AS (
  SELECT x.capture,
         window_start(x.t_ns, $window_ns) AS w,
         CASE COALESCE($by, 'function')
           WHEN 'module' THEN COALESCE(l.module, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           ELSE COALESCE(l.function, '[unknown]')
         END AS key,
         COALESCE(x.period, 1) AS cost
  FROM perf_sample_t x
  LEFT JOIN stack_entry l ON l.capture = x.capture AND l.stack_id = x.stack_id AND l.pos = 0
  WHERE x.t_ns IS NOT NULL
    AND (($event IS NOT NULL AND x.event = $event)
      OR ($event IS NULL AND x.event = (
          SELECT CAST(event AS VARCHAR) FROM perf_sample
          GROUP BY event ORDER BY count(*) DESC, CAST(event AS VARCHAR) LIMIT 1)))
    AND ($pid IS NULL OR array_has($pid, x.pid))
    AND ($tid IS NULL OR array_has($tid, x.tid))
    AND ($comm IS NULL OR array_has($comm, CAST(x.comm AS VARCHAR)))
    AND ($from_ns IS NULL OR x.time_ns >= $from_ns)
    AND ($to_ns IS NULL OR x.time_ns < $to_ns)
    AND ($capture IS NULL OR array_has($capture, x.capture))
),
tot AS (SELECT capture, key, sum(cost) AS c FROM k GROUP BY capture, key),
top AS (
  SELECT capture, key FROM (
    SELECT capture, key, row_number() OVER (PARTITION BY capture ORDER BY c DESC, key) AS rn FROM tot)
  WHERE rn <= COALESCE($top, 10)
),
g AS (
  SELECT k.capture, k.w, COALESCE(top.key, '[other]') AS key, count(*) AS samples,
         CAST(sum(k.cost) AS BIGINT) AS cost
  FROM k LEFT JOIN top ON top.capture = k.capture AND top.key = k.key
  GROUP BY k.capture, k.w, COALESCE(top.key, '[other]')
)
SELECT
  capture,                                        -- capture
  CAST(w AS DOUBLE) / 1e9 AS window_start_s,      -- start of the window, s after the origin
  key,                                            -- function, module or comm[pid]; [other]
  samples,                                        -- samples in the window with this key
  cost,                                           -- their period sum
  round(100.0 * cost / sum(cost) OVER (PARTITION BY capture, w), 2) AS share_pct  -- share of the window's cost, %
FROM g
ORDER BY capture, w, cost DESC, key
