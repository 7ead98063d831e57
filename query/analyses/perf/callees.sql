-- callees: attributed metrics of the edges out of one function (Oracle
-- Solaris Studio Performance Analyzer, metrics mapped to program structure).
-- Every selected sample whose stack contains the function ($function; with
-- $module, in a module whose path contains it) counts once: for the
-- function's inclusive metric (the `function` row) and either for its
-- exclusive metric (`self`, the function is the leaf) or for exactly one
-- callee: the callee of the function's innermost occurrence.
-- So `self` + the `callee` rows sum to the `function` row:
-- inclusive(f) = exclusive(f) + sum of attributed(f -> callee).
-- Parameters: $function (as hotspots names it), $module, $inline (default
-- true: inline levels count as functions), and the sample selection of
-- stack_weight.sql ($event, $weight, $pid, $tid, $comm, $from_ns, $to_ns,
-- $capture).
WITH sw AS (SELECT segment, stack_id, n, w FROM _stack_weight),
totals AS (SELECT sum(w) AS w FROM sw),
occ AS (                            -- where the function is in each stack
  SELECT e.segment, e.stack_id, min(e.k) AS inner_k
  FROM _stack_position e
  JOIN (SELECT DISTINCT segment, stack_id FROM sw) ps
    ON ps.segment = e.segment AND ps.stack_id = e.stack_id
  WHERE e.function = $function AND ($module IS NULL OR strpos(e.module, $module) > 0)
  GROUP BY e.segment, e.stack_id
),
callee AS (                         -- the position just inside the innermost occurrence
  SELECT o.segment, o.stack_id,
         first_value(c.function ORDER BY c.k DESC) AS function,
         first_value(c.module ORDER BY c.k DESC) AS module
  FROM occ o
  JOIN _stack_position c
    ON c.segment = o.segment AND c.stack_id = o.stack_id
    AND c.k < o.inner_k AND c.k >= (o.inner_k / 1024 - 1) * 1024
  GROUP BY o.segment, o.stack_id
),
edge AS (
  SELECT ps.n, ps.w,
         o.inner_k = 0 AS is_self,
         COALESCE(c.function, '<self>') AS function,
         COALESCE(c.module, '') AS module
  FROM occ o
  JOIN sw ps ON ps.segment = o.segment AND ps.stack_id = o.stack_id
  LEFT JOIN callee c ON c.segment = o.segment AND c.stack_id = o.stack_id
),
incl AS (SELECT sum(n) AS n, sum(w) AS w FROM edge),
rows AS (
  SELECT 0 AS ord, 'function' AS role, $function AS function, '' AS module,
         n, w FROM incl
  UNION ALL
  SELECT 1, 'self', $function, '', sum(n), sum(w) FROM edge WHERE is_self HAVING count(*) > 0
  UNION ALL
  SELECT 2, 'callee', function, module, sum(n), sum(w) FROM edge WHERE NOT is_self
  GROUP BY function, module
)
SELECT
  role,                                                     -- `function` (inclusive), `self` (exclusive) or `callee` (attributed)
  function,                                                 -- the function, or its callee
  module,                                                   -- module of the callee
  n AS samples,                                             -- samples
  w AS weight,                                              -- their weight
  round(100.0 * w / (SELECT w FROM totals), 4) AS pct,      -- share of all selected weight, %
  round(100.0 * w / (SELECT w FROM incl), 4) AS share       -- share of the function's inclusive weight, %
FROM rows
ORDER BY ord, w DESC, function, module
