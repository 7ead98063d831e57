//! The perf analyses (hotspots, callers, callees, folded stacks, the
//! timeline): SQL files under `query/analyses/perf/` with named
//! parameters, registered as table functions (`hotspots('function', 'pid',
//! 42)`, ...; see [`crate::functions`]). The Rust functions here are typed front doors
//! to the same table functions for the CLI: they bind arguments, never
//! build SQL text.

use datafusion::logical_expr::Expr;
use datafusion::prelude::{lit, DataFrame};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::functions::call;
use crate::functions::{Kind, Param, Spec};
use crate::sample::Selection;
use crate::session::Session;

/// Views `frame_line`, `frame_name`, `stack_entry` and
/// `stack_entry_inline`: what frames are called, stacks as positions.
pub const FRAME_NAME: &str = include_str!("../analyses/perf/frame_name.sql");
/// View `perf_sample_symbolized`: every sample with its leaf's names (the
/// flat table `trawl ingest --flat` also writes for readers without trawl).
pub const SAMPLE_SYMBOLIZED: &str = include_str!("../analyses/perf/sample_symbolized.sql");

/// Views `_switch_out`, `_switch_in` and `thread_state` (on- and off-CPU
/// intervals of each thread from sched_switch samples and switch records).
pub const THREAD_STATE: &str = include_str!("../analyses/perf/thread_state.sql");

/// Views `read_delta`, `_selected_sample` and `_stack_weight` (the samples
/// an analysis reads, with the selection's placeholders) and
/// `_stack_position` (stack positions ordered for callers/callees).
pub const STACK_WEIGHT: &str = include_str!("../analyses/perf/stack_weight.sql");

/// View `_hotspot_key`: every frame and inline level with the key
/// `hotspots` groups it under (its placeholders: `by`, `inline`,
/// `capture`).
pub const HOTSPOT_KEY_VIEW: &str = include_str!("../analyses/perf/hotspot_key.sql");

/// The sample selection every stack analysis takes (stack_weight.sql).
macro_rules! sample_params {
    ($($p:expr),* $(,)?) => {
        &[
            $($p,)*
            Param { name: "event", kind: Kind::Text, doc: "event (default: the one with most samples)" },
            Param { name: "weight", kind: Kind::Text, doc: "period (default), samples, weight, weight_ins_lat, weight_var3, n_branch or read:EVENT" },
            Param { name: "pid", kind: Kind::IntList, doc: "only these processes" },
            Param { name: "tid", kind: Kind::IntList, doc: "only these threads" },
            Param { name: "comm", kind: Kind::TextList, doc: "only these commands" },
            Param { name: "from_ns", kind: Kind::Int, doc: "only samples at or after this time_ns" },
            Param { name: "to_ns", kind: Kind::Int, doc: "only samples before this time_ns" },
            Param { name: "capture", kind: Kind::TextList, doc: "only these captures" },
        ]
    };
}

const INLINE: Param = Param {
    name: "inline",
    kind: Kind::Bool,
    doc: "inline levels count as functions of their own (default true)",
};

/// `stack_weight(...)`: the selected samples per distinct stack.
pub static STACK_WEIGHT_FN: Spec = Spec {
    name: "stack_weight",
    doc:
        "The samples of one event, narrowed and weighed, per distinct stack (samples n, weight w).",
    sql: "SELECT * FROM _stack_weight",
    positional: 0,
    params: sample_params!(),
    columns: None,
    inputs: None,
};

/// `selected_sample(...)`: the selected samples themselves.
pub static SELECTED_SAMPLE_FN: Spec = Spec {
    name: "selected_sample",
    doc: "The samples of one event, narrowed and weighed (cost), one row each: what the exports (trawl export) read.",
    sql: "SELECT * FROM _selected_sample",
    positional: 0,
    params: sample_params!(),
    columns: None,
    inputs: None,
};

