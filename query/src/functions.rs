//! Analyses written as SQL files with named parameters, served as table
//! functions.
//!
//! An analysis is a query in `analyses/<area>/<name>.sql` that reads its
//! inputs as `$name` placeholders (`WHERE ($pid IS NULL OR array_has($pid,
//! pid))`); the file runs as written once the placeholders have values. It
//! is planned once, when it is first called (plans read no data), and each
//! call binds the arguments to the placeholders of that plan: no SQL text
//! is ever built from arguments. A parameter not given is NULL, which the
//! file reads as "no restriction" or "the default".
//!
//! Calls take the leading parameters by position (as many as leave valid
//! name/value pairs after them), then any parameter as a name/value pair,
//! in any order:
//!
//! ```sql
//! SELECT * FROM hotspots('function');
//! SELECT * FROM hotspots('module', 'pid', 42, 'from_ns', 1000000);
//! SELECT * FROM hotspots('function', 'comm', 'cc1', 'comm', 'as');  -- a list: either
//! ```

use std::collections::HashMap;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field};
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::tree_node::{Transformed, TreeNode};
use datafusion::common::{plan_err, ParamValues};
use datafusion::datasource::ViewTable;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::simplify::SimplifyContext;
use datafusion::logical_expr::{Expr, LogicalPlan, LogicalPlanBuilder};
use datafusion::optimizer::simplify_expressions::ExprSimplifier;
use datafusion::prelude::{ident, DataFrame};
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::session::{Session, Shared};

/// A parameter's type. List parameters take a value, an array, or the
/// same name given several times (any of the values matches).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Text,
    Int,
    Float,
    Bool,
    IntList,
    TextList,
}

impl Kind {
    fn item_type(self) -> DataType {
        match self {
            Kind::Text | Kind::TextList => DataType::Utf8,
            Kind::Int => DataType::Int64,
            Kind::Float => DataType::Float64,
            Kind::IntList => DataType::Int32,
            Kind::Bool => DataType::Boolean,
        }
    }

    fn is_list(self) -> bool {
        matches!(self, Kind::IntList | Kind::TextList)
    }

    fn null(self) -> DfResult<ScalarValue> {
        if self.is_list() {
            ScalarValue::try_from(DataType::List(Arc::new(Field::new_list_field(
                self.item_type(),
                true,
            ))))
        } else {
            ScalarValue::try_from(self.item_type())
        }
    }
}

/// One named input of an analysis.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub kind: Kind,
    pub doc: &'static str,
}

/// The arguments of one call, by parameter name (every parameter present;
/// NULL when not given).
pub type Bound = HashMap<&'static str, ScalarValue>;

/// A call's text argument `name`.
pub(crate) fn text(b: &Bound, name: &str) -> Option<String> {
    match b.get(name) {
        Some(ScalarValue::Utf8(Some(v))) => Some(v.clone()),
        _ => None,
    }
}

/// A call's text list argument `name` (empty when not given).
pub(crate) fn texts(b: &Bound, name: &str) -> DfResult<Vec<String>> {
    Ok(match b.get(name) {
        Some(ScalarValue::List(a)) if !datafusion::arrow::array::Array::is_null(a.as_ref(), 0) => {
            ScalarValue::convert_array_to_scalar_vec(a.as_ref())?
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|v| match v {
                    ScalarValue::Utf8(Some(s)) => Some(s),
                    _ => None,
                })
                .collect()
        }
        _ => Vec::new(),
    })
}

/// A call's integer argument `name`.
pub(crate) fn int(b: &Bound, name: &str) -> Option<i64> {
    match b.get(name) {
        Some(ScalarValue::Int64(v)) => *v,
        _ => None,
    }
}

/// A call's number argument `name`.
pub(crate) fn float(b: &Bound, name: &str) -> Option<f64> {
    match b.get(name) {
        Some(ScalarValue::Float64(v)) => *v,
        _ => None,
    }
}

