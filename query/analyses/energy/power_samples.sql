-- power_samples: how close do power samples come to equal energy? (Ono et
-- al. 2015, sampling-based power measurement, section 3.5, Table 6, Fig.
-- 6/8.) The samples of every
-- subset of $events, weighed by the model (c_i J per event, the intercept
-- W over time), merged in time order and cut into runs whose modelled
-- energy reaches P = $target_j: each run is a power datum, and its measured
-- energy is the counter's increase over its span. Compared with runs of N
-- consecutive $time_event samples (N giving P on average, and $group).
-- Computed in Rust per call (`_power_summary`); the data are power_data's.
--
-- Parameters (NULL: the default): $events (list; default every sampled event
-- but $time_event), $time_event (cpu-clock), $target_j (1 J), $group,
-- $coef (list of EVENT=JOULES; default fitted as power_model), $intercept_w,
-- $domain (cores), $zone (list), $package, $window_ns (10 ms, for the fit).
SELECT
  method,          -- events (merged power samples) or time (N time-based samples)
  events,          -- the subset merged, or "<time event> xN"
  n_events,        -- events in the subset (1 for time)
  data,            -- power data (runs) measured
  mean_j,          -- their mean measured energy (J)
  sd_j,            -- its standard deviation (J)
  within_5_pct,    -- share of data within ±5 % of P (%)
  within_10_pct,   -- share within ±10 % of P (%)
  mean_error_pct,  -- (mean - P) / P (%)
  mean_span_ms     -- mean length of a datum (ms)
FROM _power_summary
