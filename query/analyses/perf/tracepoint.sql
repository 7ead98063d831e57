-- tracepoint: the samples of one tracepoint (or `perf probe` probe) event,
-- in time order: when, which process, thread and CPU, the command, the
-- call stack, and the payload. A call of `tracepoint(EVENT)` returns each
-- field of the event's format (`tracepoint_field`: every field but the
-- common_* header) as a column of its own, named as in the format, in place
-- of the payload; the columns of the sample whose names a field takes are
-- renamed common_pid, common_tid, common_cpu, common_comm, ... as perf's
-- scripting names them (query/src/tracepoint/mod.rs builds them).
--
-- Parameters: $event (`system:name`, e.g. `sched:sched_wakeup`), $pid,
-- $tid, $comm (lists: any of the values), $from_ns, $to_ns (time_ns >=
-- from_ns and < to_ns, capture clock), $capture (list).
SELECT
  capture,                          -- capture
  sample_id,                        -- perf_sample.sample_id
  source_id,                        -- input
  time_ns,                          -- time on the capture's clock
  pid,                              -- process that hit the tracepoint
  tid,                              -- its thread
  cpu,                              -- CPU
  CAST(comm AS VARCHAR) AS comm,    -- its command
  stack_id,                         -- stack.stack_id (null: not recorded)
  raw                               -- the payload (PERF_SAMPLE_RAW)
FROM perf_sample
WHERE event = $event
  AND ($pid IS NULL OR array_has($pid, pid))
  AND ($tid IS NULL OR array_has($tid, tid))
  AND ($comm IS NULL OR array_has($comm, CAST(comm AS VARCHAR)))
  AND ($from_ns IS NULL OR time_ns >= $from_ns)
  AND ($to_ns IS NULL OR time_ns < $to_ns)
  AND ($capture IS NULL OR array_has($capture, capture))
ORDER BY capture, sample_id
