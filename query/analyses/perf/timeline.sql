-- timeline: where did the time go, window by window? Samples per time
-- window and key (the leaf function, its module, or the process), the top
-- $top keys of each capture by name and the rest as `[other]`, with each
-- key's share of the window's cost. Windows are $window_ns wide and start
-- at each capture's origin (`time_base`, `perf_sample_t.t_ns`).
--
-- Parameters: $window_ns (required), $by (`function` (default), `module`,
-- `process`: comm[pid]), $top (default 10), and the sample selection of
-- stack_weight.sql ($event, $weight (the cost; default the period), $pid,
-- $tid, $comm, $from_ns, $to_ns (time_ns), $capture).
WITH k AS (
  SELECT x.capture,
         window_start(x.time_ns + b.offset_ns, $window_ns) AS w,
         CASE
           WHEN COALESCE($by, 'function') = 'module' THEN COALESCE(l.module, '[unknown]')
           WHEN COALESCE($by, 'function') = 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           ELSE COALESCE(l.function, '[unknown]')
         END AS key,
         x.cost
  FROM _selected_sample x
  JOIN time_base b ON b.capture = x.capture AND b.source_id = x.source_id
  LEFT JOIN stack_entry l ON l.segment = x.segment AND l.stack_id = x.stack_id AND l.pos = 0
  WHERE x.time_ns + b.offset_ns IS NOT NULL
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
  cost,                                           -- their weight (period sum by default)
  round(100.0 * cost / sum(cost) OVER (PARTITION BY capture, w), 2) AS share_pct  -- share of the window's cost, %
FROM g
ORDER BY capture, w, cost DESC, key