/// `hotspots(by, ...)`.
pub static HOTSPOTS: Spec = Spec {
    name: "hotspots",
    doc: "Exclusive and inclusive cost per function, module, srcline, line or address.",
    sql: include_str!("../analyses/perf/hotspots.sql"),
    positional: 1,
    params: sample_params!(
        Param {
            name: "by",
            kind: Kind::Text,
            doc: "function (default), module, srcline, line or address"
        },
        INLINE,
    ),
    columns: Some(hotspot_columns),
    inputs: Some(crate::stack_cost::inputs),
};

/// `hotspot_key(by, ...)`: what hotspots groups each frame's cost under.
pub static HOTSPOT_KEY: Spec = Spec {
    name: "hotspot_key",
    doc: "The key (function, module, srcline, line or address) hotspots gives every frame and inline level.",
    sql: "SELECT * FROM _hotspot_key",
    positional: 1,
    params: &[
        Param {
            name: "by",
            kind: Kind::Text,
            doc: "function (default), module, srcline, line or address",
        },
        INLINE,
        Param {
            name: "capture",
            kind: Kind::TextList,
            doc: "only these captures",
        },
    ],
    columns: None,
    inputs: None,
};

/// The parameters of `callers` and `callees`.
const EDGE_PARAMS: &[Param] = sample_params!(
    Param {
        name: "function",
        kind: Kind::Text,
        doc: "the function, as hotspots names it"
    },
    Param {
        name: "module",
        kind: Kind::Text,
        doc: "only occurrences in modules whose path contains this"
    },
    INLINE,
);

/// `callers(function, ...)`.
pub static CALLERS: Spec = Spec {
    name: "callers",
    doc: "Attributed cost of the edges into a function (Oracle Solaris Studio Performance Analyzer manual): its inclusive cost split among its callers.",
    sql: include_str!("../analyses/perf/callers.sql"),
    positional: 1,
    params: EDGE_PARAMS,
    columns: None,
    inputs: None,
};

/// `callees(function, ...)`.
pub static CALLEES: Spec = Spec {
    name: "callees",
    doc: "Attributed cost of the edges out of a function (Oracle Solaris Studio Performance Analyzer manual): its inclusive cost split into self and callees.",
    sql: include_str!("../analyses/perf/callees.sql"),
    positional: 1,
    params: EDGE_PARAMS,
    columns: None,
    inputs: None,
};

/// `folded(...)`.
pub static FOLDED: Spec = Spec {
    name: "folded",
    doc: "Folded stacks (root;...;leaf) with their weight, the input of flame graphs.",
    sql: include_str!("../analyses/perf/folded.sql"),
    positional: 0,
    params: sample_params!(INLINE),
    columns: None,
    inputs: None,
};

/// `diff(by, 'base', [...], 'new', [...], ...)`.
pub static DIFF: Spec = Spec {
    name: "diff",
    doc: "What changed between base and new captures: per function, module or srcline, exclusive and inclusive shares of each side's total, the change, keys on one side only.",
    sql: include_str!("../analyses/perf/diff.sql"),
    positional: 1,
    params: sample_params!(
        Param {
            name: "by",
            kind: Kind::Text,
            doc: "function (default), module or srcline"
        },
        Param {
            name: "base",
            kind: Kind::TextList,
            doc: "the base captures (required)"
        },
        Param {
            name: "new",
            kind: Kind::TextList,
            doc: "the new captures (required)"
        },
        INLINE,
    ),
    columns: Some(diff_columns),
    inputs: None,
};

