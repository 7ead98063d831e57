-- folded: the selected samples' stacks as `root;caller;...;leaf` lines with
-- their total weight (Brendan Gregg's folded format, input of flame graphs).
-- Parameters: $inline (default true: inline levels are frames of their
-- own) and the sample selection of stack_weight.sql ($event, $weight, $pid,
-- $tid, $comm, $from_ns, $to_ns, $capture).
WITH sw AS (SELECT capture, stack_id, n, w FROM _stack_weight),
entry AS (
  SELECT capture, stack_id, pos, function FROM stack_entry_inline WHERE COALESCE($inline, true)
  UNION ALL
  SELECT capture, stack_id, pos, function FROM stack_entry WHERE NOT COALESCE($inline, true)
),
lines AS (
  SELECT array_to_string(array_agg(e.function ORDER BY e.pos DESC), ';') AS stack, ps.w
  FROM sw ps
  JOIN entry e ON e.capture = ps.capture AND e.stack_id = ps.stack_id
  GROUP BY ps.capture, ps.stack_id, ps.w
)
SELECT
  stack,                                  -- root;caller;...;leaf
  CAST(sum(w) AS BIGINT) AS weight        -- weight of the samples with this stack
FROM lines GROUP BY stack ORDER BY stack
