//! The session's tables, none of which reads data when it is registered.
//!
//! - [`CaptureTable`]: one stored table (`perf_sample`, ...) of every
//!   capture of the session as one table, the capture's name as the
//!   partition column `capture`. Registering it costs a `stat` per file;
//!   a scan is one Parquet scan over all the files (DataFusion splits and
//!   prunes them as for a listing table), not a UNION of per-capture views.
//! - [`LazyTable`]: a derived table (`time_base`, `memory_region`, ...)
//!   whose rows a function computes the first time a query scans it; the
//!   rows are kept for the rest of the session.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;

use datafusion::arrow::datatypes::{DataType, Field, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{Session as DfSession, TableProvider};
use datafusion::datasource::file_format::parquet::ParquetFormat;
use datafusion::datasource::file_format::FileFormat;
use datafusion::datasource::listing::PartitionedFile;
use datafusion::datasource::physical_plan::{FileGroup, FileScanConfigBuilder};
use datafusion::datasource::table_schema::TableSchema;
use datafusion::datasource::{MemTable, TableType};
use datafusion::error::Result as DfResult;
use datafusion::execution::object_store::ObjectStoreUrl;
use datafusion::logical_expr::{Expr, TableProviderFilterPushDown};
use datafusion::physical_plan::empty::EmptyExec;
use datafusion::physical_plan::ExecutionPlan;
use datafusion::scalar::ScalarValue;
use futures::future::BoxFuture;
use tokio::sync::OnceCell;
use trawl_capture::cloud::object_store;

use crate::captures::CaptureRef;
use crate::error::Result;
use crate::session::{Session, Shared};

/// One file of a [`CaptureTable`]: the capture's name and the Parquet file.
#[derive(Clone, Debug)]
pub struct CaptureFile {
    pub capture: String,
    /// The id space of the file's ids (`schema::SHARED`): for a capture
    /// directory, the capture's name.
    pub segment: String,
    /// The file's path, or its key in the object store `store`.
    pub path: PathBuf,
    /// `scheme://bucket` of the object store holding it (None: a local
    /// file).
    pub store: Option<String>,
    pub size: u64,
    /// The schema version it was written with (None: the current one).
    pub version: Option<i32>,
    /// A segment's file (several captures' rows, `capture` a column of
    /// the file; `capture` above is empty): which of its rows the session
    /// reads.
    pub rows: Option<SegmentRows>,
}

/// The rows of a segment's file a session reads.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentRows {
    /// The captures read.
    pub captures: SegmentCaptures,
    /// The rows of the file.
    pub file_rows: i64,
    /// Captures the session names otherwise than the file does (a name
    /// two archives of the session share): (the file's, the session's).
    pub renamed: Vec<(String, String)>,
}

/// The captures of a segment's file a session reads.
#[derive(Clone, Debug)]
pub enum SegmentCaptures {
    /// These (named as the file names them), each with its first row and
    /// rows in the file, in file order (empty for a shared table: every
    /// row).
    Listed(Arc<Vec<(Arc<str>, i64, i64)>>),
    /// Those its archive's manifest places in the segment, their rows
    /// read from the manifest when a scan needs them; `live`: their rows,
    /// when the manifest gives them without.
    Archive {
        segment: Arc<crate::captures::SegmentFiles>,
        table: &'static str,
        live: Option<i64>,
    },
}

impl PartialEq for SegmentCaptures {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Listed(a), Self::Listed(b)) => a == b,
            (
                Self::Archive { segment, table, .. },
                Self::Archive {
                    segment: s2,
                    table: t2,
                    ..
                },
            ) => Arc::ptr_eq(segment, s2) && table == t2,
            _ => false,
        }
    }
}

impl Eq for SegmentCaptures {}

impl SegmentCaptures {
    /// The captures' rows; with `only` (names as the file has them), at
    /// least those of these captures.
    pub fn ranges(
        &self,
        only: Option<&std::collections::BTreeSet<&str>>,
    ) -> DfResult<Arc<Vec<(Arc<str>, i64, i64)>>> {
        match self {
            Self::Listed(r) => Ok(r.clone()),
            Self::Archive { segment, table, .. } => segment
                .ranges_of(table, only)
                .map_err(datafusion::error::DataFusionError::Execution),
        }
    }
}

/// A column renamed at schema version `since`: files of earlier versions
/// hold it as `old` (`schema::RENAMED`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rename {
    pub old: String,
    pub new: String,
    pub since: i32,
}

/// A stored table of all the session's captures: `capture` and `segment`
/// (a shared table: `segment` alone), then the table's columns
/// (`schema::TableDef`).
#[derive(Debug)]
pub struct CaptureTable {
    /// The columns stored in the files.
    file_schema: SchemaRef,
    /// `capture` (unless shared), `segment`, then `file_schema`'s columns.
    table_schema: SchemaRef,
    /// Rows are in the id space of a segment, not of one capture
    /// (`schema::SHARED`): the table has no `capture` column.
    shared: bool,
    files: Vec<CaptureFile>,
    /// Columns renamed since some files were written.
    renames: Vec<Rename>,
}

