-- counter_intervals: the intervals of one energy counter (capture $cap,
-- input $src, zone $zone) on the samples' time axis, [a, z] with the
-- energy measured over it (µJ), in time order: what the power model is
-- fitted against (query/src/power/). $package (NULL: any) keeps that
-- package's rows (and rows without a package).
SELECT CAST(t_ns - interval_ns AS BIGINT) AS a,
       CAST(t_ns AS BIGINT) AS z,
       CAST(delta_uj AS DOUBLE) AS uj
FROM energy_t
WHERE capture = $cap AND source_id = $src AND zone = $zone
  AND ($package IS NULL OR package IS NULL OR package = $package)
  AND delta_uj IS NOT NULL AND interval_ns > 0 AND t_ns IS NOT NULL
ORDER BY t_ns
