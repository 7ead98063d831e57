//! The client side: a trawl session whose queries run on a cluster.
//!
//! [`context`] makes the DataFusion context [`trawl_query::Session::open_in`]
//! opens the captures in: Ballista's client planner (every query becomes a
//! job of the scheduler) behind [`Prepare`], which, before a plan leaves:
//!
//! - replaces the tables trawl computes with an operator of its own
//!   ([`StackKeyCost`], the input of `hotspots`) by the same rows in
//!   DataFusion's operators, which the executors have;
//! - refuses what cannot run there, naming it ([`refusal`]): statements that
//!   write files (`COPY`, `INSERT`) and tables no codec carries;
//! - computes the derived tables the plan reads ([`LazyTable`]: `time_base`,
//!   `sample_energy`, ...). trawl computes them in Rust from SQL queries,
//!   and those queries run on the cluster too (they are planned by this same
//!   planner); the rows then travel in the plan ([`crate::codec`]).

use std::sync::Arc;

use ballista_core::extension::{SessionConfigExt, SessionStateExt};
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::common::plan_err;
use datafusion::common::tree_node::{Transformed, TreeNodeRecursion};
use datafusion::datasource::source_as_provider;
use datafusion::error::Result;
use datafusion::execution::context::QueryPlanner;
use datafusion::execution::SessionStateBuilder;
use datafusion::logical_expr::{LogicalPlan, LogicalPlanBuilder, WriteOp};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::{ident, SessionConfig, SessionContext};
use trawl_query::stack_cost::StackKeyCost;
use trawl_query::tables::LazyTable;

use crate::codec::{LogicalCodec, PhysicalCodec};

/// The scheduler's gRPC address (`http://HOST:PORT`) for `df://HOST:PORT`
/// (or `HOST:PORT`; the port defaults to Ballista's 50050).
pub fn scheduler_url(url: &str) -> trawl_query::Result<String> {
    let bad = || {
        trawl_query::Error::Usage(format!(
            "--cluster {url:?}: expected df://HOST:PORT, the address of a `trawl cluster scheduler`"
        ))
    };
    let rest = url.strip_prefix("df://").unwrap_or(url);
    let rest = rest.trim_end_matches('/');
    if rest.is_empty() || rest.contains(['/', '?', '#', '@']) {
        return Err(bad());
    }
    let (host, port) = match rest.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(':') => (h, p.parse::<u16>().map_err(|_| bad())?),
        _ => (rest, 50050),
    };
    if host.is_empty() {
        return Err(bad());
    }
    Ok(format!("http://{host}:{port}"))
}

/// A context whose queries run on the cluster at `url` (`df://HOST:PORT`),
/// made from trawl's session settings, with Ballista's static planner (its
/// adaptive one never finishes a union of aggregates over an empty table).
pub fn context(
    url: &str,
) -> impl FnOnce(SessionConfig) -> trawl_query::Result<SessionContext> + '_ {
    move |config: SessionConfig| {
        let scheduler = scheduler_url(url)?;
        let mut config = config
            .upgrade_for_ballista()
            .with_ballista_logical_extension_codec(Arc::new(LogicalCodec::default()))
            .with_ballista_physical_extension_codec(Arc::new(PhysicalCodec::default()));
        // Ballista 55's static planner: with its adaptive planner (the
        // default), a UNION ALL of aggregates over an empty table (the
        // analyses' `time_base` input) never finishes: the scheduler
        // rejects the task's metrics ("task metrics array size 6 does not
        // equal with the stage metrics array size 5") and the job waits.
        // `SET ballista.planner.adaptive.enabled = true` turns it back on.
        config
            .options_mut()
            .set("ballista.planner.adaptive.enabled", "false")?;
        let state = SessionStateBuilder::new()
            .with_config(config)
            .with_default_features()
            .build()
            .upgrade_for_ballista(scheduler)?;
        let inner = state.query_planner().clone();
        let state = SessionStateBuilder::new_from_existing(state)
            .with_query_planner(Arc::new(Prepare { inner }))
            .build();
        Ok(SessionContext::new_with_state(state))
    }
}

/// Ballista's client planner, after the checks and computations a trawl
/// plan needs before it is sent.
#[derive(Debug)]
pub struct Prepare {
    inner: Arc<dyn QueryPlanner + Send + Sync>,
}

