-- other_sampled_events: sampled events other than $time_event, power
-- events excepted: what power samples merge by default (query/src/power/).
SELECT DISTINCT CAST(event AS VARCHAR) AS e FROM perf_sample
WHERE CAST(event AS VARCHAR) <> $time_event AND CAST(event AS VARCHAR) NOT LIKE 'power/%'
ORDER BY e
