-- hotspots: which functions (modules, source lines, addresses) took the cost?
-- Per key, the exclusive ("self": the key of the sample's leaf) and inclusive
-- ("total": the key anywhere in the stack, counted once per sample even under
-- recursion) cost of the samples `_stack_weight` selects, as `perf report
-- --no-children` / `--children` do. Percentages are shares of the selected
-- samples' total weight (perf's Overhead column: the sum of the self
-- weights, every sample having one leaf); sample counts are perf report
-- -n's Samples.
--
-- Parameters: $by (`function` (default), `module`, `srcline`, `line`,
-- `address`), $inline (default true: inline levels count as functions of
-- their own, perf report --inline), and the sample selection of
-- stack_weight.sql ($event, $weight, $pid, $tid, $comm, $from_ns, $to_ns,
-- $capture). The key columns a call returns depend on $by: function and
-- module; module; srcline and module; function, file and line; address and
-- module.
WITH sw AS (SELECT capture, stack_id, n, w FROM _stack_weight),
-- Every frame (and, with $inline, every inline level of it) with its key;
-- level 0 is where the instruction is (the leaf of a sample's stack).
frame_key AS (
  SELECT capture, frame_id, inline_depth AS level, function, module, file, line, srcline, rel_pc
  FROM frame_line WHERE COALESCE($inline, true)
    AND ($capture IS NULL OR array_has($capture, capture))  -- only the selected captures' files
  UNION ALL                         -- without inline levels: the real function
  SELECT capture, frame_id, 0, function, module, NULL, NULL, NULL, rel_pc
  FROM frame_line WHERE NOT COALESCE($inline, true) AND NOT inlined
    AND ($capture IS NULL OR array_has($capture, capture))
    AND COALESCE($by, 'function') NOT IN ('srcline', 'line')
  UNION ALL                         -- ... and the source line of the address
  SELECT capture, frame_id, 0, function, module, file, line, srcline, rel_pc
  FROM frame_name WHERE NOT COALESCE($inline, true)
    AND ($capture IS NULL OR array_has($capture, capture))
    AND COALESCE($by, 'function') IN ('srcline', 'line')
),
keyed AS (
  SELECT capture, frame_id, level,
    CASE COALESCE($by, 'function')
      WHEN 'module' THEN module
      WHEN 'srcline' THEN srcline
      WHEN 'address' THEN concat(function, ' @ 0x', to_hex(rel_pc))
      ELSE function
    END AS key1,
    CASE COALESCE($by, 'function')
      WHEN 'module' THEN NULL
      WHEN 'line' THEN file
      ELSE module
    END AS key2,
    CASE WHEN $by = 'line' THEN line END AS key3
  FROM frame_key
),
per_stack AS (                      -- each key once per stack (recursion counts once)
  SELECT k.key1, k.key2, k.key3, max(sw.n) AS n, max(sw.w) AS w,
         bool_or(st.depth = 0 AND k.level = 0) AS is_self   -- the key of the stack's leaf
  FROM sw
  JOIN stack st ON st.capture = sw.capture AND st.stack_id = sw.stack_id
  JOIN keyed k ON k.capture = st.capture AND k.frame_id = st.frame_id
  WHERE $capture IS NULL OR array_has($capture, st.capture)
  GROUP BY sw.capture, sw.stack_id, k.key1, k.key2, k.key3
),
cost AS (
  SELECT key1, key2, key3,
         sum(CASE WHEN is_self THEN n ELSE 0 END) AS self_n,
         sum(CASE WHEN is_self THEN w ELSE 0 END) AS self_w,
         sum(n) AS total_n,
         sum(w) AS total_w
  FROM per_stack
  GROUP BY key1, key2, key3
)
SELECT
  CASE WHEN COALESCE($by, 'function') IN ('function', 'line') THEN key1 END AS function,  -- function (by function, line)
  CASE WHEN $by = 'module' THEN key1
       WHEN COALESCE($by, 'function') <> 'line' THEN key2 END AS module,  -- module path (all but line)
  CASE WHEN $by = 'srcline' THEN key1 END AS srcline,        -- perf's srcline: file base name:line (by srcline)
  CASE WHEN $by = 'line' THEN key2 END AS file,              -- full source path (by line)
  key3 AS line,                                              -- source line (by line)
  CASE WHEN $by = 'address' THEN key1 END AS address,        -- `function @ 0xREL_PC` (by address)
  self_n AS self_samples,                                    -- samples whose leaf has this key
  self_w AS self_weight,                                     -- their weight (exclusive)
  round(100.0 * self_w / sum(self_w) OVER (), 4) AS self_pct,    -- exclusive share of the weight, %
  total_n AS total_samples,                                  -- samples with this key anywhere in the stack
  total_w AS total_weight,                                   -- their weight (inclusive)
  round(100.0 * total_w / sum(self_w) OVER (), 4) AS total_pct   -- inclusive share of the weight, %
FROM cost
ORDER BY self_pct DESC, total_pct DESC, key1, key2, key3
