-- What is at the leaf of each call stack: the function, module and source
-- line a sample of that stack is counted in (perf report's `sym`, `dso`
-- and `srcline` sort keys). trawl ingest and trawl symbolize join it with
-- perf_sample into the flat table perf_sample_symbolized, for readers
-- without trawl; the names follow frame_name's rules (return addresses
-- looked up inside the call, inline levels folded into the real function).
SELECT
  e.stack_id,                                     -- stack.stack_id
  e.function,                                     -- the leaf's real function (perf's sym), or 0x<address>
  e.module,                                       -- the leaf's module path (perf's dso)
  e.srcline,                                      -- perf's srcline: file:line, else sym+offset
  e.file,                                         -- source file of the address (innermost inline level)
  e.line                                          -- source line of the address
FROM stack_entry e
WHERE e.pos = 0
