//! What a timeline export (Perfetto's trace format) reads besides the
//! samples, as spans (slices and instants) and counter readings on the
//! trace's clock:
//!
//! - traced system calls (strace dumps, perf's syscall tracepoints) on
//!   their thread, strace's threads grouped into processes by their
//!   `clone(CLONE_THREAD)` calls;
//! - thread states (`thread_state`: running, and off the CPU with the
//!   state it left in) on a track of the thread;
//! - every other tracepoint and probe sample (`tracepoint(EVENT)`) as an
//!   instant with its decoded fields (`sched:sched_switch` is the thread
//!   states; the `syscalls:` events are the calls);
//! - paired events (`tracepoint_pairs`) as slices, for the pairs asked;
//! - LBR-timed samples (`lbr_samples('cycles')`: each branch entry's slice
//!   of the interval before its sample, Ono et al. 2014) on a track of the
//!   thread;
//! - exhaustion ranges of a rule (Morita et al.), on a track of the
//!   capture;
//! - monitoring metrics and RAPL power (W) as counters, and the bytes each
//!   process has mapped (`memory_region`) as a counter of the process.
//!
//! The trace's clock: with one capture, the one the tables use for perf
//! samples (`perf_sample.time_ns`, as `perf script` prints times; its other
//! inputs moved onto it through `time_base`: `t_ns` - the perf input's
//! offset; a capture without perf samples is on its `t_ns` axis); with
//! several, each capture's `t_ns` axis (ns since its origin, `--t0`), so
//! that runs line up from their origins, or on UTC with `--t0 @EPOCH`.

use std::collections::HashMap;

use datafusion::arrow::array::{Array, ArrayRef, AsArray};
use datafusion::arrow::datatypes::{
    DataType, Float64Type, Int32Type, Int64Type, UInt32Type, UInt64Type,
};
use datafusion::prelude::lit;
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::rows::string_values;
use crate::sample::SampleFilter;
use crate::session::Session;

/// A value of a span's arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Int(i64),
    Uint(u64),
    Double(f64),
    Text(String),
}

/// Where a span is drawn.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Place {
    /// On its thread's track.
    Thread,
    /// On a track of its thread with this name.
    ThreadTrack(String),
    /// On a track of its capture with this name.
    Capture(String),
}

/// A slice (with a duration) or an instant.
#[derive(Debug, Clone)]
pub struct Span {
    pub capture: Name,
    /// Its process; `None` where the input does not say.
    pub pid: Option<i32>,
    /// Its thread (the thread the track is of, for thread places).
    pub tid: Option<i32>,
    /// The thread's command.
    pub comm: Option<Name>,
    pub place: Place,
    /// ns on the trace's clock.
    pub start_ns: i64,
    /// `None`: an instant.
    pub duration_ns: Option<i64>,
    pub name: Name,
    /// What it is: `syscall`, `thread_state`, `tracepoint`, `pair`,
    /// `lbr`, `exhaustion`.
    pub category: &'static str,
    pub args: Vec<(Name, Arg)>,
}

/// A name many spans share (capture, command, event, argument): held
/// once (a trace of a million tracepoint events holds a few hundred).
pub type Name = std::sync::Arc<str>;

/// Each name once.
#[derive(Default)]
struct Names(HashMap<String, Name>);

impl Names {
    fn of(&mut self, s: &str) -> Name {
        if let Some(n) = self.0.get(s) {
            return n.clone();
        }
        let n: Name = s.into();
        self.0.insert(s.to_string(), n.clone());
        n
    }

    fn opt(&mut self, s: &Option<String>) -> Option<Name> {
        s.as_deref().map(|s| self.of(s))
    }
}

/// One reading of a counter: a monitoring metric (vmstat, sar, ...), the
/// power of a RAPL domain over the interval ending at it, or a process's
/// mapped bytes.
#[derive(Debug, Clone)]
pub struct Reading {
    pub capture: String,
    /// The input's file name: with the metric and entity, one series.
    /// Empty for a process's counters.
    pub input: String,
    pub metric: String,
    pub entity: Option<String>,
    /// The process a counter of a process is of.
    pub pid: Option<i32>,
    pub unit: Option<&'static str>,
    /// ns on the trace's clock.
    pub at_ns: i64,
    pub value: f64,
}

/// Two events paired into intervals (`tracepoint_pairs`).
#[derive(Debug, Clone, Default)]
pub struct PairSpec {
    pub start: String,
    pub end: String,
    pub key: Vec<String>,
    pub end_key: Vec<String>,
}

