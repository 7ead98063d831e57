//! # trawl-query
//!
//! DataFusion over the Parquet tables of one or more captures, plus named
//! analyses written as SQL (`analyses/<area>/<name>.sql`).
//!
//! Principal types: [`Session`] (each table of all its captures as one
//! table with a leading `capture` column, derived tables computed when
//! first read), [`functions`] (analyses as SQL table functions; every one
//! is listed by [`specs`]), [`analyses`] (hotspots, ...).
//!
//! ```no_run
//! # async fn f() -> Result<(), trawl_query::Error> {
//! let s = trawl_query::Session::open(&["capture".into()]).await?;
//! let batches = s.sql("SELECT count(*) FROM perf_sample").await?.collect().await?;
//! # Ok(()) }
//! ```
//!
//! Architecture invariant: this crate reads only Parquet (the capture
//! tables); it never parses capture files and never symbolizes.

pub mod analyses;
pub mod assert_true;
pub mod cause;
pub mod choice;
pub mod code;
pub mod energy;
pub mod flame;
pub mod functions;
pub mod io;
pub mod lbr;
pub mod memlog;
pub mod memory;
pub mod power;
pub mod power_calls;
pub mod profile;
pub mod ranges;
pub mod stack_cost;
pub mod tables;
pub mod time;
pub mod timeline;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::prelude::*;

pub use datafusion;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{path}: not a trawl capture (no source.parquet); run `trawl ingest` first")]
    NotACapture { path: PathBuf },
    #[error("{0}")]
    Usage(String),
    #[error("{path}: written by a newer trawl (schema version {found}; this trawl reads up to {supported}); upgrade trawl to read it")]
    NewerSchema {
        path: PathBuf,
        found: i32,
        supported: i32,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// One capture directory and the name its rows get in the `capture` column.
#[derive(Clone, Debug)]
pub struct CaptureRef {
    pub name: String,
    pub dir: PathBuf,
    /// The schema version its files were written with (None: unknown,
    /// read as the current one).
    pub version: Option<i32>,
}

/// Expands the user's arguments: capture directories, or directories whose
/// subdirectories are captures (an archive).
pub fn find_captures(args: &[PathBuf]) -> Result<Vec<CaptureRef>> {
    let mut out = Vec::new();
    // Schema versions an archive's manifest states (no footer to read).
    let mut known: std::collections::HashMap<PathBuf, i32> = Default::default();
    for a in args {
        if trawl_capture::layout::is_capture(a) {
            out.push(a.clone());
            continue;
        }
        if let Some(v) = trawl_capture::layout::archive_versions(a) {
            for (name, version) in v {
                known.insert(a.join(format!("capture={name}")), version);
            }
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(a)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .map(|e| e.path())
                    .filter(|p| trawl_capture::layout::is_capture(p))
                    .collect()
            })
            .unwrap_or_default();
        if subs.is_empty() {
            return Err(Error::NotACapture { path: a.clone() });
        }
        subs.sort();
        out.extend(subs);
    }
    // Captures of a newer layout are refused, not misread.
    let mut versions = Vec::with_capacity(out.len());
    for dir in &out {
        let found = match known.get(dir) {
            Some(&v) => Some(v),
            None => trawl_capture::layout::schema_version(dir).map_err(Error::Usage)?,
        };
        versions.push(found);
        let supported = trawl_capture::schema::SCHEMA_VERSION;
        if let Some(found) = found.filter(|&v| v > supported) {
            return Err(Error::NewerSchema {
                path: dir.clone(),
                found,
                supported,
            });
        }
    }
    // Names: the directory names, made unique.
    let mut refs: Vec<CaptureRef> = Vec::new();
    for (dir, version) in out.into_iter().zip(versions) {
        let base = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.to_string_lossy().into_owned());
        // An archive's captures are Hive partitions: `capture=NAME` is NAME.
        let base = match base.strip_prefix("capture=") {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => base,
        };
        let mut name = base.clone();
        let mut k = 2;
        while refs.iter().any(|r| r.name == name) {
            name = format!("{base}#{k}");
            k += 1;
        }
        refs.push(CaptureRef { name, dir, version });
    }
    Ok(refs)
}

