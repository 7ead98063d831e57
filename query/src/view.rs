//! Views planned when a query first reads them.
//!
//! A session defines some thirty views over its tables (`frame_name`,
//! `_stack_weight`, `perf_sample_t`, ...). `CREATE VIEW` plans the view's
//! query on the spot, and planning all of them was most of the time a
//! session took to open, though a query reads one or two, or none (`trawl
//! sql CAP 'SELECT count(*) FROM perf_sample'`). A [`LazyView`] keeps the
//! view's SQL and plans it the first time the planner asks for its schema
//! or plan (when a query names it), in the session it was defined in, then
//! behaves as DataFusion's own [`ViewTable`]: its plan is inlined into the
//! query's.

use std::borrow::Cow;
use std::sync::{Arc, OnceLock, Weak};

use async_trait::async_trait;
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::catalog::{Session as CatalogSession, TableProvider};
use datafusion::common::plan_err;
use datafusion::datasource::{TableType, ViewTable};
use datafusion::error::Result as DfResult;
use datafusion::execution::SessionState;
use datafusion::logical_expr::{LogicalPlan, TableProviderFilterPushDown};
use datafusion::physical_plan::ExecutionPlan;
use datafusion::prelude::Expr;
use futures::FutureExt;
use parking_lot::RwLock;

use crate::error::Result;
use crate::rows::split_statements;
use crate::session::Session;

/// A view whose query is planned on first use.
pub(crate) struct LazyView {
    name: String,
    /// `CREATE VIEW name AS <query>`, as written.
    definition: String,
    /// Byte offset of the query in `definition`.
    query_at: usize,
    state: Weak<RwLock<SessionState>>,
    planned: OnceLock<std::result::Result<ViewTable, String>>,
}

impl std::fmt::Debug for LazyView {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LazyView")
            .field("name", &self.name)
            .finish()
    }
}

impl LazyView {
    fn view(&self) -> std::result::Result<&ViewTable, &str> {
        self.planned
            .get_or_init(|| self.plan().map_err(|e| format!("view {}: {e}", self.name)))
            .as_ref()
            .map_err(String::as_str)
    }

    fn plan(&self) -> DfResult<ViewTable> {
        let Some(state) = self.state.upgrade() else {
            return plan_err!("its session is closed");
        };
        // A snapshot, as `SessionContext::sql` plans in: no lock is held
        // while the views this one reads are planned in turn.
        let state = state.read().clone();
        let query = &self.definition[self.query_at..];
        // Resolving the tables of trawl's catalog (in memory) never waits;
        // a catalog that would is reported, not waited for.
        let plan = match state.create_logical_plan(query).now_or_never() {
            Some(plan) => plan?,
            None => return plan_err!("planning it would wait on its catalog"),
        };
        if !matches!(plan, LogicalPlan::Ddl(_) | LogicalPlan::Statement(_)) {
            return Ok(ViewTable::new(plan, Some(self.definition.clone())));
        }
        plan_err!("its definition is not a query")
    }
}

#[async_trait]
impl TableProvider for LazyView {
    /// The planned view's schema; empty if the view does not plan (the
    /// error is then what scanning it returns).
    fn schema(&self) -> SchemaRef {
        match self.view() {
            Ok(v) => v.schema(),
            Err(_) => Arc::new(Schema::empty()),
        }
    }

    fn table_type(&self) -> TableType {
        TableType::View
    }

    fn get_table_definition(&self) -> Option<&str> {
        Some(&self.definition)
    }

