//! The [`Session`]: a DataFusion context over the tables of some
//! captures, and what every session over the same captures shares
//! ([`Shared`]: the captures, the time origin, the times computed on first
//! use, the source of code for `annotate`). Opening one (registering the
//! tables and analyses) is [`crate::registry`]'s job.

use std::path::Path;
use std::sync::Arc;

use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::*;

use crate::captures::CaptureRef;
use crate::clock::{CaptureTime, Origin};
use crate::error::Result;
use crate::rows::{split_statements, string_values};

/// A DataFusion session over captures.
///
/// Opening registers tables and functions without reading any data: each
/// stored table is one [`tables::CaptureTable`] over all the captures, each
/// derived table a [`tables::LazyTable`] computed the first time a query
/// scans it.
pub struct Session {
    pub ctx: SessionContext,
    pub(crate) shared: Arc<Shared>,
}

/// What every [`Session`] over the same captures shares, including the
/// sessions a lazy table's computation runs in.
pub struct Shared {
    pub(crate) captures: Vec<CaptureRef>,
    pub(crate) origin: Origin,
    pub(crate) times: tokio::sync::OnceCell<Vec<CaptureTime>>,
    /// Where `annotate` gets code the captures do not hold yet.
    pub(crate) code: std::sync::OnceLock<Arc<dyn CodeSource>>,
    /// What an area of analyses reads once per session, by type (e.g. the
    /// captures' tracepoint formats): see [`Shared::memo`].
    pub(crate) memo: std::sync::Mutex<Memo>,
    /// Each capture's segment, by capture name (built when first needed).
    pub(crate) segment_of: std::sync::OnceLock<std::collections::HashMap<String, String>>,
}

/// Values by their type (see [`Shared::memo`]).
pub(crate) type Memo =
    std::collections::HashMap<std::any::TypeId, Arc<dyn std::any::Any + Send + Sync>>;

impl Shared {
    /// The value of type `T` of these captures: made by `make` when first
    /// asked (outside the lock: `make` may ask for others), the first one
    /// made kept.
    pub(crate) fn memo<T: Send + Sync + 'static, E>(
        &self,
        make: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<Arc<T>, E> {
        let key = std::any::TypeId::of::<T>();
        let get = |m: &Memo| m.get(&key).cloned().and_then(|v| v.downcast::<T>().ok());
        if let Some(v) = get(&self.memo.lock().expect("not poisoned")) {
            return Ok(v);
        }
        let made = Arc::new(make()?);
        let mut m = self.memo.lock().expect("not poisoned");
        Ok(get(&m).unwrap_or_else(|| {
            m.insert(key, made.clone());
            made
        }))
    }

    /// The segment of each capture, by capture name.
    fn segment_map(&self) -> &std::collections::HashMap<String, String> {
        self.segment_of.get_or_init(|| {
            self.captures
                .iter()
                .map(|c| (c.name.clone(), c.segment.clone()))
                .collect()
        })
    }

    /// The segments of the captures `names` (once each, in their order).
    pub(crate) fn segments_of(&self, names: &[String]) -> Vec<&str> {
        let map = self.segment_map();
        let mut out: Vec<&str> = Vec::new();
        for s in names.iter().filter_map(|n| map.get(n)) {
            if !out.contains(&s.as_str()) {
                out.push(s);
            }
        }
        out
    }

    /// `b` (a derived table's rows: `capture`, then its columns) with the
    /// `segment` of each row's capture after `capture`.
    pub(crate) fn with_segment(
        &self,
        b: &datafusion::arrow::record_batch::RecordBatch,
    ) -> datafusion::error::Result<datafusion::arrow::record_batch::RecordBatch> {
        use datafusion::arrow::array::{ArrayRef, StringBuilder};
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let names = crate::rows::string_values(b.column(0));
        let mut seg = StringBuilder::with_capacity(b.num_rows(), 16 * b.num_rows());
        let mut last: Option<(&str, &str)> = None;
        for n in &names {
            let n = n.as_deref().unwrap_or_default();
            let s = match last {
                Some((c, s)) if c == n => s,
                _ => self.segment_map().get(n).map_or(n, String::as_str),
            };
            last = Some((n, s));
            seg.append_value(s);
        }
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        let mut cols: Vec<ArrayRef> = b.columns().to_vec();
        fields.insert(1, Field::new("segment", DataType::Utf8, false));
        cols.insert(1, std::sync::Arc::new(seg.finish()));
        Ok(datafusion::arrow::record_batch::RecordBatch::try_new(
            std::sync::Arc::new(Schema::new(fields)),
            cols,
        )?)
    }
}

impl Session {
    /// A session over the same captures and catalog as the one `state`
    /// belongs to (a lazy table computes its rows in it).
    pub(crate) fn over(
        state: &dyn datafusion::catalog::Session,
        shared: Arc<Shared>,
    ) -> datafusion::error::Result<Session> {
        let Some(state) = state
            .as_any()
            .downcast_ref::<datafusion::execution::SessionState>()
        else {
            return datafusion::common::internal_err!("trawl tables need a SessionState");
        };
        Ok(Session {
            ctx: SessionContext::new_with_state(state.clone()),
            shared,
        })
    }

    /// Registers `table` as `name` (replacing a table of that name).
    pub(crate) fn register_provider(
        &self,
        name: &str,
        table: Arc<dyn datafusion::catalog::TableProvider>,
    ) -> Result<()> {
        let _ = self.ctx.deregister_table(name);
        self.ctx.register_table(name, table)?;
        Ok(())
    }