impl PairSpec {
    /// `START,END,KEY[,KEY...]`, a key `field=end_field` when the end
    /// event names it otherwise (`sched:sched_waking,sched:sched_switch,pid=next_pid`).
    pub fn parse(text: &str) -> Result<PairSpec> {
        let parts: Vec<&str> = text.split(',').map(str::trim).collect();
        if parts.len() < 3 || parts.iter().any(|p| p.is_empty()) {
            return Err(Error::Usage(format!(
                "--pair {text:?}: expected START,END,KEY[,KEY...] (e.g. block:block_rq_issue,block:block_rq_complete,dev,sector)"
            )));
        }
        let mut p = PairSpec {
            start: parts[0].to_string(),
            end: parts[1].to_string(),
            ..Default::default()
        };
        let renamed = parts[2..].iter().any(|k| k.contains('='));
        for k in &parts[2..] {
            let (a, b) = k.split_once('=').unwrap_or((k, k));
            p.key.push(a.to_string());
            if renamed {
                p.end_key.push(b.to_string());
            }
        }
        Ok(p)
    }

    fn name(&self) -> String {
        format!("{} → {}", self.start, self.end)
    }
}

/// An exhaustion rule to show the ranges of.
pub struct RuleSpec {
    pub text: String,
    pub rule: crate::ranges::Rule,
    pub opts: crate::ranges::RangeOpts,
}

/// What a trace holds besides the samples.
#[derive(Default)]
pub struct Trace {
    /// Several captures, each on its own `t_ns` axis.
    pub relative: bool,
    /// Per capture: added to its perf samples' `time_ns` to place them.
    pub sample_shift: HashMap<String, i64>,
    pub spans: Vec<Span>,
    pub readings: Vec<Reading>,
}

/// What to gather.
pub struct TraceOpts<'a> {
    /// The selection: captures (all when none), processes, threads,
    /// commands, time (capture clock, as samples are selected).
    pub filter: &'a SampleFilter,
    pub pairs: &'a [PairSpec],
    pub rule: Option<&'a RuleSpec>,
}

/// Per capture: the offset of its perf samples' input (moves `t_ns` onto
/// the trace's clock); the queries below follow it.
const REF: &str = "
WITH ref AS (
  SELECT b.capture, min(b.offset_ns) AS o
  FROM time_base b
  JOIN (SELECT DISTINCT capture, source_id FROM perf_sample) p
    ON p.capture = b.capture AND p.source_id = b.source_id
  GROUP BY b.capture
)";

const SHIFTS: &str = "
SELECT capture, o FROM ref WHERE $capture IS NULL OR array_has($capture, capture)";

/// Calls with a time on a capture's axis, on the trace's clock, by capture
/// and time.
const CALLS: &str = "
SELECT c.capture, c.pid, c.tgid,
       c.time_ns + b.offset_ns - CASE WHEN $relative THEN 0 ELSE COALESCE(r.o, 0) END AS ts,
       c.duration_ns, CAST(c.name AS VARCHAR) AS name, c.args, c.ret, c.fd_path, n.comm
FROM syscall c
JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id
LEFT JOIN ref r ON r.capture = c.capture
LEFT JOIN process_name n ON n.capture = c.capture AND n.pid = c.pid
WHERE c.time_ns IS NOT NULL AND b.offset_ns IS NOT NULL AND c.pid IS NOT NULL
  AND ($capture IS NULL OR array_has($capture, c.capture))
ORDER BY c.capture, ts, c.syscall_id";

/// Threads strace saw created in their parent's process
/// (`clone(...CLONE_THREAD...)` returning the new thread's id), in order.
const THREADS: &str = "
SELECT capture, pid, retval FROM syscall
WHERE name IN ('clone', 'clone3') AND tgid IS NULL AND retval > 0 AND pid IS NOT NULL
  AND args LIKE '%CLONE_THREAD%'
  AND ($capture IS NULL OR array_has($capture, capture))
ORDER BY capture, time_ns";

/// Thread states of perf's inputs, on perf's clock, by thread and time.
const STATES: &str = "
SELECT t.capture, t.pid, t.tid, t.start_ns, t.duration_ns, t.state, t.out_via, t.end_via
FROM thread_state t
WHERE $capture IS NULL OR array_has($capture, t.capture)
ORDER BY t.capture, t.tid, t.start_ns";

/// The tracepoint and probe events with samples.
const EVENTS: &str = "
SELECT DISTINCT CAST(f.event AS VARCHAR) AS event
FROM tracepoint_field f
WHERE $capture IS NULL OR array_has($capture, f.capture)
ORDER BY 1";

