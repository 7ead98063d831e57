-- stack_key_cost: the cost of each hotspot key in SQL, where the one-pass
-- operator of query/src/stack_cost.rs cannot run (on a cluster, whose
-- executors know only DataFusion's own operators). The same rows as
-- `_stack_key_cost`: per key, the samples and weight of the selected stacks
-- whose leaf (depth 0, innermost inline level 0) has it (self) and of those
-- that hold it anywhere, each stack counted once however often the key
-- recurs in it (total).
--
-- Parameters: those of hotspots (the sample selection of stack_weight.sql,
-- and $by, $inline, $capture of hotspot_key.sql).
WITH per_stack AS (                 -- each key once per stack (recursion counts once)
  SELECT k.key1, k.key2, k.key3, max(sw.n) AS n, max(sw.w) AS w,
         bool_or(st.depth = 0 AND k.level = 0) AS is_self   -- the key of the stack's leaf
  FROM _stack_weight sw
  JOIN stack st ON st.segment = sw.segment AND st.stack_id = sw.stack_id
  JOIN _hotspot_key k ON k.segment = st.segment AND k.frame_id = st.frame_id
  WHERE $segment IS NULL OR array_has($segment, st.segment)
  GROUP BY sw.capture, sw.segment, sw.stack_id, k.key1, k.key2, k.key3
)
SELECT key1, key2, CAST(key3 AS INT UNSIGNED) AS key3,
       sum(CASE WHEN is_self THEN n ELSE 0 END) AS self_n,
       sum(CASE WHEN is_self THEN w ELSE 0 END) AS self_w,
       sum(n) AS total_n,
       sum(w) AS total_w
FROM per_stack
GROUP BY key1, key2, key3
