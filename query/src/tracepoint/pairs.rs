//! `tracepoint_pairs(start, end, key, ...)`: intervals between paired
//! events — a start event and the next end event with the same key, e.g.
//! `block:block_rq_issue` → `block:block_rq_complete` by `dev` and
//! `sector` (block I/O latency), `sched:sched_waking` → `sched:sched_switch`
//! by `pid` = `next_pid` (wake-up latency), `syscalls:sys_enter_openat` →
//! `syscalls:sys_exit_openat` by `common_pid` (the thread),
//! `irq:irq_handler_entry` → `irq:irq_handler_exit` by `irq`.
//!
//! Pairing follows the in-kernel tools (biolatency, runqlat of BCC: a map
//! from key to start time): in time order, a start records its key (a later
//! start with the same key replaces it), an end takes the start recorded
//! under its key, if any. An end without a start (its start came before
//! the recording) and a start without an end are left out. When the start
//! and the end are the same event (`sched_switch` → `sched_switch`: the
//! thread switched in by `next_pid` until switched out by `prev_pid`), a
//! sample ends the interval of its end key before it starts its own.
//!
//! Keys are fields of the events' formats, or `common_pid` (the thread
//! the event happened in, as the format's header names it) and
//! `common_cpu` (its CPU). The rows are computed (in Rust, from the two
//! events' `tracepoint` views) when a query first scans them.

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Int64Builder, RecordBatch, StringBuilder, UInt64Array,
};
use datafusion::arrow::compute::{concat_batches, take};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::plan_err;
use datafusion::error::{DataFusionError, Result as DfResult};
use datafusion::prelude::lit;

use super::formats;
use crate::error::Result;
use crate::functions::{text, texts, Bound, Kind, Param, Spec};
use crate::report::{Answer, Captures, Given, Opt, Report, Selects};
use crate::rows::string_values;
use crate::session::{Session, Shared};
use futures::future::BoxFuture;

/// The name the pair analyses read their intervals under.
pub const TABLE: &str = "_tracepoint_pair";

/// The columns of an interval.
pub fn schema() -> SchemaRef {
    let f = |n: &str, t: DataType, null: bool| Field::new(n, t, null);
    Arc::new(Schema::new(vec![
        f("capture", DataType::Utf8, false),
        f("segment", DataType::Utf8, false),
        f("start_sample_id", DataType::Int64, false),
        f("end_sample_id", DataType::Int64, false),
        f("start_ns", DataType::Int64, false),
        f("end_ns", DataType::Int64, false),
        f("duration_ns", DataType::Int64, false),
        f("pid", DataType::Int32, true),
        f("tid", DataType::Int32, true),
        f("comm", DataType::Utf8, true),
        f("cpu", DataType::UInt32, true),
        f("stack_id", DataType::Int64, true),
        f("end_pid", DataType::Int32, true),
        f("end_tid", DataType::Int32, true),
        f("end_cpu", DataType::UInt32, true),
        f("key", DataType::Utf8, true),
    ]))
}

/// The parameters of the pair analyses.
pub const PARAMS: &[Param] = &[
    Param { name: "start", kind: Kind::Text, doc: "the start event, system:name (e.g. block:block_rq_issue)" },
    Param { name: "end", kind: Kind::Text, doc: "the end event (e.g. block:block_rq_complete)" },
    Param { name: "key", kind: Kind::TextList, doc: "the fields that pair them (e.g. dev, sector; common_pid: the thread, common_cpu: the CPU)" },
    Param { name: "end_key", kind: Kind::TextList, doc: "the end event's fields when named otherwise (e.g. next_pid for a sched_waking pid)" },
    Param { name: "pid", kind: Kind::IntList, doc: "only intervals started by these processes" },
    Param { name: "tid", kind: Kind::IntList, doc: "only intervals started by these threads" },
    Param { name: "comm", kind: Kind::TextList, doc: "only intervals started by these commands" },
    Param { name: "from_ns", kind: Kind::Int, doc: "only intervals starting at or after this time_ns" },
    Param { name: "to_ns", kind: Kind::Int, doc: "only intervals starting before this time_ns" },
    Param { name: "capture", kind: Kind::TextList, doc: "only these captures" },
];

