-- io_bytes: where did the I/O bytes go? (Morita et al., H/W resource
-- exhaustion analysis.) The bytes actually transferred (the return values)
-- by read- and write-like calls (`io_call`) in [$from_ns - $lead_ns,
-- $to_ns), per process, application function, actual function, application
-- source line (see attribution.sql), file and direction; sorted by usage
-- like `unfreed`.
--
-- Parameters: $from_ns, $to_ns (times on syscall.time_ns's clock; default:
-- the whole trace), $lead_ns (also count this long before $from_ns:
-- the lead time of Morita et al.; default 0), $app (the application's path
-- prefix; default: the directory of the traced executable), $pid (only
-- these processes; default: all).
WITH g AS (
  SELECT c.capture, c.pid,
         COALESCE(a.app_function, '[outside the application]') AS app_function,
         COALESCE(a.actual_function, '[no stack]') AS actual_function,
         a.app_line, c.file, c.direction, a.app_file, a.app_line_number,
         CAST(sum(c.bytes) AS BIGINT) AS bytes,
         count(*) AS calls
  FROM io_call c
  LEFT JOIN _stack_attribution a ON a.segment = c.segment AND a.stack_id = c.stack_id
  WHERE ($from_ns IS NULL OR c.time_ns >= $from_ns - COALESCE($lead_ns, 0))
    AND ($to_ns IS NULL OR c.time_ns < $to_ns)
    AND ($pid IS NULL OR array_has($pid, c.pid))
  GROUP BY c.capture, c.pid, 3, 4, a.app_line, c.file, c.direction, a.app_file, a.app_line_number
)
SELECT
  capture,                                                              -- capture
  pid,                                                                  -- process (thread)
  sum(bytes) OVER (PARTITION BY capture, pid) AS process_bytes,         -- the process's bytes
  app_function,                                                         -- application function ([outside the application])
  sum(bytes) OVER (PARTITION BY capture, pid, app_function) AS app_function_bytes,  -- its bytes
  actual_function,                                                      -- the leaf that made the call ([no stack])
  app_line,                                                             -- file:line in the application
  file,                                                                 -- -y path of the descriptor, else `fd N`
  direction,                                                            -- read or write
  bytes,                                                                -- bytes transferred
  calls,                                                                -- calls that moved bytes
  app_file,                                                             -- full source path
  app_line_number                                                       -- line
FROM g
ORDER BY capture, process_bytes DESC, pid, app_function_bytes DESC, app_function, bytes DESC,
  actual_function, app_line, file, direction