/// `offcpu(by, ...)`.
pub static OFFCPU: Spec = Spec {
    name: "offcpu",
    doc: "Time threads spent off the CPU (thread_state: sched_switch samples with stacks, --switch-events) per function of the stack they blocked in, per stack, state or thread.",
    sql: include_str!("../analyses/perf/offcpu.sql"),
    positional: 1,
    params: &[
        Param { name: "by", kind: Kind::Text, doc: "function (default), stack, state or thread" },
        Param { name: "state", kind: Kind::TextList, doc: "only these states, e.g. S, D (default: all but R, preempted)" },
        Param { name: "pid", kind: Kind::IntList, doc: "only these processes" },
        Param { name: "tid", kind: Kind::IntList, doc: "only these threads" },
        Param { name: "comm", kind: Kind::TextList, doc: "only these commands" },
        Param { name: "from_ns", kind: Kind::Int, doc: "only intervals starting at or after this time_ns" },
        Param { name: "to_ns", kind: Kind::Int, doc: "only intervals starting before this time_ns" },
        Param { name: "capture", kind: Kind::TextList, doc: "only these captures" },
    ],
    columns: Some(offcpu_columns),
    inputs: None,
};

/// `offcpu`'s columns for its `by`: the function's module, the thread's
/// pid (named so), nothing beside a state or a stack.
fn offcpu_columns(
    b: &crate::functions::Bound,
    _: &std::sync::Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<Expr>> {
    use datafusion::prelude::ident;
    let mut cols = vec![ident("key")];
    match crate::functions::text(b, "by")
        .as_deref()
        .unwrap_or("function")
    {
        "function" => cols.push(ident("module")),
        "thread" => cols.push(ident("module").alias("pid")),
        _ => {}
    }
    cols.extend(["intervals", "self_ns", "total_ns", "total_pct"].map(ident));
    Ok(cols)
}

/// `thread_timeline(window_ns, ...)`.
pub static THREAD_TIMELINE: Spec = Spec {
    name: "thread_timeline",
    doc: "Per time window and thread: the time running and off the CPU per state (thread_state cut at the window edges).",
    sql: include_str!("../analyses/perf/thread_timeline.sql"),
    positional: 1,
    params: &[
        Param { name: "window_ns", kind: Kind::Int, doc: "window width in ns" },
        Param { name: "pid", kind: Kind::IntList, doc: "only these processes" },
        Param { name: "tid", kind: Kind::IntList, doc: "only these threads" },
        Param { name: "capture", kind: Kind::TextList, doc: "only these captures" },
    ],
    columns: None,
    inputs: None,
};

/// `timeline(window_ns, ...)`.
pub static TIMELINE: Spec = Spec {
    name: "timeline",
    doc: "Samples and weight per time window and leaf function, module or process (top N keys, the rest [other]).",
    sql: include_str!("../analyses/perf/timeline.sql"),
    positional: 1,
    params: sample_params!(
        Param { name: "window_ns", kind: Kind::Int, doc: "window width in ns" },
        Param { name: "by", kind: Kind::Text, doc: "function (default), module or process" },
        Param { name: "top", kind: Kind::Int, doc: "keys shown by name per capture (default 10)" },
    ),
    columns: None,
    inputs: None,
};

/// `annotate(function, ...)`.
pub static ANNOTATE: Spec = Spec {
    name: "annotate",
    doc: "A function's instructions with the samples taken on each and their source lines (metrics per instruction; perf annotate).",
    sql: include_str!("../analyses/perf/annotate.sql"),
    positional: 1,
    params: sample_params!(
        Param {
            name: "function",
            kind: Kind::Text,
            doc: "the function (its ELF name)"
        },
        Param {
            name: "module",
            kind: Kind::Text,
            doc: "only modules whose path contains this"
        },
    ),
    columns: None,
    inputs: Some(crate::annotate::annotate_inputs),
};

/// The SQL analyses, in registration order.
pub static SPECS: &[&Spec] = &[
    &STACK_WEIGHT_FN,
    &SELECTED_SAMPLE_FN,
    &HOTSPOT_KEY,
    &HOTSPOTS,
    &CALLERS,
    &CALLEES,
    &FOLDED,
    &DIFF,
    &OFFCPU,
    &TIMELINE,
    &THREAD_TIMELINE,
    &ANNOTATE,
];

fn diff_columns(
    b: &crate::functions::Bound,
    _: &std::sync::Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<Expr>> {
    let by = match b.get("by") {
        Some(ScalarValue::Utf8(Some(v))) => v.as_str(),
        _ => "function",
    };
    let keys: &[&str] = match by {
        "function" => &["function", "module"],
        "module" => &["module"],
        "srcline" => &["srcline", "module"],
        _ => {
            return datafusion::common::plan_err!(
                "diff: by is function, module or srcline, got {by:?}"
            )
        }
    };
    for side in ["base", "new"] {
        if b.get(side).is_none_or(|v| v.is_null()) {
            return datafusion::common::plan_err!(
                "diff: name the {side} captures ('{side}', 'CAPTURE', ...)"
            );
        }
    }
    let mut cols = keys.to_vec();
    cols.extend([
        "status",
        "base_self_weight",
        "base_self_pct",
        "new_self_weight",
        "new_self_pct",
        "self_pct_change",
        "base_total_pct",
        "new_total_pct",
        "total_pct_change",
        "self_change_normalized",
    ]);
    Ok(cols.into_iter().map(datafusion::prelude::ident).collect())
}

fn hotspot_columns(
    b: &crate::functions::Bound,
    _: &std::sync::Arc<crate::session::Shared>,
) -> datafusion::error::Result<Vec<Expr>> {
    let by = match b.get("by") {
        Some(ScalarValue::Utf8(Some(v))) => v.as_str(),
        _ => "function",
    };
    let keys: &[&str] = match HotspotKey::parse(by) {
        Some(k) => k.columns(),
        None => {
            return datafusion::common::plan_err!(
                "hotspots: by is function, module, srcline, line or address, got {by:?}"
            )
        }
    };
    let mut cols = keys.to_vec();
    cols.extend([
        "self_samples",
        "self_weight",
        "self_pct",
        "total_samples",
        "total_weight",
        "total_pct",
    ]);
    Ok(cols.into_iter().map(datafusion::prelude::ident).collect())
}

/// What hotspots are grouped by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HotspotKey {
    /// Function and module.
    Function,
    /// Module (load object).
    Module,
    /// Function, module and address.
    Address,
    /// perf's srcline (`file:line` of the file's base name) and module.
    Srcline,
    /// Function, full source path and line.
    Line,
}

impl HotspotKey {
    pub const ALL: [HotspotKey; 5] = [
        HotspotKey::Function,
        HotspotKey::Module,
        HotspotKey::Srcline,
        HotspotKey::Line,
        HotspotKey::Address,
    ];

    /// The name `hotspots(by)` takes.
    pub fn name(self) -> &'static str {
        match self {
            HotspotKey::Function => "function",
            HotspotKey::Module => "module",
            HotspotKey::Srcline => "srcline",
            HotspotKey::Line => "line",
            HotspotKey::Address => "address",
        }
    }

    pub fn parse(s: &str) -> Option<HotspotKey> {
        Self::ALL.into_iter().find(|k| k.name() == s)
    }

    /// What the key is, for help texts.
    pub fn doc(self) -> &'static str {
        match self {
            HotspotKey::Function => "Function and module (inline functions count as their own).",
            HotspotKey::Module => "Module (load object: executable, library, kernel).",
            HotspotKey::Srcline => "perf's srcline: source file base name and line, and module.",
            HotspotKey::Line => "Function, full source path and line.",
            HotspotKey::Address => "Function and address within the module.",
        }
    }

    /// The key columns of `hotspots(by)`.
    pub fn columns(self) -> &'static [&'static str] {
        match self {
            HotspotKey::Function => &["function", "module"],
            HotspotKey::Module => &["module"],
            HotspotKey::Srcline => &["srcline", "module"],
            HotspotKey::Line => &["function", "file", "line"],
            HotspotKey::Address => &["address", "module"],
        }
    }
}