impl CaptureTable {
    /// A table over `files`, all written with (a prefix or subset of)
    /// `file_schema`'s columns; columns a file lacks (added to the schema
    /// after it was written) read as nulls. A `shared` table's rows are a
    /// segment's, not a capture's: it has no `capture` column.
    pub fn new(file_schema: SchemaRef, files: Vec<CaptureFile>, shared: bool) -> Self {
        // Without the column docs the files carry in their metadata: plans
        // that combine tables (unions, joins) require equal metadata on
        // both sides, and the docs are for readers of the files.
        let fields: Vec<Field> = file_schema
            .fields()
            .iter()
            .map(|f| f.as_ref().clone().with_metadata(Default::default()))
            .collect();
        let file_schema = Arc::new(Schema::new(fields.clone()));
        let mut all = Vec::with_capacity(fields.len() + 2);
        if !shared {
            all.push(Field::new("capture", DataType::Utf8, false));
        }
        all.push(Field::new("segment", DataType::Utf8, false));
        all.extend(fields);
        CaptureTable {
            file_schema,
            table_schema: Arc::new(Schema::new(all)),
            shared,
            files,
            renames: Vec::new(),
        }
    }

    /// Whether the table is a shared one (no `capture` column).
    pub fn is_shared(&self) -> bool {
        self.shared
    }

    /// The leading columns that are not stored in the files.
    fn n_keys(&self) -> usize {
        if self.shared {
            1
        } else {
            2
        }
    }

    /// The table, reading the files written before a rename with the
    /// column's old name.
    pub fn with_renames(mut self, renames: Vec<Rename>) -> Self {
        self.renames = renames;
        self
    }

    /// The renames the table applies.
    pub fn renames(&self) -> &[Rename] {
        &self.renames
    }

    /// The renames file `f` needs (those made after it was written).
    fn renames_of(&self, f: &CaptureFile) -> Vec<&Rename> {
        self.renames
            .iter()
            .filter(|r| f.version.is_some_and(|v| v < r.since))
            .collect()
    }

    /// The files, each with its capture's name.
    pub fn files(&self) -> &[CaptureFile] {
        &self.files
    }

    /// The values of column `key` (`capture`, `segment`) a filter on it
    /// alone keeps (None: the filter says nothing about `key` alone).
    fn key_filter(e: &Expr, key: &str) -> Option<Vec<String>> {
        use datafusion::logical_expr::{BinaryExpr, Operator};
        let name = |e: &Expr| matches!(e, Expr::Column(c) if c.name == key);
        let lit = |e: &Expr| match e {
            Expr::Literal(ScalarValue::Utf8(Some(s)), _)
            | Expr::Literal(ScalarValue::Utf8View(Some(s)), _)
            | Expr::Literal(ScalarValue::LargeUtf8(Some(s)), _) => Some(s.clone()),
            _ => None,
        };
        match e {
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Eq,
                right,
            }) => {
                if name(left) {
                    lit(right).map(|s| vec![s])
                } else if name(right) {
                    lit(left).map(|s| vec![s])
                } else {
                    None
                }
            }
            Expr::InList(l) if !l.negated && name(&l.expr) => {
                l.list.iter().map(lit).collect::<Option<Vec<_>>>()
            }
            // `array_has(['a', 'b'], capture)`: the analyses' `capture`
            // list parameter.
            Expr::ScalarFunction(f) if f.name() == "array_has" && f.args.len() == 2 => {
                if !name(&f.args[1]) {
                    return None;
                }
                let Expr::Literal(v, _) = &f.args[0] else {
                    return None;
                };
                let arr = match v {
                    ScalarValue::List(l) => l.values().clone(),
                    ScalarValue::LargeList(l) => l.values().clone(),
                    ScalarValue::FixedSizeList(l) => l.values().clone(),
                    _ => return None,
                };
                let arr = datafusion::arrow::compute::cast(&arr, &DataType::Utf8).ok()?;
                let arr = datafusion::arrow::array::AsArray::as_string::<i32>(&arr);
                arr.iter().map(|s| s.map(str::to_string)).collect()
            }
            // `capture IN (a, b)` reaches here as `capture = a OR capture = b`.
            Expr::BinaryExpr(BinaryExpr {
                left,
                op: Operator::Or,
                right,
            }) => {
                let mut l = Self::key_filter(left, key)?;
                l.extend(Self::key_filter(right, key)?);
                Some(l)
            }
            _ => None,
        }
    }
}

#[async_trait::async_trait]
impl TableProvider for CaptureTable {
    fn schema(&self) -> SchemaRef {
        self.table_schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Base
    }

