-- What the frames with frame_id in [$from_frame, $to_frame) are called:
-- the function, module and source line a sample is counted in when such a
-- frame is its stack's leaf (perf report's `sym`, `dso` and `srcline` sort
-- keys), by frame_name's rules (return addresses looked up inside the
-- call, inline levels folded into the real function).
--
-- trawl ingest and trawl symbolize read it a range at a time for the leaf
-- frames of the stacks (depth 0 in `stack`) and join those names with
-- perf_sample into the flat table perf_sample_symbolized. A range, not the
-- whole table: the frame table is written in frame_id order, so a range
-- reads its own row groups and the joins of frame_name hold that range
-- only (a system-wide recording has millions of frames; all of them named
-- at once took 1.3 GB).
SELECT
  fn.frame_id,                                    -- frame.frame_id
  fn.function,                                    -- the real function (perf's sym), or 0x<address>
  fn.module,                                      -- module path (perf's dso)
  fn.srcline,                                     -- perf's srcline: file:line, else sym+offset
  fn.file,                                        -- source file of the address (innermost inline level)
  fn.line                                         -- source line of the address
FROM frame_name fn
WHERE fn.frame_id >= $from_frame AND fn.frame_id < $to_frame
