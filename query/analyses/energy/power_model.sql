-- power_model: how much power does each event cost? (Ono et al. 2015,
-- sampling-based power measurement, section 3.3, Table 3.) Watts of the
-- energy domain = intercept + Σ c_i · rate_i, fitted by least squares over
-- the counter's intervals (merged until they span $window_ns), each event's
-- rate read at the samples (the counter's increase) or, for a sampled
-- event, its sampled periods. The fit and R_i = P / c_i, the interval in
-- events between samples so that each sample stands for P joules, are
-- computed in Rust per call (`_power_term`); the intercept, each event and
-- the measured watts are one row each.
--
-- Parameters (NULL: the default): $events (list; default every counter read
-- at the samples), $domain (cores), $zone (list), $package, $window_ns
-- (10 ms), $event (the samples read), $target_j (P, 1 J).
SELECT
  term,             -- intercept, an event, or measured (the mean watts read)
  coefficient,      -- W for the intercept; J per event for an event
  mean_rate_per_s,  -- the event's time-weighted mean rate (events/s)
  mean_watts,       -- watts the term explains at its mean rate; measured: the mean watts
  interval_events,  -- R_i = P / c_i, rounded: events between samples of P joules
  samples_per_s,    -- samples per second that interval gives at the mean rate
  r2,               -- the fit's R² (every row)
  intervals,        -- intervals fitted on (every row)
  rates_from,       -- an event's rates: read (counter at the samples) or sampled (periods)
  capture,          -- the capture whose counter was modelled
  domain,           -- the energy domain
  zone,             -- the counter read
  event             -- the samples whose counter reads gave the rates
FROM _power_term
