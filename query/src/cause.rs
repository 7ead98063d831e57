//! What used a resource inside exhaustion ranges (Morita et al., H/W
//! resource exhaustion analysis, stage B): per range, process, application
//! function, actual function and application source line, the same shape
//! as the unfreed and I/O reports.
//!
//! - `cpu`: the CPU time of the perf samples taken in the range (period:
//!   ns for `cpu-clock`), with its share of all samples in the range;
//! - `memory`: the bytes allocated (mmap/brk/mremap, not freed) at the
//!   range's start;
//! - `io`: the bytes transferred by read/write-like calls from `lead`
//!   before the range to its end.
//!
//! Each is a SQL table function (`cause_cpu`, `cause_memory`, `cause_io`:
//! `analyses/cause/*.sql`) over `_cause_range`, the ranges with the moment
//! memory is looked at, which a call computes in Rust from its rule (or
//! explicit range).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, AsArray, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::datasource::MemTable;
use datafusion::logical_expr::Expr;
use datafusion::prelude::{lit, DataFrame};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::functions::{Bound, Kind, Param, Spec};
use crate::ranges::{Range, RangeOpts, Rule};
use crate::session::Session;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Cpu,
    Memory,
    Io,
}

impl Resource {
    pub fn parse(s: &str) -> Result<Resource> {
        Ok(match s {
            "cpu" => Resource::Cpu,
            "memory" | "mem" => Resource::Memory,
            "io" => Resource::Io,
            _ => {
                return Err(Error::Usage(format!(
                    "--resource {s:?}: expected cpu, memory or io"
                )))
            }
        })
    }
}

/// When, inside a range, memory is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MemoryAt {
    /// The range's start (as in Morita et al.).
    #[default]
    Start,
    /// The moment in the range when the traced processes held the most
    /// memory (mmap/brk/mremap regions), so an allocation that is still
    /// growing when the range starts is seen whole.
    Max,
}

/// The ranges every cause function looks into: a rule's (with the
/// exhaustion report's options) or one explicit range; then the function's
/// own parameters and `app`.
macro_rules! range_params {
    ($($p:expr),* $(,)?) => {
        &[
            Param { name: "rule", kind: Kind::Text, doc: "the exhaustion rule (as `trawl report exhaustion --rule`)" },
            Param { name: "min_s", kind: Kind::Float, doc: "drop ranges shorter than this (s)" },
            Param { name: "gap_s", kind: Kind::Float, doc: "merge ranges separated by at most this (s)" },
            Param { name: "from_ns", kind: Kind::Int, doc: "instead of a rule: the range's start on the capture axis (t_ns)" },
            Param { name: "to_ns", kind: Kind::Int, doc: "instead of a rule: the range's end (t_ns)" },
            $($p,)*
            crate::regions::APP,
        ]
    };
}

/// `cause_cpu(rule, ...)`.
pub static CAUSE_CPU: Spec = Spec {
    name: "cause_cpu",
    doc: "CPU time inside exhaustion ranges (Morita et al., stage B) per process, application function, actual function and line.",
    sql: include_str!("../analyses/cause/cause_cpu.sql"),
    positional: 1,
    params: range_params!(
        Param {
            name: "event",
            kind: Kind::Text,
            doc: "the perf event (default: the one with most samples)",
        },
        Param {
            name: "method",
            kind: Kind::Text,
            doc: "count branch entries as samples too, timed by this LBR method (0-3, cycles)",
        },
        Param {
            name: "ghz",
            kind: Kind::Float,
            doc: "clock rate of the cycles method",
        },
    ),
    columns: None,
    inputs: Some(cpu_inputs),
};

/// `cause_memory(rule, ...)`.
pub static CAUSE_MEMORY: Spec = Spec {
    name: "cause_memory",
    doc: "Memory held inside exhaustion ranges (Morita et al., stage B) per process, application function, actual function and line.",
    sql: include_str!("../analyses/cause/cause_memory.sql"),
    positional: 1,
    params: range_params!(
        Param {
            name: "at",
            kind: Kind::Text,
            doc: "start (default: the range's start) or max (the moment the processes held the most)",
        },
    ),
    columns: None,
    inputs: Some(memory_inputs),
};