/// Metric readings placed on their capture's axis (not vmstat's averages
/// since boot), and RAPL readings as power (W: the interval's energy over
/// its length, at the interval's end) with the metric `power_w` and the
/// domain (and package) as entity; by series and time.
const READINGS: &str = "
SELECT m.capture, regexp_replace(s.path, '^.*/', '') AS input, CAST(m.metric AS VARCHAR) AS metric,
       CAST(m.entity AS VARCHAR) AS entity,
       m.t_ns - CASE WHEN $relative THEN 0 ELSE COALESCE(r.o, 0) END AS ts, m.value
FROM metric_t m
JOIN source s ON s.capture = m.capture AND s.source_id = m.source_id
LEFT JOIN ref r ON r.capture = m.capture
WHERE m.t_ns IS NOT NULL AND NOT m.since_boot
  AND ($capture IS NULL OR array_has($capture, m.capture))
UNION ALL
SELECT e.capture, regexp_replace(s.path, '^.*/', ''), 'power_w',
       concat(CAST(e.domain AS VARCHAR), CASE WHEN e.package IS NULL THEN '' ELSE concat(':', CAST(e.package AS VARCHAR)) END),
       e.t_ns - CASE WHEN $relative THEN 0 ELSE COALESCE(r.o, 0) END, e.delta_uj * 1e3 / CAST(e.interval_ns AS DOUBLE)
FROM energy_t e
JOIN source s ON s.capture = e.capture AND s.source_id = e.source_id
LEFT JOIN ref r ON r.capture = e.capture
WHERE e.t_ns IS NOT NULL AND e.delta_uj IS NOT NULL AND e.interval_ns > 0
  AND ($capture IS NULL OR array_has($capture, e.capture))
ORDER BY 1, 2, 3, 4, 5";

/// Bytes each process has mapped (mmap, brk, mremap; `memory_region`),
/// at every change, on the trace's clock.
const MAPPED: &str = "
, piece AS (
  SELECT m.capture, m.pid, m.from_ns + b.offset_ns AS t0, m.to_ns + b.offset_ns AS t1,
         CAST(m.bytes AS BIGINT) AS bytes
  FROM memory_region m
  JOIN syscall c ON c.capture = m.capture AND c.syscall_id = m.alloc_syscall_id
  JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id
  WHERE m.pid IS NOT NULL AND m.from_ns IS NOT NULL AND b.offset_ns IS NOT NULL
    AND ($capture IS NULL OR array_has($capture, m.capture))
),
step AS (
  SELECT capture, pid, t, sum(d) AS d FROM (
    SELECT capture, pid, t0 AS t, bytes AS d FROM piece
    UNION ALL
    SELECT capture, pid, t1, -bytes FROM piece WHERE t1 IS NOT NULL
  ) x GROUP BY capture, pid, t
)
SELECT s.capture, s.pid,
       s.t - CASE WHEN $relative THEN 0 ELSE COALESCE(r.o, 0) END AS ts,
       CAST(sum(s.d) OVER (PARTITION BY s.capture, s.pid ORDER BY s.t) AS DOUBLE) AS bytes
FROM step s
LEFT JOIN ref r ON r.capture = s.capture
ORDER BY 1, 2, 3";

/// Calls that change address spaces: only then is `memory_region` read.
const ANY_MAPPING_CALL: &str = "
SELECT count(*) FROM (SELECT 1 FROM syscall
  WHERE name IN ('mmap', 'mmap2', 'munmap', 'mremap', 'brk')
    AND ($capture IS NULL OR array_has($capture, capture)) LIMIT 1)";

/// Whether the captures hold what a part of the trace reads: its
/// queries (views over several tables) run only then.
const ANY_CALL: &str = "
SELECT count(*) FROM (SELECT 1 FROM syscall
  WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1)";

const ANY_SWITCH: &str = "
SELECT count(*) FROM (
  (SELECT 1 FROM perf_switch WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1)
  UNION ALL
  (SELECT 1 FROM perf_sched_switch WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1))";

const ANY_READING: &str = "
SELECT count(*) FROM (
  (SELECT 1 FROM metric WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1)
  UNION ALL
  (SELECT 1 FROM energy WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1))";

const ANY_BRANCH: &str = "
SELECT count(*) FROM (SELECT 1 FROM perf_branch
  WHERE $capture IS NULL OR array_has($capture, capture) LIMIT 1)";

