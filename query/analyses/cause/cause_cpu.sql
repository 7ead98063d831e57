-- cause_cpu: what used the CPU inside the exhaustion ranges? (Morita et
-- al., H/W resource exhaustion analysis, stage B.) Per range
-- (`_cause_range`: the ranges where $rule holds, or [$from_ns, $to_ns)),
-- process, application function, actual function and application source
-- line (attribution.sql): the CPU time of the perf samples taken in the
-- range (the period: ns for cpu-clock) and its share of all samples in the
-- range. With $method, the samples and their branch entries' pseudo-samples
-- (`_lbr_sample`, Ono et al. 2014), weighing their time in ns.
--
-- Parameters: $rule, $min_s, $gap_s or $from_ns, $to_ns (the ranges, on the
-- capture's t_ns axis); $event (default: the one with most samples);
-- $method, $ghz (LBR; default: samples only); $app.
WITH src AS (
  SELECT r.capture, x.segment, r.range, r.range_start_s, r.range_end_s, x.pid, x.stack_id,
         CAST(COALESCE(x.period, 1) AS DOUBLE) AS cost
  FROM _cause_range r
  JOIN perf_sample_t x ON x.capture = r.capture AND x.t_ns >= r.start_ns AND x.t_ns < r.end_ns
  WHERE $method IS NULL
    AND (($event IS NOT NULL AND x.event = $event)
      OR ($event IS NULL AND x.event = (
          SELECT CAST(event AS VARCHAR) FROM perf_sample
          GROUP BY event ORDER BY count(*) DESC, CAST(event AS VARCHAR) LIMIT 1)))
  UNION ALL
  SELECT r.capture, x.segment, r.range, r.range_start_s, r.range_end_s, x.pid, x.stack_id, x.weight_ns
  FROM _cause_range r
  JOIN _lbr_sample x ON x.capture = r.capture AND x.t_ns >= r.start_ns AND x.t_ns < r.end_ns
  WHERE $method IS NOT NULL
    AND (($event IS NOT NULL AND x.event = $event)
      OR ($event IS NULL AND x.event = (
          SELECT CAST(event AS VARCHAR) FROM perf_sample
          GROUP BY event ORDER BY count(*) DESC, CAST(event AS VARCHAR) LIMIT 1)))
),
g AS (
  SELECT s.capture, s.range, s.range_start_s, s.range_end_s, s.pid,
         COALESCE(a.app_function, '[outside the application]') AS app_function,
         COALESCE(a.actual_function, '[no stack]') AS actual_function,
         a.app_line, a.app_file, a.app_line_number,
         CAST(sum(s.cost) AS BIGINT) AS cpu_ns,
         count(*) AS samples,
         pn.comm
  FROM src s
  LEFT JOIN _stack_attribution a ON a.segment = s.segment AND a.stack_id = s.stack_id
  LEFT JOIN process_name pn ON pn.capture = s.capture AND pn.pid = s.pid
  GROUP BY s.capture, s.range, s.range_start_s, s.range_end_s, s.pid, 6, 7,
           a.app_line, a.app_file, a.app_line_number, pn.comm
),
w AS (
  SELECT g.*,
         sum(cpu_ns) OVER (PARTITION BY capture, range, pid) AS process_cpu_ns,
         sum(cpu_ns) OVER (PARTITION BY capture, range, pid, app_function) AS app_function_cpu_ns,
         sum(cpu_ns) OVER (PARTITION BY capture, range) AS range_cpu_ns
  FROM g
)
SELECT
  capture,                                                      -- capture
  range,                                                        -- range number, 1-based per capture
  range_start_s,                                                -- range start, s on the capture axis
  range_end_s,                                                  -- range end
  pid,                                                          -- process
  comm,                                                        -- process name (process_name: perf's command, else the program exec'd)
  round(100.0 * process_cpu_ns / range_cpu_ns, 2) AS process_pct,  -- the process's share of the range's CPU time, %
  app_function,                                                 -- application function
  round(100.0 * app_function_cpu_ns / range_cpu_ns, 2) AS app_function_pct,  -- its share, %
  actual_function,                                              -- the leaf
  app_line,                                                     -- file:line in the application
  round(100.0 * cpu_ns / range_cpu_ns, 2) AS pct,               -- this row's share, %
  cpu_ns,                                                       -- CPU time, ns (the periods)
  samples,                                                      -- samples (and pseudo-samples)
  app_file,                                                     -- full source path
  app_line_number                                               -- line
FROM w
ORDER BY capture, range, process_pct DESC, pid, app_function_pct DESC, app_function, pct DESC,
  actual_function, app_line
