-- latency: how long from a start event to its paired end event (the
-- intervals of tracepoint_pairs: block I/O from issue to completion,
-- wake-up to running, a system call's entry to its exit, ...)?
--
-- $by: `histogram` (default): intervals per power-of-two range of
--      microseconds, as biolatency and runqlat print them (the duration in
--      whole µs, 0 -> 1, 2 -> 3, 4 -> 7, ...); `function`: per function of
--      the start event's call stack (intervals whose stack holds it, once
--      each; `self_ns`: those where it is the innermost user-space frame,
--      the call the program made); `process`; `thread`; `key` (the pairing
--      key's values).
-- The other parameters select the intervals as tracepoint_pairs does:
-- $start, $end, $key, $end_key, $pid, $tid, $comm, $from_ns, $to_ns
-- (intervals starting in the range), $capture.
WITH iv AS (
  SELECT capture, segment, start_sample_id, pid, tid, comm, stack_id, duration_ns, key
  FROM _tracepoint_pair
  WHERE ($pid IS NULL OR array_has($pid, pid))
    AND ($tid IS NULL OR array_has($tid, tid))
    AND ($comm IS NULL OR array_has($comm, comm))
    AND ($from_ns IS NULL OR start_ns >= $from_ns)
    AND ($to_ns IS NULL OR start_ns < $to_ns)
    AND ($capture IS NULL OR array_has($capture, capture))
),
total AS (SELECT count(*) AS n FROM iv),
-- Whole microseconds, bucketed by their highest bit (0 and 1 together).
hist AS (
  SELECT CASE WHEN duration_ns < 2000 THEN 0
              ELSE CAST(floor(log2(CAST(duration_ns / 1000 AS DOUBLE))) AS BIGINT) END AS b,
         duration_ns
  FROM iv
),
pos AS (
  SELECT iv.capture, iv.start_sample_id, iv.duration_ns, st.depth, f.function, f.module, f.context
  FROM iv
  JOIN stack st ON st.segment = iv.segment AND st.stack_id = iv.stack_id
  JOIN frame_name f ON f.segment = st.segment AND f.frame_id = st.frame_id
  WHERE $by = 'function'
),
innermost_user AS (
  SELECT capture, start_sample_id, min(depth) AS depth FROM pos WHERE context = 'user'
  GROUP BY capture, start_sample_id
),
per_function AS (
  SELECT capture, start_sample_id, function, module, max(duration_ns) AS duration_ns,
         min(depth) AS depth
  FROM pos GROUP BY capture, start_sample_id, function, module
),
keyed AS (
  SELECT CASE WHEN b = 0 THEN '0 -> 1'
              ELSE concat(CAST(power(2, b) AS BIGINT), ' -> ', CAST(power(2, b + 1) - 1 AS BIGINT)) END AS key1,
         CAST(NULL AS VARCHAR) AS key2, b AS ord,
         count(*) AS intervals, CAST(NULL AS BIGINT) AS self_ns, sum(duration_ns) AS total_ns,
         min(duration_ns) AS min_ns, max(duration_ns) AS max_ns
  FROM hist WHERE COALESCE($by, 'histogram') = 'histogram' GROUP BY b
  UNION ALL
  SELECT p.function, p.module, NULL, count(*),
         sum(CASE WHEN p.depth = u.depth THEN p.duration_ns ELSE 0 END), sum(p.duration_ns),
         min(p.duration_ns), max(p.duration_ns)
  FROM per_function p
  LEFT JOIN innermost_user u ON u.capture = p.capture AND u.start_sample_id = p.start_sample_id
  GROUP BY p.function, p.module
  UNION ALL
  SELECT CAST(pid AS VARCHAR), max(comm), NULL, count(*), NULL, sum(duration_ns),
         min(duration_ns), max(duration_ns)
  FROM iv WHERE $by = 'process' GROUP BY pid
  UNION ALL
  SELECT CAST(tid AS VARCHAR), max(comm), NULL, count(*), NULL, sum(duration_ns),
         min(duration_ns), max(duration_ns)
  FROM iv WHERE $by = 'thread' GROUP BY tid
  UNION ALL
  SELECT key, NULL, NULL, count(*), NULL, sum(duration_ns), min(duration_ns), max(duration_ns)
  FROM iv WHERE $by = 'key' GROUP BY key
)
SELECT
  key1 AS key,                                          -- µs range (histogram), function, pid, tid or key
  key2 AS detail,                                       -- module (function), command (process, thread)
  intervals,                                            -- intervals counted
  round(100.0 * intervals / NULLIF((SELECT n FROM total), 0), 4) AS pct,  -- share of the selected intervals, %
  total_ns,                                             -- their summed duration
  CAST(total_ns / intervals AS BIGINT) AS mean_ns,      -- mean duration
  min_ns,                                               -- shortest
  max_ns,                                               -- longest
  self_ns,                                              -- by function: with it as the innermost user frame
  CASE WHEN ord = 0 THEN 0 ELSE CAST(power(2, ord) AS BIGINT) END AS low_us  -- histogram: the range's lower end in µs
FROM keyed
ORDER BY low_us, total_ns DESC, key1
