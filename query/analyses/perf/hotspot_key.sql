-- _hotspot_key: what hotspots groups a frame's cost under. Every frame of
-- the captures (and, with $inline, every inline level of it) with its key;
-- level 0 is where the instruction is (the leaf of a sample's stack). The
-- table function `hotspot_key(by, ...)` reads it.
--
-- Parameters: $by (`function` (default), `module`, `srcline`, `line`,
-- `address`), $inline (default true: inline levels count as functions of
-- their own, perf report --inline), $capture (only these captures: the
-- frames of their segments, `$segment`, bound with it). The
-- key is (key1, key2, key3): function and module; module; srcline and
-- module; function, file and line; `function @ 0xREL_PC` and module.
-- The CASEs test `COALESCE($by, ...) = '...'`: with $by bound, each test
-- folds to true or false when the query is planned and only the key asked
-- for is computed (DataFusion does not fold `CASE $by WHEN ...`, and would
-- compute every frame's srcline, a regular expression each, for any key).
CREATE OR REPLACE VIEW _hotspot_key AS
WITH frame_key AS (
  SELECT segment, frame_id, inline_depth AS level, function, module, file, line, srcline, rel_pc
  FROM frame_line WHERE COALESCE($inline, true)
    AND ($segment IS NULL OR array_has($segment, segment))
  UNION ALL                         -- without inline levels: the real function
  SELECT segment, frame_id, 0, function, module, NULL, NULL, NULL, rel_pc
  FROM frame_line WHERE NOT COALESCE($inline, true) AND NOT inlined
    AND ($segment IS NULL OR array_has($segment, segment))
    AND COALESCE($by, 'function') NOT IN ('srcline', 'line')
  UNION ALL                         -- ... and the source line of the address
  SELECT segment, frame_id, 0, function, module, file, line, srcline, rel_pc
  FROM frame_name WHERE NOT COALESCE($inline, true)
    AND ($segment IS NULL OR array_has($segment, segment))
    AND COALESCE($by, 'function') IN ('srcline', 'line')
)
SELECT
  segment,                                      -- segment (frame_id's id space)
  frame_id,                                     -- frame.frame_id
  level,                                        -- inline level: 0 is the innermost
  CASE
    WHEN COALESCE($by, 'function') = 'module' THEN module
    WHEN COALESCE($by, 'function') = 'srcline' THEN srcline
    WHEN COALESCE($by, 'function') = 'address' THEN concat(function, ' @ 0x', to_hex(rel_pc))
    ELSE function
  END AS key1,                                  -- function, module, srcline or address
  CASE
    WHEN COALESCE($by, 'function') = 'module' THEN NULL
    WHEN COALESCE($by, 'function') = 'line' THEN file
    ELSE module
  END AS key2,                                  -- module (by line: the source file)
  CASE WHEN $by = 'line' THEN line END AS key3  -- source line (by line)
FROM frame_key;
