//! How trawl's tables and functions travel in a Ballista plan.
//!
//! A client sends the scheduler a logical plan; the scheduler sends the
//! executors physical plans. Ballista serializes both with datafusion-proto,
//! which knows DataFusion's own tables (listing tables) and nodes and asks
//! an extension codec for the rest:
//!
//! - a [`CaptureTable`] (`perf_sample`, ... of all the session's captures)
//!   travels as its file list (capture name, path or object store URL,
//!   size); the scheduler plans it as the Parquet scan it is, which the
//!   executors run on the same paths (a shared file system) or read from
//!   the object store with their own credentials;
//! - a derived table ([`LazyTable`], computed in the client, see
//!   [`crate::client`]) or a `MemTable` travels as its rows (Arrow IPC),
//!   within [`MAX_ROWS_BYTES`];
//! - trawl's functions (`window_start`, `assert_true`, `power_fit`) are
//!   decoded by name in every process.
//!
//! The scheduler and executors must therefore use these codecs: they are
//! `trawl cluster scheduler` / `trawl cluster executor` ([`crate::server`]).

use std::io::Cursor;
use std::path::PathBuf;
use std::sync::Arc;

use ballista_core::serde::{BallistaLogicalExtensionCodec, BallistaPhysicalExtensionCodec};
use datafusion::arrow::datatypes::{Schema, SchemaRef};
use datafusion::arrow::ipc::reader::StreamReader;
use datafusion::arrow::ipc::writer::StreamWriter;
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::TableProvider;
use datafusion::common::{plan_err, TableReference};
use datafusion::datasource::file_format::FileFormatFactory;
use datafusion::datasource::MemTable;
use datafusion::error::{DataFusionError, Result};
use datafusion::execution::TaskContext;
use datafusion::logical_expr::{AggregateUDF, Extension, LogicalPlan, ScalarUDF};
use datafusion::physical_plan::ExecutionPlan;
use datafusion_proto::logical_plan::LogicalExtensionCodec;
use datafusion_proto::physical_plan::{PhysicalExtensionCodec, PhysicalProtoConverterExtension};
use trawl_query::tables::{CaptureFile, CaptureTable, LazyTable, Rename};

/// The largest derived table a plan carries (Arrow IPC bytes): Ballista's
/// gRPC messages are limited to 16 MiB, the plan included.
pub const MAX_ROWS_BYTES: usize = 12 << 20;

/// Tag of a capture table's encoding (then JSON: [`Files`]).
const CAPTURE: u8 = b'C';
/// Tag of rows' encoding (then an Arrow IPC stream).
const ROWS: u8 = b'R';