/// `tracepoint_pairs(start, end, key, ...)`.
pub static TRACEPOINT_PAIRS: Spec = Spec {
    name: "tracepoint_pairs",
    doc: "Intervals between paired events: each end event with the latest earlier start event of the same key (block_rq_issue → block_rq_complete by dev, sector; sched_waking → sched_switch by pid = next_pid; sys_enter → sys_exit by common_pid), with the start's process, thread, CPU and stack.",
    sql: include_str!("../../analyses/perf/tracepoint_pairs.sql"),
    positional: 3,
    params: PARAMS,
    columns: None,
    inputs: Some(inputs),
};

/// `latency(start, end, key, ..., 'by', BY)`.
pub static LATENCY: Spec = Spec {
    name: "latency",
    doc: "How long from a start event to its paired end event (tracepoint_pairs): a log2 histogram of microseconds as biolatency prints it, or per function of the start's stack, process, thread or key, with counts, total, mean, min and max.",
    sql: include_str!("../../analyses/perf/latency.sql"),
    positional: 3,
    params: &[
        PARAMS[0], PARAMS[1], PARAMS[2], PARAMS[3], PARAMS[4], PARAMS[5], PARAMS[6],
        PARAMS[7], PARAMS[8], PARAMS[9],
        Param { name: "by", kind: Kind::Text, doc: "histogram (default: log2 buckets of µs), function (of the start's stack), process, thread or key" },
    ],
    columns: None,
    inputs: Some(inputs),
};

/// What `latency` sums the intervals per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LatencyBy {
    Histogram,
    Function,
    Process,
    Thread,
    Key,
}

impl crate::choice::Choice for LatencyBy {
    const ALL: &'static [Self] = &[
        LatencyBy::Histogram,
        LatencyBy::Function,
        LatencyBy::Process,
        LatencyBy::Thread,
        LatencyBy::Key,
    ];
    fn name(self) -> &'static str {
        match self {
            LatencyBy::Histogram => "histogram",
            LatencyBy::Function => "function",
            LatencyBy::Process => "process",
            LatencyBy::Thread => "thread",
            LatencyBy::Key => "key",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            LatencyBy::Histogram => {
                "Intervals per power-of-two range of µs, as biolatency prints them."
            }
            LatencyBy::Function => "The innermost user function of the start's stack.",
            LatencyBy::Process => "The process the start happened in.",
            LatencyBy::Thread => "The thread the start happened in.",
            LatencyBy::Key => "The key that paired them.",
        }
    }
}

/// `trawl report latency`.
pub static LATENCY_REPORT: Report = Report {
    name: "latency",
    about: "How long from a start event to its paired end event (block I/O issue → completion by dev and sector, wake-up → switch-in, syscall entry → exit by thread): a log2 histogram of µs as biolatency prints it, or per function of the start's stack, process, thread or key.",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::text("start", "The start event, SYSTEM:NAME (e.g. block:block_rq_issue).").required(),
            Opt::text("end", "The end event (e.g. block:block_rq_complete).").required(),
            Opt::text("key", "The fields that pair a start with its end (repeatable, e.g. --key dev --key sector; common_pid: the thread, common_cpu: the CPU).").many().required(),
            Opt::text("end_key", "The end event's fields, when named otherwise (e.g. --key pid --end-key next_pid for sched_waking → sched_switch).").many(),
            Opt::choice::<LatencyBy>("by", "A log2 histogram of µs (default, as biolatency prints it), or per function of the start's stack, process, thread or key.").default("histogram"),
        ]
    },
    selects: Selects::Threads,
    t0: false,
    limit: true,
    run: run_latency,
};

fn run_latency<'a>(s: &'a Session, g: &'a Given) -> BoxFuture<'a, Result<Answer>> {
    Box::pin(async move {
        let mut args = vec![
            lit(g.text("start").unwrap_or_default()),
            lit(g.text("end").unwrap_or_default()),
        ];
        for name in ["key", "end_key"] {
            for k in g.texts(name) {
                args.extend([lit(name), lit(k.as_str())]);
            }
        }
        args.extend([lit("by"), lit(g.text("by").unwrap_or("histogram"))]);
        g.filter(s).await?.selection_args(&mut args);
        Ok(Answer::rows(
            crate::functions::call(s, "latency", &args).await?,
        ))
    })
}

