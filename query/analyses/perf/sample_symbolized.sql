-- perf_sample_symbolized: each perf sample with the function, module and
-- source line of its leaf frame, one row per sample, so that "where did
-- the time go" needs no join (pandas, Polars, DuckDB through trawl's
-- Python package: `cap.sql("SELECT * FROM perf_sample_symbolized")`).
-- The names are frame_name's (perf's `sym`, `dso` and `srcline` of the
-- sample's ip); samples without a stack have null names. A view: nothing
-- is computed until a query reads it. `trawl ingest --flat` also writes it
-- as perf_sample_symbolized.parquet for readers without trawl (named by
-- trawl-enrich with the same rules; sessions read this view).
CREATE OR REPLACE VIEW perf_sample_symbolized AS
SELECT
  s.capture,                                      -- capture
  s.segment,                                      -- segment (stack_id's id space)
  s.sample_id,                                    -- perf_sample.sample_id, in time order
  s.source_id,                                    -- input the sample came from
  s.time_ns,                                      -- timestamp on the capture's clock
  s.time_utc,                                     -- the time on UTC, when the recording placed its clock there
  s.pid,                                          -- process id
  s.tid,                                          -- thread id
  s.comm,                                         -- command name of the thread
  s.cpu,                                          -- CPU
  s.event,                                        -- event name
  s.period,                                       -- sample period (ns for cpu-clock)
  s.cpu_mode,                                     -- kernel, user, ...
  s.stack_id,                                     -- call stack (stack.stack_id)
  fn.function,                                    -- the leaf's function (perf's sym), 0x… when unnamed
  fn.module,                                      -- the leaf's module path (perf's dso)
  fn.srcline,                                     -- perf's srcline: file:line, else function+offset
  fn.file,                                        -- source file (innermost inline level)
  fn.line                                         -- source line
FROM perf_sample s
LEFT JOIN stack st
  ON st.segment = s.segment AND st.stack_id = s.stack_id AND st.depth = 0
LEFT JOIN frame_name fn
  ON fn.segment = st.segment AND fn.frame_id = st.frame_id;