/// LBR-timed points of branch entries, on perf's clock.
const LBR: &str = "
SELECT capture, pid, tid, comm, time_ns, CAST(round(weight_ns) AS BIGINT) AS d, function, event
FROM lbr_samples('cycles')
WHERE origin = 'lbr' AND weight_ns >= 1 AND time_ns IS NOT NULL
  AND ($capture IS NULL OR array_has($capture, capture))
ORDER BY capture, tid, time_ns";

/// Gathers what `opts` selects of `s`'s captures.
pub async fn gather(s: &Session, opts: &TraceOpts<'_>) -> Result<Trace> {
    let names: Vec<String> = if opts.filter.captures.is_empty() {
        s.captures().iter().map(|c| c.name.clone()).collect()
    } else {
        opts.filter.captures.clone()
    };
    let relative = names.len() > 1;
    let list = capture_list(&opts.filter.captures)?;
    let params = [
        ("capture", list),
        ("relative", ScalarValue::Boolean(Some(relative))),
    ];
    let mut t = Trace {
        relative,
        ..Default::default()
    };
    // Where each capture's perf times go; its perf input's offset (which
    // moves `t_ns` onto one capture's trace clock).
    let mut offset: HashMap<String, i64> = HashMap::new();
    for b in collect(s, &[REF, SHIFTS].concat(), &params).await? {
        let cap = string_values(b.column(0));
        let o = b.column(1).as_primitive::<Int64Type>();
        for (i, c) in cap.into_iter().enumerate() {
            let c = c.unwrap_or_default();
            offset.insert(c.clone(), opt(o, i).unwrap_or(0));
            let shift = match (relative, o.is_null(i)) {
                (false, _) => 0,
                (true, false) => o.value(i),
                (true, true) => {
                    return Err(Error::Usage(format!(
                        "{c}: its perf samples cannot be placed on the capture's time axis (see the time_base table), \
                         so it cannot share a trace with other captures: export it alone (--capture {c})"
                    )))
                }
            };
            t.sample_shift.insert(c, shift);
        }
    }
    let any = |q: &'static str| {
        let p = &params;
        async move { crate::session::count(s, q, p).await.map(|n| n > 0) }
    };
    if any(ANY_CALL).await? {
        calls(s, &params, &mut t.spans).await?;
    }
    if any(ANY_SWITCH).await? {
        states(s, &params, &t.sample_shift, &mut t.spans).await?;
    }
    instants(s, &opts.filter.captures, &t.sample_shift, &mut t.spans).await?;
    for p in opts.pairs {
        pairs(s, p, &opts.filter.captures, &t.sample_shift, &mut t.spans).await?;
    }
    if any(ANY_BRANCH).await? {
        lbr(s, &params, &t.sample_shift, &mut t.spans).await?;
    }
    if let Some(r) = opts.rule {
        // t_ns → the trace's clock: less the offset, with one capture.
        let to_trace = |c: &str| {
            if relative {
                0
            } else {
                offset.get(c).copied().unwrap_or(0)
            }
        };
        ranges(s, r, &names, to_trace, &mut t.spans).await?;
    }
    if any(ANY_READING).await? {
        readings(s, &params, &mut t.readings).await?;
    }
    if any(ANY_MAPPING_CALL).await? {
        mapped(s, &params, &mut t.readings).await?;
    }
    select(&mut t, opts.filter);
    Ok(t)
}

/// Keeps the spans and readings of the processes, threads, commands and
/// time the filter selects: slices overlapping the time range, instants
/// and readings in it (on the capture clock, as samples are selected); a
/// capture's own tracks (exhaustion ranges) by time alone, a process's
/// counters by process.
fn select(t: &mut Trace, f: &SampleFilter) {
    let shift = &t.sample_shift;
    let clock = |c: &str, ts: i64| ts - shift.get(c).copied().unwrap_or(0);
    let from = f.time_from_ns.unwrap_or(i64::MIN);
    let to = f.time_to_ns.unwrap_or(i64::MAX);
    t.spans.retain(|s| {
        let a = clock(&s.capture, s.start_ns);
        let in_time = match s.duration_ns {
            Some(d) if d > 0 => a + d > from && a < to,
            _ => a >= from && a < to,
        };
        let threadless = s.tid.is_none() && matches!(s.place, Place::Capture(_));
        in_time
            && (threadless
                || (f.pids.is_empty() || s.pid.is_some_and(|p| f.pids.contains(&p)))
                    && (f.tids.is_empty() || s.tid.is_some_and(|x| f.tids.contains(&x)))
                    && (f.comms.is_empty()
                        || s.comm
                            .as_ref()
                            .is_some_and(|c| f.comms.iter().any(|x| **x == **c))))
    });
    t.readings.retain(|r| {
        let a = clock(&r.capture, r.at_ns);
        a >= from
            && a < to
            && (r.pid.is_none() || f.pids.is_empty() || r.pid.is_some_and(|p| f.pids.contains(&p)))
    });
}