#[derive(serde::Serialize, serde::Deserialize)]
struct Files {
    files: Vec<File>,
    /// A shared table (`segment` alone, no `capture` column).
    #[serde(default)]
    shared: bool,
    /// (old, new, since) of the columns renamed since some files were written.
    renames: Vec<(String, String, i32)>,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct File {
    capture: String,
    segment: String,
    path: PathBuf,
    /// The object store holding it (`s3://bucket`; none: a local file).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    store: Option<String>,
    size: u64,
    version: Option<i32>,
    /// A segment's file: (captures read: name, first row, rows; the
    /// file's rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    rows: Option<(Vec<(String, i64, i64)>, i64, Vec<(String, String)>)>,
}

/// Whether a table can travel in a plan (`None`), or why not.
pub fn unsupported(table: &dyn TableProvider) -> Option<String> {
    if table.is::<CaptureTable>() || table.is::<LazyTable>() || table.is::<MemTable>() {
        return None;
    }
    // datafusion-proto's own: listing tables (the archive manifest, CREATE
    // EXTERNAL TABLE) and views (inlined before a plan is sent).
    if table.is::<datafusion::datasource::listing::ListingTable>()
        || table.is::<datafusion::datasource::ViewTable>()
    {
        return None;
    }
    Some(format!("{table:?}"))
}

fn encode_rows(
    table: &TableReference,
    batches: &[RecordBatch],
    schema: &Schema,
    buf: &mut Vec<u8>,
) -> Result<()> {
    buf.push(ROWS);
    let start = buf.len();
    let mut w = StreamWriter::try_new(&mut *buf, schema)?;
    for b in batches {
        w.write(b)?;
    }
    w.finish()?;
    let size = buf.len() - start;
    if size > MAX_ROWS_BYTES {
        return plan_err!(
            "{table}: {} MiB of rows computed by trawl would travel in the plan, more than a cluster accepts ({} MiB); run this query without --cluster",
            size >> 20,
            MAX_ROWS_BYTES >> 20
        );
    }
    Ok(())
}

fn decode_rows(buf: &[u8], schema: SchemaRef) -> Result<Arc<dyn TableProvider>> {
    let reader = StreamReader::try_new(Cursor::new(buf), None)?;
    let mut batches = Vec::new();
    for b in reader {
        let b = b?;
        // The table's schema (field metadata and all) on the stored columns.
        batches.push(RecordBatch::try_new(schema.clone(), b.columns().to_vec())?);
    }
    Ok(Arc::new(MemTable::try_new(schema, vec![batches])?))
}

/// trawl's scalar function `name`, if it is one.
fn udf(name: &str) -> Option<Arc<ScalarUDF>> {
    trawl_query::scalar_udfs()
        .into_iter()
        .find(|f| f.name() == name)
        .map(Arc::new)
}

/// trawl's aggregate function `name`, if it is one.
fn udaf(name: &str) -> Option<Arc<AggregateUDF>> {
    trawl_query::aggregate_udfs()
        .into_iter()
        .find(|f| f.name() == name)
        .map(Arc::new)
}

/// The logical codec: Ballista's, plus trawl's tables and functions.
#[derive(Debug, Default)]
pub struct LogicalCodec {
    inner: BallistaLogicalExtensionCodec,
}

impl LogicalExtensionCodec for LogicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[LogicalPlan],
        ctx: &TaskContext,
    ) -> Result<Extension> {
        self.inner.try_decode(buf, inputs, ctx)
    }

    fn try_encode(&self, node: &Extension, buf: &mut Vec<u8>) -> Result<()> {
        self.inner.try_encode(node, buf)
    }

    fn try_decode_table_provider(
        &self,
        buf: &[u8],
        table_ref: &TableReference,
        schema: SchemaRef,
        ctx: &TaskContext,
    ) -> Result<Arc<dyn TableProvider>> {
        match buf.split_first() {
            Some((&CAPTURE, rest)) => {
                let f: Files = serde_json::from_slice(rest).map_err(|e| {
                    DataFusionError::Plan(format!("{table_ref}: bad capture table: {e}"))
                })?;
                // The table's columns are `capture` (unless shared),
                // `segment`, then the files'.
                let keys: &[&str] = if f.shared {
                    &["segment"]
                } else {
                    &["capture", "segment"]
                };
                let fields = schema.fields();
                if fields.len() < keys.len() || fields.iter().zip(keys).any(|(f, k)| f.name() != k)
                {
                    return plan_err!(
                        "{table_ref}: a capture table's first columns are not {}",
                        keys.join(", ")
                    );
                }
                let file_schema = Arc::new(Schema::new(fields[keys.len()..].to_vec()));
                let files = f
                    .files
                    .into_iter()
                    .map(|f| CaptureFile {
                        capture: f.capture,
                        segment: f.segment,
                        path: f.path,
                        store: f.store,
                        size: f.size,
                        version: f.version,
                        rows: f.rows.map(|(captures, file_rows, renamed)| {
                            trawl_query::tables::SegmentRows {
                                captures: trawl_query::tables::SegmentCaptures::Listed(Arc::new(
                                    captures
                                        .into_iter()
                                        .map(|(n, first, rows)| (Arc::from(n), first, rows))
                                        .collect(),
                                )),
                                file_rows,
                                renamed,
                            }
                        }),
                    })
                    .collect();
                let renames = f
                    .renames
                    .into_iter()
                    .map(|(old, new, since)| Rename { old, new, since })
                    .collect();
                Ok(Arc::new(
                    CaptureTable::new(file_schema, files, f.shared).with_renames(renames),
                ))
            }
            Some((&ROWS, rest)) => decode_rows(rest, schema),
            _ => self
                .inner
                .try_decode_table_provider(buf, table_ref, schema, ctx),
        }
    }

    fn try_encode_table_provider(
        &self,
        table_ref: &TableReference,
        node: Arc<dyn TableProvider>,
        buf: &mut Vec<u8>,
    ) -> Result<()> {
        let any: &dyn TableProvider = node.as_ref();
        if let Some(t) = any.downcast_ref::<CaptureTable>() {
            let mut files = Vec::with_capacity(t.files().len());
            for f in t.files() {
                // The captures' rows as a list (a process of the cluster
                // may not reach the archive's manifest).
                let rows = match &f.rows {
                    Some(r) => Some((
                        r.captures
                            .ranges(None)?
                            .iter()
                            .map(|(n, first, rows)| (n.to_string(), *first, *rows))
                            .collect(),
                        r.file_rows,
                        r.renamed.clone(),
                    )),
                    None => None,
                };
                files.push(File {
                    capture: f.capture.clone(),
                    segment: f.segment.clone(),
                    path: f.path.clone(),
                    store: f.store.clone(),
                    size: f.size,
                    version: f.version,
                    rows,
                });
            }
            let f = Files {
                files,
                shared: t.is_shared(),
                renames: t
                    .renames()
                    .iter()
                    .map(|r| (r.old.clone(), r.new.clone(), r.since))
                    .collect(),
            };
            buf.push(CAPTURE);
            serde_json::to_writer(&mut *buf, &f)
                .map_err(|e| DataFusionError::External(e.into()))?;
            return Ok(());
        }
        if let Some(t) = any.downcast_ref::<LazyTable>() {
            let Some(rows) = t.computed() else {
                return plan_err!(
                    "{table_ref}: the derived table {} was not computed before the plan was sent",
                    t.name()
                );
            };
            return encode_rows(table_ref, rows, &node.schema(), buf);
        }
        if let Some(t) = any.downcast_ref::<MemTable>() {
            let mut rows = Vec::new();
            for p in &t.batches {
                let Ok(p) = p.try_read() else {
                    return plan_err!("{table_ref}: the table is being written");
                };
                rows.extend(p.iter().cloned());
            }
            return encode_rows(table_ref, &rows, &node.schema(), buf);
        }
        if unsupported(node.as_ref()).is_none() {
            return self.inner.try_encode_table_provider(table_ref, node, buf);
        }
        plan_err!("{table_ref}: this table cannot be sent to a cluster ({node:?})")
    }

    fn try_decode_file_format(
        &self,
        buf: &[u8],
        ctx: &TaskContext,
    ) -> Result<Arc<dyn FileFormatFactory>> {
        self.inner.try_decode_file_format(buf, ctx)
    }

    fn try_encode_file_format(
        &self,
        buf: &mut Vec<u8>,
        node: Arc<dyn FileFormatFactory>,
    ) -> Result<()> {
        self.inner.try_encode_file_format(buf, node)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        match udf(name) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udf(name, buf),
        }
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        match udaf(name) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udaf(name, buf),
        }
    }
}

