-- tracepoint_events: which tracepoint (and probe) events do the captures
-- hold, with how many samples, and what fields can `tracepoint(EVENT)`
-- read? One row per event and format (kernels differ: an archive may hold
-- an event in several layouts), its fields as `name decode` in format
-- order (`tracepoint_field.decode`: i32, u64, str, loc:str, u64[], ...),
-- without the common_* header every payload starts with.
--
-- Parameters: $capture (list: only these captures).
WITH f AS (
  SELECT capture, source_id, event,
         array_to_string(array_agg(field || ' ' || decode ORDER BY position), ', ') AS fields
  FROM tracepoint_field
  WHERE NOT common AND ($capture IS NULL OR array_has($capture, capture))
  GROUP BY capture, source_id, event
),
n AS (
  SELECT capture, source_id, CAST(event AS VARCHAR) AS event, count(*) AS samples
  FROM perf_sample
  WHERE $capture IS NULL OR array_has($capture, capture)
  GROUP BY capture, source_id, CAST(event AS VARCHAR)
)
SELECT
  f.event,                                                  -- system:name
  CAST(sum(COALESCE(n.samples, 0)) AS BIGINT) AS samples,   -- its samples
  f.fields,                                                 -- its fields: name decode, ...
  CAST(count(DISTINCT f.capture) AS BIGINT) AS captures     -- captures holding it in this layout
FROM f
LEFT JOIN n ON n.capture = f.capture AND n.source_id = f.source_id AND n.event = f.event
GROUP BY f.event, f.fields
ORDER BY samples DESC, f.event, f.fields
