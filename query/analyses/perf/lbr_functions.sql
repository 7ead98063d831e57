-- lbr_functions: where did the time go, with branch entries counted as
-- samples? (Ono et al. 2014, time-series performance analysis.) Per
-- capture, event and function: the real samples, the points (samples and
-- branch-entry pseudo-samples of `_lbr_sample`) and the time they carry
-- under $method.
--
-- Parameters: $method, $ghz (see lbr_samples.sql), $event (default: all).
SELECT
  capture,                                                      -- capture
  event,                                                        -- event
  method,                                                       -- 0-3 or cycles
  function,                                                     -- function (entries: the branch source)
  sum(CASE WHEN origin = 'sample' THEN 1 ELSE 0 END) AS samples,  -- real samples with this leaf
  count(*) AS points,                                           -- samples and pseudo-samples
  round(sum(weight_ns) / 1e6, 6) AS time_ms,                    -- time they carry, ms
  round(100.0 * sum(weight_ns) / sum(sum(weight_ns)) OVER (PARTITION BY capture, event), 2) AS time_pct,  -- share of the event's time, %
  round(max(ratio) * 100.0, 2) AS ratio_pct                     -- execution ratio (share of samples), %
FROM _lbr_sample
WHERE $event IS NULL OR event = $event
GROUP BY capture, event, method, function
ORDER BY capture, event, time_ms DESC, function