async fn collect(
    s: &Session,
    q: &str,
    params: &[(&str, ScalarValue)],
) -> Result<Vec<datafusion::arrow::record_batch::RecordBatch>> {
    Ok(s.sql_with(q, params).await?.collect().await?)
}

fn i64s(a: &ArrayRef) -> Result<ArrayRef> {
    Ok(datafusion::arrow::compute::cast(a, &DataType::Int64)
        .map_err(datafusion::error::DataFusionError::from)?)
}

fn opt<T: datafusion::arrow::datatypes::ArrowPrimitiveType>(
    a: &datafusion::arrow::array::PrimitiveArray<T>,
    i: usize,
) -> Option<T::Native> {
    (!a.is_null(i)).then(|| a.value(i))
}

/// The traced calls: slices on their thread (instants when the dump has no
/// durations). Calls of a dump of one process without `-f` (no thread id)
/// and of an input not placed on its capture's axis are left out.
async fn calls(s: &Session, params: &[(&str, ScalarValue)], out: &mut Vec<Span>) -> Result<()> {
    // strace's threads → their process.
    let mut process: HashMap<(String, i32), i32> = HashMap::new();
    for b in collect(s, THREADS, params).await? {
        let cap = string_values(b.column(0));
        let parent = b.column(1).as_primitive::<Int32Type>();
        let child = i64s(b.column(2))?;
        let child = child.as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let c = cap[i].clone().unwrap_or_default();
            let p = parent.value(i);
            let root = process.get(&(c.clone(), p)).copied().unwrap_or(p);
            if let Ok(tid) = i32::try_from(child.value(i)) {
                process.insert((c, tid), root);
            }
        }
    }
    let mut names = Names::default();
    for b in collect(s, &[REF, CALLS].concat(), params).await? {
        let cap = string_values(b.column(0));
        let tid = b.column(1).as_primitive::<Int32Type>();
        let pid = b.column(2).as_primitive::<Int32Type>();
        let ts = i64s(b.column(3))?;
        let ts = ts.as_primitive::<Int64Type>();
        let dur = b.column(4).as_primitive::<Int64Type>();
        let name = string_values(b.column(5));
        let args = string_values(b.column(6));
        let ret = string_values(b.column(7));
        let fd = string_values(b.column(8));
        let comm = string_values(b.column(9));
        for i in 0..b.num_rows() {
            let capture = cap[i].clone().unwrap_or_default();
            let tid = tid.value(i);
            let pid = opt(pid, i)
                .or_else(|| process.get(&(capture.clone(), tid)).copied())
                .unwrap_or(tid);
            let mut a = vec![(
                names.of("args"),
                Arg::Text(args[i].clone().unwrap_or_default()),
            )];
            if let Some(r) = &ret[i] {
                a.push((names.of("ret"), Arg::Text(r.clone())));
            }
            if let Some(f) = &fd[i] {
                a.push((names.of("file"), Arg::Text(f.clone())));
            }
            out.push(Span {
                capture: names.of(&capture),
                pid: Some(pid),
                tid: Some(tid),
                comm: names.opt(&comm[i]),
                place: Place::Thread,
                start_ns: ts.value(i),
                duration_ns: opt(dur, i).map(|d| d.max(0)),
                name: names.of(name[i].as_deref().unwrap_or_default()),
                category: "syscall",
                args: a,
            });
        }
    }
    Ok(())
}

/// The track thread states are drawn on.
pub const STATE_TRACK: &str = "thread state";

/// Thread states: `Running`, or off the CPU named by the state it left in.
async fn states(
    s: &Session,
    params: &[(&str, ScalarValue)],
    shift: &HashMap<String, i64>,
    out: &mut Vec<Span>,
) -> Result<()> {
    let mut names = Names::default();
    for b in collect(s, STATES, params).await? {
        let cap = string_values(b.column(0));
        let pid = b.column(1).as_primitive::<Int32Type>();
        let tid = b.column(2).as_primitive::<Int32Type>();
        let start = b.column(3).as_primitive::<Int64Type>();
        let dur = b.column(4).as_primitive::<Int64Type>();
        let state = string_values(b.column(5));
        let out_via = string_values(b.column(6));
        let end_via = string_values(b.column(7));
        for i in 0..b.num_rows() {
            let capture = cap[i].clone().unwrap_or_default();
            let st = state[i].clone().unwrap_or_default();
            let mut args = Vec::new();
            if let Some(v) = &out_via[i] {
                args.push((names.of("switched out by"), Arg::Text(v.clone())));
            }
            if let Some(v) = &end_via[i] {
                args.push((names.of("end known by"), Arg::Text(v.clone())));
            }
            out.push(Span {
                start_ns: start.value(i) + shift.get(&capture).copied().unwrap_or(0),
                capture: names.of(&capture),
                pid: opt(pid, i),
                tid: Some(tid.value(i)),
                comm: None,
                place: Place::ThreadTrack(STATE_TRACK.into()),
                duration_ns: Some(dur.value(i).max(0)),
                name: names.of(&state_name(&st)),
                category: "thread_state",
                args,
            });
        }
    }
    Ok(())
}