/// Tables an analysis reads that a call computes from its arguments (in
/// Rust): each replaces the scans of the registered table of that name
/// (which holds the rows for the default arguments) in the call's plan.
pub type Inputs = fn(&Bound, &Arc<Shared>) -> DfResult<Vec<(&'static str, Arc<dyn TableProvider>)>>;

/// An analysis: its SQL, its parameters and, optionally, which of its
/// columns a call returns (for analyses whose columns depend on an
/// argument, e.g. the key of `hotspots`) and the tables it computes per
/// call.
pub struct Spec {
    pub name: &'static str,
    /// What the analysis answers (shown by `trawl functions`).
    pub doc: &'static str,
    pub sql: &'static str,
    /// How many leading parameters may be given by position.
    pub positional: usize,
    pub params: &'static [Param],
    pub columns: Option<fn(&Bound, &Arc<Shared>) -> DfResult<Vec<Expr>>>,
    pub inputs: Option<Inputs>,
}

/// A registered analysis: its spec and, once it was first called, the plan
/// of its SQL.
pub struct SqlFunction {
    spec: &'static Spec,
    plan: std::sync::OnceLock<LogicalPlan>,
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SqlFunction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SqlFunction({})", self.spec.name)
    }
}

impl SqlFunction {
    /// The analysis `spec` of the session `s`; its SQL is planned when it
    /// is first called (a session opened for one report plans only what
    /// that report calls).
    pub fn new(s: &Session, spec: &'static Spec) -> SqlFunction {
        SqlFunction {
            spec,
            plan: std::sync::OnceLock::new(),
            shared: s.shared.clone(),
        }
    }

    /// The plan of the spec's SQL in the session of `state` (the tables and
    /// views it reads are registered there; no data is read).
    fn plan(&self, state: &dyn datafusion::catalog::Session) -> DfResult<&LogicalPlan> {
        if let Some(p) = self.plan.get() {
            return Ok(p);
        }
        let Some(state) = state
            .as_any()
            .downcast_ref::<datafusion::execution::SessionState>()
        else {
            return datafusion::common::internal_err!("{}: needs a SessionState", self.spec.name);
        };
        // Planning reads only the session's catalog (in memory): the future
        // completes without waiting on anything.
        let plan = futures::executor::block_on(state.create_logical_plan(self.spec.sql))?;
        let plan = inline_views(plan)?;
        Ok(self.plan.get_or_init(|| plan))
    }

    /// Reads a call's arguments.
    pub fn bind(&self, args: &[Expr]) -> DfResult<Bound> {
        let spec = self.spec;
        let simplifier = ExprSimplifier::new(SimplifyContext::default());
        let mut values: Vec<ScalarValue> = Vec::with_capacity(args.len());
        for a in args {
            match simplifier.simplify(a.clone())? {
                Expr::Literal(v, _) => values.push(v),
                other => {
                    return plan_err!("{}: arguments must be constants, got {other}", spec.name)
                }
            }
        }
        // The leading arguments are positional: as many as the spec
        // allows that leave valid name/value pairs after them.
        let names_follow = |k: usize| {
            values[k..].len() % 2 == 0
                && values[k..].iter().step_by(2).all(|n| {
                    matches!(n, ScalarValue::Utf8(Some(n)) | ScalarValue::Utf8View(Some(n))
                        | ScalarValue::LargeUtf8(Some(n)) if spec.params.iter().any(|p| p.name == n))
                })
        };
        let most = values.len().min(spec.positional);
        let positional = (0..=most).rev().find(|&k| names_follow(k)).unwrap_or(most);
        let mut given: Vec<(&Param, ScalarValue)> = Vec::new();
        for (p, v) in spec.params.iter().zip(values.drain(..positional)) {
            given.push((p, v));
        }
        if values.len() % 2 != 0 {
            return plan_err!(
                "{}: after the first {} argument(s), give name/value pairs ({})",
                spec.name,
                spec.positional,
                self.usage()
            );
        }
        let mut it = values.into_iter();
        while let (Some(k), Some(v)) = (it.next(), it.next()) {
            let name = match &k {
                ScalarValue::Utf8(Some(n))
                | ScalarValue::Utf8View(Some(n))
                | ScalarValue::LargeUtf8(Some(n)) => n.clone(),
                other => {
                    return plan_err!(
                        "{}: expected a parameter name, got {other} ({})",
                        spec.name,
                        self.usage()
                    )
                }
            };
            let Some(p) = spec.params.iter().find(|p| p.name == name) else {
                return plan_err!("{}: no parameter {name:?} ({})", spec.name, self.usage());
            };
            given.push((p, v));
        }
        let mut out: Bound = HashMap::new();
        let mut lists: HashMap<&'static str, Vec<ScalarValue>> = HashMap::new();
        for (p, v) in given {
            if v.is_null() {
                continue;
            }
            if p.kind.is_list() {
                let items = lists.entry(p.name).or_default();
                match &v {
                    ScalarValue::List(a) => {
                        for x in ScalarValue::convert_array_to_scalar_vec(a.as_ref())?
                            .into_iter()
                            .flatten()
                            .flatten()
                        {
                            items.push(cast(spec, p, x)?);
                        }
                    }
                    _ => items.push(cast(spec, p, v)?),
                }
            } else {
                if out.contains_key(p.name) {
                    return plan_err!("{}: {} given twice", spec.name, p.name);
                }
                out.insert(p.name, cast(spec, p, v)?);
            }
        }
        for p in spec.params {
            if let Some(items) = lists.remove(p.name) {
                out.insert(
                    p.name,
                    ScalarValue::List(ScalarValue::new_list_nullable(&items, &p.kind.item_type())),
                );
            }
            if !out.contains_key(p.name) {
                out.insert(p.name, p.kind.null()?);
            }
        }
        Ok(out)
    }

