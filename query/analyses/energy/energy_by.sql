-- energy_by: where did the energy go? (Ono et al. 2015, sampling-based
-- power measurement, section 2.2, Fig. 2.) The joules of every RAPL
-- interval shared among the samples taken in it (`sample_energy`, computed
-- for this call's event, indicators and counters), per domain and the keys
-- in $by (one output column per key, named after it), with the share of the
-- domain's energy. Energy of intervals without samples is `[unattributed]`
-- (its package is kept).
--
-- Parameters (NULL: the default):
--   $by      list   keys, in order: function (default), line, process, cpu,
--                   package
--   $event   text   the samples' event (default: the one with most samples)
--   $core    text   what a sample weighs for package, core, gpu and psys
--                   energy: period (default), samples or read:EVENT
--   $dram    text   the same for DRAM energy
--   $zone    list   the counters to read (default: one per domain, chosen)
WITH opt AS (
  SELECT COALESCE($by, make_array('function')) AS by,
         make_array('function', 'line', 'process', 'cpu', 'package') AS names
),
v AS (
  SELECT e.capture, e.domain, e.joules,
    CASE WHEN e.sample_id IS NULL THEN 0 ELSE 1 END AS n,
    e.sample_id IS NULL AS unattributed,
    -- every key's value, in the order of `names`
    make_array(COALESCE(l.function, '[unknown]'),
               COALESCE(l.srcline, '[unknown]'),
               concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']'),
               COALESCE(CAST(e.cpu AS VARCHAR), '?'),
               COALESCE(CAST(e.package AS VARCHAR), '?')) AS vals,
    o.by, o.names
  FROM sample_energy e
  CROSS JOIN opt o
  LEFT JOIN perf_sample x ON x.capture = e.capture AND x.sample_id = e.sample_id
  LEFT JOIN stack_entry l ON l.segment = x.segment AND l.stack_id = x.stack_id AND l.pos = 0
  WHERE assert_true(array_has_all(o.names, o.by),
          concat('energy_by: keys are function, line, process, cpu and package, got ',
                 array_to_string(o.by, ', ')))
),
-- key i: the value $by[i] names; energy no sample took is `[unattributed]`
-- under every key but its package
k AS (
  SELECT capture, domain, joules, n,
    CASE WHEN cardinality(by) < 1 THEN NULL WHEN unattributed AND by[1] <> 'package' THEN '[unattributed]'
         ELSE vals[CAST(array_position(names, by[1]) AS BIGINT)] END AS k1,
    CASE WHEN cardinality(by) < 2 THEN NULL WHEN unattributed AND by[2] <> 'package' THEN '[unattributed]'
         ELSE vals[CAST(array_position(names, by[2]) AS BIGINT)] END AS k2,
    CASE WHEN cardinality(by) < 3 THEN NULL WHEN unattributed AND by[3] <> 'package' THEN '[unattributed]'
         ELSE vals[CAST(array_position(names, by[3]) AS BIGINT)] END AS k3,
    CASE WHEN cardinality(by) < 4 THEN NULL WHEN unattributed AND by[4] <> 'package' THEN '[unattributed]'
         ELSE vals[CAST(array_position(names, by[4]) AS BIGINT)] END AS k4,
    CASE WHEN cardinality(by) < 5 THEN NULL WHEN unattributed AND by[5] <> 'package' THEN '[unattributed]'
         ELSE vals[CAST(array_position(names, by[5]) AS BIGINT)] END AS k5
  FROM v
)
SELECT
  capture,                                      -- capture
  domain,                                       -- RAPL domain (package, cores, dram, ...)
  k1, k2, k3, k4, k5,                           -- the keys (named after $by in the result)
  round(sum(joules), 9) AS joules,              -- energy, J
  round(100.0 * sum(joules) / sum(sum(joules)) OVER (PARTITION BY capture, domain), 3) AS share_pct,  -- share of the domain's energy, %
  sum(n) AS samples                             -- samples that share it
FROM k
GROUP BY capture, domain, k1, k2, k3, k4, k5
ORDER BY capture, domain, joules DESC, k1, k2, k3, k4, k5
