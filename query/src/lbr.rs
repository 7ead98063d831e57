//! Branch stacks as extra samples (Ono et al. 2014, time-series
//! performance analysis).
//!
//! Registers the views `branch` (every branch stack entry with both ends
//! symbolized) and `lbr_transition` (counts per from → to function), and
//! the table functions `lbr_functions`, `lbr_summary`, `lbr_points`,
//! `lbr_sequence` (the views of `trawl report lbr`) and
//! `lbr_samples(METHOD [, GHZ])`: every sample plus a
//! time-stamped pseudo-sample per branch entry, weighted by one of the
//! paper's methods (0–3) or by the entries' cycle counts (`'cycles'`).
//! Its rows have the columns the time-window reports read from
//! `perf_sample_t` (`capture`, `event`, `t_ns`, `period`, `pid`, `comm`,
//! `stack_id`), so the timeline and the exhaustion causes run on them
//! unchanged. The SQL is in `query/analyses/perf/{branch,lbr_*}.sql`.

use datafusion::logical_expr::Expr;
use datafusion::prelude::{lit, DataFrame};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::functions::{Kind, Param, Spec};
use crate::session::Session;

const BRANCH: &str = include_str!("../analyses/perf/branch.sql");
/// The view `_lbr_sample` (the body of `lbr_samples` and the lbr reports).
const LBR_SAMPLE: &str = include_str!("../analyses/perf/lbr_samples.sql");

/// How the interval before a sample is shared with its branch entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Method {
    /// 0: samples only.
    SamplesOnly,
    /// 1: equal shares for the entries and the sample.
    Equal,
    /// 2: each entry its function's execution ratio of the interval, the
    /// sample the rest.
    Ratio,
    /// 3: shares in proportion to the execution ratios.
    RatioShare,
    /// The hardware's cycle counts per entry.
    Cycles,
}

impl Method {
    pub fn parse(s: &str) -> Result<Method> {
        Ok(match s.trim() {
            "0" => Method::SamplesOnly,
            "1" => Method::Equal,
            "2" => Method::Ratio,
            "3" => Method::RatioShare,
            "cycles" | "4" => Method::Cycles,
            other => {
                return Err(Error::Usage(format!(
                    "LBR method {other:?}: expected 0, 1, 2, 3 or cycles"
                )))
            }
        })
    }

    /// The `method` argument of the lbr functions.
    pub fn name(self) -> &'static str {
        match self {
            Method::SamplesOnly => "0",
            Method::Equal => "1",
            Method::Ratio => "2",
            Method::RatioShare => "3",
            Method::Cycles => "cycles",
        }
    }
}

const METHOD: Param = Param {
    name: "method",
    kind: Kind::Text,
    doc: "0 (samples only, default), 1 (equal shares), 2 (execution ratio), 3 (ratio shares) or cycles",
};
const GHZ: Param = Param {
    name: "ghz",
    kind: Kind::Float,
    doc: "clock rate of the cycles method (default: estimated from the samples)",
};
const EVENT: Param = Param {
    name: "event",
    kind: Kind::Text,
    doc: "only this event (default: all)",
};
const SAMPLE_ID: Param = Param {
    name: "sample_id",
    kind: Kind::Int,
    doc: "only this sample (default: all)",
};

/// `lbr_samples(method, ghz)`.
pub static LBR_SAMPLES: Spec = Spec {
    name: "lbr_samples",
    doc: "Every sample plus a timed pseudo-sample per branch stack entry, weighted by a method of Ono et al. 2014.",
    sql: "SELECT * FROM _lbr_sample",
    positional: 2,
    params: &[METHOD, GHZ],
    columns: None,
    inputs: None,
};

/// `lbr_functions(method, ghz, ...)`.
pub static LBR_FUNCTIONS: Spec = Spec {
    name: "lbr_functions",
    doc: "Per function: real samples, points (with branch entries) and the time they carry (Ono et al. 2014).",
    sql: include_str!("../analyses/perf/lbr_functions.sql"),
    positional: 2,
    params: &[METHOD, GHZ, EVENT],
    columns: None,
    inputs: None,
};

