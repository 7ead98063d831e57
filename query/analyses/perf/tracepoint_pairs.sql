-- tracepoint_pairs: the intervals between paired events (a start event and
-- the next end event with the same key: query/src/tracepoint/pairs.rs
-- pairs them as `_tracepoint_pair`), selected by the process, thread,
-- command and time of their start.
--
-- Parameters: $start, $end (events), $key, $end_key (the fields that pair
-- them), $pid, $tid, $comm (lists), $from_ns, $to_ns (intervals starting
-- in the range), $capture (list).
SELECT
  capture,            -- capture
  segment,            -- segment (stack_id's id space)
  start_sample_id,    -- the start event's sample (perf_sample.sample_id)
  end_sample_id,      -- the end event's sample
  start_ns,           -- start time (capture clock)
  end_ns,             -- end time
  duration_ns,        -- end_ns - start_ns
  pid,                -- process of the start event
  tid,                -- its thread
  comm,               -- its command
  cpu,                -- CPU of the start event
  stack_id,           -- call stack of the start event (stack.stack_id)
  end_pid,            -- process of the end event
  end_tid,            -- its thread
  end_cpu,            -- CPU of the end event
  key                 -- the key's values, '/'-separated in the order named
FROM _tracepoint_pair
WHERE ($pid IS NULL OR array_has($pid, pid))
  AND ($tid IS NULL OR array_has($tid, tid))
  AND ($comm IS NULL OR array_has($comm, comm))
  AND ($from_ns IS NULL OR start_ns >= $from_ns)
  AND ($to_ns IS NULL OR start_ns < $to_ns)
  AND ($capture IS NULL OR array_has($capture, capture))
ORDER BY capture, start_ns, start_sample_id