    fn supports_filters_pushdown(
        &self,
        filters: &[&Expr],
    ) -> DfResult<Vec<TableProviderFilterPushDown>> {
        // Filters on `capture` or `segment` alone choose files; the rest
        // are pushed into the Parquet scan by the physical optimizer, and
        // applied again above it.
        Ok(filters
            .iter()
            .map(|f| {
                let capture = !self.shared && Self::key_filter(f, "capture").is_some();
                if capture || Self::key_filter(f, "segment").is_some() {
                    TableProviderFilterPushDown::Exact
                } else {
                    TableProviderFilterPushDown::Inexact
                }
            })
            .collect())
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        // The captures and segments the filters keep (None: all).
        let keep = |key: &str| {
            let mut keep: Option<Vec<String>> = None;
            for f in filters {
                if let Some(names) = Self::key_filter(f, key) {
                    keep = Some(match keep {
                        None => names,
                        Some(k) => k.into_iter().filter(|n| names.contains(n)).collect(),
                    });
                }
            }
            keep
        };
        let captures = if self.shared { None } else { keep("capture") };
        let segments = keep("segment");
        let files: Vec<&CaptureFile> = self
            .files
            .iter()
            // (A segment's file holds several captures: its rows are
            // chosen in the scan.)
            .filter(|f| {
                f.rows.is_some() || captures.as_ref().is_none_or(|k| k.contains(&f.capture))
            })
            .filter(|f| segments.as_ref().is_none_or(|k| k.contains(&f.segment)))
            .collect();
        if files.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.table_schema.project(p)?),
                None => self.table_schema.clone(),
            };
            // As many partitions as a scan would have: a cluster
            // (Ballista) loses track of a stage whose union mixes them.
            return Ok(Arc::new(
                EmptyExec::new(schema).with_partitions(state.config().target_partitions().max(1)),
            ));
        }
        // Files needing the same renames (in the same store) are scanned
        // together, with the columns' old names, then renamed: the union
        // is one table.
        type Group<'a> = (
            (Vec<&'a Rename>, &'a Option<String>, bool),
            Vec<&'a CaptureFile>,
        );
        let mut groups: Vec<Group> = Vec::new();
        for f in files {
            let r = (self.renames_of(f), &f.store, f.rows.is_some());
            match groups.iter_mut().find(|g| g.0 == r) {
                Some(g) => g.1.push(f),
                None => groups.push((r, vec![f])),
            }
        }
        let mut plans = Vec::with_capacity(groups.len());
        for ((renames, _, segmented), files) in groups {
            let plan = if segmented {
                // Files whose captures the session renames: one scan each,
                // `capture` mapped to the session's names.
                let (plain, renaming): (Vec<&CaptureFile>, Vec<&CaptureFile>) = files
                    .iter()
                    .partition(|f| f.rows.as_ref().is_none_or(|r| r.renamed.is_empty()));
                for f in renaming {
                    let p = self
                        .scan_segments(state, &[f], &renames, projection, captures.as_deref())
                        .await?;
                    if let Some(p) = p {
                        plans.push(self.rename_captures(p, f, projection)?);
                    }
                }
                if plain.is_empty() {
                    None
                } else {
                    self.scan_segments(state, &plain, &renames, projection, captures.as_deref())
                        .await?
                }
            } else {
                self.scan_files(state, &files, &renames, projection, limit)
                    .await?
            };
            if let Some(p) = plan {
                plans.push(p);
            }
        }
        if plans.is_empty() {
            let schema = match projection {
                Some(p) => Arc::new(self.table_schema.project(p)?),
                None => self.table_schema.clone(),
            };
            // As many partitions as a scan would have: a cluster
            // (Ballista) loses track of a stage whose union mixes them.
            return Ok(Arc::new(
                EmptyExec::new(schema).with_partitions(state.config().target_partitions().max(1)),
            ));
        }
        if plans.len() == 1 {
            return Ok(plans.pop().expect("one plan"));
        }
        datafusion::physical_plan::union::UnionExec::try_new(plans)
    }
}

impl CaptureTable {
    /// A Parquet scan of `files`, whose columns in `renames` have their old
    /// names, renamed to the current ones.
    async fn scan_files(
        &self,
        state: &dyn DfSession,
        files: &[&CaptureFile],
        renames: &[&Rename],
        projection: Option<&Vec<usize>>,
        limit: Option<usize>,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        // Files spread over the target partitions by size, largest first;
        // DataFusion splits large files into byte ranges itself.
        let n = state.config().target_partitions().max(1).min(files.len());
        let mut groups: Vec<(u64, Vec<PartitionedFile>)> = vec![(0, Vec::new()); n];
        let mut sorted = files.to_vec();
        sorted.sort_by(|a, b| b.size.cmp(&a.size));
        for f in sorted {
            let g = groups.iter_mut().min_by_key(|g| g.0).expect("n >= 1");
            g.0 += f.size;
            // A key in a store as listed (parsing it again would encode its
            // encoded characters twice); a local path as a path.
            let file = match &f.store {
                Some(_) => {
                    let key = object_store::path::Path::parse(f.path.to_string_lossy())
                        .map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
                    let mut p = PartitionedFile::new(String::new(), f.size);
                    p.object_meta.location = key;
                    p
                }
                None => PartitionedFile::new(f.path.to_string_lossy().into_owned(), f.size),
            };
            let segment = ScalarValue::Utf8(Some(f.segment.clone()));
            let keys = match self.shared {
                true => vec![segment],
                false => vec![ScalarValue::Utf8(Some(f.capture.clone())), segment],
            };
            g.1.push(file.with_partition_values(keys));
        }
        // The files' schema as these files name the columns.
        let file_schema = if renames.is_empty() {
            self.file_schema.clone()
        } else {
            let fields: Vec<Field> = self
                .file_schema
                .fields()
                .iter()
                .map(|f| match renames.iter().find(|r| &r.new == f.name()) {
                    Some(r) => f.as_ref().clone().with_name(&r.old),
                    None => f.as_ref().clone(),
                })
                .collect();
            Arc::new(Schema::new(fields))
        };
        let format = ParquetFormat::default().with_options(state.table_options().parquet.clone());
        let table_schema = TableSchema::builder(file_schema)
            .with_table_partition_cols(
                self.table_schema.fields()[..self.n_keys()]
                    .iter()
                    .cloned()
                    .collect::<Vec<_>>(),
            )
            .build();
        let source = format.file_source(table_schema);
        // The scan produces the file's columns then the keys (`capture`,
        // `segment`, from index n): the table's first k columns are the
        // keys, table column k + i is scan column i.
        let n_file = self.file_schema.fields().len();
        let k = self.n_keys();
        let to_scan = |i: usize| if i < k { n_file + i } else { i - k };
        let table_cols: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..n_file + k).collect(),
        };
        let indices: Vec<usize> = table_cols.iter().map(|&i| to_scan(i)).collect();
        let store = match &files[0].store {
            Some(root) => ObjectStoreUrl::parse(root)?,
            None => ObjectStoreUrl::local_filesystem(),
        };
        let config = FileScanConfigBuilder::new(store, source)
            .with_file_groups(groups.into_iter().map(|g| FileGroup::new(g.1)).collect())
            .with_projection_indices(Some(indices))?
            .with_limit(limit)
            .build();
        let scan = format.create_physical_plan(state, config).await?;
        if renames.is_empty() {
            return Ok(Some(scan));
        }
        // Each output column under the table's name for it.
        use datafusion::physical_expr::expressions::Column;
        use datafusion::physical_plan::projection::ProjectionExec;
        let scan_schema = scan.schema();
        let exprs: Vec<(Arc<dyn datafusion::physical_expr::PhysicalExpr>, String)> = table_cols
            .iter()
            .enumerate()
            .map(|(k, &i)| {
                let col: Arc<dyn datafusion::physical_expr::PhysicalExpr> =
                    Arc::new(Column::new(scan_schema.field(k).name(), k));
                (col, self.table_schema.field(i).name().clone())
            })
            .collect();
        Ok(Some(Arc::new(ProjectionExec::try_new(exprs, scan)?)))
    }
}