/// Exclusive and inclusive cost per key of the selected samples
/// (`hotspots(by, ...)`), with the weight columns named by the weight
/// (`self_period`, ...; none for sample counts), as the CLI shows them.
pub async fn hotspots(s: &Session, key: HotspotKey, sel: &Selection<'_>) -> Result<DataFrame> {
    let df = call(s, "hotspots", &sel.args(Some(lit(key.name())))).await?;
    let mut cols: Vec<Expr> = key
        .columns()
        .iter()
        .map(|c| datafusion::prelude::ident(*c))
        .collect();
    for side in ["self", "total"] {
        cols.push(datafusion::prelude::ident(format!("{side}_samples")));
        if let Some(n) = sel.weight.name() {
            cols.push(
                datafusion::prelude::ident(format!("{side}_weight")).alias(format!("{side}_{n}")),
            );
        }
        cols.push(datafusion::prelude::ident(format!("{side}_pct")));
    }
    Ok(df.select(cols)?)
}

/// `diff(by, ...)`: `by` (`function`, `module` or `srcline`) compared
/// between the `base` and `new` captures (names as the session gives
/// them), each side's shares of its own total.
pub async fn diff(
    s: &Session,
    by: &str,
    base: &[String],
    new: &[String],
    sel: &Selection<'_>,
) -> Result<DataFrame> {
    let mut args = sel.args(Some(lit(by)));
    for (side, caps) in [("base", base), ("new", new)] {
        for c in caps {
            args.push(lit(side));
            args.push(lit(c.as_str()));
        }
    }
    call(s, "diff", &args).await
}