/// The physical codec: Ballista's (shuffles), plus trawl's functions.
#[derive(Debug, Default)]
pub struct PhysicalCodec {
    inner: BallistaPhysicalExtensionCodec,
}

impl PhysicalExtensionCodec for PhysicalCodec {
    fn try_decode(
        &self,
        buf: &[u8],
        inputs: &[Arc<dyn ExecutionPlan>],
        ctx: &TaskContext,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<Arc<dyn ExecutionPlan>> {
        self.inner.try_decode(buf, inputs, ctx, proto_converter)
    }

    fn try_encode(
        &self,
        node: Arc<dyn ExecutionPlan>,
        buf: &mut Vec<u8>,
        proto_converter: &dyn PhysicalProtoConverterExtension,
    ) -> Result<()> {
        self.inner.try_encode(node, buf, proto_converter)
    }

    fn try_decode_udf(&self, name: &str, buf: &[u8]) -> Result<Arc<ScalarUDF>> {
        match udf(name) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udf(name, buf),
        }
    }

    fn try_decode_udaf(&self, name: &str, buf: &[u8]) -> Result<Arc<AggregateUDF>> {
        match udaf(name) {
            Some(f) => Ok(f),
            None => self.inner.try_decode_udaf(name, buf),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use datafusion::arrow::array::{ArrayRef, Int64Array, StringArray};
    use datafusion::arrow::datatypes::{DataType, Field};
    use datafusion::prelude::SessionContext;

    fn task() -> Arc<TaskContext> {
        SessionContext::new().task_ctx()
    }

    #[test]
    fn capture_tables_travel_as_their_files() {
        let file_schema = Arc::new(Schema::new(vec![Field::new("pid", DataType::Int32, true)]));
        let files = vec![
            CaptureFile {
                capture: "run1".into(),
                segment: "run1".into(),
                path: "/a/capture=run1/perf_sample.parquet".into(),
                store: None,
                size: 10,
                version: Some(1),
                rows: None,
            },
            CaptureFile {
                capture: "run2".into(),
                segment: "run2".into(),
                path: "a/capture=run2/perf_sample.parquet".into(),
                store: Some("s3://bucket".into()),
                size: 20,
                version: None,
                rows: None,
            },
        ];
        let renames = vec![Rename {
            old: "process".into(),
            new: "pid".into(),
            since: 2,
        }];
        let t: Arc<dyn TableProvider> =
            Arc::new(CaptureTable::new(file_schema, files, false).with_renames(renames.clone()));
        let codec = LogicalCodec::default();
        let name = TableReference::bare("perf_sample");
        let mut buf = Vec::new();
        codec
            .try_encode_table_provider(&name, t.clone(), &mut buf)
            .unwrap();
        let back = codec
            .try_decode_table_provider(&buf, &name, t.schema(), &task())
            .unwrap();
        assert_eq!(back.schema(), t.schema());
        let back: &dyn TableProvider = back.as_ref();
        let files: Vec<(String, String, u64)> = back
            .downcast_ref::<CaptureTable>()
            .unwrap()
            .files()
            .iter()
            .map(|f| {
                let at = f.store.clone().unwrap_or_default();
                (
                    f.capture.clone(),
                    at + &f.path.display().to_string(),
                    f.size,
                )
            })
            .collect();
        assert_eq!(
            files,
            [
                (
                    "run1".into(),
                    "/a/capture=run1/perf_sample.parquet".into(),
                    10
                ),
                (
                    "run2".into(),
                    "s3://bucketa/capture=run2/perf_sample.parquet".into(),
                    20
                )
            ]
        );
    }

    #[test]
    fn rows_travel_within_the_limit() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("capture", DataType::Utf8, false),
            Field::new("n", DataType::Int64, true),
        ]));
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec!["a", "b"])),
            Arc::new(Int64Array::from(vec![Some(1), None])),
        ];
        let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let t: Arc<dyn TableProvider> =
            Arc::new(MemTable::try_new(schema.clone(), vec![vec![b.clone()]]).unwrap());
        let codec = LogicalCodec::default();
        let name = TableReference::bare("time_base");
        let mut buf = Vec::new();
        codec.try_encode_table_provider(&name, t, &mut buf).unwrap();
        let back = codec
            .try_decode_table_provider(&buf, &name, schema.clone(), &task())
            .unwrap();
        let back: &dyn TableProvider = back.as_ref();
        let rows = back.downcast_ref::<MemTable>().unwrap().batches[0]
            .try_read()
            .unwrap()
            .clone();
        assert_eq!(rows, [b]);

        // 13 MiB of text: refused, naming the table and the way out.
        let big = "x".repeat(13 << 20);
        let cols: Vec<ArrayRef> = vec![
            Arc::new(StringArray::from(vec![big.as_str()])),
            Arc::new(Int64Array::from(vec![1])),
        ];
        let b = RecordBatch::try_new(schema.clone(), cols).unwrap();
        let t: Arc<dyn TableProvider> = Arc::new(MemTable::try_new(schema, vec![vec![b]]).unwrap());
        let err = codec
            .try_encode_table_provider(&name, t, &mut Vec::new())
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("time_base") && err.contains("without --cluster"),
            "{err}"
        );
    }

    #[test]
    fn trawl_functions_decode_by_name() {
        let l = LogicalCodec::default();
        let p = PhysicalCodec::default();
        for name in ["window_start", "assert_true"] {
            assert_eq!(l.try_decode_udf(name, &[]).unwrap().name(), name);
            assert_eq!(p.try_decode_udf(name, &[]).unwrap().name(), name);
        }
        assert_eq!(
            l.try_decode_udaf("power_fit", &[]).unwrap().name(),
            "power_fit"
        );
        assert!(l.try_decode_udf("no_such_function", &[]).is_err());
    }
}