    /// The plan of a call with these arguments, in the session of `state`.
    pub fn call_plan(
        &self,
        state: &dyn datafusion::catalog::Session,
        bound: &Bound,
    ) -> DfResult<LogicalPlan> {
        let plan = bind_plan(self.plan(state)?.clone(), bound, &self.shared)?;
        let plan = match self.spec.inputs {
            Some(inputs) => replace_tables(plan, inputs(bound, &self.shared)?)?,
            None => plan,
        };
        Ok(match self.spec.columns {
            Some(pick) => LogicalPlanBuilder::from(plan)
                .project(pick(bound, &self.shared)?)?
                .build()?,
            None => plan,
        })
    }

    fn usage(&self) -> String {
        let names: Vec<String> = self
            .spec
            .params
            .iter()
            .enumerate()
            .map(|(i, p)| {
                if i < self.spec.positional {
                    p.name.to_string()
                } else {
                    format!("'{}', value", p.name)
                }
            })
            .collect();
        format!("{}({})", self.spec.name, names.join(", "))
    }
}

fn cast(spec: &Spec, p: &Param, v: ScalarValue) -> DfResult<ScalarValue> {
    v.cast_to(&p.kind.item_type()).or_else(|_| {
        plan_err!(
            "{}: {} must be {:?}, got {v}",
            spec.name,
            p.name,
            p.kind.item_type()
        )
    })
}

impl TableFunctionImpl for SqlFunction {
    fn call_with_args(&self, args: TableFunctionArgs) -> DfResult<Arc<dyn TableProvider>> {
        let bound = self.bind(args.exprs())?;
        Ok(Arc::new(ViewTable::new(
            self.call_plan(args.session(), &bound)?,
            None,
        )))
    }
}

/// `plan` with its placeholders bound to `bound`.
pub(crate) fn bind_plan(
    plan: LogicalPlan,
    bound: &Bound,
    shared: &Shared,
) -> DfResult<LogicalPlan> {
    let mut values: HashMap<String, ScalarValue> = bound
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    // `$segment`: the segments of the captures `$capture` names (NULL:
    // every one), which the scans of shared tables (`schema::SHARED`)
    // select by.
    let captures = texts(bound, "capture")?;
    let segment = match captures.is_empty() {
        true => Kind::TextList.null()?,
        false => {
            let segs: Vec<ScalarValue> = shared
                .segments_of(&captures)
                .into_iter()
                .map(ScalarValue::from)
                .collect();
            ScalarValue::List(ScalarValue::new_list_nullable(&segs, &DataType::Utf8))
        }
    };
    values.insert("segment".into(), segment);
    // Bound parameters change types and what may be null: every node's
    // schema is derived again.
    Ok(plan
        .with_param_values(ParamValues::from(values))?
        .transform_up(|p| Ok(Transformed::yes(p.recompute_schema()?)))?
        .data)
}

/// The arguments of a call that gives none: every parameter of `spec`
/// NULL (the defaults).
pub(crate) fn unbound(spec: &Spec) -> DfResult<Bound> {
    spec.params
        .iter()
        .map(|p| Ok((p.name, p.kind.null()?)))
        .collect()
}

