-- _lbr_sample: every sample plus, with methods 1-4, one pseudo-sample per
-- branch stack entry, timed as Ono et al. 2014, time-series performance
-- analysis, does (the body of
-- `lbr_samples(method, ghz)` and of the lbr_* reports).
--
-- Parameters (NULL: the default):
--   $method  text    0 (default), 1, 2, 3, or `cycles` (also 4)
--   $ghz     double  clock rate of the cycles method (default: estimated)
--
--
-- Each sample k covers the interval T before it: its period for clock
-- events (cpu-clock, task-clock: CPU time in ns), else the time since the
-- thread's previous sample of the event (the thread's mean for its first).
-- Only the entries new since the thread's previous sample count (Ono et
-- al. 2014, §4.2: "the branch information accumulated since the previous
-- interrupt"); those perf_branch.repeated from the previous snapshot are
-- left out, so n below is the number of new entries.
-- The entry's function is the source function of the branch (the leaf of
-- perf_branch.stack_id); a function's execution ratio r is its share of
-- the capture's samples of the event (by leaf function). With n entries
-- and the sampled function s, T is divided:
--   0  samples only: s gets T;
--   1  equally: each of the n entries and s get T / (n + 1);
--   2  each entry gets T x r(entry) (scaled down when they sum to more
--      than T); s gets the rest;
--   3  in proportion to r among the entries and s: T x r / sum(r);
--      (equally when no function has a ratio);
--   4  by the cycle counts the hardware saved per entry (cycles since the
--      previous entry, spent in this entry's source function), at GHZ
--      (default: the lowest clock rate at which no sample's entries take
--      longer than its interval); s gets the rest.
-- Slices are laid out in time order, oldest entry first, ending at the
-- sample's time: a pseudo-sample's t_ns is the end of its slice.
CREATE OR REPLACE VIEW _lbr_sample AS
WITH
s AS (
  SELECT x.capture, x.segment, x.sample_id, x.source_id, CAST(x.event AS VARCHAR) AS event,
    x.time_ns, x.t_ns, x.pid, x.tid, x.cpu, x.comm, x.stack_id, x.period,
    x.time_ns - lag(x.time_ns) OVER (
      PARTITION BY x.capture, x.source_id, x.event, x.tid ORDER BY x.time_ns, x.sample_id) AS dt
  FROM perf_sample_t x
  WHERE x.time_ns IS NOT NULL
),
s1 AS (
  SELECT s.*,
    CAST(COALESCE(
      CASE WHEN s.event LIKE '%clock%' THEN s.period END,
      s.dt,
      CAST(avg(s.dt) OVER (PARTITION BY s.capture, s.source_id, s.event, s.tid) AS BIGINT),
      0) AS DOUBLE) AS interval_ns
  FROM s
),
sl AS (
  SELECT s1.*, COALESCE(l.function, '[unknown]') AS function
  FROM s1
  LEFT JOIN stack_entry l ON l.segment = s1.segment AND l.stack_id = s1.stack_id AND l.pos = 0
),
fn_count AS (
  SELECT capture, event, function, count(*) AS c FROM sl GROUP BY capture, event, function
),
ev_count AS (
  SELECT capture, event, sum(c) AS total FROM fn_count GROUP BY capture, event
),
ratio AS (
  SELECT f.capture, f.event, f.function, CAST(f.c AS DOUBLE) / CAST(e.total AS DOUBLE) AS r
  FROM fn_count f JOIN ev_count e ON e.capture = f.capture AND e.event = f.event
),
p AS (
  SELECT capture, segment, sample_id, CAST(-1 AS INT) AS idx, stack_id, function, CAST(0 AS DOUBLE) AS cycles
  FROM sl
  UNION ALL
  SELECT b.capture, b.segment, b.sample_id, b.idx, b.stack_id, COALESCE(l.function, '[unknown]') AS function,
    CAST(b.cycles AS DOUBLE) AS cycles
  FROM perf_branch b
  LEFT JOIN stack_entry l ON l.segment = b.segment AND l.stack_id = b.stack_id AND l.pos = 0
  WHERE NOT COALESCE(b.repeated, false)
),
pj AS (
  SELECT p.capture, p.segment, p.sample_id, p.idx, p.stack_id, p.function, p.cycles,
    sl.event, sl.time_ns, sl.t_ns, sl.pid, sl.tid, sl.cpu, sl.comm, sl.interval_ns,
    COALESCE(rt.r, 0.0) AS r
  FROM p
  JOIN sl ON sl.capture = p.capture AND sl.sample_id = p.sample_id
  LEFT JOIN ratio rt ON rt.capture = p.capture AND rt.event = sl.event AND rt.function = p.function
),
agg AS (
  SELECT capture, sample_id,
    CAST(sum(CASE WHEN idx >= 0 THEN 1 ELSE 0 END) AS DOUBLE) AS n,
    sum(CASE WHEN idx >= 0 THEN r ELSE 0.0 END) AS r_entries,
    sum(CASE WHEN idx < 0 THEN r ELSE 0.0 END) AS r_sample,
    sum(CASE WHEN idx >= 0 THEN cycles ELSE 0.0 END) AS cyc,
    max(interval_ns) AS interval_ns
  FROM pj GROUP BY capture, sample_id
),
est AS (
  SELECT capture, max(CASE WHEN interval_ns > 0 THEN cyc / interval_ns END) AS ghz
  FROM agg WHERE cyc > 0 GROUP BY capture
),
w AS (
  SELECT pj.*, a.n, a.r_entries, a.r_sample,
    COALESCE(CAST($ghz AS DOUBLE), est.ghz) AS ghz,
    CASE
      WHEN COALESCE(CAST($ghz AS DOUBLE), est.ghz) > 0 THEN a.cyc / COALESCE(CAST($ghz AS DOUBLE), est.ghz)
      ELSE 0.0
    END AS cyc_ns
  FROM pj
  JOIN agg a ON a.capture = pj.capture AND a.sample_id = pj.sample_id
  LEFT JOIN est ON est.capture = pj.capture
  WHERE COALESCE($method, '0') <> '0' OR pj.idx < 0
),
wt AS (
  SELECT w.*,
    -- (COALESCE: the same nullability before and after the parameters
    -- are bound)
    COALESCE(CASE
      WHEN COALESCE($method, '0') = '0' THEN interval_ns
      WHEN $method = '1' THEN interval_ns / (n + 1.0)
      WHEN $method = '2' THEN CASE
        WHEN idx >= 0 THEN CASE WHEN r_entries > 0 THEN interval_ns * r / greatest(r_entries, 1.0) ELSE 0.0 END
        ELSE interval_ns * (1.0 - least(r_entries, 1.0)) END
      WHEN $method = '3' THEN CASE
        WHEN r_entries + r_sample > 0 THEN interval_ns * r / (r_entries + r_sample)
        ELSE interval_ns / (n + 1.0) END
      ELSE CASE
        WHEN idx >= 0 THEN CASE
          WHEN cyc_ns > 0 AND ghz > 0 THEN (cycles / ghz) * least(1.0, interval_ns / cyc_ns)
          ELSE 0.0 END
        ELSE interval_ns - least(cyc_ns, interval_ns) END
    END, 0.0) AS weight_ns
  FROM w
),
laid AS (
  SELECT wt.*,
    sum(weight_ns) OVER (PARTITION BY capture, sample_id ORDER BY idx DESC
                         ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS end_off
  FROM wt
)
SELECT
  capture,
  segment,                                        -- segment (stack_id's id space)
  sample_id,                                      -- the real sample the point comes from
  idx,                                            -- -1: the sample itself; else perf_branch.idx
  CASE WHEN $method IN ('4', 'cycles') THEN 'cycles' ELSE COALESCE($method, '0') END AS method,
  CASE WHEN idx < 0 THEN 'sample' ELSE 'lbr' END AS origin,
  event,
  CASE WHEN idx < 0 THEN time_ns
       ELSE time_ns - CAST(round(interval_ns - end_off) AS BIGINT) END AS time_ns,
  CASE WHEN idx < 0 THEN t_ns
       ELSE t_ns - CAST(round(interval_ns - end_off) AS BIGINT) END AS t_ns,
  weight_ns,
  CAST(round(weight_ns) AS BIGINT) AS period,
  interval_ns,
  r AS ratio,
  ghz,
  pid, tid, cpu, comm, stack_id, function
FROM laid
WHERE assert_true(COALESCE($method, '0') IN ('0', '1', '2', '3', '4', 'cycles'),
        concat('lbr: method ', $method, ': expected 0, 1, 2, 3 or cycles'))
  AND assert_true($ghz IS NULL OR CAST($ghz AS DOUBLE) > 0, 'lbr: ghz must be a positive number');
