-- lbr_sequence: what ran just before each sample? (Ono et al. 2014,
-- time-series performance analysis, Fig. 10.) Per sample with a branch
-- stack, the branch sources oldest to newest, then the sampled function;
-- entries repeated from the thread's previous stack are shown and marked.
--
-- Parameters: $event (default: all), $sample_id (default: all samples).
WITH b AS (
  SELECT * FROM branch
  WHERE ($event IS NULL OR event = $event) AND ($sample_id IS NULL OR sample_id = $sample_id)
),
n AS (SELECT capture, sample_id, max(idx) AS top FROM b GROUP BY capture, sample_id)
SELECT
  b.capture,                                    -- capture
  b.sample_id,                                  -- sample
  CAST(b.t_ns AS DOUBLE) / 1e9 AS t_s,          -- sample time on the capture axis, s
  b.pid,                                        -- process
  b.tid,                                        -- thread
  CAST(n.top - b.idx AS INT) AS step,           -- 0: oldest entry
  concat('FROM', CAST(b.idx AS VARCHAR)) AS entry,  -- perf's FROMn
  COALESCE(b.from_function, '[unknown]') AS function,  -- branch source function
  b.transfer,                                   -- call, return, jump, ...
  COALESCE(b.to_function, '[unknown]') AS to_function,  -- branch target function
  b.repeated                                    -- already in the thread's previous stack
FROM b JOIN n ON n.capture = b.capture AND n.sample_id = b.sample_id
UNION ALL
SELECT x.capture, x.sample_id, CAST(x.t_ns AS DOUBLE) / 1e9 AS t_s, x.pid, x.tid,
  CAST(n.top + 1 AS INT) AS step, 'sample' AS entry,
  COALESCE(l.function, '[unknown]') AS function, 'sample' AS transfer,
  CAST(NULL AS VARCHAR) AS to_function, false AS repeated
FROM perf_sample_t x JOIN n ON n.capture = x.capture AND n.sample_id = x.sample_id
LEFT JOIN stack_entry l ON l.segment = x.segment AND l.stack_id = x.stack_id AND l.pos = 0
ORDER BY capture, sample_id, step
