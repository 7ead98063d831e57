-- annotate: where inside a function did the samples fall? (Oracle Solaris
-- Studio Performance Analyzer, metrics mapped to program structure:
-- metrics per instruction, the disassembly view; `perf annotate`.)
-- One row per instruction of $function (the `instruction` table: the
-- decoded code of every function an instruction was sampled in), in
-- address order, with the selected samples whose leaf frame is on that
-- instruction (exclusive: what ran there, not what it called) and their
-- weight, per capture. Instructions nothing was sampled on are listed
-- with 0, so the function reads as a whole (for each selected capture of
-- the segment holding the decoded code).
--
-- Parameters: $function (required: the ELF name, as `hotspots
-- ('function', 'inline', false)` shows it), $module (only modules whose
-- path contains this), and the sample selection of stack_weight.sql
-- ($event, $weight, $pid, $tid, $comm, $from_ns, $to_ns, $capture).
WITH ins AS (
  SELECT i.segment, i.module_id, m.path AS module, i.function, i.function_rel_pc, i.rel_pc,
         i.address, i.text, i.file, i.line, i.inline_function
  FROM instruction i
  JOIN module m ON m.segment = i.segment AND m.module_id = i.module_id
  WHERE i.function = $function
    AND ($module IS NULL OR strpos(m.path, $module) > 0)
    AND ($segment IS NULL OR array_has($segment, i.segment))
),
-- The samples whose leaf is one of these instructions: the function's
-- frames first (a few), the stacks they are the leaf of, then those
-- stacks' samples (not every sample's leaf looked up).
fn_frame AS (
  SELECT DISTINCT f.segment, f.frame_id, f.module_id, f.rel_pc
  FROM frame f
  JOIN ins ON ins.segment = f.segment AND ins.module_id = f.module_id AND ins.rel_pc = f.rel_pc
  WHERE NOT f.is_return
),
leaf AS (
  SELECT s.segment, s.stack_id, ff.module_id, ff.rel_pc
  FROM stack s
  JOIN fn_frame ff ON ff.segment = s.segment AND ff.frame_id = s.frame_id
  WHERE s.depth = 0
),
hit AS (
  SELECT x.capture, leaf.segment, leaf.module_id, leaf.rel_pc, count(*) AS samples, sum(x.cost) AS weight
  FROM leaf
  JOIN _selected_sample x ON x.segment = leaf.segment AND x.stack_id = leaf.stack_id
  GROUP BY x.capture, leaf.segment, leaf.module_id, leaf.rel_pc
),
caps AS (                           -- the selected captures of each segment (a small table)
  SELECT DISTINCT capture, segment FROM source
  WHERE $capture IS NULL OR array_has($capture, capture)
),
j AS (
  SELECT c.capture, ins.*, COALESCE(hit.samples, 0) AS samples, COALESCE(hit.weight, 0) AS weight,
         min(ins.address) OVER (PARTITION BY c.capture, ins.module_id, ins.function_rel_pc) AS start
  FROM ins
  JOIN caps c ON c.segment = ins.segment
  LEFT JOIN hit ON hit.capture = c.capture AND hit.segment = ins.segment
    AND hit.module_id = ins.module_id AND hit.rel_pc = ins.rel_pc
)
SELECT
  capture,                                                      -- capture
  module,                                                       -- module path
  function,                                                     -- function
  address,                                                      -- the instruction's address (objdump's)
  address - start AS offset,                                    -- bytes from the function's start
  samples,                                                      -- samples whose leaf is this instruction
  weight,                                                       -- their weight (period by default)
  round(100.0 * weight / sum(weight) OVER (PARTITION BY capture, module_id, function_rel_pc), 2) AS pct,  -- share of the function's weight, % (perf annotate's local period percent)
  text,                                                         -- the instruction, AT&T syntax
  CASE WHEN line IS NOT NULL
       THEN concat(regexp_replace(file, '^.*/', ''), ':', CAST(line AS VARCHAR)) END AS srcline,  -- file:line (base name)
  file,                                                         -- source file
  line,                                                         -- source line
  inline_function                                               -- the function inlined here, if any
FROM j
ORDER BY capture, module, address