/// `cause_io(rule, ...)`.
pub static CAUSE_IO: Spec = Spec {
    name: "cause_io",
    doc: "I/O bytes inside exhaustion ranges (Morita et al., stage B) per process, application function, actual function, line, file and direction.",
    sql: include_str!("../analyses/cause/cause_io.sql"),
    positional: 1,
    params: range_params!(
        Param {
            name: "lead_ns",
            kind: Kind::Int,
            doc: "also count this long before each range (default 0)",
        },
    ),
    columns: None,
    inputs: Some(cpu_inputs),
};

/// The columns of `_cause_range`.
fn range_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("capture", DataType::Utf8, false),
        Field::new("range", DataType::Int64, false),
        Field::new("range_start_s", DataType::Float64, false),
        Field::new("range_end_s", DataType::Float64, false),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        Field::new("at_ns", DataType::Int64, true),
        Field::new("at_s", DataType::Float64, true),
    ]))
}

/// Registers `_cause_range` (empty: each call computes its own) and the
/// cause table functions.
pub async fn register(s: &Session) -> Result<()> {
    s.register_lazy("_cause_range", range_schema(), |_| async { Ok(Vec::new()) })?;
    crate::functions::register(s, SPECS).await
}

/// The cause table functions.
pub static SPECS: &[&Spec] = &[&CAUSE_CPU, &CAUSE_MEMORY, &CAUSE_IO];

/// `_cause_range` of a call of `cause_cpu` or `cause_io`.
fn cpu_inputs(
    b: &Bound,
    shared: &Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    range_input(b, shared, None)
}

fn memory_inputs(
    b: &Bound,
    shared: &Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let at = match b.get("at") {
        Some(ScalarValue::Utf8(Some(v))) if v == "max" => MemoryAt::Max,
        Some(ScalarValue::Utf8(Some(v))) if v != "start" => {
            return datafusion::common::plan_err!("cause_memory: at is start or max, got {v:?}")
        }
        _ => MemoryAt::Start,
    };
    range_input(b, shared, Some(at))
}

/// `_cause_range` from a call's rule (or explicit range).
fn range_input(
    b: &Bound,
    shared: &Arc<crate::session::Shared>,
    memory_at: Option<MemoryAt>,
) -> datafusion::error::Result<Vec<(&'static str, Arc<dyn TableProvider>)>> {
    let rule = match b.get("rule") {
        Some(ScalarValue::Utf8(Some(r))) => Some(
            Rule::parse(r).map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?,
        ),
        _ => None,
    };
    let secs = |n: &str| match b.get(n) {
        Some(ScalarValue::Float64(Some(v))) if v.is_finite() && *v >= 0.0 => {
            Ok((v * 1e9).round() as i64)
        }
        Some(ScalarValue::Float64(Some(v))) => {
            datafusion::common::plan_err!("cause: {n} {v}: expected seconds >= 0")
        }
        _ => Ok(0),
    };
    let opts = RangeOpts {
        min_duration_ns: secs("min_s")?,
        gap_ns: secs("gap_s")?,
    };
    let int = |n: &str| match b.get(n) {
        Some(ScalarValue::Int64(v)) => *v,
        _ => None,
    };
    let (from, to) = (int("from_ns"), int("to_ns"));
    let explicit = from.is_some() || to.is_some();
    let table =
        crate::tables::LazyTable::new("_cause_range", range_schema(), shared.clone(), move |s| {
            let rule = rule.clone();
            async move {
                if explicit == rule.is_some() {
                    return Err(Error::Usage(
                        "give either a rule or from_ns/to_ns (the range on the capture axis)"
                            .into(),
                    ));
                }
                let per = match &rule {
                    Some(r) => crate::ranges::ranges(&s, r, opts).await?,
                    None => {
                        let r = Range {
                            start: from.unwrap_or(0),
                            end: to.unwrap_or(i64::MAX / 2),
                        };
                        if r.end <= r.start {
                            return Err(Error::Usage(
                                "the range's end must come after its start".into(),
                            ));
                        }
                        s.captures()
                            .iter()
                            .map(|c| (c.name.clone(), vec![r]))
                            .collect()
                    }
                };
                Ok(vec![range_batch(&s, &per, memory_at).await?])
            }
        });
    Ok(vec![("_cause_range", Arc::new(table))])
}

