-- hotspots: which functions took the time?
-- Reads `selected_sample` (the samples the caller chose: an event, pids,
-- a time range...) and reports, per key ({key1_name}), the exclusive
-- ("self": the leaf frame) and inclusive ("total": anywhere in the stack,
-- counted once per sample even under recursion) cost, as
-- `perf report --no-children` / `--children` do.
-- Percentages are shares of the selected samples' period (perf's
-- Overhead column); sample counts are perf report -n's Samples.
WITH per_stack AS (                 -- samples and period per distinct stack
  SELECT capture, stack_id, count(*) AS n, sum(period) AS p
  FROM selected_sample
  WHERE stack_id IS NOT NULL
  GROUP BY capture, stack_id
),
totals AS (
  SELECT sum(n) AS n, sum(p) AS p FROM per_stack
),
stack_key AS (                      -- the key of every frame of every used stack
  SELECT ps.capture, ps.stack_id, ps.n, ps.p, st.depth,
         {key1_expr} AS key1, {key2_expr} AS key2
  FROM per_stack ps
  JOIN perf_stack st ON st.capture = ps.capture AND st.stack_id = ps.stack_id
  JOIN perf_frame_name fn ON fn.capture = st.capture AND fn.frame_id = st.frame_id
),
self_cost AS (
  SELECT key1, key2, sum(n) AS n, sum(p) AS p
  FROM stack_key WHERE depth = 0
  GROUP BY key1, key2
),
total_cost AS (
  SELECT key1, key2, sum(n) AS n, sum(p) AS p
  FROM (SELECT DISTINCT capture, stack_id, n, p, key1, key2 FROM stack_key)
  GROUP BY key1, key2
)
SELECT
  t.key1 AS {key1_name},                                                      -- the key: function, module or address
  {key2_select}                                                               -- module path (when the key is not the module)
  COALESCE(s.n, 0) AS self_samples,                                           -- samples whose leaf frame has this key
  round(100.0 * COALESCE(s.p, 0) / (SELECT p FROM totals), 4) AS self_pct,    -- exclusive share of period, %
  t.n AS total_samples,                                                       -- samples with this key anywhere in the stack
  round(100.0 * t.p / (SELECT p FROM totals), 4) AS total_pct                 -- inclusive share of period, %
FROM total_cost t
LEFT JOIN self_cost s ON s.key1 = t.key1 AND s.key2 = t.key2
ORDER BY self_pct DESC, total_pct DESC, t.key1, t.key2
