-- stack_weight: which samples does an analysis look at, and what does each
-- weigh? The samples of one event (the one named, else the one with most
-- samples), narrowed by process, thread, command, time and capture, summed
-- per distinct stack. Every stack analysis (hotspots, callers, callees,
-- folded) reads it as `_stack_weight` with its own parameters, the
-- timeline the samples themselves (`_selected_sample`).
--
-- Parameters (NULL: no restriction / the default):
--   $event   text       the event (default: the one with most samples in the selected captures)
--   $weight  text       `period` (default: perf's Overhead), `samples`,
--                       `weight`, `weight_ins_lat`, `weight_var3`,
--                       `n_branch`, or `read:EVENT` (the increase of a
--                       group-read counter since the thread's previous
--                       read: what perf script prints as its period)
--   $pid, $tid, $comm   lists: any of the values
--   $from_ns, $to_ns    time_ns >= from_ns and < to_ns (capture clock)
--   $capture   list: only these captures
-- read_delta: the increase of every group-read counter at each sample since
-- the previous read of the same thread and group member, in sample order
-- (what perf script prints as the period of a `:S` group member).
CREATE OR REPLACE VIEW read_delta AS
SELECT
  r.capture,                                    -- capture
  r.sample_id,                                  -- perf_sample.sample_id
  CAST(r.event AS VARCHAR) AS event,            -- the counter's event
  CAST(r.value AS DECIMAL(20,0)) - CAST(COALESCE(lag(r.value) OVER (
    PARTITION BY r.capture, s.tid, r.event, r.idx ORDER BY r.sample_id), 0)
    AS DECIMAL(20,0)) AS delta                  -- increase since the previous read
FROM perf_sample_read r
JOIN perf_sample s ON s.capture = r.capture AND s.sample_id = r.sample_id;

-- _selected_sample: the selected samples, each with its weight (`cost`).
CREATE OR REPLACE VIEW _selected_sample AS
SELECT
  p.capture,                                    -- capture
  p.segment,                                    -- segment (stack_id's id space)
  p.sample_id,                                  -- perf_sample.sample_id
  p.source_id,                                  -- input (for time_base)
  p.time_ns,                                    -- time on the capture's clock
  p.pid,                                        -- process
  p.tid,                                        -- thread
  p.comm,                                       -- command
  p.stack_id,                                   -- stack.stack_id (null: none)
  CAST(CASE
    WHEN $weight IS NULL OR $weight = 'period' THEN COALESCE(p.period, 1)
    WHEN $weight = 'samples' OR $weight = 'count' THEN 1
    WHEN $weight = 'weight' THEN CAST(COALESCE(p.weight, 0) AS BIGINT)
    WHEN $weight = 'weight_ins_lat' THEN CAST(COALESCE(p.weight_ins_lat, 0) AS BIGINT)
    WHEN $weight = 'weight_var3' THEN CAST(COALESCE(p.weight_var3, 0) AS BIGINT)
    WHEN $weight = 'n_branch' THEN CAST(p.n_branch AS BIGINT)
    WHEN starts_with($weight, 'read:') THEN CAST(COALESCE(r.delta, 0) AS BIGINT)
  END AS BIGINT) AS cost                        -- what the sample weighs
FROM perf_sample p
LEFT JOIN read_delta r
  ON starts_with($weight, 'read:')
  AND r.capture = p.capture AND r.sample_id = p.sample_id
  AND r.event = substr($weight, 6)
WHERE (($event IS NOT NULL AND p.event = $event)
    OR ($event IS NULL AND p.event = (
        SELECT CAST(event AS VARCHAR) FROM perf_sample
        WHERE $capture IS NULL OR array_has($capture, capture)   -- of the selected captures
        GROUP BY event ORDER BY count(*) DESC, CAST(event AS VARCHAR) LIMIT 1)))
  AND ($pid IS NULL OR array_has($pid, p.pid))
  AND ($tid IS NULL OR array_has($tid, p.tid))
  AND ($comm IS NULL OR array_has($comm, CAST(p.comm AS VARCHAR)))
  AND ($from_ns IS NULL OR p.time_ns >= $from_ns)
  AND ($to_ns IS NULL OR p.time_ns < $to_ns)
  AND ($capture IS NULL OR array_has($capture, p.capture));

-- _stack_weight: the selected samples with a stack, per distinct stack.
CREATE OR REPLACE VIEW _stack_weight AS
SELECT
  capture,                                      -- capture
  segment,                                      -- segment (stack_id's id space)
  stack_id,                                     -- stack.stack_id
  count(*) AS n,                                -- samples with this stack
  CAST(sum(cost) AS BIGINT) AS w                -- their weight
FROM _selected_sample
WHERE stack_id IS NOT NULL
GROUP BY capture, segment, stack_id;

-- _stack_position: every position of every stack, leaf first, with the
-- function there; with $inline (default true) each inline level is a
-- position of its own (perf report --inline). Positions are ordered by
-- k = depth * 1024 + inline level (0 = the innermost level, where the
-- instruction is), so the position after (outer of) k is the next larger k
-- of the stack and the one before (inner of) it the next smaller.
CREATE OR REPLACE VIEW _stack_position AS
SELECT
  st.segment,                                   -- segment
  st.stack_id,                                  -- stack.stack_id
  CAST(st.depth AS BIGINT) * 1024 + f.level AS k,  -- order of the position, leaf first
  f.function,                                   -- function at the position
  f.module                                      -- its module
FROM stack st
JOIN (
  SELECT segment, frame_id, CAST(inline_depth AS BIGINT) AS level, function, module
  FROM frame_line WHERE COALESCE($inline, true)
  UNION ALL
  SELECT segment, frame_id, CAST(0 AS BIGINT), function, module
  FROM frame_name WHERE NOT COALESCE($inline, true)
) f ON f.segment = st.segment AND f.frame_id = st.frame_id
WHERE $segment IS NULL OR array_has($segment, st.segment);  -- only the selected captures' segments