/// The rows of `_cause_range` for `per` (each capture's ranges, numbered
/// from 1), with the moment memory is looked at when `memory_at` is given.
pub async fn range_batch(
    s: &Session,
    per: &BTreeMap<String, Vec<Range>>,
    memory_at: Option<MemoryAt>,
) -> Result<RecordBatch> {
    if per.values().all(Vec::is_empty) {
        return Err(Error::Usage(
            "the rule holds nowhere: no ranges to look into".into(),
        ));
    }
    let (offsets, lives) = match memory_at {
        Some(_) => (syscall_offsets(s).await?, live_bytes(s).await?),
        None => Default::default(),
    };
    let (mut cap, mut no, mut a_s, mut z_s, mut a, mut z, mut at, mut at_s) = (
        StringBuilder::new(),
        Int64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Float64Builder::new(),
    );
    for (c, rs) in per {
        for (i, r) in rs.iter().enumerate() {
            cap.append_value(c);
            no.append_value(i as i64 + 1);
            a_s.append_value(r.start as f64 / 1e9);
            z_s.append_value(r.end as f64 / 1e9);
            a.append_value(r.start);
            z.append_value(r.end);
            match memory_at {
                None => {
                    at.append_null();
                    at_s.append_null();
                }
                Some(m) => {
                    let off = offset_of(&offsets, c)?;
                    let start = r.start - off;
                    let t = match m {
                        MemoryAt::Start => start,
                        MemoryAt::Max => lives
                            .get(c)
                            .and_then(|l| peak(l, start, r.end - off))
                            .unwrap_or(start),
                    };
                    at.append_value(t);
                    at_s.append_value((t + off) as f64 / 1e9);
                }
            }
        }
    }
    let cols: Vec<datafusion::arrow::array::ArrayRef> = vec![
        Arc::new(cap.finish()),
        Arc::new(no.finish()),
        Arc::new(a_s.finish()),
        Arc::new(z_s.finish()),
        Arc::new(a.finish()),
        Arc::new(z.finish()),
        Arc::new(at.finish()),
        Arc::new(at_s.finish()),
    ];
    Ok(RecordBatch::try_new(range_schema(), cols)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// Per capture: inputs of system calls and their least offset.
const SYSCALL_OFFSETS: &str = include_str!("../analyses/cause/inputs/syscall_offsets.sql");

/// Per capture: how many inputs its system calls come from and the least
/// offset of them onto the capture axis.
async fn syscall_offsets(s: &Session) -> Result<HashMap<String, (i64, Option<i64>)>> {
    let mut out = HashMap::new();
    for b in s.sql(SYSCALL_OFFSETS).await?.collect().await? {
        let cap = crate::rows::string_values(b.column(0));
        let n = b.column(1).as_primitive::<Int64Type>();
        let off = b.column(2).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            out.insert(
                cap[i].clone().unwrap_or_default(),
                (n.value(i), (!off.is_null(i)).then(|| off.value(i))),
            );
        }
    }
    Ok(out)
}

/// native `syscall.time_ns` = t_ns − offset, for the capture's calls.
fn offset_of(offsets: &HashMap<String, (i64, Option<i64>)>, cap: &str) -> Result<i64> {
    match offsets.get(cap) {
        None | Some((0, _)) => Err(Error::Usage(format!(
            "{cap}: no traced system calls (strace -k -ttt, or perf syscall tracepoints) to find allocations in"
        ))),
        Some((1, Some(o))) => Ok(*o),
        Some((_, Some(_))) => Err(Error::Usage(format!(
            "{cap}: system calls from several inputs; ingest one trace of the run per capture"
        ))),
        Some((_, None)) => Err(Error::Usage(format!(
            "{cap}: its system calls cannot be placed on the capture's time axis (strace needs -ttt; perf needs -k CLOCK_MONOTONIC)"
        ))),
    }
}

/// Per capture, the bytes of `memory_region` live after each moment a
/// region starts or ends (native syscall clock), in time order.
async fn live_bytes(s: &Session) -> Result<HashMap<String, Vec<(i64, i64)>>> {
    let q = "SELECT capture, from_ns, to_ns, CAST(bytes AS BIGINT) AS bytes FROM memory_region";
    let mut ev: HashMap<String, BTreeMap<i64, i64>> = HashMap::new();
    for b in s.sql(q).await?.collect().await? {
        let cap = crate::rows::string_values(b.column(0));
        let from = b.column(1).as_primitive::<Int64Type>();
        let to = b.column(2).as_primitive::<Int64Type>();
        let bytes = b.column(3).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            let e = ev.entry(cap[i].clone().unwrap_or_default()).or_default();
            if !from.is_null(i) {
                *e.entry(from.value(i)).or_default() += bytes.value(i);
            }
            if !to.is_null(i) {
                *e.entry(to.value(i)).or_default() -= bytes.value(i);
            }
        }
    }
    Ok(ev
        .into_iter()
        .map(|(c, m)| {
            let mut live = 0;
            let v = m
                .into_iter()
                .map(|(t, d)| {
                    live += d;
                    (t, live)
                })
                .collect();
            (c, v)
        })
        .collect())
}