    /// Gives `annotate` a source of the code the captures do not hold yet
    /// (once per session; later calls are ignored).
    pub fn set_code_source(&self, src: Arc<dyn CodeSource>) {
        let _ = self.shared.code.set(src);
    }

    /// The captures of this session.
    pub fn captures(&self) -> &[CaptureRef] {
        &self.shared.captures
    }

    /// Runs one SQL statement.
    pub async fn sql(&self, q: &str) -> Result<DataFrame> {
        Ok(self.ctx.sql(q).await?)
    }

    /// Runs one SQL statement whose `$name` placeholders take `params`:
    /// values (event names, zones, captures) never become SQL text.
    pub async fn sql_with(
        &self,
        q: &str,
        params: &[(&str, datafusion::scalar::ScalarValue)],
    ) -> Result<DataFrame> {
        let values: std::collections::HashMap<String, datafusion::scalar::ScalarValue> = params
            .iter()
            .map(|(k, v)| (k.to_string(), v.clone()))
            .collect();
        Ok(self
            .ctx
            .sql(q)
            .await?
            .with_param_values(datafusion::common::ParamValues::from(values))?)
    }

    /// Runs `;`-separated statements; returns the result of the last one.
    pub async fn run_script(&self, script: &str) -> Result<Option<DataFrame>> {
        let mut last = None;
        for stmt in split_statements(script) {
            let df = match self.ctx.sql(&stmt).await {
                Ok(df) => df,
                Err(e) => return Err(self.with_suggestion(e)),
            };
            // DDL executes on creation; queries are returned lazily.
            last = Some(df);
        }
        Ok(last)
    }

    /// A "table not found" error with the closest tables and functions
    /// this session has (`perf_samples`: did you mean `perf_sample`?).
    fn with_suggestion(&self, e: datafusion::error::DataFusionError) -> crate::Error {
        let msg = e.to_string();
        let Some(name) = msg
            .split("table '")
            .nth(1)
            .and_then(|r| r.split('\'').next())
            .filter(|_| msg.contains("not found"))
        else {
            return e.into();
        };
        let name = name.rsplit('.').next().unwrap_or(name);
        let mut known: Vec<String> = self
            .ctx
            .catalog("datafusion")
            .and_then(|c| c.schema("public"))
            .map(|s| s.table_names())
            .unwrap_or_default();
        known.extend(self.ctx.state().table_functions().keys().cloned());
        let mut near: Vec<(usize, String)> = known
            .into_iter()
            .filter(|k| !k.starts_with('_'))
            .map(|k| (crate::sample::edit_distance(name, &k), k))
            .filter(|(d, k)| *d <= 2.max(k.len() / 4))
            .collect();
        near.sort();
        near.dedup();
        match near.first() {
            Some((_, k)) => crate::Error::Usage(format!(
                "{msg}: did you mean {k}? (trawl tables lists them)"
            )),
            None => crate::Error::Usage(format!("{msg} (trawl tables lists the tables)")),
        }
    }

    /// Collects a data frame.
    pub async fn collect(df: DataFrame) -> Result<Vec<RecordBatch>> {
        Ok(df.collect().await?)
    }

    /// The capture directories of this session.
    pub fn dirs(&self) -> Vec<&Path> {
        self.captures().iter().map(|c| c.dir.as_path()).collect()
    }
}
/// Decodes a function's code into a capture's `instruction` table.
pub trait CodeSource: Send + Sync {
    /// Makes sure the capture in `dir` holds the code of `function` in the
    /// modules that name it (those whose path contains `module`).
    fn ensure(&self, dir: &Path, function: &str, module: Option<&str>) -> Result<(), String>;
}

/// The session settings trawl uses: DataFusion's from the environment
/// (`DATAFUSION_EXECUTION_TARGET_PARTITIONS=1`, `DATAFUSION_EXECUTION_
/// BATCH_SIZE`, ..., as datafusion-cli reads them), the information schema
/// on, partitions defaulting to the cores.
pub fn session_config() -> Result<SessionConfig> {
    let mut config = SessionConfig::from_env()?.with_information_schema(true);
    if std::env::var_os("DATAFUSION_EXECUTION_TARGET_PARTITIONS").is_none() {
        config = config
            .with_target_partitions(std::thread::available_parallelism().map_or(2, |n| n.get()));
    }
    Ok(config)
}

/// The first column of the first row of `q`'s result, as text.
pub(crate) async fn scalar(s: &Session, q: &str) -> Result<Option<String>> {
    scalar_with(s, q, &[]).await
}

/// The number a `SELECT count(*) ...` query `q` (with `$name` placeholders
/// bound to `params`) answers (0 with no row).
pub(crate) async fn count(
    s: &Session,
    q: &str,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> Result<i64> {
    let b = s.sql_with(q, params).await?.collect().await?;
    Ok(b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| crate::rows::i64_at(b, 0, 0))
        .unwrap_or(0))
}

/// [`scalar`] of a query with `$name` placeholders bound to `params`.
pub(crate) async fn scalar_with(
    s: &Session,
    q: &str,
    params: &[(&str, datafusion::scalar::ScalarValue)],
) -> Result<Option<String>> {
    let b = s.sql_with(q, params).await?.collect().await?;
    Ok(b.iter()
        .find(|b| b.num_rows() > 0)
        .and_then(|b| string_values(b.column(0)).into_iter().next().flatten()))
}
