//! Branch stacks as extra samples (issue 7, seed document 003).
//!
//! Registers the views `branch` (every branch stack entry with both ends
//! symbolized) and `lbr_transition` (counts per from → to function), and
//! the table function `lbr_samples(METHOD [, GHZ])`: every sample plus a
//! time-stamped pseudo-sample per branch entry, weighted by one of the
//! document's methods (0–3) or by the entries' cycle counts (`'cycles'`).
//! Its rows have the columns the time-window reports read from
//! `perf_sample_t` (`capture`, `event`, `t_ns`, `period`, `pid`, `comm`,
//! `stack_id`), so the timeline and the exhaustion causes run on them
//! unchanged. The SQL is in `query/analyses/perf/{branch,lbr_samples}.sql`.

use std::sync::Arc;

use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::datasource::ViewTable;
use datafusion::logical_expr::{Expr, LogicalPlan};
use datafusion::prelude::DataFrame;

use crate::memory::quote;
use crate::{Error, Result, Session};

const BRANCH: &str = include_str!("../analyses/perf/branch.sql");
const LBR_SAMPLES: &str = include_str!("../analyses/perf/lbr_samples.sql");

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

    fn id(self) -> i64 {
        match self {
            Method::SamplesOnly => 0,
            Method::Equal => 1,
            Method::Ratio => 2,
            Method::RatioShare => 3,
            Method::Cycles => 4,
        }
    }

    /// The argument of `lbr_samples(...)`.
    pub fn sql(self) -> String {
        match self {
            Method::Cycles => "'cycles'".into(),
            m => m.id().to_string(),
        }
    }
}

/// `lbr_samples(METHOD [, GHZ])`.
#[derive(Debug)]
struct LbrSamples {
    plan: LogicalPlan,
}

impl TableFunctionImpl for LbrSamples {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let lit = |i: usize| match args.exprs().get(i) {
            None => Ok(None),
            Some(Expr::Literal(v, _)) => Ok(Some(v.clone())),
            Some(e) => datafusion::common::plan_err!(
                "lbr_samples: arguments must be literals (METHOD 0-3 or 'cycles', GHZ), got {e}"
            ),
        };
        let method = match lit(0)? {
            Some(ScalarValue::Int64(Some(n))) => n.to_string(),
            Some(ScalarValue::Int32(Some(n))) => n.to_string(),
            Some(ScalarValue::Utf8(Some(s))) => s,
            None => "0".into(),
            Some(other) => {
                return datafusion::common::plan_err!(
                    "lbr_samples: METHOD is 0, 1, 2, 3 or 'cycles', got {other}"
                )
            }
        };
        let method = Method::parse(&method)
            .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?;
        let ghz = match lit(1)? {
            None | Some(ScalarValue::Null) => None,
            Some(v) => match v.cast_to(&datafusion::arrow::datatypes::DataType::Float64)? {
                ScalarValue::Float64(Some(g)) if g > 0.0 => Some(g),
                _ => {
                    return datafusion::common::plan_err!(
                        "lbr_samples: GHZ must be a positive number, got {v}"
                    )
                }
            },
        };
        use datafusion::common::tree_node::{Transformed, TreeNode};
        // Bound parameters change what may be null: every node's schema is
        // derived again.
        let plan = self
            .plan
            .clone()
            .with_param_values(vec![
                ScalarValue::Int64(Some(method.id())),
                ScalarValue::Float64(ghz),
            ])?
            .transform_up(|p| Ok(Transformed::yes(p.recompute_schema()?)))?
            .data;
        Ok(Arc::new(ViewTable::new(plan, None)))
    }
}

/// Registers `branch`, `lbr_transition` and `lbr_samples(...)`.
pub async fn register(s: &Session) -> Result<()> {
    s.run_script(BRANCH).await?;
    let plan = s.ctx.state().create_logical_plan(LBR_SAMPLES).await?;
    s.ctx
        .register_udtf("lbr_samples", Arc::new(LbrSamples { plan }));
    Ok(())
}

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
    /// function (document 003, Fig. 10).
    Sequence,
}

fn event_filter(event: Option<&str>) -> String {
    event.map_or(String::new(), |e| format!(" AND event = {}", quote(e)))
}

