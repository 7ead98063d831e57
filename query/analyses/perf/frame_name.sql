-- perf_frame_name: what each frame is called.
-- One row per frame of every capture, with the module path and the function
-- name from the `symbol` table. Unresolved frames are named by their address
-- in hex (relative to the module; absolute outside any mapping, module
-- `[unknown]`), so distinct unknown addresses stay apart, as in perf report.
CREATE OR REPLACE VIEW perf_frame_name AS
SELECT
  f.capture,                                      -- capture the frame belongs to
  f.frame_id,                                     -- perf_frame.frame_id
  f.module_id,                                    -- perf_module.module_id (null: no mapping)
  f.rel_pc,                                       -- address relative to the module
  f.context,                                      -- kernel / user / ...
  COALESCE(m.path, '[unknown]') AS module,        -- module path, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6
  COALESCE(
    s.function,
    concat('0x', lpad(to_hex(f.rel_pc), 16, '0'))
  ) AS function,                                  -- demangled function name or placeholder
  s.function IS NOT NULL AS resolved              -- true when a symbol named the frame
FROM perf_frame f
LEFT JOIN perf_module m
  ON m.capture = f.capture AND m.module_id = f.module_id
LEFT JOIN symbol s
  ON s.capture = f.capture AND s.module_id = f.module_id AND s.rel_pc = f.rel_pc;
