-- thread_timeline: what was each thread doing, window by window? Per
-- window and thread, the time it ran and the time it spent off the CPU in
-- each state (`thread_state`: S sleeping, D uninterruptible, R preempted,
-- blocked from switch records), intervals cut at the window edges, so a
-- thread's rows of a window add up to the part of the window the
-- recording covers for it. Windows are $window_ns wide from each capture's
-- origin (`time_base`), as `timeline(...)`'s.
--
-- Parameters: $window_ns (required), $pid, $tid (lists), $capture (list).
WITH iv AS (
  SELECT t.capture, t.pid, t.tid, t.state,
         t.start_ns + b.offset_ns AS s, t.end_ns + b.offset_ns AS e
  FROM thread_state t
  JOIN time_base b ON b.capture = t.capture AND b.source_id = t.source_id
  WHERE ($pid IS NULL OR array_has($pid, t.pid))
    AND ($tid IS NULL OR array_has($tid, t.tid))
    AND ($capture IS NULL OR array_has($capture, t.capture))
    AND t.end_ns > t.start_ns
),
cut AS (                            -- one row per (interval, window it touches)
  SELECT capture, pid, tid, state, s, e,
         unnest(range(window_start(s, $window_ns), window_start(e - 1, $window_ns) + $window_ns, $window_ns)) AS w
  FROM iv
)
SELECT
  capture,                                        -- capture
  CAST(w AS DOUBLE) / 1e9 AS window_start_s,      -- start of the window, s after the origin
  pid,                                            -- process
  tid,                                            -- thread
  state,                                          -- running, or the off-CPU state
  CAST(sum(least(e, w + $window_ns) - greatest(s, w)) AS BIGINT) AS ns  -- time in the window in that state
FROM cut
GROUP BY capture, w, pid, tid, state
ORDER BY capture, w, tid, state
