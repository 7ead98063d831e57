-- read_events: the counters read at the samples (perf group members, not
-- the group leader), power events excepted: the candidate terms of a power
-- model (query/src/power/).
SELECT DISTINCT event FROM perf_sample_read
WHERE event IS NOT NULL AND idx > 0 AND event NOT LIKE 'power/%'
ORDER BY event