/// A thread state as Perfetto names its own.
fn state_name(s: &str) -> String {
    let base = s.trim_end_matches('+');
    let name = match base {
        "running" => "Running",
        "R" => "Runnable (Preempted)",
        "S" => "Sleeping",
        "D" => "Uninterruptible Sleep",
        "T" => "Stopped",
        "t" => "Traced",
        "X" => "Exit (Dead)",
        "Z" => "Exit (Zombie)",
        "P" => "Parked",
        "I" => "Idle",
        "blocked" => "Blocked",
        other => return other.to_string(),
    };
    name.to_string()
}

/// Tracepoint and probe samples as instants on their thread, with every
/// field of the event's format.
async fn instants(
    s: &Session,
    captures: &[String],
    shift: &HashMap<String, i64>,
    out: &mut Vec<Span>,
) -> Result<()> {
    let events: Vec<String> = collect(s, EVENTS, &[("capture", capture_list(captures)?)])
        .await?
        .iter()
        .flat_map(|b| string_values(b.column(0)))
        .flatten()
        .filter(|e| {
            e != "sched:sched_switch"
                && !e.starts_with("syscalls:sys_enter_")
                && !e.starts_with("syscalls:sys_exit_")
        })
        .collect();
    let mut names = Names::default();
    for ev in events {
        let mut args = vec![lit(ev.as_str())];
        for c in captures {
            args.extend([lit("capture"), lit(c.as_str())]);
        }
        let df = crate::functions::call(s, "tracepoint", &args).await?;
        let fields: Vec<Name> = df
            .schema()
            .fields()
            .iter()
            .map(|f| names.of(f.name()))
            .collect();
        let event = names.of(&ev);
        for b in df.collect().await? {
            let cap = string_values(b.column(0));
            let time = b.column(2).as_primitive::<Int64Type>();
            let pid = b.column(3).as_primitive::<Int32Type>();
            let tid = b.column(4).as_primitive::<Int32Type>();
            let cpu = b.column(5).as_primitive::<UInt32Type>();
            let comm = string_values(b.column(6));
            let columns: Vec<(usize, Fielded)> = (8..b.num_columns())
                .map(|j| Ok((j, Fielded::of(b.column(j))?)))
                .collect::<Result<_>>()?;
            for i in 0..b.num_rows() {
                let Some(t) = opt(time, i) else { continue };
                let capture = cap[i].clone().unwrap_or_default();
                let mut a = Vec::with_capacity(columns.len() + 1);
                if let Some(c) = opt(cpu, i) {
                    // `cpu`, or `common_cpu` when a field takes the name.
                    a.push((fields[5].clone(), Arg::Int(c as i64)));
                }
                for (j, f) in &columns {
                    if let Some(v) = f.at(i) {
                        a.push((fields[*j].clone(), v));
                    }
                }
                out.push(Span {
                    start_ns: t + shift.get(&capture).copied().unwrap_or(0),
                    capture: names.of(&capture),
                    pid: opt(pid, i),
                    tid: opt(tid, i),
                    comm: names.opt(&comm[i]),
                    place: Place::Thread,
                    duration_ns: None,
                    name: event.clone(),
                    category: "tracepoint",
                    args: a,
                });
            }
        }
    }
    Ok(())
}

/// A field column read as span arguments.
enum Fielded {
    Int(ArrayRef),
    Uint(ArrayRef),
    Double(ArrayRef),
    Text(Vec<Option<String>>),
}