/// `lbr_summary(method, ghz, ...)`.
pub static LBR_SUMMARY: Spec = Spec {
    name: "lbr_summary",
    doc:
        "Per capture and event: samples, branch entries, points per sample (the resolution gained).",
    sql: include_str!("../analyses/perf/lbr_summary.sql"),
    positional: 2,
    params: &[METHOD, GHZ, EVENT],
    columns: None,
    inputs: None,
};

/// `lbr_points(method, ghz, ...)`.
pub static LBR_POINTS: Spec = Spec {
    name: "lbr_points",
    doc: "Every sample and branch-entry pseudo-sample with its time and weight (Ono et al. 2014).",
    sql: include_str!("../analyses/perf/lbr_points.sql"),
    positional: 2,
    params: &[METHOD, GHZ, EVENT, SAMPLE_ID],
    columns: None,
    inputs: None,
};

/// `lbr_timeline(window_ns, method, ...)`.
pub static LBR_TIMELINE: Spec = Spec {
    name: "lbr_timeline",
    doc: "The timeline (time per window and key) with branch entries counted as samples (Ono et al. 2014).",
    sql: include_str!("../analyses/perf/lbr_timeline.sql"),
    positional: 2,
    params: &[
        Param {
            name: "window_ns",
            kind: Kind::Int,
            doc: "window width in ns",
        },
        METHOD,
        GHZ,
        Param {
            name: "by",
            kind: Kind::Text,
            doc: "function (default), module or process",
        },
        Param {
            name: "top",
            kind: Kind::Int,
            doc: "keys shown by name per capture (default 10)",
        },
        EVENT,
    ],
    columns: None,
    inputs: None,
};

/// `lbr_sequence(...)`.
pub static LBR_SEQUENCE: Spec = Spec {
    name: "lbr_sequence",
    doc: "Per sample, the branch sources oldest to newest, then the sampled function (Ono et al. 2014, Fig. 10).",
    sql: include_str!("../analyses/perf/lbr_sequence.sql"),
    positional: 0,
    params: &[EVENT, SAMPLE_ID],
    columns: None,
    inputs: None,
};

/// Registers `branch`, `lbr_transition`, `_lbr_sample` and the lbr table
/// functions.
pub async fn register(s: &Session) -> Result<()> {
    s.define_views(BRANCH).await?;
    s.define_views(LBR_SAMPLE).await?;
    crate::functions::register(s, SPECS).await
}

/// The LBR table functions.
pub static SPECS: &[&Spec] = &[
    &LBR_SAMPLES,
    &LBR_FUNCTIONS,
    &LBR_SUMMARY,
    &LBR_POINTS,
    &LBR_SEQUENCE,
    &LBR_TIMELINE,
];

/// What `trawl report lbr` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum View {
    /// Per function: real samples, points and time under the method.
    Functions,
    /// Per capture and event: samples, entries, points per sample (the
    /// resolution gained), the clock rate of the cycles method.
    Summary,
    /// Every point with its time and weight.
    Points,
    /// Caller → callee (and callee → caller) counts.
    Transitions,
    /// Per sample, the branch sources oldest to newest, then the sampled
    /// function (Ono et al. 2014, Fig. 10).
    Sequence,
}

/// Whether any capture of the session has branch stack entries.
pub async fn has_branches(s: &Session) -> Result<bool> {
    Ok(crate::session::count(s, "SELECT count(*) FROM perf_branch", &[]).await? > 0)
}