/// Replaces the scans of the tables named in `tables` by scans of the
/// providers given.
pub(crate) fn replace_tables(
    plan: LogicalPlan,
    tables: Vec<(&'static str, Arc<dyn TableProvider>)>,
) -> DfResult<LogicalPlan> {
    plan.transform_up_with_subqueries(|p| {
        let LogicalPlan::TableScan(scan) = &p else {
            return Ok(Transformed::no(p));
        };
        let Some((_, t)) = tables.iter().find(|(n, _)| scan.table_name.table() == *n) else {
            return Ok(Transformed::no(p));
        };
        let source = datafusion::datasource::provider_as_source(t.clone());
        let scan = datafusion::logical_expr::TableScanBuilder::new(scan.table_name.clone(), source)
            .with_projection(scan.projection.clone())
            .with_filters(scan.filters.clone())
            .with_fetch(scan.fetch)
            .build()?;
        Ok(Transformed::yes(LogicalPlan::TableScan(scan)))
    })
    .map(|t| t.data)
}

/// Replaces every scan of a view by the view's plan, so the placeholders
/// of views an analysis reads are bound with the analysis's own.
pub(crate) fn inline_views(plan: LogicalPlan) -> DfResult<LogicalPlan> {
    plan.transform_up_with_subqueries(|p| {
        let LogicalPlan::TableScan(scan) = &p else {
            return Ok(Transformed::no(p));
        };
        let Some(view) = scan.source.get_logical_plan() else {
            return Ok(Transformed::no(p));
        };
        let view = inline_views(view.into_owned())?;
        let mut b = LogicalPlanBuilder::from(view);
        if let Some(proj) = &scan.projection {
            let fields = scan.source.schema();
            b = b.project(proj.iter().map(|&i| ident(fields.field(i).name())))?;
        }
        Ok(Transformed::yes(b.alias(scan.table_name.clone())?.build()?))
    })
    .map(|t| t.data)
}

/// Registers `specs` as table functions of `s`.
pub async fn register(s: &Session, specs: &[&'static Spec]) -> Result<()> {
    for spec in specs {
        s.ctx
            .register_udtf(spec.name, Arc::new(SqlFunction::new(s, spec)));
    }
    Ok(())
}

/// A call of the registered analysis `name` with these arguments, as a
/// data frame (the same plan `SELECT * FROM name(...)` gives).
pub async fn call(s: &Session, name: &str, args: &[Expr]) -> Result<DataFrame> {
    call_with_tables(s, name, args, Vec::new()).await
}

/// [`call`], with the tables named in `tables` read from the providers
/// given (a front door that has computed an analysis's input itself).
pub(crate) async fn call_with_tables(
    s: &Session,
    name: &str,
    args: &[Expr],
    tables: Vec<(
        &'static str,
        std::sync::Arc<dyn datafusion::catalog::TableProvider>,
    )>,
) -> Result<DataFrame> {
    let f = s.ctx.table_function(name)?;
    let Some(f) = (f.function().as_ref() as &dyn std::any::Any).downcast_ref::<SqlFunction>()
    else {
        return Err(Error::Usage(format!("{name} is not a SQL analysis")));
    };
    let plan = replace_tables(f.call_plan(&s.ctx.state(), &f.bind(args)?)?, tables)?;
    Ok(DataFrame::new(s.ctx.state(), plan))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every registered analysis's SQL plans. Analyses are planned when
    /// first called, so a file that no longer plans (a renamed column, a
    /// view gone) would otherwise show only when someone calls it.
    #[test]
    fn every_analysis_plans() {
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        let s = rt.block_on(Session::open(&[])).unwrap();
        let state = s.ctx.state();
        let mut planned = Vec::new();
        for (name, f) in state.table_functions() {
            let f = f.function().as_ref() as &dyn std::any::Any;
            if let Some(f) = f.downcast_ref::<SqlFunction>() {
                if let Err(e) = f.plan(&state) {
                    panic!("{name}: {e}");
                }
                planned.push(name.clone());
            }
        }
        for name in [
            "hotspots",
            "hotspot_key",
            "callers",
            "cause_cpu",
            "pages",
            "energy_by",
        ] {
            assert!(
                planned.iter().any(|p| p == name),
                "{name} not among {planned:?}"
            );
        }
    }
}