impl Fielded {
    fn of(a: &ArrayRef) -> Result<Fielded> {
        use DataType::*;
        Ok(match a.data_type() {
            Int8 | Int16 | Int32 | Int64 | UInt8 | UInt16 | UInt32 | Boolean => {
                Fielded::Int(i64s(a)?)
            }
            UInt64 => Fielded::Uint(a.clone()),
            Float32 | Float64 => Fielded::Double(
                datafusion::arrow::compute::cast(a, &Float64)
                    .map_err(datafusion::error::DataFusionError::from)?,
            ),
            Utf8 | LargeUtf8 | Utf8View | Dictionary(_, _) => Fielded::Text(string_values(a)),
            _ => {
                // Arrays, bytes: as DataFusion prints them.
                let f = datafusion::arrow::util::display::ArrayFormatter::try_new(
                    a.as_ref(),
                    &Default::default(),
                )
                .map_err(datafusion::error::DataFusionError::from)?;
                Fielded::Text(
                    (0..a.len())
                        .map(|i| (!a.is_null(i)).then(|| f.value(i).to_string()))
                        .collect(),
                )
            }
        })
    }

    fn at(&self, i: usize) -> Option<Arg> {
        match self {
            Fielded::Int(a) => {
                let a = a.as_primitive::<Int64Type>();
                opt(a, i).map(Arg::Int)
            }
            Fielded::Uint(a) => opt(a.as_primitive::<UInt64Type>(), i).map(Arg::Uint),
            Fielded::Double(a) => opt(a.as_primitive::<Float64Type>(), i).map(Arg::Double),
            Fielded::Text(v) => v[i].clone().map(Arg::Text),
        }
    }
}

/// The intervals of a pair of events, on a track of their capture.
async fn pairs(
    s: &Session,
    p: &PairSpec,
    captures: &[String],
    shift: &HashMap<String, i64>,
    out: &mut Vec<Span>,
) -> Result<()> {
    // start, end and the first key by position.
    let mut args = vec![
        lit(p.start.as_str()),
        lit(p.end.as_str()),
        lit(p.key[0].as_str()),
    ];
    for k in &p.key[1..] {
        args.extend([lit("key"), lit(k.as_str())]);
    }
    for k in &p.end_key {
        args.extend([lit("end_key"), lit(k.as_str())]);
    }
    for c in captures {
        args.extend([lit("capture"), lit(c.as_str())]);
    }
    let name = p.name();
    let df = crate::functions::call(s, "tracepoint_pairs", &args).await?;
    let mut names = Names::default();
    for b in df.collect().await? {
        let col = |n: &str| {
            b.column_by_name(n)
                .cloned()
                .ok_or_else(|| Error::Usage(format!("tracepoint_pairs: no {n}")))
        };
        let cap = string_values(&col("capture")?);
        let start = col("start_ns")?;
        let start = start.as_primitive::<Int64Type>();
        let dur = col("duration_ns")?;
        let dur = dur.as_primitive::<Int64Type>();
        let pid = col("pid")?;
        let pid = pid.as_primitive::<Int32Type>();
        let tid = col("tid")?;
        let tid = tid.as_primitive::<Int32Type>();
        let end_tid = col("end_tid")?;
        let end_tid = end_tid.as_primitive::<Int32Type>();
        let comm = string_values(&col("comm")?);
        let key = string_values(&col("key")?);
        for i in 0..b.num_rows() {
            let capture = cap[i].clone().unwrap_or_default();
            let mut a = Vec::new();
            if let Some(k) = &key[i] {
                a.push((names.of(&p.key.join("/")), Arg::Text(k.clone())));
            }
            for (n, v) in [("tid", opt(tid, i)), ("end tid", opt(end_tid, i))] {
                if let Some(v) = v {
                    a.push((names.of(n), Arg::Int(v as i64)));
                }
            }
            out.push(Span {
                start_ns: start.value(i) + shift.get(&capture).copied().unwrap_or(0),
                capture: names.of(&capture),
                pid: opt(pid, i),
                tid: opt(tid, i),
                comm: names.opt(&comm[i]),
                place: Place::Capture(name.clone()),
                duration_ns: Some(dur.value(i).max(0)),
                name: names.of(&name),
                category: "pair",
                args: a,
            });
        }
    }
    Ok(())
}

/// The track LBR-timed points are drawn on.
pub const LBR_TRACK: &str = "LBR-timed";