/// A DataFusion session over captures.
///
/// Opening registers tables and functions without reading any data: each
/// stored table is one [`tables::CaptureTable`] over all the captures, each
/// derived table a [`tables::LazyTable`] computed the first time a query
/// scans it.
pub struct Session {
    pub ctx: SessionContext,
    shared: Arc<Shared>,
}

/// What every [`Session`] over the same captures shares, including the
/// sessions a lazy table's computation runs in.
pub struct Shared {
    captures: Vec<CaptureRef>,
    origin: time::Origin,
    times: tokio::sync::OnceCell<Vec<time::CaptureTime>>,
    /// Where `annotate` gets code the captures do not hold yet.
    code: std::sync::OnceLock<Arc<dyn code::CodeSource>>,
}

/// A stored table of `captures`: their files of `def` as they are now.
pub(crate) fn stored_table(
    captures: &[CaptureRef],
    def: &trawl_capture::schema::TableDef,
) -> tables::CaptureTable {
    let files = captures
        .iter()
        .filter_map(|c| {
            let path = trawl_capture::layout::table_file(&c.dir, def.name);
            let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
            Some(tables::CaptureFile {
                capture: c.name.clone(),
                // Canonical: object store paths do not resolve `..`.
                path: std::fs::canonicalize(&path)
                    .or_else(|_| std::path::absolute(&path))
                    .unwrap_or(path),
                size: meta.len(),
                version: c.version,
            })
        })
        .collect();
    let renames = trawl_capture::schema::RENAMED
        .iter()
        .filter(|r| r.table == def.name)
        .map(|r| tables::Rename {
            old: r.old.to_string(),
            new: r.new.to_string(),
            since: r.since,
        })
        .collect();
    tables::CaptureTable::new(def.schema(), files).with_renames(renames)
}

impl Session {
    /// Opens the captures named by `args` (see [`find_captures`]). Every
    /// table has a leading `capture` column; tables a capture lacks are
    /// empty.
    pub async fn open(args: &[PathBuf]) -> Result<Session> {
        Self::open_at(args, &time::Origin::default()).await
    }

    /// [`Session::open`], with relative times (`t_ns`) counted from
    /// `origin` in each capture.
    pub async fn open_at(args: &[PathBuf], origin: &time::Origin) -> Result<Session> {
        Self::open_in(args, origin, |config| {
            Ok(SessionContext::new_with_config(config))
        })
        .await
    }

