-- annotate: where inside a function did the samples fall? (seed document
-- 002: metrics per instruction, the disassembly view; `perf annotate`.)
-- One row per instruction of $function (the `instruction` table: the
-- decoded code of every function an instruction was sampled in), in
-- address order, with the selected samples whose leaf frame is on that
-- instruction (exclusive: what ran there, not what it called) and their
-- weight. Instructions nothing was sampled on are listed with 0, so the
-- function reads as a whole.
--
-- Parameters: $function (required: the ELF name, as `hotspots
-- ('function', 'inline', false)` shows it), $module (only modules whose
-- path contains this), and the sample selection of stack_weight.sql
-- ($event, $weight, $pid, $tid, $comm, $from_ns, $to_ns, $capture).
WITH ins AS (
  SELECT i.capture, i.module_id, m.path AS module, i.function, i.function_rel_pc, i.rel_pc,
         i.address, i.text, i.file, i.line, i.inline_function
  FROM instruction i
  JOIN module m ON m.capture = i.capture AND m.module_id = i.module_id
  WHERE i.function = $function
    AND ($module IS NULL OR strpos(m.path, $module) > 0)
    AND ($capture IS NULL OR array_has($capture, i.capture))
),
hit AS (
  SELECT x.capture, f.module_id, f.rel_pc, count(*) AS samples, sum(x.cost) AS weight
  FROM _selected_sample x
  JOIN stack s ON s.capture = x.capture AND s.stack_id = x.stack_id AND s.depth = 0
  JOIN frame f ON f.capture = s.capture AND f.frame_id = s.frame_id
  WHERE NOT f.is_return
  GROUP BY x.capture, f.module_id, f.rel_pc
),
j AS (
  SELECT ins.*, COALESCE(hit.samples, 0) AS samples, COALESCE(hit.weight, 0) AS weight,
         min(ins.address) OVER (PARTITION BY ins.capture, ins.module_id, ins.function_rel_pc) AS start
  FROM ins
  LEFT JOIN hit ON hit.capture = ins.capture AND hit.module_id = ins.module_id AND hit.rel_pc = ins.rel_pc
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
