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
    /// The captures' tracepoint formats, read when a query first needs
    /// them.
    pub(crate) tracepoints: std::sync::OnceLock<Arc<crate::tracepoint::Formats>>,
    /// Each capture's segment, by capture name (built when first needed).
    pub(crate) segment_of: std::sync::OnceLock<std::collections::HashMap<String, String>>,
}

impl Shared {
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
            let df = self.ctx.sql(&stmt).await?;
            // DDL executes on creation; queries are returned lazily.
            last = Some(df);
        }
        Ok(last)
    }

    /// Collects a data frame.
    pub async fn collect(df: DataFrame) -> Result<Vec<RecordBatch>> {
        Ok(df.collect().await?)
    }

    /// Every table and column of the session (stored and derived; names
    /// starting with `_` are internal) with its type, nullability and the
    /// sentence of documentation the schema gives it.
    pub async fn columns(&self) -> Result<Vec<RecordBatch>> {
        use datafusion::arrow::array::StringBuilder;
        use datafusion::arrow::datatypes::{DataType, Field, Schema};
        let q = "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
                 WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position";
        let mut out = Vec::new();
        for b in self.sql(q).await?.collect().await? {
            let t = string_values(b.column(0));
            let c = string_values(b.column(1));
            let mut doc = StringBuilder::new();
            for i in 0..b.num_rows() {
                let (tv, cv) = (t[i].as_deref().unwrap_or(""), c[i].as_deref().unwrap_or(""));
                let d = if cv == "capture" {
                    Some("Name of the capture directory the row comes from.")
                } else {
                    trawl_capture::schema::table(tv)
                        .and_then(|d| d.columns.iter().find(|col| col.name == cv))
                        .map(|col| col.doc)
                };
                doc.append_option(d);
            }
            let mut cols = b.columns().to_vec();
            cols.push(Arc::new(doc.finish()));
            let mut fields: Vec<Field> = b
                .schema()
                .fields()
                .iter()
                .map(|f| f.as_ref().clone())
                .collect();
            fields.push(Field::new("description", DataType::Utf8, true));
            out.push(
                RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
                    .map_err(datafusion::error::DataFusionError::from)?,
            );
        }
        // Each tracepoint event's typed view, as `tracepoint('EVENT')`.
        let rows = crate::tracepoint::event_columns(&self.shared)?;
        if let (Some(first), false) = (out.first(), rows.is_empty()) {
            let schema = first.schema();
            let column = |k: usize, f: &dyn Fn(&[String; 4]) -> Option<String>| {
                let mut b = StringBuilder::new();
                for r in &rows {
                    b.append_option(f(r));
                }
                datafusion::arrow::compute::cast(&b.finish(), schema.field(k).data_type())
                    .map_err(datafusion::error::DataFusionError::from)
            };
            let cols = vec![
                column(0, &|r| Some(format!("tracepoint('{}')", r[0])))?,
                column(1, &|r| Some(r[1].clone()))?,
                column(2, &|r| Some(r[2].clone()))?,
                column(3, &|_| Some("YES".to_string()))?,
                column(4, &|r| Some(r[3].clone()))?,
            ];
            out.push(
                RecordBatch::try_new(schema, cols)
                    .map_err(datafusion::error::DataFusionError::from)?,
            );
        }
        Ok(out)
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