/// Branch entries timed by their cycle counts: a slice of the function the
/// branch left, ending where the next entry (or the sample) begins.
async fn lbr(
    s: &Session,
    params: &[(&str, ScalarValue)],
    shift: &HashMap<String, i64>,
    out: &mut Vec<Span>,
) -> Result<()> {
    let mut names = Names::default();
    for b in collect(s, LBR, params).await? {
        let cap = string_values(b.column(0));
        let pid = b.column(1).as_primitive::<Int32Type>();
        let tid = b.column(2).as_primitive::<Int32Type>();
        let comm = string_values(b.column(3));
        let end = b.column(4).as_primitive::<Int64Type>();
        let d = b.column(5).as_primitive::<Int64Type>();
        let function = string_values(b.column(6));
        let event = string_values(b.column(7));
        for i in 0..b.num_rows() {
            let capture = cap[i].clone().unwrap_or_default();
            let d = d.value(i).max(0);
            out.push(Span {
                start_ns: end.value(i) - d + shift.get(&capture).copied().unwrap_or(0),
                capture: names.of(&capture),
                pid: opt(pid, i),
                tid: opt(tid, i),
                comm: names.opt(&comm[i]),
                place: Place::ThreadTrack(LBR_TRACK.into()),
                duration_ns: Some(d),
                name: names.of(function[i].as_deref().unwrap_or_default()),
                category: "lbr",
                args: vec![(
                    names.of("event"),
                    Arg::Text(event[i].clone().unwrap_or_default()),
                )],
            });
        }
    }
    Ok(())
}

/// A rule's exhaustion ranges, on a track of each capture.
async fn ranges(
    s: &Session,
    r: &RuleSpec,
    names: &[String],
    to_trace: impl Fn(&str) -> i64,
    out: &mut Vec<Span>,
) -> Result<()> {
    let per = crate::ranges::ranges(s, &r.rule, r.opts).await?;
    let track = format!("exhaustion: {}", r.text);
    for (cap, ranges) in per {
        if !names.contains(&cap) {
            continue;
        }
        let o = to_trace(&cap);
        for x in ranges {
            out.push(Span {
                capture: cap.as_str().into(),
                pid: None,
                tid: None,
                comm: None,
                place: Place::Capture(track.clone()),
                start_ns: x.start - o,
                duration_ns: Some(x.end - x.start),
                name: r.text.as_str().into(),
                category: "exhaustion",
                args: Vec::new(),
            });
        }
    }
    Ok(())
}

/// `$capture`: the captures named, or a null list (all).
fn capture_list(captures: &[String]) -> Result<ScalarValue> {
    Ok(if captures.is_empty() {
        ScalarValue::try_from(DataType::List(std::sync::Arc::new(
            datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
        )))?
    } else {
        ScalarValue::List(ScalarValue::new_list_nullable(
            &captures
                .iter()
                .map(|c| ScalarValue::from(c.as_str()))
                .collect::<Vec<_>>(),
            &DataType::Utf8,
        ))
    })
}

/// The metric readings (and RAPL power) on the trace's clock.
async fn readings(
    s: &Session,
    params: &[(&str, ScalarValue)],
    out: &mut Vec<Reading>,
) -> Result<()> {
    for b in collect(s, &[REF, READINGS].concat(), params).await? {
        let cap = string_values(b.column(0));
        let input = string_values(b.column(1));
        let metric = string_values(b.column(2));
        let entity = string_values(b.column(3));
        let ts = i64s(b.column(4))?;
        let ts = ts.as_primitive::<Int64Type>();
        let value = b.column(5).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if value.is_null(i) || ts.is_null(i) {
                continue;
            }
            let metric = metric[i].clone().unwrap_or_default();
            out.push(Reading {
                capture: cap[i].clone().unwrap_or_default(),
                input: input[i].clone().unwrap_or_default(),
                unit: (metric == "power_w").then_some("W"),
                metric,
                entity: entity[i].clone(),
                pid: None,
                at_ns: ts.value(i),
                value: value.value(i),
            });
        }
    }
    Ok(())
}

/// The metric a process's mapped bytes are named by.
pub const MAPPED_METRIC: &str = "mapped bytes";

/// Each process's mapped bytes, a reading per change.
async fn mapped(s: &Session, params: &[(&str, ScalarValue)], out: &mut Vec<Reading>) -> Result<()> {
    for b in collect(s, &[REF, MAPPED].concat(), params).await? {
        let cap = string_values(b.column(0));
        let pid = b.column(1).as_primitive::<Int32Type>();
        let ts = i64s(b.column(2))?;
        let ts = ts.as_primitive::<Int64Type>();
        let bytes = b.column(3).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if ts.is_null(i) || bytes.is_null(i) {
                continue;
            }
            out.push(Reading {
                capture: cap[i].clone().unwrap_or_default(),
                input: String::new(),
                metric: MAPPED_METRIC.into(),
                entity: None,
                pid: opt(pid, i),
                unit: Some("bytes"),
                at_ns: ts.value(i),
                value: bytes.value(i),
            });
        }
    }
    Ok(())
}