/// How a caller/callee report names the centre function.
#[derive(Clone, Debug, Default)]
pub struct FunctionMatch {
    /// Exact function name as the reports show it.
    pub function: String,
    /// Only positions in modules whose path contains this.
    pub module: Option<String>,
}

/// `annotate(...)`: `f`'s instructions in address order with the samples
/// whose leaf is each (metrics per instruction, as in the Oracle Solaris
/// Studio Performance Analyzer manual's disassembly view; `perf annotate`).
pub async fn annotate(s: &Session, f: &FunctionMatch, sel: &Selection<'_>) -> Result<DataFrame> {
    // Instructions belong to the real (ELF) function: no inline option.
    let mut args = vec![lit(f.function.as_str())];
    sel.filter.args(sel.event, sel.weight, &mut args);
    if let Some(m) = &f.module {
        args.push(lit("module"));
        args.push(lit(m.as_str()));
    }
    let df = call(s, "annotate", &args).await?;
    let rows = df.clone().collect().await?;
    if rows.iter().map(|b| b.num_rows()).sum::<usize>() == 0 {
        return Err(Error::Usage(format!(
            "no decoded code of a function named {:?}{}: `instruction` holds the functions samples fell in \
             (symbolized captures; x86 files found on this machine; names as `trawl report hotspots --no-inline` shows them); \
             kernel functions ([kernel.kallsyms]) are not decoded: trawl reads no vmlinux",
            f.function,
            f.module
                .as_deref()
                .map(|m| format!(" in a module matching {m:?}"))
                .unwrap_or_default()
        )));
    }
    let mut cols: Vec<Expr> = vec![
        datafusion::prelude::ident("module"),
        // Hexadecimal, as objdump and perf annotate print addresses.
        datafusion::functions::expr_fn::to_hex(datafusion::prelude::ident("address"))
            .alias("address"),
        datafusion::prelude::ident("offset"),
        datafusion::prelude::ident("samples"),
    ];
    if let Some(n) = sel.weight.name() {
        cols.push(datafusion::prelude::ident("weight").alias(n));
    }
    for c in ["pct", "text", "srcline", "inline_function"] {
        cols.push(datafusion::prelude::ident(c));
    }
    Ok(df.select(cols)?)
}

