-- counter_reads: the increases of the counters $events read at the
-- $event samples of capture $cap (perf group reads), per event and time:
-- an input of the power model and power samples (query/src/power/).
-- $package (NULL: every CPU) keeps the samples taken on that package's
-- CPUs (perf_cpu.socket_id).
SELECT r.event AS ev,
       CAST(p.t_ns AS BIGINT) AS tn,
       CAST(r.value AS DOUBLE) - CAST(COALESCE(lag(r.value) OVER (
         PARTITION BY r.capture, p.tid, r.event_id, r.idx ORDER BY p.t_ns, p.sample_id), 0) AS DOUBLE) AS v
FROM perf_sample_read r
JOIN perf_sample_t p ON p.capture = r.capture AND p.sample_id = r.sample_id
WHERE array_has($events, CAST(r.event AS VARCHAR))
  AND CAST(p.event AS VARCHAR) = $event
  AND p.t_ns IS NOT NULL
  AND p.capture = $cap
  AND ($package IS NULL
       OR CAST(p.cpu AS INT) IN (SELECT cpu FROM perf_cpu WHERE socket_id = $package))
