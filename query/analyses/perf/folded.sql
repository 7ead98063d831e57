-- folded: the selected samples' stacks as `root;caller;...;leaf` lines with
-- their total weight (Brendan Gregg's folded format, input of flame graphs).
-- Parameters: $inline (default true: inline levels are frames of their
-- own) and the sample selection of stack_weight.sql ($event, $weight, $pid,
-- $tid, $comm, $from_ns, $to_ns, $capture).
WITH sw AS (                       -- each stack once, its captures' weight summed
  SELECT segment, stack_id, sum(w) AS w FROM _stack_weight GROUP BY segment, stack_id
),
entry AS (
  SELECT segment, stack_id, pos, function FROM stack_entry_inline
  WHERE COALESCE($inline, true) AND ($segment IS NULL OR array_has($segment, segment))
  UNION ALL
  SELECT segment, stack_id, pos, function FROM stack_entry
  WHERE NOT COALESCE($inline, true) AND ($segment IS NULL OR array_has($segment, segment))
),
lines AS (
  SELECT array_to_string(array_agg(e.function ORDER BY e.pos DESC), ';') AS stack, ps.w
  FROM sw ps
  JOIN entry e ON e.segment = ps.segment AND e.stack_id = ps.stack_id
  GROUP BY ps.segment, ps.stack_id, ps.w
)
SELECT
  stack,                                  -- root;caller;...;leaf
  CAST(sum(w) AS BIGINT) AS weight        -- weight of the samples with this stack
FROM lines GROUP BY stack ORDER BY stack