#[async_trait::async_trait]
impl QueryPlanner for Prepare {
    async fn create_physical_plan(
        &self,
        plan: &LogicalPlan,
        session: &dyn DfSession,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        let plan = &in_sql(plan, session).await?;
        if let Some(why) = refusal(plan)? {
            return plan_err!("not run on a cluster: {why}; run it without --cluster");
        }
        for t in tables(plan)? {
            if let Some(lazy) = t.as_ref().downcast_ref::<LazyTable>() {
                lazy.rows(session).await?;
            }
        }
        self.inner.create_physical_plan(plan, session).await
    }
}

/// `plan` with every table computed by a trawl operator the executors do
/// not have ([`StackKeyCost`]) replaced by the same rows in DataFusion's
/// own operators.
async fn in_sql(plan: &LogicalPlan, session: &dyn DfSession) -> Result<LogicalPlan> {
    let mut found = Vec::new();
    plan.apply_with_subqueries(|p| {
        if let LogicalPlan::TableScan(s) = p {
            let t = source_as_provider(&s.source)?;
            if t.as_ref().is::<StackKeyCost>() {
                found.push(t);
            }
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    if found.is_empty() {
        return Ok(plan.clone());
    }
    let mut plans = Vec::new();
    for t in found {
        if let Some(k) = t.as_ref().downcast_ref::<StackKeyCost>() {
            let sql = k.sql_plan(session).await?;
            plans.push((t.clone(), sql));
        }
    }
    plan.clone()
        .transform_up_with_subqueries(|p| {
            let LogicalPlan::TableScan(scan) = &p else {
                return Ok(Transformed::no(p));
            };
            let t = source_as_provider(&scan.source)?;
            let Some((_, sql)) = plans.iter().find(|(k, _)| Arc::ptr_eq(k, &t)) else {
                return Ok(Transformed::no(p));
            };
            let mut b = LogicalPlanBuilder::from(sql.clone());
            if let Some(proj) = &scan.projection {
                let fields = t.schema();
                b = b.project(proj.iter().map(|&i| ident(fields.field(i).name())))?;
            }
            Ok(Transformed::yes(b.alias(scan.table_name.clone())?.build()?))
        })
        .map(|t| t.data)
}

/// Every table `plan` scans, subqueries included.
fn tables(plan: &LogicalPlan) -> Result<Vec<Arc<dyn TableProvider>>> {
    let mut out = Vec::new();
    plan.apply_with_subqueries(|p| {
        if let LogicalPlan::TableScan(s) = p {
            out.push(source_as_provider(&s.source)?);
        }
        Ok(TreeNodeRecursion::Continue)
    })?;
    Ok(out)
}

/// Why `plan` cannot run on a cluster, if it cannot.
pub fn refusal(plan: &LogicalPlan) -> Result<Option<String>> {
    let mut why = None;
    plan.apply_with_subqueries(|p| {
        why = match p {
            LogicalPlan::Copy(c) => Some(format!(
                "COPY would write {} on the executors",
                c.output_url
            )),
            LogicalPlan::Dml(d) if !matches!(d.op, WriteOp::Ctas) => Some(format!(
                "{} into {} changes the client's tables",
                d.op, d.table_name
            )),
            LogicalPlan::TableScan(s) => source_as_provider(&s.source)
                .ok()
                .and_then(|t| crate::codec::unsupported(t.as_ref()))
                .map(|t| format!("table {} ({t}) cannot be sent to executors", s.table_name)),
            _ => None,
        };
        Ok(if why.is_some() {
            TreeNodeRecursion::Stop
        } else {
            TreeNodeRecursion::Continue
        })
    })?;
    Ok(why)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheduler_urls() {
        assert_eq!(scheduler_url("df://h:7").unwrap(), "http://h:7");
        assert_eq!(scheduler_url("df://h").unwrap(), "http://h:50050");
        assert_eq!(
            scheduler_url("10.0.0.1:50050").unwrap(),
            "http://10.0.0.1:50050"
        );
        assert!(scheduler_url("df://h:x").is_err());
        assert!(scheduler_url("df://").is_err());
        assert!(scheduler_url("df://h:1/path").is_err());
    }
}
