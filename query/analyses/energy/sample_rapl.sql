-- sample_rapl: how much energy does each sample carry? (Ono et al. 2015,
-- sampling-based power measurement, section 3.4, Fig. 5 and 7.) For every
-- sample whose group read a RAPL counter (perf's power/energy-* events read
-- with the sample, PERF_SAMPLE_READ), the counter's increase since the
-- previous sample of the same event on the same CPU, in joules (perf's
-- scale for these events: 2^-32 J per count): the paper's "power value at a
-- sample", plotted over time per sampled event
-- (`report power-samples --plot-time`). A CPU's first sample has no
-- previous one and is left out.
--
-- Parameters: $event (only this sampled event; default all).
WITH r AS (
  SELECT x.capture, x.sample_id, CAST(x.event AS VARCHAR) AS event,
         CAST(r.event AS VARCHAR) AS counter, x.cpu, x.t_ns, x.time_ns,
         CAST(r.value AS DOUBLE) AS value
  FROM perf_sample_t x
  JOIN perf_sample_read r ON r.capture = x.capture AND r.sample_id = x.sample_id
  WHERE CAST(r.event AS VARCHAR) LIKE 'power/energy-%'
    AND ($event IS NULL OR CAST(x.event AS VARCHAR) = $event)
),
d AS (
  SELECT r.*,
         value - lag(value) OVER (PARTITION BY capture, event, counter, cpu
                                  ORDER BY time_ns, sample_id) AS counts
  FROM r
)
SELECT
  capture,                                      -- capture
  sample_id,                                    -- perf_sample.sample_id
  event,                                        -- the sampled event (the group's leader)
  counter,                                      -- the RAPL counter read (power/energy-cores/, ...)
  cpu,                                          -- CPU of the sample
  t_ns,                                         -- its time on the capture axis, ns
  time_ns,                                      -- its time on perf's clock, ns
  counts * 2.3283064365386962890625e-10 AS joules  -- the counter's increase since the CPU's previous sample of the event, J
FROM d
WHERE counts IS NOT NULL
ORDER BY capture, event, counter, time_ns, sample_id
