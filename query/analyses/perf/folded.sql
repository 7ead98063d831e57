-- folded: the selected samples' stacks as `root;caller;...;leaf` lines with
-- their total weight (Brendan Gregg's folded format, input of flame graphs).
WITH lines AS (
  SELECT array_to_string(array_agg(e.function ORDER BY e.pos DESC), ';') AS stack, ps.w
  FROM selected_stack ps
  JOIN {entry} e ON e.capture = ps.capture AND e.stack_id = ps.stack_id
  GROUP BY ps.capture, ps.stack_id, ps.w
)
SELECT stack, CAST(sum(w) AS BIGINT) AS weight FROM lines GROUP BY stack ORDER BY stack
