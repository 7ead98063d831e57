-- hotspots: which functions (modules, source lines, addresses) took the cost?
-- Per key, the exclusive ("self": the key of the sample's leaf) and inclusive
-- ("total": the key anywhere in the stack, counted once per sample even under
-- recursion) cost of the samples `_selected_sample` selects, as `perf report
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
-- The cost per key comes from `_stack_key_cost` (query/src/stack_cost.rs):
-- it sums the selected samples (`_selected_sample`) per stack, then reads
-- each stack's frames (`stack`) with their keys (`hotspot_key`) in one pass,
-- counting each key once per stack.
WITH cost AS (
  SELECT key1, key2, key3, self_n, self_w, total_n, total_w FROM _stack_key_cost
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