    fn get_logical_plan(&'_ self) -> Option<Cow<'_, LogicalPlan>> {
        self.view().ok().and_then(|v| v.get_logical_plan())
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        match self.view() {
            Ok(v) => v.supports_filters_pushdown(filters),
            Err(e) => plan_err!("{e}"),
        }
    }

    async fn scan(
        &self,
        state: &dyn CatalogSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        match self.view() {
            Ok(v) => v.scan(state, projection, filters, limit).await,
            Err(e) => plan_err!("{e}"),
        }
    }
}

/// `CREATE [OR REPLACE] VIEW name AS query`: the view's name and the byte
/// offset of its query; `None` for any other statement (or a view with a
/// column list, which DataFusion then plans).
fn view_definition(stmt: &str) -> Option<(&str, usize)> {
    let mut rest = stmt;
    let mut word = |expect: Option<&str>| -> Option<&str> {
        let t = rest.trim_start();
        let end = t
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(t.len());
        let (w, r) = t.split_at(end);
        if w.is_empty() || expect.is_some_and(|e| !w.eq_ignore_ascii_case(e)) {
            return None;
        }
        rest = r;
        Some(w)
    };
    word(Some("CREATE"))?;
    let mut name = word(None)?;
    if name.eq_ignore_ascii_case("OR") {
        word(Some("REPLACE"))?;
        name = word(None)?;
    }
    if !name.eq_ignore_ascii_case("VIEW") {
        return None;
    }
    let name = word(None)?;
    word(Some("AS"))?;
    Some((name, stmt.len() - rest.trim_start().len()))
}

impl Session {
    /// Defines the views of `script` (`;`-separated `CREATE [OR REPLACE]
    /// VIEW name AS ...`) as [`LazyView`]s, planned when a query first
    /// reads them; runs any other statement as [`Session::run_script`]
    /// does.
    pub(crate) async fn define_views(&self, script: &str) -> Result<()> {
        for stmt in split_statements(script) {
            let stmt = stmt.trim();
            match view_definition(stmt) {
                Some((name, query_at)) => {
                    let view = LazyView {
                        name: name.to_string(),
                        definition: stmt.to_string(),
                        query_at,
                        state: self.ctx.state_weak_ref(),
                        planned: OnceLock::new(),
                    };
                    self.register_provider(name, Arc::new(view))?;
                }
                None => {
                    self.ctx.sql(stmt).await?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::{view_definition, LazyView};
    use crate::session::Session;
    use datafusion::arrow::array::{Array, Int64Array};
    use datafusion::arrow::record_batch::RecordBatch;

    async fn rows(s: &Session, q: &str) -> crate::error::Result<Vec<RecordBatch>> {
        Session::collect(s.sql(q).await?).await
    }

    fn rt() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
    }

    /// Every view a session defines plans (a view that did not would
    /// otherwise show only when a query reads it, as an empty table).
    #[test]
    fn every_view_plans() {
        let rt = rt();
        let s = rt.block_on(Session::open(&[])).unwrap();
        let schema = s
            .ctx
            .catalog("datafusion")
            .unwrap()
            .schema("public")
            .unwrap();
        let mut views = Vec::new();
        for name in schema.table_names() {
            let t = rt.block_on(schema.table(&name)).unwrap().unwrap();
            if let Some(v) = (t.as_ref() as &dyn std::any::Any).downcast_ref::<LazyView>() {
                if let Err(e) = v.view() {
                    panic!("{name}: {e}");
                }
                views.push(name);
            }
        }
        for name in [
            "frame_name",
            "_stack_weight",
            "perf_sample_t",
            "_lbr_sample",
            "_page",
        ] {
            assert!(
                views.iter().any(|v| v == name),
                "{name} not among {views:?}"
            );
        }
    }

    /// A view is planned when a query first reads it, in its session as
    /// it is then: here its table does not exist when the view is defined
    /// (`CREATE VIEW` would fail). Expected: 1 + 2 + 3, worked by hand.
    #[test]
    fn a_view_is_planned_when_first_read() {
        let rt = rt();
        let s = rt.block_on(Session::open(&[])).unwrap();
        rt.block_on(s.define_views("CREATE VIEW later AS SELECT x * 1 AS x FROM not_yet"))
            .unwrap();
        let err = rt
            .block_on(rows(&s, "SELECT * FROM later"))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("view later") && err.contains("not_yet"),
            "{err}"
        );
        let s = rt.block_on(Session::open(&[])).unwrap();
        rt.block_on(s.define_views("CREATE VIEW later AS SELECT x * 1 AS x FROM not_yet"))
            .unwrap();
        let b = crate::rows::batch_of(vec![(
            "x",
            std::sync::Arc::new(Int64Array::from(vec![1, 2, 3])) as _,
        )])
        .unwrap();
        s.ctx.register_batch("not_yet", b).unwrap();
        let out = rt.block_on(rows(&s, "SELECT sum(x) FROM later")).unwrap();
        let sum = out[0]
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!((sum.len(), sum.value(0)), (1, 6));
    }

    #[test]
    fn view_definitions_are_recognised() {
        let q = "CREATE OR REPLACE VIEW frame_line AS\nSELECT 1";
        assert_eq!(view_definition(q), Some(("frame_line", 37)));
        assert_eq!(&q[37..], "SELECT 1");
        let q = "create view v as (select 2)";
        assert_eq!(
            view_definition(q).map(|(n, at)| (n, &q[at..])),
            Some(("v", "(select 2)"))
        );
        assert_eq!(view_definition("CREATE VIEW v(a) AS SELECT 1"), None);
        assert_eq!(view_definition("CREATE TABLE t AS SELECT 1"), None);
        assert_eq!(view_definition("CREATE OR VIEW v AS SELECT 1"), None);
        assert_eq!(view_definition("SELECT 1"), None);
    }
}
