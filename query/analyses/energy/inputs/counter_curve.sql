-- counter_curve: the readings of one energy counter (capture $cap, input
-- $src, zone $zone) in time order with the energy since the previous one
-- (µJ, 0 for the first): power samples measure a run's energy on the
-- cumulative curve they make (query/src/power/). $package as in
-- counter_intervals.sql.
SELECT CAST(t_ns AS BIGINT) AS tn,
       CAST(COALESCE(delta_uj, 0) AS DOUBLE) AS uj
FROM energy_t
WHERE capture = $cap AND source_id = $src AND zone = $zone
  AND ($package IS NULL OR package IS NULL OR package = $package)
  AND t_ns IS NOT NULL
ORDER BY t_ns