/// The interval table of a call (computed when first scanned).
fn inputs(
    b: &Bound,
    shared: &Arc<Shared>,
) -> DfResult<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let (Some(start), Some(end)) = (text(b, "start"), text(b, "end")) else {
        return plan_err!("tracepoint pairs: give the start and end events, e.g. tracepoint_pairs('block:block_rq_issue', 'block:block_rq_complete', ['dev', 'sector'])");
    };
    let key = texts(b, "key")?;
    if key.is_empty() {
        return plan_err!("tracepoint pairs: give the key: the fields that pair {start} with {end} (e.g. ['dev', 'sector'], 'common_pid' for the thread)");
    }
    let end_key = match texts(b, "end_key")? {
        k if k.is_empty() => key.clone(),
        k if k.len() == key.len() => k,
        k => {
            return plan_err!(
                "tracepoint pairs: end_key names {} fields, key {}",
                k.len(),
                key.len()
            )
        }
    };
    let f = formats(shared)?;
    for (event, keys) in [(&start, &key), (&end, &end_key)] {
        let Some(layouts) = f.events.get(event) else {
            return plan_err!("tracepoint pairs: no format for {event:?} in these captures (see tracepoint_events())");
        };
        for k in keys {
            let known = matches!(k.as_str(), "common_pid" | "common_cpu")
                || layouts
                    .keys()
                    .all(|fs| fs.iter().any(|x| &x.field == k && !x.common));
            if !known {
                return plan_err!("tracepoint pairs: {event} has no field {k:?} (its fields: tracepoint_events())");
            }
        }
    }
    let start_sel = selection(b, &start);
    let end_sel = selection(b, &end);
    let table = crate::tables::LazyTable::new(
        "tracepoint_pairs",
        schema(),
        shared.clone(),
        move |s: Session| {
            let (start_sel, end_sel) = (start_sel.clone(), end_sel.clone());
            let (key, end_key) = (key.clone(), end_key.clone());
            async move {
                let starts = side(&s, &start_sel, &key).await?;
                let ends = side(&s, &end_sel, &end_key).await?;
                Ok(vec![s.shared.with_segment(&pair(&starts, &ends)?)?])
            }
        },
    );
    Ok(vec![(TABLE, Arc::new(table))])
}

/// The arguments of the `tracepoint` call that reads one side: every
/// sample of the event in the selected captures (the other filters select
/// intervals, after pairing: a start of another process may replace one
/// under the same key).
fn selection(b: &Bound, event: &str) -> Vec<datafusion::logical_expr::Expr> {
    let mut args = vec![lit(event)];
    if let Some(v) = b.get("capture").filter(|v| !v.is_null()) {
        args.push(lit("capture"));
        args.push(lit(v.clone()));
    }
    args
}

/// One side's samples: the sample columns and the key as text.
struct Side {
    rows: RecordBatch,
    key: Vec<Option<String>>,
}

async fn side(
    s: &Session,
    args: &[datafusion::logical_expr::Expr],
    key: &[String],
) -> Result<Side> {
    let df = crate::functions::call(s, "tracepoint", args).await?;
    let names: Vec<String> = df
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    // A sample column is `common_NAME` when a field took its name.
    let sample = |c: &str| {
        let common = format!("common_{c}");
        if names.iter().any(|n| *n == common) {
            common
        } else {
            c.to_string()
        }
    };
    let key_cols: Vec<String> = key
        .iter()
        .map(|k| match k.as_str() {
            "common_pid" => sample("tid"),
            "common_cpu" => sample("cpu"),
            f => f.to_string(),
        })
        .collect();
    let mut cols: Vec<String> = [
        "capture",
        "sample_id",
        "time_ns",
        "pid",
        "tid",
        "comm",
        "cpu",
        "stack_id",
    ]
    .iter()
    .map(|c| sample(c))
    .collect();
    // Each key column's place among the selected ones (a key may be a
    // sample column: the thread, the CPU).
    let mut key_at = Vec::new();
    for k in key_cols {
        match cols.iter().position(|c| *c == k) {
            Some(i) => key_at.push(i),
            None => {
                cols.push(k);
                key_at.push(cols.len() - 1);
            }
        }
    }
    let refs: Vec<&str> = cols.iter().map(String::as_str).collect();
    let schema = Arc::new(
        df.schema()
            .as_arrow()
            .project(
                &refs
                    .iter()
                    .map(|c| df.schema().as_arrow().index_of(c))
                    .collect::<std::result::Result<Vec<_>, _>>()
                    .map_err(DataFusionError::from)?,
            )
            .map_err(DataFusionError::from)?,
    );
    let batches = df.select_columns(&refs)?.collect().await?;
    let rows = concat_batches(&schema, &batches).map_err(DataFusionError::from)?;
    let parts: Vec<Vec<Option<String>>> = key_at
        .iter()
        .map(|&i| string_values(rows.column(i)))
        .collect();
    let key = (0..rows.num_rows())
        .map(|r| {
            let mut k = String::new();
            for (j, p) in parts.iter().enumerate() {
                if j > 0 {
                    k.push('/');
                }
                k.push_str(p[r].as_deref()?);
            }
            Some(k)
        })
        .collect();
    Ok(Side { rows, key })
}

