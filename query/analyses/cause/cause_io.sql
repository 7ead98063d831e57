-- cause_io: what moved the I/O bytes inside the exhaustion ranges? (Morita
-- et al., H/W resource exhaustion analysis, stage B.) Per range
-- (`_cause_range`), the bytes transferred by read/write-like calls
-- (`io_call`) from $lead_ns before the range to its end, per process,
-- application function, actual function, application source line
-- (attribution.sql), file and direction.
--
-- Parameters: $rule, $min_s, $gap_s or $from_ns, $to_ns (the ranges);
-- $lead_ns (default 0); $app.
WITH src AS (
  SELECT r.capture, c.segment, r.range, r.range_start_s, r.range_end_s, c.pid, c.stack_id, c.bytes,
         c.file, c.direction
  FROM _cause_range r
  JOIN io_call c ON c.capture = r.capture
  JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id
  WHERE c.time_ns + b.offset_ns >= r.start_ns - COALESCE($lead_ns, 0)
    AND c.time_ns + b.offset_ns < r.end_ns
),
g AS (
  SELECT s.capture, s.range, s.range_start_s, s.range_end_s, s.pid,
         COALESCE(a.app_function, '[outside the application]') AS app_function,
         COALESCE(a.actual_function, '[no stack]') AS actual_function,
         a.app_line, s.file, s.direction, a.app_file, a.app_line_number,
         CAST(sum(s.bytes) AS BIGINT) AS bytes,
         count(*) AS calls,
         pn.comm
  FROM src s
  LEFT JOIN _stack_attribution a ON a.segment = s.segment AND a.stack_id = s.stack_id
  LEFT JOIN process_name pn ON pn.capture = s.capture AND pn.pid = s.pid
  GROUP BY s.capture, s.range, s.range_start_s, s.range_end_s, s.pid, 6, 7,
           a.app_line, s.file, s.direction, a.app_file, a.app_line_number, pn.comm
)
SELECT
  capture,                                                      -- capture
  range,                                                        -- range number, 1-based per capture
  range_start_s,                                                -- range start, s on the capture axis
  range_end_s,                                                  -- range end
  pid,                                                          -- process (thread)
  comm,                                                        -- process name (process_name: perf's command, else the program exec'd)
  sum(bytes) OVER (PARTITION BY capture, range, pid) AS process_bytes,  -- the process's bytes
  app_function,                                                 -- application function
  sum(bytes) OVER (PARTITION BY capture, range, pid, app_function) AS app_function_bytes,  -- its bytes
  actual_function,                                              -- the leaf that made the call
  app_line,                                                     -- file:line in the application
  file,                                                         -- -y path of the descriptor, else `fd N`
  direction,                                                    -- read or write
  bytes,                                                        -- bytes transferred
  calls,                                                        -- calls that moved bytes
  app_file,                                                     -- full source path
  app_line_number                                               -- line
FROM g
ORDER BY capture, range, process_bytes DESC, pid, app_function_bytes DESC, app_function, bytes DESC,
  actual_function, app_line, file, direction
