-- metric_rows: every metric row on its capture's relative axis (t_ns), per
-- input in time order: the series exhaustion rules are evaluated on
-- (query/src/ranges/). Counters since boot are not interval values and
-- are left out.
SELECT capture, CAST(metric AS VARCHAR) AS m, CAST(entity AS VARCHAR) AS e,
       CAST(source_id AS BIGINT) AS src, t_ns, value
FROM metric_t
WHERE NOT since_boot AND t_ns IS NOT NULL
ORDER BY capture, source_id, t_ns