    /// [`Session::open_at`] in the context `make` builds from trawl's
    /// settings ([`session_config`]): a Ballista client's context, for one
    /// (trawl-cluster), whose queries then run on a cluster.
    pub async fn open_in(
        args: &[PathBuf],
        origin: &time::Origin,
        make: impl FnOnce(SessionConfig) -> Result<SessionContext>,
    ) -> Result<Session> {
        let captures = find_captures(args)?;
        let ctx = make(session_config()?)?;
        for def in trawl_capture::schema::TABLES {
            // The flat table is a view over the others (its files, written
            // by `ingest --flat`, are for readers without trawl).
            if def.name == trawl_capture::schema::PERF_SAMPLE_SYMBOLIZED.name {
                continue;
            }
            ctx.register_table(def.name, Arc::new(stored_table(&captures, def)))?;
        }
        let s = Session {
            ctx,
            shared: Arc::new(Shared {
                captures,
                origin: origin.clone(),
                times: tokio::sync::OnceCell::new(),
                code: Default::default(),
            }),
        };
        for f in scalar_udfs() {
            s.ctx.register_udf(f);
        }
        for f in aggregate_udfs() {
            s.ctx.register_udaf(f);
        }
        // An archive's manifest (`capture`, `capture_input` at its root),
        // with its declared schema: nothing is read until a query does;
        // empty for plain capture directories.
        for def in trawl_capture::schema::ARCHIVE {
            use datafusion::datasource::file_format::parquet::ParquetFormat;
            use datafusion::datasource::listing::{
                ListingOptions, ListingTable, ListingTableConfig, ListingTableUrl,
            };
            let urls = args
                .iter()
                .map(|a| trawl_capture::layout::table_file(a, def.name))
                .filter(|p| p.is_file())
                .map(|p| {
                    let p = std::fs::canonicalize(&p).unwrap_or(p);
                    ListingTableUrl::parse(p.to_string_lossy())
                })
                .collect::<datafusion::error::Result<Vec<_>>>()?;
            let schema = datafusion::arrow::datatypes::Schema::new(
                def.columns
                    .iter()
                    .map(|c| {
                        datafusion::arrow::datatypes::Field::new(
                            c.name,
                            c.ty.data_type(),
                            c.nullable,
                        )
                    })
                    .collect::<Vec<_>>(),
            );
            let schema = Arc::new(schema);
            let table: Arc<dyn datafusion::catalog::TableProvider> = if urls.is_empty() {
                Arc::new(datafusion::datasource::MemTable::try_new(
                    schema,
                    vec![vec![]],
                )?)
            } else {
                let config = ListingTableConfig::new_with_multi_paths(urls)
                    .with_listing_options(ListingOptions::new(Arc::new(ParquetFormat::default())))
                    .with_schema(schema);
                Arc::new(ListingTable::try_new(config)?)
            };
            s.ctx.register_table(def.name, table)?;
        }
        time::register(&s).await?;
        s.run_script(analyses::FRAME_NAME).await?;
        s.run_script(analyses::SAMPLE_SYMBOLIZED).await?;
        s.run_script(analyses::STACK_WEIGHT).await?;
        s.run_script(analyses::HOTSPOT_KEY_VIEW).await?;
        s.run_script(analyses::THREAD_STATE).await?;
        s.ctx.register_table(
            stack_cost::NAME,
            Arc::new(stack_cost::table(
                &functions::unbound(&analyses::HOTSPOTS)?,
                &s.shared,
            )),
        )?;
        functions::register(&s, analyses::SPECS).await?;
        lbr::register(&s).await?;
        memory::register(&s).await?;
        memlog::register(&s).await?;
        ranges::register(&s).await?;
        power_calls::register(&s).await?;
        energy::register(&s).await?;
        cause::register(&s).await?;
        Ok(s)
    }

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

    /// Registers a derived table computed by `compute` the first time a
    /// query scans it.
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

    pub(crate) fn register_lazy<F, Fut>(
        &self,
        name: &'static str,
        schema: SchemaRef,
        compute: F,
    ) -> Result<()>
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<RecordBatch>>> + Send + 'static,
    {
        let table = tables::LazyTable::new(name, schema, self.shared.clone(), compute);
        self.register_provider(name, Arc::new(table))
    }

    /// Gives `annotate` a source of the code the captures do not hold yet
    /// (once per session; later calls are ignored).
    pub fn set_code_source(&self, src: Arc<dyn code::CodeSource>) {
        let _ = self.shared.code.set(src);
    }

    /// The captures of this session.
    pub fn captures(&self) -> &[CaptureRef] {
        &self.shared.captures
    }

    /// Each capture's time origin and its inputs' offsets (computed on
    /// first use: it reads the earliest time of every input).
    pub async fn times(&self) -> Result<&[time::CaptureTime]> {
        self.shared
            .times
            .get_or_try_init(|| time::compute(self, &self.shared.origin))
            .await
            .map(Vec::as_slice)
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
        Ok(out)
    }

    /// The capture directories of this session.
    pub fn dirs(&self) -> Vec<&Path> {
        self.captures().iter().map(|c| c.dir.as_path()).collect()
    }
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

/// trawl's scalar functions (`assert_true`, `window_start`): registered in
/// every session, and what a cluster's processes decode by name.
pub fn scalar_udfs() -> Vec<datafusion::logical_expr::ScalarUDF> {
    vec![assert_true::udf(), time::window_start_udf()]
}

/// trawl's aggregate functions (`power_fit`).
pub fn aggregate_udfs() -> Vec<datafusion::logical_expr::AggregateUDF> {
    vec![power::udaf()]
}

/// Every analysis served as a SQL table function, by area: the stack
/// analyses, LBR, memory and I/O from traced calls, memory logs, energy,
/// exhaustion causes.
pub fn specs() -> Vec<&'static functions::Spec> {
    [
        analyses::SPECS,
        lbr::SPECS,
        memory::SPECS,
        memlog::SPECS,
        energy::SPECS,
        cause::SPECS,
        power_calls::SPECS,
    ]
    .concat()
}

