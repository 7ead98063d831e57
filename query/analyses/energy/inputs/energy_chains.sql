-- energy_chains: every energy counter of the captures (per capture,
-- domain, package when readings of several packages are kept, input and
-- zone) with its number of intervals, and whether it is the one chosen
-- for its domain (and package): among the counters in the zones $zones
-- (every zone when $all_zones), the one the samples' event read (zone
-- ending in $at, `@EVENT`: perf group reads), else the one with most
-- intervals. What energy attribution and the power model read
-- (query/src/energy.rs).
WITH c AS (
  SELECT capture, CAST(domain AS VARCHAR) AS domain, CAST(package AS INT) AS package,
         source_id, CAST(zone AS VARCHAR) AS zone, count(*) AS n
  FROM energy WHERE delta_uj IS NOT NULL GROUP BY 1, 2, 3, 4, 5),
in_zones AS (
  SELECT *, ($all_zones OR array_has($zones, zone)) AS ok FROM c),
np AS (
  SELECT capture, domain, count(DISTINCT package) AS np FROM in_zones WHERE ok GROUP BY 1, 2),
k AS (
  SELECT z.*,
         CASE WHEN COALESCE(np.np, 0) >= 2 THEN COALESCE(z.package, -1) ELSE -2 END AS pk
  FROM in_zones z LEFT JOIN np ON np.capture = z.capture AND np.domain = z.domain),
r AS (
  SELECT *, row_number() OVER (PARTITION BY capture, domain, pk
           ORDER BY CASE WHEN ok THEN 0 ELSE 1 END,
                    CASE WHEN ends_with(zone, $at) THEN 0 ELSE 1 END,
                    n DESC, source_id, zone) AS rn
  FROM k)
SELECT capture, domain, CAST(CASE WHEN pk >= 0 THEN pk END AS INT) AS package, source_id, zone,
       CAST(n AS BIGINT) AS intervals, ok AND rn = 1 AND pk <> -1 AS chosen
FROM r
