//! A query's result as Python sees it: a DataFusion plan, run when a
//! consumer asks for its batches through the Arrow C stream interface
//! (`__arrow_c_stream__`). Batches are handed over as they are computed,
//! their buffers shared with the consumer (no copy); each consumer runs
//! the plan again, as a DuckDB relation or a datafusion-python DataFrame
//! does.

use std::ffi::CStr;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use trawl_query::datafusion::arrow::array::{RecordBatch, RecordBatchReader};
use trawl_query::datafusion::arrow::datatypes::SchemaRef;
use trawl_query::datafusion::arrow::error::ArrowError;
use trawl_query::datafusion::arrow::ffi::FFI_ArrowSchema;
use trawl_query::datafusion::arrow::ffi_stream::FFI_ArrowArrayStream;
use trawl_query::datafusion::execution::SendableRecordBatchStream;
use trawl_query::datafusion::prelude::DataFrame;
use trawl_query::Session;

use crate::{guard, runtime, wait};

const STREAM: &CStr = c"arrow_array_stream";
/// The error a stream ends with at Ctrl-C (the package raises
/// KeyboardInterrupt for it).
const INTERRUPTED: &str = "trawl: query interrupted (Ctrl-C)";
const SCHEMA: &CStr = c"arrow_schema";

/// The result of a query or an analysis (lazy: nothing runs until it is
/// read). Read it with `pyarrow.table(r)`, `polars.DataFrame(r)`,
/// `duckdb.sql("SELECT ... FROM r")` or the `trawl` package's
/// `to_arrow()`, `to_pandas()`, `to_polars()`.
#[pyclass(module = "trawl._trawl", frozen)]
pub struct Relation {
    pub(crate) df: DataFrame,
    /// The session the plan was made in, kept while the result lives: a
    /// derived table or a view the plan reads is computed or planned in it
    /// when the result is read, which may be after the `Capture` is gone
    /// (`trawl.open(p).timeline().to_pandas()`).
    session: Arc<Session>,
}

impl Relation {
    pub(crate) fn new(df: DataFrame, session: Arc<Session>) -> Relation {
        Relation { df, session }
    }

    fn schema(&self) -> SchemaRef {
        Arc::new(self.df.schema().as_arrow().clone())
    }
}

/// A running plan as an Arrow record batch reader: each `next` waits for
/// the plan's next batch.
struct Reader {
    schema: SchemaRef,
    stream: SendableRecordBatchStream,
}

impl Iterator for Reader {
    type Item = Result<RecordBatch, ArrowError>;

    fn next(&mut self) -> Option<Self::Item> {
        // Consumers call this from their own code, often without giving
        // Python a chance to see Ctrl-C: on the main thread, look for it
        // every 100 ms (other threads leave signals to the main one).
        let main = crate::on_main_thread();
        runtime().block_on(async {
            loop {
                match tokio::time::timeout(Duration::from_millis(100), self.stream.next()).await {
                    Ok(v) => {
                        return v.map(|r| r.map_err(|e| ArrowError::ExternalError(Box::new(e))))
                    }
                    Err(_) if main && crate::interrupted() => {
                        return Some(Err(ArrowError::ExternalError(INTERRUPTED.into())))
                    }
                    Err(_) => {}
                }
            }
        })
    }
}

impl RecordBatchReader for Reader {
    fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }
}

#[pymethods]
impl Relation {
    /// The Arrow C stream interface: a capsule holding an
    /// `ArrowArrayStream` of the result's batches (the plan starts now;
    /// a requested schema is not applied: the result's own is given).
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let df = self.df.clone();
        let stream = wait(py, async move { Ok(df.execute_stream().await?) })?;
        // The physical schema: the batches' own (string views where
        // the plan's logical schema says strings).
        let reader = Reader {
            schema: stream.schema(),
            stream,
        };
        let ffi = FFI_ArrowArrayStream::new(Box::new(reader));
        PyCapsule::new_with_value(py, ffi, STREAM)
    }

    /// The Arrow C data interface for the result's schema.
    fn __arrow_c_schema__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyCapsule>> {
        let ffi = guard(py, || {
            Ok(FFI_ArrowSchema::try_from(self.schema().as_ref())?)
        })?;
        PyCapsule::new_with_value(py, ffi, SCHEMA)
    }

    /// Column names, in order.
    #[getter]
    fn columns(&self) -> Vec<String> {
        self.schema()
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// The first `n` rows, as the CLI prints a table.
    #[pyo3(signature = (n = 20))]
    fn show(&self, py: Python<'_>, n: usize) -> PyResult<String> {
        let df = self.df.clone();
        let batches = wait(
            py,
            async move { Ok(df.limit(0, Some(n))?.collect().await?) },
        )?;
        guard(py, || {
            Ok(
                trawl_query::datafusion::arrow::util::pretty::pretty_format_batches(&batches)?
                    .to_string(),
            )
        })
    }

    /// The first `n` rows as a new relation.
    fn limit(&self, py: Python<'_>, n: usize) -> PyResult<Relation> {
        guard(py, || {
            Ok(Relation::new(
                self.df.clone().limit(0, Some(n))?,
                self.session.clone(),
            ))
        })
    }

    /// The plan DataFusion runs (with `analyze=True`: run it and show
    /// each operator's rows and time).
    #[pyo3(signature = (analyze = false))]
    fn explain(&self, py: Python<'_>, analyze: bool) -> PyResult<String> {
        let df = self.df.clone();
        let batches = wait(py, async move {
            Ok(df.explain(false, analyze)?.collect().await?)
        })?;
        guard(py, || {
            Ok(
                trawl_query::datafusion::arrow::util::pretty::pretty_format_batches(&batches)?
                    .to_string(),
            )
        })
    }
}