impl CaptureTable {
    /// A Parquet scan of segments' files (`rows` set): `capture` is a
    /// column of the file (per-capture tables), `segment` the partition
    /// value. Of each file only the rows of the captures read (`keep`,
    /// else every capture the manifest places there) are read: the ranges
    /// the manifest gives them, as a row selection (pages and row groups
    /// outside it are not decoded), checked again by a filter on
    /// `capture` (a plan sent to a cluster loses the selection). None
    /// when no file has rows to read.
    async fn scan_segments(
        &self,
        state: &dyn DfSession,
        files: &[&CaptureFile],
        renames: &[&Rename],
        projection: Option<&Vec<usize>>,
        keep: Option<&[String]>,
    ) -> DfResult<Option<Arc<dyn ExecutionPlan>>> {
        use datafusion::common::stats::Precision;
        use datafusion::common::{ColumnStatistics, Statistics};
        use datafusion::datasource::physical_plan::parquet::ParquetRowSelection;
        use datafusion::parquet::arrow::arrow_reader::{RowSelection, RowSelector};
        let n_cols = self.file_schema.fields().len();
        // The file's columns as these files name them: `capture` first
        // for a per-capture table.
        let mut fields: Vec<Field> = Vec::with_capacity(n_cols + 1);
        if !self.shared {
            fields.push(Field::new("capture", DataType::Utf8, false));
        }
        fields.extend(self.file_schema.fields().iter().map(|f| {
            match renames.iter().find(|r| &r.new == f.name()) {
                Some(r) => f.as_ref().clone().with_name(&r.old),
                None => f.as_ref().clone(),
            }
        }));
        let file_schema = Arc::new(Schema::new(fields));
        let n_file = file_schema.fields().len();
        let mut parts: Vec<(u64, Vec<PartitionedFile>)> = Vec::new();
        let mut selected = false;
        // Segments whose files are read whole, known without their
        // captures' names (kept by the filter of a scan that selects rows
        // of other files).
        let mut whole: Vec<String> = Vec::new();
        // The rows read, as the manifest counts them: `count(*)` is
        // answered from them without reading a page.
        let mut total_rows = 0usize;
        let mut total_bytes = 0usize;
        // The captures' ranges read (their names filter the scan when a
        // row selection is used).
        let mut read_ranges: Vec<(Arc<str>, i64, i64)> = Vec::new();
        let keep: Option<std::collections::HashSet<&str>> =
            keep.map(|k| k.iter().map(String::as_str).collect());
        for f in files {
            let Some(rows) = &f.rows else { continue };
            // The session's name of a capture the file names `n`.
            let session = |n: &str| -> Option<&str> {
                rows.renamed.iter().find(|r| r.0 == n).map(|r| r.1.as_str())
            };
            type R = (Arc<str>, i64, i64);
            let (ranges, all): (Vec<R>, bool) = match (&rows.captures, &keep) {
                _ if self.shared => (Vec::new(), true),
                // Every row of the file is a capture's the manifest places
                // there: no ranges needed.
                (SegmentCaptures::Archive { live: Some(n), .. }, None) if *n == rows.file_rows => {
                    (Vec::new(), true)
                }
                (SegmentCaptures::Archive { live: Some(0), .. }, None) => continue,
                (c, keep) => {
                    // The kept captures as the file names them.
                    let only: Option<std::collections::BTreeSet<&str>> = keep.as_ref().map(|k| {
                        k.iter()
                            .copied()
                            .chain(
                                rows.renamed
                                    .iter()
                                    .filter(|r| k.contains(r.1.as_str()))
                                    .map(|r| r.0.as_str()),
                            )
                            .collect()
                    });
                    let listed = c.ranges(only.as_ref())?;
                    let r: Vec<R> = match keep {
                        None => listed.iter().cloned().collect(),
                        Some(k) => listed
                            .iter()
                            .filter(|c| k.contains(session(&c.0).unwrap_or(&c.0)))
                            .cloned()
                            .collect(),
                    };
                    let n: i64 = r.iter().map(|c| c.2).sum();
                    let all = n == rows.file_rows;
                    (r, all)
                }
            };
            if !self.shared && !all && ranges.is_empty() {
                continue;
            }
            let read_rows = if all {
                rows.file_rows
            } else {
                ranges.iter().map(|c| c.2).sum()
            };
            let mut file = match &f.store {
                Some(_) => {
                    let key = object_store::path::Path::parse(f.path.to_string_lossy())
                        .map_err(|e| datafusion::error::DataFusionError::External(e.into()))?;
                    let mut p = PartitionedFile::new(String::new(), f.size);
                    p.object_meta.location = key;
                    p
                }
                None => PartitionedFile::new(f.path.to_string_lossy().into_owned(), f.size),
            };
            file = file.with_partition_values(vec![ScalarValue::Utf8(Some(f.segment.clone()))]);
            if !all {
                // Skip what lies between the ranges (in file order).
                let mut sel: Vec<RowSelector> = Vec::new();
                let mut at = 0i64;
                let mut sorted: Vec<&R> = ranges.iter().collect();
                sorted.sort_by_key(|c| c.1);
                for c in sorted {
                    if c.1 > at {
                        sel.push(RowSelector::skip((c.1 - at) as usize));
                    }
                    sel.push(RowSelector::select(c.2 as usize));
                    at = c.1 + c.2;
                }
                if rows.file_rows > at {
                    sel.push(RowSelector::skip((rows.file_rows - at) as usize));
                }
                file = file.with_extension(ParquetRowSelection::new(RowSelection::from(sel)));
                selected = true;
            }
            if all && ranges.is_empty() {
                whole.push(f.segment.clone());
            }
            read_ranges.extend(ranges);
            file = file.with_statistics(Arc::new(Statistics {
                num_rows: Precision::Exact(read_rows as usize),
                total_byte_size: Precision::Inexact(f.size as usize),
                column_statistics: vec![ColumnStatistics::new_unknown(); n_file],
            }));
            total_rows += read_rows as usize;
            total_bytes += f.size as usize;
            parts.push((f.size, vec![file]));
        }
        if parts.is_empty() {
            return Ok(None);
        }
        // Files spread over the target partitions by size, largest first.
        let n = state.config().target_partitions().max(1).min(parts.len());
        let mut groups: Vec<(u64, Vec<PartitionedFile>)> = vec![(0, Vec::new()); n];
        parts.sort_by(|a, b| b.0.cmp(&a.0));
        for (size, fs) in parts {
            let g = groups.iter_mut().min_by_key(|g| g.0).expect("n >= 1");
            g.0 += size;
            g.1.extend(fs);
        }
        let format = ParquetFormat::default().with_options(state.table_options().parquet.clone());
        let table_schema = TableSchema::builder(file_schema)
            .with_table_partition_cols(vec![Arc::new(Field::new("segment", DataType::Utf8, false))])
            .build();
        let source = format.file_source(table_schema);
        // Table columns: [capture,] segment, the columns; scan columns:
        // [capture,] the columns, then segment (index n_file).
        let k = self.n_keys();
        let to_scan = |i: usize| match (self.shared, i) {
            (true, 0) => n_file,
            (true, i) => i - 1,
            (false, 0) => 0,
            (false, 1) => n_file,
            (false, i) => i - 1,
        };
        let table_cols: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..n_cols + k).collect(),
        };
        // The filter on `capture` needs the column in the scan.
        let filter = selected && !self.shared;
        let mut indices: Vec<usize> = table_cols.iter().map(|&i| to_scan(i)).collect();
        let capture_at = if filter {
            match indices.iter().position(|&i| i == 0) {
                Some(p) => p,
                None => {
                    indices.push(0);
                    indices.len() - 1
                }
            }
        } else {
            0
        };
        let segment_at = match indices.iter().position(|&i| i == n_file) {
            _ if !filter || whole.is_empty() => 0,
            Some(p) => p,
            None => {
                indices.push(n_file);
                indices.len() - 1
            }
        };
        let store = match &files[0].store {
            Some(root) => ObjectStoreUrl::parse(root)?,
            None => ObjectStoreUrl::local_filesystem(),
        };
        let config = FileScanConfigBuilder::new(store, source)
            .with_file_groups(groups.into_iter().map(|g| FileGroup::new(g.1)).collect())
            .with_projection_indices(Some(indices.clone()))?
            .with_statistics(Statistics {
                num_rows: Precision::Exact(total_rows),
                total_byte_size: Precision::Inexact(total_bytes),
                // The file's columns and `segment`.
                column_statistics: vec![ColumnStatistics::new_unknown(); n_file + 1],
            })
            .build();
        let mut plan = format.create_physical_plan(state, config).await?;
        use datafusion::physical_expr::expressions::{Column, InListExpr};
        use datafusion::physical_plan::projection::ProjectionExec;
        if filter {
            let mut names: Vec<String> = read_ranges.iter().map(|c| c.0.to_string()).collect();
            names.sort();
            names.dedup();
            type Pe = Arc<dyn datafusion::physical_expr::PhysicalExpr>;
            let in_list = |name: &str, at: usize, values: &[String]| -> DfResult<Pe> {
                let col: Pe = Arc::new(Column::new(name, at));
                let list: Vec<Pe> = values
                    .iter()
                    .map(|n| {
                        Arc::new(datafusion::physical_expr::expressions::Literal::new(
                            ScalarValue::Utf8(Some(n.clone())),
                        )) as Pe
                    })
                    .collect();
                Ok(Arc::new(InListExpr::try_new(
                    col,
                    list,
                    false,
                    &plan.schema(),
                )?))
            };
            let mut pred = in_list("capture", capture_at, &names)?;
            if !whole.is_empty() {
                let segs = in_list("segment", segment_at, &whole)?;
                pred = Arc::new(datafusion::physical_expr::expressions::BinaryExpr::new(
                    segs,
                    datafusion::logical_expr::Operator::Or,
                    pred,
                ));
            }
            plan = Arc::new(datafusion::physical_plan::filter::FilterExec::try_new(
                pred, plan,
            )?);
        }
        if renames.is_empty() && indices.len() == table_cols.len() {
            return Ok(Some(plan));
        }
        // Each output column under the table's name for it (and without
        // the `capture` and `segment` the filter added).
        let scan_schema = plan.schema();
        let exprs: Vec<(Arc<dyn datafusion::physical_expr::PhysicalExpr>, String)> = table_cols
            .iter()
            .enumerate()
            .map(|(j, &i)| {
                let col: Arc<dyn datafusion::physical_expr::PhysicalExpr> =
                    Arc::new(Column::new(scan_schema.field(j).name(), j));
                (col, self.table_schema.field(i).name().clone())
            })
            .collect();
        Ok(Some(Arc::new(ProjectionExec::try_new(exprs, plan)?)))
    }
}

