-- What is at the leaf of the call stacks: for every frame that is the leaf
-- (depth 0) of some stack, the function, module and source line a sample
-- of such a stack is counted in (perf report's `sym`, `dso` and `srcline`
-- sort keys). trawl ingest and trawl symbolize join it, through the
-- stack table's depth-0 rows, with perf_sample into the flat table
-- perf_sample_symbolized, for readers without trawl; the names follow
-- frame_name's rules (return addresses looked up inside the call, inline
-- levels folded into the real function). One row per leaf frame, not per
-- stack: a system-wide recording has millions of distinct stacks over a
-- few hundred thousand leaf frames.
SELECT
  fn.frame_id,                                    -- frame.frame_id of a stack's depth 0
  fn.function,                                    -- the leaf's real function (perf's sym), or 0x<address>
  fn.module,                                      -- the leaf's module path (perf's dso)
  fn.srcline,                                     -- perf's srcline: file:line, else sym+offset
  fn.file,                                        -- source file of the address (innermost inline level)
  fn.line                                         -- source line of the address
FROM frame_name fn
JOIN (SELECT DISTINCT capture, frame_id FROM stack WHERE depth = 0) leaf
  ON leaf.capture = fn.capture AND leaf.frame_id = fn.frame_id
