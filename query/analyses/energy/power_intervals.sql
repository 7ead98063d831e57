-- power_intervals: what is power_model fitted on? (Ono et al. 2015,
-- sampling-based power measurement, section 3.3.) Each interval of the
-- domain's energy counter (consecutive intervals merged until they span
-- $window_ns, a shorter last run dropped) with its energy and watts and,
-- one row per event, the event's rate in it (computed in Rust per call:
-- `_power_interval`).
--
-- Parameters: as power_model's, without $target_j.
SELECT
  t_ns,        -- the interval's end on the capture axis (ns)
  seconds,     -- its length (s)
  joules,      -- the counter's increase over it (J)
  watts,       -- joules / seconds
  term,        -- the event's place in $events (1 = first): rate_<term> of the fit
  event,       -- the event
  rate_per_s   -- its rate in the interval (events/s)
FROM _power_interval
ORDER BY t_ns, term