impl CaptureTable {
    /// `plan` (a scan of segment file `f` with the table's columns
    /// `projection`) with `capture` holding the session's names of the
    /// captures `f` names otherwise.
    fn rename_captures(
        &self,
        plan: Arc<dyn ExecutionPlan>,
        f: &CaptureFile,
        projection: Option<&Vec<usize>>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        use datafusion::physical_expr::expressions::{CaseExpr, Column, Literal};
        use datafusion::physical_expr::PhysicalExpr;
        use datafusion::physical_plan::projection::ProjectionExec;
        let Some(rows) = &f.rows else {
            return Ok(plan);
        };
        let cols: Vec<usize> = match projection {
            Some(p) => p.clone(),
            None => (0..self.table_schema.fields().len()).collect(),
        };
        // Table column 0 is `capture` (a per-capture table).
        let Some(at) = cols.iter().position(|&i| i == 0).filter(|_| !self.shared) else {
            return Ok(plan);
        };
        let schema = plan.schema();
        let exprs = (0..schema.fields().len())
            .map(|j| {
                let c: Arc<dyn PhysicalExpr> = Arc::new(Column::new(schema.field(j).name(), j));
                let e = if j == at {
                    let when: Vec<(Arc<dyn PhysicalExpr>, Arc<dyn PhysicalExpr>)> = rows
                        .renamed
                        .iter()
                        .map(|(from, to)| {
                            (
                                Arc::new(Literal::new(ScalarValue::Utf8(Some(from.clone()))))
                                    as Arc<dyn PhysicalExpr>,
                                Arc::new(Literal::new(ScalarValue::Utf8(Some(to.clone()))))
                                    as Arc<dyn PhysicalExpr>,
                            )
                        })
                        .collect();
                    Arc::new(CaseExpr::try_new(Some(c.clone()), when, Some(c))?)
                        as Arc<dyn PhysicalExpr>
                } else {
                    c
                };
                Ok((e, schema.field(j).name().clone()))
            })
            .collect::<DfResult<Vec<_>>>()?;
        Ok(Arc::new(ProjectionExec::try_new(exprs, plan)?))
    }
}

