-- diff: what changed between two sets of runs? Per function (module, source
-- line), the exclusive and inclusive cost in the base captures and in the
-- new ones, each as a share of its own side's total (so that a longer or
-- shorter run does not look like a change), the change in share, and the
-- new side's weight against the base's scaled to the new total (pprof's
-- -diff_base with -normalize). Keys found on one side only are kept
-- (`status` says which). Sorted by the size of the change in exclusive
-- share, then inclusive. Modules are matched by file name (the runs may
-- come from different build directories or machines).
--
-- Parameters: $by (`function` (default), `module`, `srcline`), $base and
-- $new (lists of captures; every selected capture must be in one of them),
-- $inline (default true), and the sample selection of stack_weight.sql
-- ($event, $weight, $pid, $tid, $comm, $from_ns, $to_ns). Both sides are
-- weighed alike: the same event and weight.
WITH sw AS (
  SELECT capture, segment, stack_id, n, w,
    CASE WHEN array_has($base, capture) THEN 'base'
         WHEN array_has($new, capture) THEN 'new' END AS side
  FROM _stack_weight
),
frame_key AS (
  SELECT segment, frame_id, inline_depth AS level, function,
    regexp_replace(module, '^.*/', '') AS module, srcline
  FROM frame_line WHERE COALESCE($inline, true)
  UNION ALL                         -- without inline levels: the real function
  SELECT segment, frame_id, 0, function, regexp_replace(module, '^.*/', ''), NULL
  FROM frame_line WHERE NOT COALESCE($inline, true) AND NOT inlined
    AND COALESCE($by, 'function') <> 'srcline'
  UNION ALL                         -- ... and the source line of the address
  SELECT segment, frame_id, 0, function, regexp_replace(module, '^.*/', ''), srcline
  FROM frame_name WHERE NOT COALESCE($inline, true)
    AND COALESCE($by, 'function') = 'srcline'
),
keyed AS (
  SELECT segment, frame_id, level,
    CASE
      WHEN COALESCE($by, 'function') = 'module' THEN module
      WHEN COALESCE($by, 'function') = 'srcline' THEN srcline
      ELSE function
    END AS key1,
    CASE WHEN COALESCE($by, 'function') = 'module' THEN NULL ELSE module END AS key2
  FROM frame_key
),
per_stack AS (                      -- each key once per stack (recursion counts once)
  SELECT sw.side, k.key1, k.key2, max(sw.n) AS n, max(sw.w) AS w,
         bool_or(st.depth = 0 AND k.level = 0) AS is_self
  FROM sw
  JOIN stack st ON st.segment = sw.segment AND st.stack_id = sw.stack_id
  JOIN keyed k ON k.segment = st.segment AND k.frame_id = st.frame_id
  WHERE sw.side IS NOT NULL
  GROUP BY sw.side, sw.capture, sw.segment, sw.stack_id, k.key1, k.key2
),
side_total AS (                     -- each side's total: its samples' weight
  SELECT side, sum(w) AS w FROM sw WHERE side IS NOT NULL GROUP BY side
),
cost AS (
  SELECT key1, key2,
    sum(CASE WHEN side = 'base' AND is_self THEN w ELSE 0 END) AS base_self,
    sum(CASE WHEN side = 'base' THEN w ELSE 0 END) AS base_total,
    sum(CASE WHEN side = 'new' AND is_self THEN w ELSE 0 END) AS new_self,
    sum(CASE WHEN side = 'new' THEN w ELSE 0 END) AS new_total,
    bool_or(side = 'base') AS in_base,
    bool_or(side = 'new') AS in_new
  FROM per_stack
  GROUP BY key1, key2
),
shares AS (
  SELECT c.*,
    100.0 * c.base_self / NULLIF(b.w, 0) AS base_self_pct,
    100.0 * c.base_total / NULLIF(b.w, 0) AS base_total_pct,
    100.0 * c.new_self / NULLIF(n.w, 0) AS new_self_pct,
    100.0 * c.new_total / NULLIF(n.w, 0) AS new_total_pct,
    CAST(n.w AS DOUBLE) / NULLIF(b.w, 0) AS scale
  FROM cost c
  CROSS JOIN (SELECT COALESCE(max(w), 0) AS w FROM side_total WHERE side = 'base') b
  CROSS JOIN (SELECT COALESCE(max(w), 0) AS w FROM side_total WHERE side = 'new') n
)
SELECT
  CASE WHEN COALESCE($by, 'function') = 'function' THEN key1 END AS function,  -- function (by function)
  CASE WHEN $by = 'module' THEN key1 ELSE key2 END AS module,                 -- module file name
  CASE WHEN $by = 'srcline' THEN key1 END AS srcline,                         -- perf's srcline (by srcline)
  CASE WHEN in_base AND in_new THEN 'both'
       WHEN in_base THEN 'base only' ELSE 'new only' END AS status,           -- which side has the key
  base_self AS base_self_weight,                                 -- exclusive weight in the base captures
  round(COALESCE(base_self_pct, 0), 4) AS base_self_pct,         -- ... as a share of the base total, %
  new_self AS new_self_weight,                                   -- exclusive weight in the new captures
  round(COALESCE(new_self_pct, 0), 4) AS new_self_pct,           -- ... as a share of the new total, %
  round(COALESCE(new_self_pct, 0) - COALESCE(base_self_pct, 0), 4) AS self_pct_change,  -- change in exclusive share, percentage points
  round(COALESCE(base_total_pct, 0), 4) AS base_total_pct,       -- inclusive share in the base, %
  round(COALESCE(new_total_pct, 0), 4) AS new_total_pct,         -- inclusive share in the new, %
  round(COALESCE(new_total_pct, 0) - COALESCE(base_total_pct, 0), 4) AS total_pct_change,  -- change in inclusive share, points
  round(new_self - base_self * COALESCE(scale, 0), 1) AS self_change_normalized  -- new exclusive weight minus the base's scaled to the new total
FROM shares
ORDER BY abs(COALESCE(new_self_pct, 0) - COALESCE(base_self_pct, 0)) DESC,
         abs(COALESCE(new_total_pct, 0) - COALESCE(base_total_pct, 0)) DESC,
         key1, key2
