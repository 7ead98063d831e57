-- offcpu: where did threads wait? The time threads spent off the CPU
-- (`thread_state`, from sched_switch samples with call stacks and/or
-- --switch-events), per function of the stack they blocked in, per whole
-- stack, per state or per thread. Blocked time, not CPU time: a function
-- counts the intervals whose stack holds it (once per interval, even under
-- recursion), `self` those where it is the innermost user-space frame (the
-- call the program made: `read`, `nanosleep`, `__lll_lock_wait`, ...).
-- Shares are of the selected off-CPU time.
--
-- Parameters: $by (`function` (default), `stack`, `state`, `thread`),
-- $state (list: only these states, e.g. 'S', 'D'; default all but R:
-- preemption is not waiting), $pid, $tid, $comm (lists), $from_ns,
-- $to_ns (intervals starting in the range), $capture (list).
WITH iv AS (
  SELECT t.capture, t.segment, t.pid, t.tid, t.start_ns, t.duration_ns, t.state, t.stack_id,
         ROW_NUMBER() OVER (ORDER BY t.capture, t.tid, t.start_ns) AS interval_id
  FROM thread_state t
  LEFT JOIN (SELECT capture, tid, max(CAST(comm AS VARCHAR)) AS comm FROM perf_thread
             GROUP BY capture, tid) th ON th.capture = t.capture AND th.tid = t.tid
  WHERE t.off_cpu
    AND (($state IS NULL AND t.state <> 'R') OR array_has($state, t.state))
    AND ($pid IS NULL OR array_has($pid, t.pid))
    AND ($tid IS NULL OR array_has($tid, t.tid))
    AND ($from_ns IS NULL OR t.start_ns >= $from_ns)
    AND ($to_ns IS NULL OR t.start_ns < $to_ns)
    AND ($capture IS NULL OR array_has($capture, t.capture))
    AND ($comm IS NULL OR array_has($comm, th.comm))
),
total AS (SELECT CAST(sum(duration_ns) AS DOUBLE) AS ns FROM iv),
-- Stack positions of the intervals with a stack, outermost inline level
-- per frame (the real function), leaf first.
pos AS (
  SELECT iv.interval_id, iv.duration_ns, st.depth, f.function, f.module, f.context
  FROM iv
  JOIN stack st ON st.segment = iv.segment AND st.stack_id = iv.stack_id
  JOIN frame_name f ON f.segment = st.segment AND f.frame_id = st.frame_id
),
innermost_user AS (
  SELECT interval_id, min(depth) AS depth FROM pos WHERE context = 'user' GROUP BY interval_id
),
by_function AS (
  SELECT p.function AS key1, p.module AS key2,
    count(DISTINCT p.interval_id) AS intervals,
    sum(CASE WHEN p.depth = u.depth THEN p.duration_ns ELSE 0 END) AS self_ns,
    sum(p.duration_ns) AS total_ns
  FROM (SELECT interval_id, max(duration_ns) AS duration_ns, function, module,
               min(depth) AS depth
        FROM pos GROUP BY interval_id, function, module) p
  LEFT JOIN innermost_user u ON u.interval_id = p.interval_id
  GROUP BY p.function, p.module
),
by_stack AS (
  SELECT array_to_string(array_agg(function ORDER BY depth DESC), ';') AS key1,
         CAST(NULL AS VARCHAR) AS key2, interval_id, max(duration_ns) AS duration_ns
  FROM pos GROUP BY interval_id
),
keyed AS (
  SELECT key1, key2, intervals, self_ns, total_ns FROM by_function
  WHERE COALESCE($by, 'function') = 'function'
  UNION ALL
  SELECT COALESCE(s.key1, '[no stack]'), NULL, count(*), sum(iv.duration_ns), sum(iv.duration_ns)
  FROM iv LEFT JOIN by_stack s ON s.interval_id = iv.interval_id
  WHERE $by = 'stack' GROUP BY COALESCE(s.key1, '[no stack]')
  UNION ALL
  SELECT state, NULL, count(*), sum(duration_ns), sum(duration_ns)
  FROM iv WHERE $by = 'state' GROUP BY state
  UNION ALL
  SELECT CAST(tid AS VARCHAR), CAST(pid AS VARCHAR), count(*), sum(duration_ns), sum(duration_ns)
  FROM iv WHERE $by = 'thread' GROUP BY tid, pid
)
SELECT
  key1 AS key,                                         -- function, folded stack (root;...;leaf), state or tid
  key2 AS module,                                      -- module of the function (pid by thread)
  intervals,                                           -- off-CPU intervals counted
  self_ns,                                             -- time blocked with this as the innermost user frame (by function; else the time)
  total_ns,                                            -- time blocked with this anywhere in the stack
  round(100.0 * total_ns / NULLIF((SELECT ns FROM total), 0), 4) AS total_pct  -- share of the selected off-CPU time, %
FROM keyed
ORDER BY total_ns DESC, self_ns DESC, key1