/// Computes a derived table's rows from the session it is scanned in.
type Compute = Arc<dyn Fn(Session) -> BoxFuture<'static, Result<Vec<RecordBatch>>> + Send + Sync>;

/// A derived table computed on first scan and kept for the session.
pub struct LazyTable {
    name: &'static str,
    schema: SchemaRef,
    compute: Compute,
    shared: Arc<Shared>,
    rows: OnceCell<Vec<RecordBatch>>,
    /// The computation returns `capture` and the columns; the table adds
    /// `segment` after `capture` (a derived table of the schema).
    add_segment: bool,
}

impl fmt::Debug for LazyTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "LazyTable({})", self.name)
    }
}

impl LazyTable {
    /// A table whose rows `compute` gives, on first scan, in a session
    /// over the catalog of the scan.
    pub(crate) fn new<F, Fut>(
        name: &'static str,
        schema: SchemaRef,
        shared: Arc<Shared>,
        compute: F,
    ) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<RecordBatch>>> + Send + 'static,
    {
        let compute: Compute = Arc::new(move |s| Box::pin(compute(s)));
        LazyTable {
            name,
            schema,
            compute,
            shared,
            rows: OnceCell::new(),
            add_segment: false,
        }
    }

    /// The derived table `def` (`time_base`, `memory_region`, ...), whose
    /// rows `compute` gives with the columns of `def.capture_schema()`:
    /// the table adds each row's `segment`.
    pub(crate) fn derived<F, Fut>(
        def: &'static trawl_capture::schema::TableDef,
        shared: Arc<Shared>,
        compute: F,
    ) -> Self
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<RecordBatch>>> + Send + 'static,
    {
        LazyTable {
            add_segment: true,
            ..Self::new(def.name, def.session_schema(), shared, compute)
        }
    }

