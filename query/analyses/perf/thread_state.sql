-- thread_state: when was each thread on a CPU, and when off it, why, and
-- where? One row per interval of a thread between two context switches,
-- rebuilt from what the recording has:
--
-- - switched out: a `sched:sched_switch` sample (`perf record -e
--   sched:sched_switch -g`: the state it left in and the call stack it
--   blocked in), else a PERF_RECORD_SWITCH out record (`--switch-events`:
--   preempted or not), with the call stack of the thread's
--   `context-switches` sample just before it when the recording has them
--   (`perf record -e context-switches -c 1 -g --switch-events`, which needs
--   no tracepoint access: the software event fires in the scheduler on the
--   thread leaving, before its switch-out record);
-- - switched in: a PERF_RECORD_SWITCH in record, else a sched_switch whose
--   next task is the thread (system-wide recordings); when the recording
--   has neither, the thread's next sample of another event (Hotspot's
--   approximation: the end is late by up to one sampling interval);
-- - `running` intervals: from a switch in to the next switch out.
--
-- Intervals whose end the recording does not show (the thread never came
-- back before the recording stopped) are left out.
CREATE OR REPLACE VIEW _switch_out AS
SELECT p.capture, p.segment, p.source_id, p.pid, s.prev_tid AS tid, p.time_ns,
       CAST(s.prev_state_text AS VARCHAR) AS state, p.stack_id, 'sched_switch' AS via
FROM perf_sched_switch s
JOIN perf_sample p ON p.capture = s.capture AND p.sample_id = s.sample_id
UNION ALL
SELECT capture, segment, source_id, pid, tid, time_ns,
       CASE WHEN preempt THEN 'R' ELSE 'blocked' END,
       CASE WHEN prev = 'cs' THEN prev_stack END, 'switch'
FROM (
  SELECT *,
    lag(direction) OVER w AS prev,
    lag(stack_id) OVER w AS prev_stack
  FROM (
    SELECT capture, segment, source_id, pid, tid, time_ns, direction, preempt,
           CAST(NULL AS BIGINT) AS stack_id, 1 AS k
    FROM perf_switch
    UNION ALL                       -- software event context-switches (type 1, config 3)
    SELECT p.capture, p.segment, p.source_id, p.pid, p.tid, p.time_ns, 'cs', NULL, p.stack_id, 0
    FROM perf_sample p
    JOIN perf_event e ON e.capture = p.capture AND e.event_id = p.event_id
    WHERE e.type = 1 AND e.config = 3
  )
  WINDOW w AS (PARTITION BY capture, source_id, tid ORDER BY time_ns, k)
) o
WHERE o.direction = 'out'
  AND o.capture NOT IN (SELECT DISTINCT x.capture FROM perf_sched_switch x);

CREATE OR REPLACE VIEW _switch_in AS
SELECT capture, segment, source_id, tid, time_ns, 'switch' AS via
FROM perf_switch WHERE direction = 'in'
UNION ALL
SELECT p.capture, p.segment, p.source_id, s.next_tid, p.time_ns, 'sched_switch'
FROM perf_sched_switch s
JOIN perf_sample p ON p.capture = s.capture AND p.sample_id = s.sample_id
WHERE p.capture NOT IN (SELECT DISTINCT capture FROM perf_switch WHERE direction = 'in');

CREATE OR REPLACE VIEW thread_state AS
WITH ev AS (
  SELECT capture, segment, source_id, pid, tid, time_ns, 0 AS kind, state, stack_id, via FROM _switch_out
  UNION ALL
  SELECT capture, segment, source_id, CAST(NULL AS INT), tid, time_ns, 1, NULL, CAST(NULL AS BIGINT), via FROM _switch_in
  UNION ALL                         -- no switch-in at all: the next sample of another event
  SELECT p.capture, p.segment, p.source_id, p.pid, p.tid, p.time_ns, 2, NULL, CAST(NULL AS BIGINT), 'next_sample'
  FROM perf_sample p
  LEFT JOIN perf_sched_switch x ON x.capture = p.capture AND x.sample_id = p.sample_id
  WHERE x.sample_id IS NULL
    AND p.capture IN (SELECT DISTINCT capture FROM _switch_out)
    AND p.capture NOT IN (SELECT DISTINCT capture FROM _switch_in)
),
seq AS (
  SELECT *,
    lead(time_ns) OVER w AS next_t,
    lead(kind) OVER w AS next_kind,
    lead(via) OVER w AS next_via,
    max(pid) OVER (PARTITION BY capture, source_id, tid) AS known_pid
  FROM ev
  WHERE time_ns IS NOT NULL AND tid IS NOT NULL
  WINDOW w AS (PARTITION BY capture, source_id, tid ORDER BY time_ns, kind)
)
SELECT
  capture,                                        -- capture
  segment,                                        -- segment (stack_id's id space)
  source_id,                                      -- input
  COALESCE(pid, known_pid) AS pid,                -- process (null when no record of the thread gave it)
  tid,                                            -- thread
  time_ns AS start_ns,                            -- start of the interval (capture clock)
  next_t AS end_ns,                               -- its end
  next_t - time_ns AS duration_ns,                -- its length
  CASE WHEN kind = 1 THEN 'running' ELSE state END AS state,  -- running, or why off the CPU: R (preempted), S (sleeping), D (uninterruptible, disk), ..., blocked (switch record without the state)
  kind = 0 AS off_cpu,                            -- the thread was off the CPU
  stack_id,                                       -- where it blocked (stack.stack_id): a sched_switch sample's, or the context-switches sample's before a switch record (-g)
  CASE WHEN kind = 0 THEN via END AS out_via,     -- how the switch out is known: sched_switch or switch
  next_via AS end_via                             -- how the end is known: switch, sched_switch, or next_sample (approximate)
FROM seq
WHERE next_t IS NOT NULL
  AND ((kind = 0 AND next_kind IN (1, 2)) OR (kind = 1 AND next_kind = 0));
