-- Branch stacks (Last Branch Records), symbolized (Ono et al. 2014,
-- time-series performance analysis).
--
-- branch: one row per entry of every sample's branch stack, newest first
--   (idx 0), with the sample's time and thread and both ends named like
--   sample frames (function, module, source file and line).
--   `repeated` marks the entries the thread's previous stack already held
--   (perf_branch.repeated: fewer than N branches retired in between).
-- lbr_transition: how often each (from function -> to function, transfer)
--   was taken, counting each branch once: calls caller -> callee, returns
--   callee -> caller. Entries repeated from the thread's previous stack
--   are not counted again (`repeats` says how many there were).
CREATE OR REPLACE VIEW branch AS
SELECT
  b.capture,                                      -- capture
  b.sample_id,                                    -- perf_sample.sample_id the stack was read at
  b.idx,                                          -- 0 = newest entry
  x.time_ns,                                      -- the sample's time (perf clock)
  x.t_ns,                                         -- the sample's time on the capture's axis
  x.pid, x.tid, x.cpu,
  CAST(x.event AS VARCHAR) AS event,              -- the sampled event
  b.from_ip, b.to_ip,
  CAST(b.transfer AS VARCHAR) AS transfer,        -- call / return / other
  b.type, b.mispred, b.predicted, b.in_tx, b.abort, b.cycles,
  f.function AS from_function,                    -- function of the branch source (perf's brstacksym)
  f.module AS from_module,
  f.file AS from_file,
  f.line AS from_line,
  f.srcline AS from_srcline,
  t.function AS to_function,                      -- function of the branch target
  t.module AS to_module,
  t.file AS to_file,
  t.line AS to_line,
  t.srcline AS to_srcline,
  b.stack_id,                                     -- call stack at the source (pseudo-sample stack)
  COALESCE(b.repeated, false) AS repeated         -- already in the thread's previous stack
FROM perf_branch b
LEFT JOIN perf_sample_t x ON x.capture = b.capture AND x.sample_id = b.sample_id
LEFT JOIN frame_name f ON f.segment = b.segment AND f.frame_id = b.from_frame_id
LEFT JOIN frame_name t ON t.segment = b.segment AND t.frame_id = b.to_frame_id;

CREATE OR REPLACE VIEW lbr_transition AS
SELECT
  capture,
  event,
  from_function,                                  -- caller for calls, callee for returns
  to_function,
  transfer,
  sum(CASE WHEN repeated THEN 0 ELSE 1 END) AS entries,  -- times taken (entries new in their stack)
  count(DISTINCT CASE WHEN repeated THEN NULL ELSE sample_id END) AS samples,  -- samples whose stack recorded it new
  sum(CASE WHEN repeated THEN 1 ELSE 0 END) AS repeats  -- entries repeated from a previous stack (not counted)
FROM branch
GROUP BY capture, event, from_function, to_function, transfer;