    /// The table's name (`time_base`, `sample_energy`, ...).
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The rows, if a scan or [`LazyTable::rows`] has computed them.
    pub fn computed(&self) -> Option<&[RecordBatch]> {
        self.rows.get().map(Vec::as_slice)
    }

    /// The rows, computed on first use in a session over `state`.
    pub async fn rows(&self, state: &dyn DfSession) -> DfResult<&[RecordBatch]> {
        self.rows
            .get_or_try_init(|| async {
                let s = Session::over(state, self.shared.clone())?;
                let rows = (self.compute)(s).await.map_err(|e| match e {
                    crate::error::Error::DataFusion(d) => d,
                    other => {
                        datafusion::error::DataFusionError::Plan(format!("{}: {other}", self.name))
                    }
                })?;
                rows.iter()
                    .map(|b| match self.add_segment {
                        true => conform(&self.shared.with_segment(b)?, &self.schema),
                        false => conform(b, &self.schema),
                    })
                    .collect()
            })
            .await
            .map(Vec::as_slice)
    }
}

/// `b` with the columns of `schema` (cast where the computation's SQL gave
/// another type of the same values, e.g. Utf8View for Utf8).
fn conform(b: &RecordBatch, schema: &SchemaRef) -> DfResult<RecordBatch> {
    if b.schema().fields() == schema.fields() {
        return Ok(b.clone());
    }
    let cols = b
        .columns()
        .iter()
        .zip(schema.fields())
        .map(|(c, f)| datafusion::arrow::compute::cast(c, f.data_type()))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    Ok(RecordBatch::try_new(schema.clone(), cols)?)
}

#[async_trait::async_trait]
impl TableProvider for LazyTable {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    fn table_type(&self) -> TableType {
        TableType::Temporary
    }

    async fn scan(
        &self,
        state: &dyn DfSession,
        projection: Option<&Vec<usize>>,
        filters: &[Expr],
        limit: Option<usize>,
    ) -> DfResult<Arc<dyn ExecutionPlan>> {
        let rows = self.rows(state).await?.to_vec();
        MemTable::try_new(self.schema.clone(), vec![rows])?
            .scan(state, projection, filters, limit)
            .await
    }
}

/// A stored table of `captures`: their files of `def` as they are now.
pub(crate) fn stored_table(
    captures: &[CaptureRef],
    def: &trawl_capture::schema::TableDef,
) -> CaptureTable {
    stored_table_in(captures, &crate::captures::segments(captures), def)
}

/// [`stored_table`] with the captures' segments ([`crate::captures::segments`]).
pub(crate) fn stored_table_in(
    captures: &[CaptureRef],
    segments: &[(String, Arc<crate::captures::SegmentFiles>)],
    def: &trawl_capture::schema::TableDef,
) -> CaptureTable {
    let mut files: Vec<CaptureFile> = captures
        .iter()
        .filter(|c| c.in_segment.is_none())
        .filter_map(|c| {
            if let Some(r) = &c.remote {
                return r.sizes.get(def.name).map(|&size| CaptureFile {
                    capture: c.name.clone(),
                    segment: c.segment.clone(),
                    path: PathBuf::from(r.at.key(&format!("{}.parquet", def.name)).as_ref()),
                    store: Some(r.at.root.clone()),
                    size,
                    version: c.version,
                    rows: None,
                });
            }
            let path = trawl_capture::layout::table_file(&c.dir, def.name);
            let meta = std::fs::metadata(&path).ok().filter(|m| m.is_file())?;
            Some(CaptureFile {
                capture: c.name.clone(),
                segment: c.segment.clone(),
                // Canonical: object store paths do not resolve `..`.
                path: std::fs::canonicalize(&path)
                    .or_else(|_| std::path::absolute(&path))
                    .unwrap_or(path),
                store: None,
                size: meta.len(),
                version: c.version,
                rows: None,
            })
        })
        .collect();
    files.extend(segment_files(segments, def));
    let renames = trawl_capture::schema::RENAMED
        .iter()
        .filter(|r| r.table == def.name)
        .map(|r| Rename {
            old: r.old.to_string(),
            new: r.new.to_string(),
            since: r.since,
        })
        .collect();
    CaptureTable::new(def.schema(), files, def.is_shared()).with_renames(renames)
}

/// The files of `def` of the segments of `captures` (one per segment
/// holding rows of it), each with the rows of its captures.
fn segment_files(
    segments: &[(String, Arc<crate::captures::SegmentFiles>)],
    def: &trawl_capture::schema::TableDef,
) -> Vec<CaptureFile> {
    let mut out: Vec<CaptureFile> = Vec::new();
    for (segment, s) in segments {
        let listed = s.tables.get(def.name).copied();
        let Some((size, file_rows)) = (match &s.at {
            // `annotate` decodes into a local segment's `instruction` after
            // ingest: read as it is now.
            None if def.name == trawl_capture::schema::INSTRUCTION.name => {
                local_rows(&s.dir.join(format!("{}.parquet", def.name)), listed).or(listed)
            }
            _ => listed,
        }) else {
            continue;
        };
        let read = if def.is_shared() {
            SegmentCaptures::Listed(Arc::new(Vec::new()))
        } else {
            let live = s
                .live
                .as_ref()
                .map(|l| l.get(def.name).copied().unwrap_or(0));
            if live == Some(0) {
                continue;
            }
            SegmentCaptures::Archive {
                segment: s.clone(),
                table: def.name,
                live,
            }
        };
        let name = format!("{}.parquet", def.name);
        let (path, store) = match &s.at {
            Some(at) => (PathBuf::from(at.key(&name).as_ref()), Some(at.root.clone())),
            None => (s.abs_dir.join(&name), None),
        };
        out.push(CaptureFile {
            capture: String::new(),
            segment: segment.clone(),
            path,
            store,
            size,
            version: Some(s.version),
            rows: Some(SegmentRows {
                captures: read,
                file_rows,
                renamed: s.renamed.clone(),
            }),
        });
    }
    out
}

