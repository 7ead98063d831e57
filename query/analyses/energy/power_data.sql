-- power_data: the power data behind power_samples (Ono et al. 2015,
-- sampling-based power measurement, section 3.5, Fig. 6/8): every run of
-- each subset of $events and of each time-based grouping, with its modelled
-- and measured energy (computed in Rust per call: `_power_datum`).
--
-- Parameters: as power_samples'.
SELECT
  method,       -- events or time, as in power_samples
  events,       -- the subset, or "<time event> xN"
  n_events,     -- events in the subset (1 for time)
  datum,        -- the run's number in its subset (0 = first)
  t_start_ns,   -- the run's start on the capture axis (ns)
  t_end_ns,     -- its end (ns)
  samples,      -- samples in the run
  predicted_j,  -- its energy by the model (J; null for time runs)
  measured_j    -- the counter's increase over its span (J)
FROM _power_datum
ORDER BY n_events DESC, events, datum
