//! Reading a capture's tables back (checked against the schema), and the
//! `diagnostic` table's rows, which later steps (the symbol store's
//! problems) append to.

use std::fs::File;
use std::path::Path;

use arrow::array::{Array, ArrayRef, Int32Builder, Int64Builder, RecordBatch, StringBuilder};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

use crate::columns::{self};
use crate::error::{Error, Result};
use crate::writer::{replace_table, table_file};
use trawl_capture::schema::{self, TableDef};

/// Every batch of a table of a capture (or archive) directory.
pub fn read_table(dir: &Path, def: &TableDef) -> Result<Vec<RecordBatch>> {
    read_columns(dir, def, None)
}

/// Whether the capture in `dir` has table `def` (a file, or a table
/// held in memory by the staged capture `dir` is).
pub fn has_table(dir: &Path, def: &TableDef) -> bool {
    held(dir, def).is_some() || table_file(dir, def.name).is_file()
}

/// The batches of `def` held in memory for the staged capture `dir`
/// ([`crate::writer::CaptureWriter::create_held`]).
fn held(dir: &Path, def: &TableDef) -> Option<Vec<RecordBatch>> {
    crate::writer::held_at(dir)?.get(def.name)
}

/// `batches` with only the columns named in `only` (in the table's
/// order, as a Parquet projection gives them).
fn project(
    def: &TableDef,
    batches: Vec<RecordBatch>,
    only: Option<&[&str]>,
) -> Result<Vec<RecordBatch>> {
    let Some(names) = only else {
        return Ok(batches);
    };
    batches
        .into_iter()
        .map(|b| {
            let keep: Vec<usize> = (0..b.num_columns())
                .filter(|&i| names.contains(&b.schema().field(i).name().as_str()))
                .collect();
            b.project(&keep).map_err(|source| Error::Arrow {
                table: def.name.into(),
                source,
            })
        })
        .collect()
}

/// The batches of a table with only the columns named in `only` (all
/// without it), read `batch` rows at a time; None when the capture has no
/// such table.
pub fn table_reader(
    dir: &Path,
    def: &TableDef,
    only: Option<&[&str]>,
    batch: usize,
) -> Result<Option<Box<dyn Iterator<Item = Result<RecordBatch>> + Send>>> {
    if let Some(b) = held(dir, def) {
        return Ok(Some(Box::new(project(def, b, only)?.into_iter().map(Ok))));
    }
    let path = table_file(dir, def.name);
    if !path.is_file() {
        return Ok(None);
    }
    let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| {
            let b = match only {
                Some(names) => {
                    let mask = parquet::arrow::ProjectionMask::columns(
                        b.parquet_schema(),
                        names.iter().copied(),
                    );
                    b.with_projection(mask)
                }
                None => b,
            };
            b.with_batch_size(batch).build()
        })
        .map_err(|source| Error::Parquet {
            path: path.clone(),
            source,
        })?;
    let table = def.name.to_string();
    Ok(Some(Box::new(reader.map(move |b| {
        b.map_err(|source| Error::Arrow {
            table: table.as_str().into(),
            source,
        })
    }))))
}

/// Every batch of a table, with only the columns named in `only` (all
/// without it).
pub fn read_columns(dir: &Path, def: &TableDef, only: Option<&[&str]>) -> Result<Vec<RecordBatch>> {
    match table_reader(dir, def, only, 64 * 1024)? {
        Some(r) => r.collect(),
        None => Err(missing(dir, def)),
    }
}

/// Why table `def` of `dir` cannot be read: its file's open error.
fn missing(dir: &Path, def: &TableDef) -> Error {
    let path = table_file(dir, def.name);
    let e = File::open(&path)
        .err()
        .unwrap_or_else(|| std::io::ErrorKind::NotFound.into());
    Error::io(&path, e)
}

/// The batches of a table, read one at a time (a table too big to hold
/// twice: an archive's manifest).
pub fn read_batches(
    dir: &Path,
    def: &'static TableDef,
) -> Result<impl Iterator<Item = Result<RecordBatch>>> {
    table_reader(dir, def, None, 64 * 1024)?.ok_or_else(|| missing(dir, def))
}

/// A column of a batch of `def`, checked against the schema so that the
/// typed accessors below cannot panic on a capture written by another
/// version of trawl.
pub fn col<'a>(b: &'a RecordBatch, def: &TableDef, name: &str) -> Result<&'a ArrayRef> {
    let want = def
        .columns
        .iter()
        .find(|c| c.name == name)
        .map(|c| c.ty.data_type());
    match (b.column_by_name(name), want) {
        (Some(c), Some(t)) if *c.data_type() == t => Ok(c),
        _ => Err(Error::Arrow {
            table: def.name.into(),
            source: arrow::error::ArrowError::SchemaError(format!(
                "column {name} is missing or has another type: the capture was written by another version of trawl; ingest it again"
            )),
        }),
    }
}

table_columns! {
    #[derive(Default)]
    pub(crate) struct DiagnosticCols for schema::DIAGNOSTIC {
        source_id: Int32Builder,
        source: StringBuilder,
        byte_offset: Int64Builder,
        line: Int64Builder,
        severity: StringBuilder,
        kind: StringBuilder,
        message: StringBuilder,
    }
}

impl DiagnosticCols {
    /// A row: diagnostic `d` of input `source_id`.
    pub(crate) fn push(&mut self, source_id: i32, d: &crate::diag::Diagnostic) {
        self.source_id.append_value(source_id);
        self.source.append_value(&d.source);
        self.byte_offset
            .append_option(d.position.byte_offset().map(|b| b as i64));
        self.line.append_option(d.position.line().map(|l| l as i64));
        self.severity.append_value(d.severity.as_str());
        self.kind.append_value(d.kind);
        self.message.append_value(&d.message);
    }
}

/// Adds diagnostics found after the inputs were read (the symbol store's
/// problems: `source` names the file they are in) to the capture's
/// `diagnostic` table, with `source_id` -1 (kept as it is when `diags` is
/// empty).
pub fn append_diagnostics(dir: &Path, diags: &[crate::diag::Diagnostic]) -> Result<()> {
    if diags.is_empty() {
        return Ok(());
    }
    let def = &schema::DIAGNOSTIC;
    let mut batches = if has_table(dir, def) {
        read_table(dir, def)?
    } else {
        Vec::new()
    };
    let mut c = DiagnosticCols::default();
    for d in diags {
        c.push(-1, d);
    }
    batches.push(columns::batch(&mut c)?);
    replace_table(dir, def, &batches)?;
    Ok(())
}
