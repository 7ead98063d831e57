-- callees: attributed metrics of the edges out of one function (seed 002).
-- Every selected sample whose stack contains the function ({match}) counts
-- once: for the function's inclusive metric (the `function` row) and
-- either for its exclusive metric (`self`, the function is the leaf) or for
-- exactly one callee: the callee of the function's innermost occurrence.
-- So `self` + the `callee` rows sum to the `function` row:
-- inclusive(f) = exclusive(f) + sum of attributed(f -> callee).
WITH totals AS (SELECT sum(w) AS w FROM selected_stack),
occ AS (
  SELECT e.capture, e.stack_id, min(e.pos) AS inner_pos, max(e.pos) AS outer_pos
  FROM {entry} e
  JOIN selected_stack ps ON ps.capture = e.capture AND ps.stack_id = e.stack_id
  WHERE {match}
  GROUP BY e.capture, e.stack_id
),
edge AS (
  SELECT ps.n, ps.w,
         o.inner_pos = 0 AS is_self,
         COALESCE(c.function, '<self>') AS function,
         COALESCE(c.module, '') AS module
  FROM occ o
  JOIN selected_stack ps ON ps.capture = o.capture AND ps.stack_id = o.stack_id
  LEFT JOIN {entry} c
    ON c.capture = o.capture AND c.stack_id = o.stack_id AND c.pos = o.inner_pos - 1
),
incl AS (SELECT sum(n) AS n, sum(w) AS w FROM edge),
rows AS (
  SELECT 0 AS ord, 'function' AS role, {fname} AS function, '' AS module,
         n, w FROM incl
  UNION ALL
  SELECT 1, 'self', {fname}, '', sum(n), sum(w) FROM edge WHERE is_self HAVING count(*) > 0
  UNION ALL
  SELECT 2, 'callee', function, module, sum(n), sum(w) FROM edge WHERE NOT is_self
  GROUP BY function, module
)
SELECT
  role,                                                     -- `function` (inclusive), `self` (exclusive) or `callee` (attributed)
  function,                                                 -- the function, or its callee
  module,                                                   -- module of the callee
  n AS samples,                                             -- samples
  {weight_col}                                              -- weight
  round(100.0 * w / (SELECT w FROM totals), 4) AS pct,      -- share of all selected weight, %
  round(100.0 * w / (SELECT w FROM incl), 4) AS share       -- share of the function's inclusive weight, %
FROM rows
ORDER BY ord, w DESC, function, module