/// Whether any capture of the session has branch stack entries.
pub async fn has_branches(s: &Session) -> Result<bool> {
    let n = crate::memory::scalar(s, "SELECT CAST(count(*) AS VARCHAR) FROM perf_branch").await?;
    Ok(!matches!(n.as_deref(), Some("0") | None))
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
    let ev = event_filter(event);
    let m = match ghz {
        Some(g) => format!("{}, {g:?}", method.sql()),
        None => method.sql(),
    };
    let q = match view {
        View::Functions => format!(
            "WITH p AS (SELECT * FROM lbr_samples({m}) WHERE true{ev}) \
             SELECT capture, event, method, function, \
               sum(CASE WHEN origin = 'sample' THEN 1 ELSE 0 END) AS samples, \
               count(*) AS points, \
               round(sum(weight_ns) / 1e6, 6) AS time_ms, \
               round(100.0 * sum(weight_ns) / sum(sum(weight_ns)) OVER (PARTITION BY capture, event), 2) AS time_pct, \
               round(max(ratio) * 100.0, 2) AS ratio_pct \
             FROM p GROUP BY capture, event, method, function \
             ORDER BY capture, event, time_ms DESC, function"
        ),
        View::Summary => format!(
            "WITH p AS (SELECT * FROM lbr_samples({m}) WHERE true{ev}), \
               b AS (SELECT capture, event, count(*) AS entries, \
                       count(DISTINCT sample_id) AS samples_with_stack, \
                       max(idx) + 1 AS max_depth, \
                       sum(CASE WHEN cycles > 0 THEN 1 ELSE 0 END) AS entries_with_cycles \
                     FROM branch WHERE true{ev} GROUP BY capture, event) \
             SELECT p.capture, p.event, p.method, \
               sum(CASE WHEN p.origin = 'sample' THEN 1 ELSE 0 END) AS samples, \
               COALESCE(max(b.samples_with_stack), 0) AS samples_with_stack, \
               COALESCE(max(b.entries), 0) AS entries, \
               count(*) AS points, \
               round(CAST(count(*) AS DOUBLE) / sum(CASE WHEN p.origin = 'sample' THEN 1 ELSE 0 END), 3) AS points_per_sample, \
               max(b.max_depth) AS max_depth, \
               COALESCE(max(b.entries_with_cycles), 0) AS entries_with_cycles, \
               round(max(p.ghz), 4) AS ghz, \
               round(sum(p.weight_ns) / 1e6, 6) AS time_ms \
             FROM p LEFT JOIN b ON b.capture = p.capture AND b.event = p.event \
             GROUP BY p.capture, p.event, p.method ORDER BY p.capture, p.event"
        ),
        View::Points => format!(
            "SELECT capture, sample_id, idx, method, origin, event, \
               CAST(t_ns AS DOUBLE) / 1e9 AS t_s, time_ns, round(weight_ns, 3) AS weight_ns, \
               round(ratio * 100.0, 2) AS ratio_pct, pid, tid, cpu, function \
             FROM lbr_samples({m}) WHERE true{ev}{smp} \
             ORDER BY capture, time_ns, sample_id, idx DESC",
            smp = sample.map_or(String::new(), |id| format!(" AND sample_id = {id}")),
        ),
        View::Transitions => format!(
            "SELECT capture, event, from_function, transfer, to_function, entries, samples \
             FROM lbr_transition WHERE true{ev} \
             ORDER BY capture, event, entries DESC, from_function, to_function, transfer"
        ),
        View::Sequence => format!(
            "WITH b AS (SELECT * FROM branch WHERE true{ev}{smp}), \
               n AS (SELECT capture, sample_id, max(idx) AS top FROM b GROUP BY capture, sample_id) \
             SELECT b.capture, b.sample_id, CAST(b.t_ns AS DOUBLE) / 1e9 AS t_s, b.pid, b.tid, \
               CAST(n.top - b.idx AS INT) AS step, concat('FROM', CAST(b.idx AS VARCHAR)) AS entry, \
               COALESCE(b.from_function, '[unknown]') AS function, b.transfer, \
               COALESCE(b.to_function, '[unknown]') AS to_function \
             FROM b JOIN n ON n.capture = b.capture AND n.sample_id = b.sample_id \
             UNION ALL \
             SELECT x.capture, x.sample_id, CAST(x.t_ns AS DOUBLE) / 1e9 AS t_s, x.pid, x.tid, \
               CAST(n.top + 1 AS INT) AS step, 'sample' AS entry, \
               COALESCE(l.function, '[unknown]') AS function, 'sample' AS transfer, \
               CAST(NULL AS VARCHAR) AS to_function \
             FROM perf_sample_t x JOIN n ON n.capture = x.capture AND n.sample_id = x.sample_id \
             LEFT JOIN stack_entry l ON l.capture = x.capture AND l.stack_id = x.stack_id AND l.pos = 0 \
             ORDER BY capture, sample_id, step",
            smp = sample.map_or(String::new(), |id| format!(" AND sample_id = {id}")),
        ),
    };
    Ok(s.sql(&q).await?)
}