/// Pairs the two sides in time order.
fn pair(starts: &Side, ends: &Side) -> DfResult<RecordBatch> {
    let cap = |s: &Side| string_values(s.rows.column(0));
    let (scap, ecap) = (cap(starts), cap(ends));
    let ids = |s: &Side| s.rows.column(1).as_primitive::<Int64Type>().clone();
    let times = |s: &Side| s.rows.column(2).as_primitive::<Int64Type>().clone();
    let (sid, eid, st, et) = (ids(starts), ids(ends), times(starts), times(ends));
    // (capture, time, sample, side: 0 end before 1 start, row)
    let mut order: Vec<(&str, i64, i64, u8, usize)> = Vec::new();
    for (side, caps, t, id) in [(1u8, &scap, &st, &sid), (0u8, &ecap, &et, &eid)] {
        for r in 0..t.len() {
            if t.is_null(r) {
                continue;
            }
            order.push((
                caps[r].as_deref().unwrap_or(""),
                t.value(r),
                id.value(r),
                side,
                r,
            ));
        }
    }
    order.sort_unstable();
    let mut open: HashMap<(&str, &str), usize> = HashMap::new();
    let (mut si, mut ei) = (Vec::new(), Vec::new());
    for (c, _, _, side, r) in order {
        if side == 1 {
            if let Some(k) = starts.key[r].as_deref() {
                open.insert((c, k), r);
            }
        } else if let Some(k) = ends.key[r].as_deref() {
            if let Some(s) = open.remove(&(c, k)) {
                si.push(s as u64);
                ei.push(r as u64);
            }
        }
    }
    let si = UInt64Array::from(si);
    let ei = UInt64Array::from(ei);
    let pick = |s: &Side, i: usize, idx: &UInt64Array| -> DfResult<ArrayRef> {
        Ok(take(s.rows.column(i), idx, None)?)
    };
    let n = si.len();
    let mut dur = Int64Builder::with_capacity(n);
    let mut key = StringBuilder::with_capacity(n, n * 8);
    for j in 0..n {
        let (s, e) = (si.value(j) as usize, ei.value(j) as usize);
        dur.append_value(et.value(e) - st.value(s));
        key.append_option(starts.key[s].as_deref());
    }
    let cast = |a: ArrayRef, t: &DataType| -> DfResult<ArrayRef> {
        Ok(datafusion::arrow::compute::cast(&a, t)?)
    };
    let cols: Vec<ArrayRef> = vec![
        cast(pick(starts, 0, &si)?, &DataType::Utf8)?,
        pick(starts, 1, &si)?,
        pick(ends, 1, &ei)?,
        pick(starts, 2, &si)?,
        pick(ends, 2, &ei)?,
        Arc::new(dur.finish()),
        pick(starts, 3, &si)?,
        pick(starts, 4, &si)?,
        cast(pick(starts, 5, &si)?, &DataType::Utf8)?,
        pick(starts, 6, &si)?,
        pick(starts, 7, &si)?,
        pick(ends, 3, &ei)?,
        pick(ends, 4, &ei)?,
        pick(ends, 6, &ei)?,
        Arc::new(key.finish()),
    ];
    let mut fields = schema().fields().to_vec();
    fields.remove(1); // `segment`: the caller adds it
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)?)
}