/// The moment in [from, to) when the live bytes were most (the first of
/// equals), if a region starts or ends in it.
fn peak(live: &[(i64, i64)], from: i64, to: i64) -> Option<i64> {
    live.iter()
        .filter(|(t, _)| *t >= from && *t < to)
        .fold(None, |best: Option<(i64, i64)>, &(t, l)| match best {
            Some((_, bl)) if bl >= l => best,
            _ => Some((t, l)),
        })
        .map(|(t, _)| t)
}

/// The usage of `resource` in each capture's ranges (`t_ns`): the call of
/// `cause_cpu`, `cause_memory` or `cause_io` over these ranges.
#[allow(clippy::too_many_arguments)]
pub async fn cause(
    s: &Session,
    resource: Resource,
    ranges: &BTreeMap<String, Vec<Range>>,
    app: Option<&str>,
    lead_ns: i64,
    event: Option<&str>,
    memory_at: MemoryAt,
    lbr: Option<crate::lbr::Method>,
) -> Result<DataFrame> {
    let mut args: Vec<Expr> = vec![
        lit(ScalarValue::Utf8(None)),
        lit("app"),
        lit(ScalarValue::Utf8(app.map(str::to_string))),
    ];
    let (name, at) = match resource {
        Resource::Cpu => {
            let event = crate::sample::choose_event(s, event).await?;
            crate::time::require_aligned_samples(s, &event).await?;
            args.extend([lit("event"), lit(event)]);
            if let Some(m) = lbr {
                args.extend([lit("method"), lit(m.name())]);
            }
            ("cause_cpu", None)
        }
        Resource::Memory => {
            let at = match memory_at {
                MemoryAt::Start => "start",
                MemoryAt::Max => "max",
            };
            args.extend([lit("at"), lit(at)]);
            ("cause_memory", Some(memory_at))
        }
        Resource::Io => {
            args.extend([lit("lead_ns"), lit(lead_ns)]);
            ("cause_io", None)
        }
    };
    // The ranges are given: they replace the ones a call computes.
    let batch = range_batch(s, ranges, at).await?;
    let table: Arc<dyn TableProvider> =
        Arc::new(MemTable::try_new(range_schema(), vec![vec![batch]])?);
    crate::functions::call_with_tables(s, name, &args, vec![("_cause_range", table)]).await
}
