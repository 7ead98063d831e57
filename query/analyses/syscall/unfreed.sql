-- unfreed: where is the memory that was never given back? (Morita et al.,
-- H/W resource exhaustion analysis, Fig. 8 / Table 4.) The bytes still
-- mapped at the end of each process (or alive at $at_ns), per process,
-- application function, actual function and application source line (see
-- attribution.sql); sorted by process, application function and line usage.
--
-- Parameters: $at_ns (a time on syscall.time_ns's clock; default: the
-- end), $app (the application's path prefix; default: the directory of
-- the traced executable), $pid (only these processes; default: all).
WITH g AS (
  SELECT r.capture, r.pid,
         COALESCE(a.app_function, '[outside the application]') AS app_function,
         COALESCE(a.actual_function, '[no stack]') AS actual_function,
         a.app_line, a.app_file, a.app_line_number,
         CAST(sum(r.bytes) AS BIGINT) AS bytes,
         count(*) AS regions,
         pn.comm
  FROM _live_region r
  LEFT JOIN _stack_attribution a ON a.segment = r.segment AND a.stack_id = r.stack_id
  LEFT JOIN process_name pn ON pn.capture = r.capture AND pn.pid = r.pid
  WHERE ($pid IS NULL OR array_has($pid, r.pid))
  GROUP BY r.capture, r.pid, 3, 4, a.app_line, a.app_file, a.app_line_number, pn.comm
)
SELECT
  capture,                                                              -- capture
  pid,                                                                  -- process
  comm,                                                        -- process name (process_name: perf's command, else the program exec'd)
  sum(bytes) OVER (PARTITION BY capture, pid) AS process_bytes,         -- the process's unfreed bytes
  app_function,                                                         -- application function ([outside the application])
  sum(bytes) OVER (PARTITION BY capture, pid, app_function) AS app_function_bytes,  -- its unfreed bytes
  actual_function,                                                      -- the leaf that allocated ([no stack])
  app_line,                                                             -- file:line in the application
  bytes,                                                                -- unfreed bytes from this line and leaf
  regions,                                                              -- live pieces of memory_region
  app_file,                                                             -- full source path
  app_line_number                                                       -- line
FROM g
ORDER BY capture, process_bytes DESC, pid, app_function_bytes DESC, app_function, bytes DESC,
  actual_function, app_line
