-- lbr_summary: how much resolution do the branch stacks add? (Ono et al.
-- 2014, time-series performance analysis.) Per capture and event: samples,
-- samples with a branch stack, entries and how many of them were new (not
-- repeated from the thread's previous stack), points per sample, the
-- deepest stack, entries with cycle counts, the clock rate of the cycles
-- method and the time covered.
--
-- Parameters: $method, $ghz (see lbr_samples.sql), $event (default: all).
WITH b AS (
  SELECT capture, event, count(*) AS entries,
         sum(CASE WHEN repeated THEN 0 ELSE 1 END) AS new_entries,
         count(DISTINCT sample_id) AS samples_with_stack,
         max(idx) + 1 AS max_depth,
         sum(CASE WHEN cycles > 0 THEN 1 ELSE 0 END) AS entries_with_cycles
  FROM branch WHERE $event IS NULL OR event = $event
  GROUP BY capture, event
)
SELECT
  p.capture,                                                    -- capture
  p.event,                                                      -- event
  p.method,                                                     -- 0-3 or cycles
  sum(CASE WHEN p.origin = 'sample' THEN 1 ELSE 0 END) AS samples,  -- real samples
  COALESCE(max(b.samples_with_stack), 0) AS samples_with_stack, -- samples with branch entries
  COALESCE(max(b.entries), 0) AS entries,                       -- branch entries recorded
  COALESCE(max(b.new_entries), 0) AS new_entries,               -- of them new since the thread's previous sample (the points)
  count(*) AS points,                                           -- samples and pseudo-samples
  round(CAST(count(*) AS DOUBLE) / sum(CASE WHEN p.origin = 'sample' THEN 1 ELSE 0 END), 3) AS points_per_sample,  -- resolution gained
  max(b.max_depth) AS max_depth,                                -- deepest branch stack
  COALESCE(max(b.entries_with_cycles), 0) AS entries_with_cycles,  -- entries with cycle counts
  round(max(p.ghz), 4) AS ghz,                                  -- clock rate of the cycles method
  round(sum(p.weight_ns) / 1e6, 6) AS time_ms                   -- time covered, ms
FROM _lbr_sample p
LEFT JOIN b ON b.capture = p.capture AND b.event = p.event
WHERE $event IS NULL OR p.event = $event
GROUP BY p.capture, p.event, p.method
ORDER BY p.capture, p.event
