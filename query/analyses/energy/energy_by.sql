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
WITH k AS (
  SELECT e.capture, e.domain,
    CASE WHEN cardinality(COALESCE($by, make_array('function'))) < 1 THEN NULL
         WHEN e.sample_id IS NULL AND COALESCE($by, make_array('function'))[1] <> 'package' THEN '[unattributed]'
         ELSE CASE COALESCE($by, make_array('function'))[1]
           WHEN 'function' THEN COALESCE(l.function, '[unknown]')
           WHEN 'line' THEN COALESCE(l.srcline, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           WHEN 'cpu' THEN COALESCE(CAST(e.cpu AS VARCHAR), '?')
           WHEN 'package' THEN COALESCE(CAST(e.package AS VARCHAR), '?')
         END
    END AS k1,
    CASE WHEN cardinality(COALESCE($by, make_array('function'))) < 2 THEN NULL
         WHEN e.sample_id IS NULL AND COALESCE($by, make_array('function'))[2] <> 'package' THEN '[unattributed]'
         ELSE CASE COALESCE($by, make_array('function'))[2]
           WHEN 'function' THEN COALESCE(l.function, '[unknown]')
           WHEN 'line' THEN COALESCE(l.srcline, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           WHEN 'cpu' THEN COALESCE(CAST(e.cpu AS VARCHAR), '?')
           WHEN 'package' THEN COALESCE(CAST(e.package AS VARCHAR), '?')
         END
    END AS k2,
    CASE WHEN cardinality(COALESCE($by, make_array('function'))) < 3 THEN NULL
         WHEN e.sample_id IS NULL AND COALESCE($by, make_array('function'))[3] <> 'package' THEN '[unattributed]'
         ELSE CASE COALESCE($by, make_array('function'))[3]
           WHEN 'function' THEN COALESCE(l.function, '[unknown]')
           WHEN 'line' THEN COALESCE(l.srcline, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           WHEN 'cpu' THEN COALESCE(CAST(e.cpu AS VARCHAR), '?')
           WHEN 'package' THEN COALESCE(CAST(e.package AS VARCHAR), '?')
         END
    END AS k3,
    CASE WHEN cardinality(COALESCE($by, make_array('function'))) < 4 THEN NULL
         WHEN e.sample_id IS NULL AND COALESCE($by, make_array('function'))[4] <> 'package' THEN '[unattributed]'
         ELSE CASE COALESCE($by, make_array('function'))[4]
           WHEN 'function' THEN COALESCE(l.function, '[unknown]')
           WHEN 'line' THEN COALESCE(l.srcline, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           WHEN 'cpu' THEN COALESCE(CAST(e.cpu AS VARCHAR), '?')
           WHEN 'package' THEN COALESCE(CAST(e.package AS VARCHAR), '?')
         END
    END AS k4,
    CASE WHEN cardinality(COALESCE($by, make_array('function'))) < 5 THEN NULL
         WHEN e.sample_id IS NULL AND COALESCE($by, make_array('function'))[5] <> 'package' THEN '[unattributed]'
         ELSE CASE COALESCE($by, make_array('function'))[5]
           WHEN 'function' THEN COALESCE(l.function, '[unknown]')
           WHEN 'line' THEN COALESCE(l.srcline, '[unknown]')
           WHEN 'process' THEN concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')
           WHEN 'cpu' THEN COALESCE(CAST(e.cpu AS VARCHAR), '?')
           WHEN 'package' THEN COALESCE(CAST(e.package AS VARCHAR), '?')
         END
    END AS k5,
    e.joules,
    CASE WHEN e.sample_id IS NULL THEN 0 ELSE 1 END AS n
  FROM sample_energy e
  LEFT JOIN perf_sample x ON x.capture = e.capture AND x.sample_id = e.sample_id
  LEFT JOIN stack_entry l ON l.capture = x.capture AND l.stack_id = x.stack_id AND l.pos = 0
  WHERE assert_true(array_has_all(make_array('function', 'line', 'process', 'cpu', 'package'),
                                  COALESCE($by, make_array('function'))),
          concat('energy_by: keys are function, line, process, cpu and package, got ',
                 array_to_string(COALESCE($by, make_array('function')), ', ')))
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