/// Attributed metrics of the edges into `f` (as in the Oracle Solaris Studio
/// Performance Analyzer manual): every sample whose stack contains `f` is
/// attributed once, to the caller of the outermost
/// occurrence of `f` (the caller that started a recursion), or to `<root>`
/// when `f` is where the stack begins. The `caller` rows sum to the
/// `function` row (inclusive).
pub async fn callers(s: &Session, f: &FunctionMatch, sel: &Selection<'_>) -> Result<DataFrame> {
    edges(s, "callers", f, sel).await
}

/// Attributed metrics of the edges out of `f`: every sample whose stack
/// contains `f` is attributed once, to the callee of the innermost
/// occurrence of `f`, or to `<self>` (the exclusive metric) when that
/// occurrence is the leaf. The `self` and `callee` rows sum to the
/// `function` row (inclusive).
pub async fn callees(s: &Session, f: &FunctionMatch, sel: &Selection<'_>) -> Result<DataFrame> {
    edges(s, "callees", f, sel).await
}

async fn edges(
    s: &Session,
    name: &str,
    f: &FunctionMatch,
    sel: &Selection<'_>,
) -> Result<DataFrame> {
    let mut args = sel.args(Some(lit(f.function.as_str())));
    if let Some(m) = &f.module {
        args.push(lit("module"));
        args.push(lit(m.as_str()));
    }
    let df = call(s, name, &args).await?;
    let rows = df.clone().collect().await?;
    if rows.iter().map(|b| b.num_rows()).sum::<usize>() == 0 || first_samples(&rows) == 0 {
        // The selection itself may match nothing: say so rather than
        // blame the function.
        let why = crate::sample::why_nothing(s, sel.filter)
            .await
            .unwrap_or_default();
        if !why.is_empty() {
            return Err(Error::Usage(why.join("; ")));
        }
        return Err(Error::Usage(format!(
            "no stack contains a function named {:?}{} (names as `trawl report hotspots` shows them)",
            f.function,
            f.module
                .as_deref()
                .map(|m| format!(" in a module matching {m:?}"))
                .unwrap_or_default()
        )));
    }
    let mut cols: Vec<Expr> = ["role", "function", "module", "samples"]
        .iter()
        .map(|c| datafusion::prelude::ident(*c))
        .collect();
    if let Some(n) = sel.weight.name() {
        cols.push(datafusion::prelude::ident("weight").alias(n));
    }
    cols.push(datafusion::prelude::ident("pct"));
    cols.push(datafusion::prelude::ident("share"));
    Ok(s.ctx.read_batches(rows)?.select(cols)?)
}

/// The `samples` of the first row (the `function` row of callers/callees).
fn first_samples(rows: &[datafusion::arrow::record_batch::RecordBatch]) -> i64 {
    rows.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::i64_at(b, 3, 0))
        .unwrap_or(0)
}

impl crate::choice::Choice for HotspotKey {
    const ALL: &'static [Self] = &HotspotKey::ALL;
    fn name(self) -> &'static str {
        HotspotKey::name(self)
    }
    fn doc(self) -> &'static str {
        HotspotKey::doc(self)
    }
    /// `perf report --sort`'s names.
    fn aliases(self) -> &'static [&'static str] {
        match self {
            HotspotKey::Function => &["sym"],
            HotspotKey::Module => &["dso"],
            HotspotKey::Address => &["symoff"],
            HotspotKey::Srcline | HotspotKey::Line => &[],
        }
    }
}

/// What `diff` compares per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiffKey {
    Function,
    Module,
    Srcline,
}

impl crate::choice::Choice for DiffKey {
    const ALL: &'static [Self] = &[DiffKey::Function, DiffKey::Module, DiffKey::Srcline];
    fn name(self) -> &'static str {
        match self {
            DiffKey::Function => "function",
            DiffKey::Module => "module",
            DiffKey::Srcline => "srcline",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            DiffKey::Function => "Function and module.",
            DiffKey::Module => "Module (load object).",
            DiffKey::Srcline => "perf's srcline (source file base name and line) and module.",
        }
    }
}