/// A batch of named columns (a column is nullable when it holds nulls).
pub fn batch_of(cols: Vec<(&str, datafusion::arrow::array::ArrayRef)>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_from_iter(cols).map_err(datafusion::error::DataFusionError::from)?)
}

/// A string-like column as small ids (null: the empty string), new
/// strings numbered in order of arrival into `ids`, without a string per
/// row (runs of the same string are looked up once).
pub fn string_ids<H: std::hash::BuildHasher>(
    a: &datafusion::arrow::array::ArrayRef,
    ids: &mut std::collections::HashMap<String, u32, H>,
) -> Result<Vec<u32>> {
    use datafusion::arrow::array::{Array, AsArray};
    let a = datafusion::arrow::compute::cast(a, &datafusion::arrow::datatypes::DataType::Utf8)
        .map_err(datafusion::error::DataFusionError::from)?;
    let a = a.as_string::<i32>();
    let mut out = Vec::with_capacity(a.len());
    let mut last: Option<(&str, u32)> = None;
    for i in 0..a.len() {
        let v = if a.is_null(i) { "" } else { a.value(i) };
        let id = match last {
            Some((l, id)) if l == v => id,
            _ => {
                let n = ids.len() as u32;
                let id = *ids.entry(v.to_string()).or_insert(n);
                last = Some((v, id));
                id
            }
        };
        out.push(id);
    }
    Ok(out)
}

/// The values of a string-like column (Utf8, Utf8View, LargeUtf8,
/// dictionary), as owned strings.
pub fn string_values(a: &datafusion::arrow::array::ArrayRef) -> Vec<Option<String>> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::DataType;
    let Ok(c) = datafusion::arrow::compute::cast(a, &DataType::Utf8) else {
        return vec![None; a.len()];
    };
    let c = c.as_string::<i32>();
    (0..c.len())
        .map(|i| (!c.is_null(i)).then(|| c.value(i).to_string()))
        .collect()
}

/// The values of a numeric column as f64.
pub fn float_values(a: &datafusion::arrow::array::ArrayRef) -> Vec<Option<f64>> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::arrow::datatypes::{DataType, Float64Type};
    let Ok(c) = datafusion::arrow::compute::cast(a, &DataType::Float64) else {
        return vec![None; a.len()];
    };
    let c = c.as_primitive::<Float64Type>();
    (0..c.len())
        .map(|i| (!c.is_null(i)).then(|| c.value(i)))
        .collect()
}

/// Splits a script into statements at `;` outside quotes and comments.
pub fn split_statements(script: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = script.chars().peekable();
    let (mut sq, mut dq) = (false, false);
    while let Some(c) = chars.next() {
        match c {
            '\'' if !dq => sq = !sq,
            '"' if !sq => dq = !dq,
            '-' if !sq && !dq && chars.peek() == Some(&'-') => {
                // Line comment: skip to end of line.
                for c2 in chars.by_ref() {
                    if c2 == '\n' {
                        break;
                    }
                }
                cur.push('\n');
                continue;
            }
            ';' if !sq && !dq => {
                if !cur.trim().is_empty() {
                    out.push(std::mem::take(&mut cur));
                }
                cur.clear();
                continue;
            }
            _ => {}
        }
        cur.push(c);
    }
    if !cur.trim().is_empty() {
        out.push(cur);
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn splits_statements_outside_quotes_and_comments() {
        let v = super::split_statements("SELECT ';' AS a; -- x; y\nSELECT 2;\n");
        assert_eq!(v.len(), 2);
        assert!(v[0].contains("';'"));
    }
}
