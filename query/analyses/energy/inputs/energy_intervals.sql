-- energy_intervals: every energy counter's intervals with a value and a
-- time, [t0, t1] on the capture axis (t0 unbounded for a first interval of
-- unknown length), for energy by function (query/src/energy.rs), which
-- keeps the intervals of the chosen counters.
SELECT e.capture, CAST(e.domain AS VARCHAR) AS domain,
       CAST(COALESCE(e.t_ns - e.interval_ns, -9223372036854775807) AS BIGINT) AS t0,
       CAST(e.t_ns AS BIGINT) AS t1, CAST(e.delta_uj AS DOUBLE) AS uj,
       CAST(e.package AS INT) AS pkg, e.source_id, CAST(e.zone AS VARCHAR) AS zone
FROM energy_t e
WHERE e.delta_uj IS NOT NULL AND e.t_ns IS NOT NULL
ORDER BY e.capture, domain, t1