/// What `offcpu` sums the time off the CPU per.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OffcpuKey {
    Function,
    Stack,
    State,
    Thread,
}

impl crate::choice::Choice for OffcpuKey {
    const ALL: &'static [Self] = &[
        OffcpuKey::Function,
        OffcpuKey::Stack,
        OffcpuKey::State,
        OffcpuKey::Thread,
    ];
    fn name(self) -> &'static str {
        match self {
            OffcpuKey::Function => "function",
            OffcpuKey::Stack => "stack",
            OffcpuKey::State => "state",
            OffcpuKey::Thread => "thread",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            OffcpuKey::Function => {
                "The innermost user function of the stack the thread blocked in."
            }
            OffcpuKey::Stack => "The whole stack the thread blocked in.",
            OffcpuKey::State => "The state it left the CPU in (S sleeping, D disk, R preempted).",
            OffcpuKey::Thread => "The thread.",
        }
    }
}

use crate::report::{Answer, Captures, Given, Opt, Report, Selects};
use futures::future::BoxFuture;

/// The stack reports.
pub static REPORTS: &[&Report] = &[
    &HOTSPOTS_REPORT,
    &CALLERS_REPORT,
    &CALLEES_REPORT,
    &ANNOTATE_REPORT,
    &DIFF_REPORT,
    &OFFCPU_REPORT,
];

/// `trawl report hotspots`.
pub static HOTSPOTS_REPORT: Report = Report {
    name: "hotspots",
    about: "Functions (or modules, source lines, addresses) by exclusive and inclusive cost.",
    captures: Captures::Many,
    opts: || {
        vec![Opt::choice::<HotspotKey>(
            "by",
            "What the cost is grouped by (as --sort, with perf report's names sym, dso, symoff, too).",
        )
        .default("function")
        .alias("sort")]
    },
    selects: Selects::Samples,
    t0: false,
    limit: true,
    run: run_hotspots,
};

fn run_hotspots<'a>(s: &'a Session, g: &'a Given) -> BoxFuture<'a, Result<Answer>> {
    Box::pin(async move {
        let picked = g.picked(s).await?;
        let key = g
            .choice::<HotspotKey>("by")?
            .unwrap_or(HotspotKey::Function);
        let df = hotspots(s, key, &picked.selection()).await?;
        Ok(Answer::rows(df).heading(format!("event: {}", picked.event)))
    })
}

fn function_opts() -> Vec<Opt> {
    vec![
        Opt::text(
            "function",
            "The function, named as `trawl report hotspots` shows it.",
        )
        .positional(),
        Opt::text(
            "module",
            "Only occurrences in modules whose path contains this text.",
        ),
    ]
}

/// `trawl report callers`.
pub static CALLERS_REPORT: Report = Report {
    name: "callers",
    about: "Who calls FUNCTION: attributed cost per caller (they sum to its inclusive cost).",
    captures: Captures::Many,
    opts: function_opts,
    selects: Selects::Samples,
    t0: false,
    limit: true,
    run: |s, g| Box::pin(run_function(s, g, "callers")),
};

/// `trawl report callees`.
pub static CALLEES_REPORT: Report = Report {
    name: "callees",
    about: "What FUNCTION calls: its exclusive cost and the attributed cost per callee (they sum to its inclusive cost).",
    captures: Captures::Many,
    opts: function_opts,
    selects: Selects::Samples,
    t0: false,
    limit: true,
    run: |s, g| Box::pin(run_function(s, g, "callees")),
};

/// `trawl report annotate`.
pub static ANNOTATE_REPORT: Report = Report {
    name: "annotate",
    about: "FUNCTION's instructions with the samples taken on each, their share of the function and their source lines (metrics per instruction; perf annotate).",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::text(
                "function",
                "The function: its ELF name, as `trawl report hotspots --no-inline` shows it.",
            )
            .positional(),
            Opt::text("module", "Only modules whose path contains this text."),
        ]
    },
    selects: Selects::Samples,
    t0: false,
    limit: true,
    run: |s, g| Box::pin(run_function(s, g, "annotate")),
};

