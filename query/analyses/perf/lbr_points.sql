-- lbr_points: when did each point (sample or branch-entry pseudo-sample)
-- happen, and what does it weigh? (Ono et al. 2014, time-series
-- performance analysis.)
--
-- Parameters: $method, $ghz (see lbr_samples.sql), $event (default: all),
-- $sample_id (default: all samples).
SELECT
  capture,                                      -- capture
  sample_id,                                    -- the real sample
  idx,                                          -- -1: the sample; else perf_branch.idx
  method,                                       -- 0-3 or cycles
  origin,                                       -- sample or lbr
  event,                                        -- event
  CAST(t_ns AS DOUBLE) / 1e9 AS t_s,            -- time on the capture axis, s
  time_ns,                                      -- time on perf's clock, ns
  round(weight_ns, 3) AS weight_ns,             -- time it carries, ns
  round(ratio * 100.0, 2) AS ratio_pct,         -- its function's execution ratio, %
  pid,                                          -- process
  tid,                                          -- thread
  cpu,                                          -- CPU
  function                                      -- function
FROM _lbr_sample
WHERE ($event IS NULL OR event = $event)
  AND ($sample_id IS NULL OR sample_id = $sample_id)
ORDER BY capture, time_ns, sample_id, idx DESC
