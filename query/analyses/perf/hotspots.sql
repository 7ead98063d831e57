-- hotspots: which functions (modules, source lines, addresses) took the cost?
-- Reads `selected_stack` (samples `n` and weight `w` per distinct stack of
-- the samples the caller chose; the weight is the period, 1, a sample
-- column or a counter delta) and `{entry}`
-- (the stacks as positions, leaf first), and reports per key ({key1_name})
-- the exclusive ("self": the leaf position) and inclusive ("total":
-- anywhere in the stack, counted once per sample even under recursion)
-- cost, as `perf report --no-children` / `--children` do.
-- Percentages are shares of the selected samples' total weight (perf's
-- Overhead column); sample counts are perf report -n's Samples.
WITH totals AS (
  SELECT sum(n) AS n, sum(w) AS w FROM selected_stack
),
stack_key AS (                      -- the key of every position of every used stack
  SELECT ps.capture, ps.stack_id, ps.n, ps.w, e.pos,
         {key1_expr} AS key1, {key2_expr} AS key2, {key3_expr} AS key3
  FROM selected_stack ps
  JOIN {entry} e ON e.capture = ps.capture AND e.stack_id = ps.stack_id
),
self_cost AS (
  SELECT key1, key2, key3, sum(n) AS n, sum(w) AS w
  FROM stack_key WHERE pos = 0
  GROUP BY key1, key2, key3
),
total_cost AS (
  SELECT key1, key2, key3, sum(n) AS n, sum(w) AS w
  FROM (SELECT DISTINCT capture, stack_id, n, w, key1, key2, key3 FROM stack_key)
  GROUP BY key1, key2, key3
)
SELECT
  t.key1 AS {key1_name},                                                      -- the key
  {key_select}                                                                -- further key columns (module, file, line)
  COALESCE(s.n, 0) AS self_samples,                                           -- samples whose leaf has this key
  {self_weight}                                                               -- exclusive weight
  round(100.0 * COALESCE(s.w, 0) / (SELECT w FROM totals), 4) AS self_pct,    -- exclusive share of the weight, %
  t.n AS total_samples,                                                       -- samples with this key anywhere in the stack
  {total_weight}                                                              -- inclusive weight
  round(100.0 * t.w / (SELECT w FROM totals), 4) AS total_pct                 -- inclusive share of the weight, %
FROM total_cost t
LEFT JOIN self_cost s
  ON s.key1 = t.key1 AND (s.key2 IS NOT DISTINCT FROM t.key2) AND (s.key3 IS NOT DISTINCT FROM t.key3)
ORDER BY self_pct DESC, total_pct DESC, t.key1, t.key2, t.key3