/// The rows of `trawl report lbr`; `ghz` is the clock rate of the cycles
/// method (default: estimated).
pub async fn report(
    s: &Session,
    view: View,
    method: Method,
    ghz: Option<f64>,
    event: Option<&str>,
    sample: Option<i64>,
) -> Result<DataFrame> {
    let mut args: Vec<Expr> = Vec::new();
    if view != View::Sequence {
        args.push(lit(method.name()));
        args.push(lit(ScalarValue::Float64(ghz)));
    }
    if let Some(e) = event {
        args.extend([lit("event"), lit(e)]);
    }
    if let Some(id) = sample.filter(|_| matches!(view, View::Points | View::Sequence)) {
        args.extend([lit("sample_id"), lit(id)]);
    }
    let name = match view {
        View::Functions => "lbr_functions",
        View::Summary => "lbr_summary",
        View::Points => "lbr_points",
        View::Sequence => "lbr_sequence",
        View::Transitions => {
            let mut df = s.ctx.table("lbr_transition").await?.select_columns(&[
                "capture",
                "event",
                "from_function",
                "transfer",
                "to_function",
                "entries",
                "samples",
                "repeats",
            ])?;
            if let Some(e) = event {
                df = df.filter(datafusion::prelude::col("event").eq(lit(e)))?;
            }
            return Ok(df.sort(vec![
                datafusion::prelude::col("capture").sort(true, true),
                datafusion::prelude::col("event").sort(true, true),
                datafusion::prelude::col("entries").sort(false, true),
                datafusion::prelude::col("from_function").sort(true, true),
                datafusion::prelude::col("to_function").sort(true, true),
                datafusion::prelude::col("transfer").sort(true, true),
            ])?);
        }
    };
    crate::functions::call(s, name, &args).await
}

impl crate::choice::Choice for View {
    const ALL: &'static [Self] = &[
        Self::Functions,
        Self::Summary,
        Self::Points,
        Self::Transitions,
        Self::Sequence,
    ];
    fn name(self) -> &'static str {
        match self {
            Self::Functions => "functions",
            Self::Summary => "summary",
            Self::Points => "points",
            Self::Transitions => "transitions",
            Self::Sequence => "sequence",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Functions => "per function: samples, points, time and share under the method (lbr_functions)",
            Self::Summary => "samples, branch entries, points per sample: the resolution gained (lbr_summary)",
            Self::Points => "every sample and pseudo-sample with its time and weight (lbr_points)",
            Self::Transitions => "branches per (from function, to function, call/return/other) (lbr_transition)",
            Self::Sequence => "per sample: the branch sources FROM15 … FROM0, oldest first, then the sampled function (lbr_sequence)",
        }
    }
}

/// The branch stack reports.
pub static REPORTS: &[&crate::report::Report] = &[&LBR_REPORT];

/// `trawl report lbr`.
pub static LBR_REPORT: crate::report::Report = crate::report::Report {
    name: "lbr",
    about: "Branch stacks (LBR, `perf record -b` / `-j any_call,any_ret`) as extra samples (Ono et al. 2014): time per function under a method, the resolution gained, the points, the transitions caller → callee, or each sample's call/return sequence.",
    captures: crate::report::Captures::Many,
    opts: || {
        use crate::report::Opt;
        vec![
            Opt::text("method", "How a sample's interval is shared with its branch entries: 0 samples only; 1 equally; 2 each entry its function's execution ratio, the sample the rest; 3 in proportion to the ratios; cycles: by the entries' cycle counts.").default("3"),
            Opt::float("ghz", "Clock rate for --method cycles (default: the lowest rate at which no sample's entries outlast its interval)."),
            Opt::choice::<View>("view", "What to show.").default("functions"),
            Opt::text("event", "Only this perf event."),
            Opt::int("sample", "For --view points and sequence: only this sample (perf_sample.sample_id)."),
        ]
    },
    selects: crate::report::Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let mut method = Method::parse(g.text("method").unwrap_or("3"))?;
            let ghz = g.float("ghz")?;
            if let Some(g) = ghz {
                if !(g.is_finite() && g > 0.0) {
                    return Err(Error::Usage(format!(
                        "--ghz {g}: expected a positive clock rate"
                    )));
                }
                if method != Method::Cycles {
                    return Err(Error::Usage("--ghz applies to --method cycles".into()));
                }
                method = Method::Cycles;
            }
            let view = g.choice::<View>("view")?.unwrap_or(View::Functions);
            if !has_branches(s).await? {
                return Err(Error::Usage("no branch stacks in the capture: record with `perf record -b` or `-j any_call,any_ret,u` (LBR)".into()));
            }
            let df = report(s, view, method, ghz, g.text("event"), g.int("sample")?).await?;
            Ok(crate::report::Answer::rows(df))
        })
    },
};
