-- sampled_events: the samples of the events $events in capture $cap, each
-- weighing its period, per event and time: an input of the power model
-- and power samples (query/src/power/). $package (NULL: every CPU)
-- keeps the samples taken on that package's CPUs.
SELECT CAST(event AS VARCHAR) AS ev,
       CAST(t_ns AS BIGINT) AS tn,
       CAST(COALESCE(period, 1) AS DOUBLE) AS v
FROM perf_sample_t p
WHERE array_has($events, CAST(event AS VARCHAR))
  AND t_ns IS NOT NULL
  AND capture = $cap
  AND ($package IS NULL
       OR CAST(p.cpu AS INT) IN (SELECT cpu FROM perf_cpu WHERE socket_id = $package))
