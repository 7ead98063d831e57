-- What each frame is called, and the stacks as sequences of functions.
--
-- frame_line: one row per frame and inline level (0 = innermost: the
--   function the instruction is in; the highest level is the real function,
--   named by its ELF symbol as perf's `sym`). Return addresses are looked up
--   at rel_pc - 1 (frame.is_return), inside the call instruction.
-- frame_name: one row per frame: the real function (perf's `sym`) and
--   the source line of the address (innermost level, perf's `srcline`).
-- stack_entry / stack_entry_inline: one row per position of every
--   stack, leaf first (pos 0); the second counts each inline level as a
--   function of its own (perf report --inline).
-- Unresolved frames are named by their address in hex (relative to the
-- module; absolute outside any mapping, module `[unknown]`), so distinct
-- unknown addresses stay apart, as in perf report. Frames and stacks are
-- a segment's (its captures share them): each view is keyed by `segment`
-- and the id.
CREATE OR REPLACE VIEW frame_line AS
SELECT
  f.segment,                                      -- segment the frame belongs to
  f.frame_id,                                     -- frame.frame_id
  f.module_id,                                    -- module.module_id (null: no mapping)
  f.rel_pc,                                       -- address relative to the module
  f.is_return,                                    -- a caller's return address
  f.context,                                      -- kernel / user / ...
  COALESCE(m.path, '[unknown]') AS module,        -- module path
  COALESCE(s.inline_depth, 0) AS inline_depth,    -- 0 = innermost level
  COALESCE(s.inlined, false) AS inlined,          -- level inlined into the next
  COALESCE(
    s.function,
    concat('0x', lpad(to_hex(f.rel_pc), 16, '0'))
  ) AS function,                                  -- demangled function name or placeholder
  s.file,                                         -- source file (DWARF)
  s.line,                                         -- source line (DWARF)
  s."column",                                     -- source column (DWARF)
  s.symbol_offset,                                -- offset from the ELF symbol (outermost level)
  CASE
    WHEN s.line IS NOT NULL
      THEN concat(regexp_replace(s.file, '^.*/', ''), ':', CAST(s.line AS VARCHAR))
    WHEN s.symbol_offset IS NOT NULL
      THEN concat(s.function, '+', CAST(s.symbol_offset AS VARCHAR))
    ELSE COALESCE(s.function, concat('0x', lpad(to_hex(f.rel_pc), 16, '0')))
  END AS srcline,                                 -- perf's srcline of this level: file:line, else sym+offset
  s.function IS NOT NULL AS resolved              -- true when a symbol named the frame
FROM frame f
LEFT JOIN module m
  ON m.segment = f.segment AND m.module_id = f.module_id
LEFT JOIN symbol s
  ON s.segment = f.segment AND s.module_id = f.module_id
  AND s.rel_pc = CASE WHEN f.is_return AND f.rel_pc > 0
                      THEN f.rel_pc - CAST(1 AS BIGINT UNSIGNED) ELSE f.rel_pc END;

CREATE OR REPLACE VIEW frame_name AS
SELECT
  o.segment,                                      -- segment the frame belongs to
  o.frame_id,                                     -- frame.frame_id
  o.module_id,                                    -- module.module_id (null: no mapping)
  o.rel_pc,                                       -- address relative to the module
  o.is_return,                                    -- a caller's return address
  o.context,                                      -- kernel / user / ...
  o.module,                                       -- module path, e.g. /usr/lib/x86_64-linux-gnu/libc.so.6
  o.function,                                     -- the real (ELF symbol) function, perf's `sym`
  o.symbol_offset,                                -- offset of the address from that symbol
  i.file,                                         -- source file of the address (innermost level)
  i.line,                                         -- source line of the address (innermost level)
  CASE
    WHEN i.line IS NOT NULL THEN i.srcline
    ELSE o.srcline
  END AS srcline,                                 -- perf's srcline: file:line, else sym+offset
  o.resolved                                      -- true when a symbol named the frame
FROM frame_line o
JOIN frame_line i
  ON i.segment = o.segment AND i.frame_id = o.frame_id AND i.inline_depth = 0
WHERE NOT o.inlined;

CREATE OR REPLACE VIEW stack_entry AS
SELECT
  st.segment,                                     -- segment
  st.stack_id,                                    -- stack.stack_id
  st.depth AS pos,                                -- position, 0 = leaf
  st.depth,                                       -- stack.depth of the frame
  0 AS inline_depth,                              -- always 0: inline levels folded into the frame
  fn.frame_id, fn.module_id, fn.rel_pc, fn.module, fn.function,
  fn.file, fn.line, fn.srcline, fn.resolved
FROM stack st
JOIN frame_name fn ON fn.segment = st.segment AND fn.frame_id = st.frame_id;

CREATE OR REPLACE VIEW stack_entry_inline AS
SELECT
  st.segment,
  st.stack_id,
  CAST(row_number() OVER (
    PARTITION BY st.segment, st.stack_id ORDER BY st.depth, fl.inline_depth
  ) - 1 AS INT) AS pos,                           -- position, 0 = innermost level of the leaf
  st.depth,
  fl.inline_depth,
  fl.frame_id, fl.module_id, fl.rel_pc, fl.module, fl.function,
  fl.file, fl.line,
  fl.srcline,
  fl.resolved
FROM stack st
JOIN frame_line fl ON fl.segment = st.segment AND fl.frame_id = st.frame_id;