/// The size and rows (from its footer) of a local Parquet file, `listed`
/// when it has the size listed there (no footer read).
fn local_rows(path: &std::path::Path, listed: Option<(u64, i64)>) -> Option<(u64, i64)> {
    use datafusion::parquet::file::reader::FileReader;
    let size = std::fs::metadata(path).ok()?.len();
    if listed.is_some_and(|l| l.0 == size) {
        return listed;
    }
    let f = std::fs::File::open(path).ok()?;
    let size = f.metadata().ok()?.len();
    let r = datafusion::parquet::file::reader::SerializedFileReader::new(f).ok()?;
    Some((size, r.metadata().file_metadata().num_rows()))
}

impl Session {
    /// Registers a derived table computed by `compute` the first time a
    /// query scans it.
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
        let table = LazyTable::new(name, schema, self.shared.clone(), compute);
        self.register_provider(name, Arc::new(table))
    }

    /// Registers the derived table `def`, computed by `compute` (with the
    /// columns of `def.capture_schema()`) the first time a query scans it.
    pub(crate) fn register_derived<F, Fut>(
        &self,
        def: &'static trawl_capture::schema::TableDef,
        compute: F,
    ) -> Result<()>
    where
        F: Fn(Session) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Vec<RecordBatch>>> + Send + 'static,
    {
        let table = LazyTable::derived(def, self.shared.clone(), compute);
        self.register_provider(def.name, Arc::new(table))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int32Array, Int64Array};
    use datafusion::parquet::arrow::ArrowWriter;
    use datafusion::prelude::SessionContext;

    fn write(path: &std::path::Path, cols: Vec<(&str, ArrayRef)>) -> CaptureFile {
        let b = RecordBatch::try_from_iter(cols).unwrap();
        let mut w =
            ArrowWriter::try_new(std::fs::File::create(path).unwrap(), b.schema(), None).unwrap();
        w.write(&b).unwrap();
        w.close().unwrap();
        CaptureFile {
            capture: String::new(),
            segment: String::new(),
            path: path.to_path_buf(),
            store: None,
            size: std::fs::metadata(path).unwrap().len(),
            version: None,
            rows: None,
        }
    }

    /// A file written before a column was renamed (`process` → `pid` at
    /// version 2) and retyped (`n`: Int32 → Int64) reads with the current
    /// name and type, next to a current file; filters and projections on
    /// the new name reach the old column. Expected rows: the values written.
    #[test]
    fn renamed_and_retyped_columns_are_mapped() {
        let dir = tempfile::tempdir().unwrap();
        let old = CaptureFile {
            capture: "old".into(),
            version: Some(1),
            ..write(
                &dir.path().join("old.parquet"),
                vec![
                    (
                        "process",
                        Arc::new(Int32Array::from(vec![7, 8])) as ArrayRef,
                    ),
                    ("n", Arc::new(Int32Array::from(vec![1, 2])) as ArrayRef),
                ],
            )
        };
        let new = CaptureFile {
            capture: "new".into(),
            version: Some(2),
            ..write(
                &dir.path().join("new.parquet"),
                vec![
                    ("pid", Arc::new(Int32Array::from(vec![9])) as ArrayRef),
                    ("n", Arc::new(Int64Array::from(vec![3])) as ArrayRef),
                ],
            )
        };
        let schema = Arc::new(Schema::new(vec![
            Field::new("pid", DataType::Int32, true),
            Field::new("n", DataType::Int64, true),
        ]));
        let t = CaptureTable::new(schema, vec![old, new], false).with_renames(vec![Rename {
            old: "process".into(),
            new: "pid".into(),
            since: 2,
        }]);
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async {
            let ctx = SessionContext::new();
            ctx.register_table("t", Arc::new(t)).unwrap();
            let text = |q: &'static str| {
                let ctx = ctx.clone();
                async move {
                    let b = ctx.sql(q).await.unwrap().collect().await.unwrap();
                    datafusion::arrow::util::pretty::pretty_format_batches(&b)
                        .unwrap()
                        .to_string()
                }
            };
            let all = text("SELECT capture, pid, n FROM t ORDER BY pid").await;
            assert_eq!(
                all.lines()
                    .filter(|l| l.starts_with("| "))
                    .skip(1)
                    .collect::<Vec<_>>(),
                [
                    "| old     | 7   | 1 |",
                    "| old     | 8   | 2 |",
                    "| new     | 9   | 3 |"
                ],
                "{all}"
            );
            let one = text("SELECT sum(n) AS s FROM t WHERE pid = 8").await;
            assert!(one.contains("| 2 |"), "{one}");
            let only = text("SELECT pid FROM t WHERE capture = 'old' ORDER BY pid DESC").await;
            assert!(only.contains("| 8   |\n| 7   |"), "{only}");
        });
    }
}