async fn run_function(s: &Session, g: &Given, view: &str) -> Result<Answer> {
    let picked = g.picked(s).await?;
    let f = FunctionMatch {
        function: g.text("function").unwrap_or_default().to_string(),
        module: g.text("module").map(str::to_string),
    };
    let sel = picked.selection();
    let df = match view {
        "callers" => callers(s, &f, &sel).await?,
        "callees" => callees(s, &f, &sel).await?,
        _ => annotate(s, &f, &sel).await?,
    };
    Ok(Answer::rows(df).heading(format!("event: {}", picked.event)))
}

/// `trawl report diff`.
pub static DIFF_REPORT: Report = Report {
    name: "diff",
    about: "What changed between two runs: per function (module, srcline) the exclusive and inclusive shares of each run's total, the change, and keys found in one run only.",
    captures: Captures::Sides,
    opts: || vec![Opt::choice::<DiffKey>("by", "Compare per function (default), module or srcline.").default("function")],
    selects: Selects::Samples,
    t0: false,
    limit: true,
    run: run_diff,
};

fn run_diff<'a>(s: &'a Session, g: &'a Given) -> BoxFuture<'a, Result<Answer>> {
    use crate::choice::Choice;
    Box::pin(async move {
        let Some(side) = g.captures.first() else {
            return Err(Error::Usage("diff needs captures on both sides".into()));
        };
        let (base, new) = crate::captures::sides(s, side)?;
        let (base, new) = (&base[..], &new[..]);
        let picked = g.picked(s).await?;
        let by = g.choice::<DiffKey>("by")?.unwrap_or(DiffKey::Function);
        let df = diff(s, by.name(), base, new, &picked.selection()).await?;
        Ok(Answer::rows(df).heading(format!(
            "event: {}, weight: {}; base: {}; new: {}",
            picked.event,
            picked.weight.arg(),
            base.join(", "),
            new.join(", ")
        )))
    })
}

/// `trawl report offcpu`.
pub static OFFCPU_REPORT: Report = Report {
    name: "offcpu",
    about: "Where threads waited: time off the CPU (sched_switch samples with stacks, --switch-events) per function of the stack they blocked in, per stack, state (sleeping, disk, preempted) or thread.",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::choice::<OffcpuKey>("by", "Per function of the blocking stack (default), whole stack, state or thread.").default("function"),
            Opt::text("state", "Only these states (repeatable: S sleeping, D uninterruptible, R preempted, blocked from switch records); default all but R.").many(),
        ]
    },
    selects: Selects::Threads,
    t0: false,
    limit: true,
    run: run_offcpu,
};

fn run_offcpu<'a>(s: &'a Session, g: &'a Given) -> BoxFuture<'a, Result<Answer>> {
    use crate::choice::Choice;
    Box::pin(async move {
        let by = g.choice::<OffcpuKey>("by")?.unwrap_or(OffcpuKey::Function);
        let mut args = vec![lit(by.name())];
        for x in g.texts("state") {
            args.extend([lit("state"), lit(x.as_str())]);
        }
        g.filter(s).await?.selection_args(&mut args);
        let any = crate::session::count(
            s,
            "SELECT count(*) FROM (SELECT 1 FROM thread_state WHERE off_cpu LIMIT 1)",
            &[],
        )
        .await?;
        if any == 0 {
            return Err(Error::Usage(
                "no off-CPU intervals: record context switches, e.g. perf record -g -e sched:sched_switch -c 1 \
                 --switch-events -e cpu-clock/period=1000000/ ... (without tracepoint access: -e context-switches \
                 instead of -e sched:sched_switch)"
                    .into(),
            ));
        }
        Ok(Answer::rows(call(s, "offcpu", &args).await?))
    })
}
