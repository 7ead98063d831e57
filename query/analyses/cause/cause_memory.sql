-- cause_memory: what held the memory inside the exhaustion ranges? (Morita
-- et al., H/W resource exhaustion analysis, stage B.) Per range
-- (`_cause_range`), the bytes allocated (mmap/brk/mremap regions of
-- `memory_region`, not freed) at the range's start, or with $at = 'max' at
-- the moment in the range when the traced processes held the most; per
-- process, application function, actual function and application source
-- line (attribution.sql).
--
-- Parameters: $rule, $min_s, $gap_s or $from_ns, $to_ns (the ranges); $at
-- (`start` (default) or `max`); $app.
WITH src AS (
  SELECT r.capture, m.segment, r.range, r.range_start_s, r.range_end_s, r.at_s, m.pid, m.stack_id, m.bytes
  FROM _cause_range r
  JOIN memory_region m ON m.capture = r.capture
  WHERE (m.from_ns IS NULL OR m.from_ns <= r.at_ns) AND (m.to_ns IS NULL OR m.to_ns > r.at_ns)
),
g AS (
  SELECT s.capture, s.range, s.range_start_s, s.range_end_s, s.at_s, s.pid,
         COALESCE(a.app_function, '[outside the application]') AS app_function,
         COALESCE(a.actual_function, '[no stack]') AS actual_function,
         a.app_line, a.app_file, a.app_line_number,
         CAST(sum(s.bytes) AS BIGINT) AS bytes,
         count(*) AS regions,
         pn.comm
  FROM src s
  LEFT JOIN _stack_attribution a ON a.segment = s.segment AND a.stack_id = s.stack_id
  LEFT JOIN process_name pn ON pn.capture = s.capture AND pn.pid = s.pid
  GROUP BY s.capture, s.range, s.range_start_s, s.range_end_s, s.at_s, s.pid, 7, 8,
           a.app_line, a.app_file, a.app_line_number, pn.comm
)
SELECT
  capture,                                                      -- capture
  range,                                                        -- range number, 1-based per capture
  range_start_s,                                                -- range start, s on the capture axis
  range_end_s,                                                  -- range end
  at_s,                                                         -- the moment looked at
  pid,                                                          -- process
  comm,                                                        -- process name (process_name: perf's command, else the program exec'd)
  sum(bytes) OVER (PARTITION BY capture, range, pid) AS process_bytes,  -- the process's bytes
  app_function,                                                 -- application function
  sum(bytes) OVER (PARTITION BY capture, range, pid, app_function) AS app_function_bytes,  -- its bytes
  actual_function,                                              -- the leaf that allocated
  app_line,                                                     -- file:line in the application
  bytes,                                                        -- bytes held
  regions,                                                      -- live pieces of memory_region
  app_file,                                                     -- full source path
  app_line_number                                               -- line
FROM g
ORDER BY capture, range, range_start_s, range_end_s, at_s, process_bytes DESC, pid,
  app_function_bytes DESC, app_function, bytes DESC, actual_function, app_line
