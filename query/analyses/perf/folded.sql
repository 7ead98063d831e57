-- folded: the selected samples' stacks as `root;caller;...;leaf` lines with
-- their total weight (Brendan Gregg's folded format, input of flame graphs).
WITH per_stack AS (
  SELECT capture, stack_id, sum(cost) AS w
  FROM selected_sample WHERE stack_id IS NOT NULL
  GROUP BY capture, stack_id
),
lines AS (
  SELECT array_to_string(array_agg(e.function ORDER BY e.pos DESC), ';') AS stack, ps.w
  FROM per_stack ps
  JOIN {entry} e ON e.capture = ps.capture AND e.stack_id = ps.stack_id
  GROUP BY ps.capture, ps.stack_id, ps.w
)
SELECT stack, CAST(sum(w) AS BIGINT) AS weight FROM lines GROUP BY stack ORDER BY stack
