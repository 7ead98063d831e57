//! Writing a capture directory: one Parquet file per table, atomically.
//!
//! A run writes every table into a hidden temporary directory next to the
//! destination and renames it into place only when everything succeeded, so
//! an interrupted or failed run leaves no half-written table behind (at worst
//! a `.NAME.trawl-tmp-PID` directory, removed by the next run). Single tables
//! added to an existing capture later (`symbol` by `trawl symbolize`) are
//! written to a temporary file and renamed.

use std::collections::HashMap;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use arrow::array::{ArrayRef, RecordBatch};
use arrow::datatypes::SchemaRef;
use parquet::arrow::arrow_writer::{compute_leaves, ArrowColumnChunk, ArrowRowGroupWriterFactory};
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, Encoding, ZstdLevel};
use parquet::column::writer::{get_column_writer, ColumnCloseResult, ColumnWriter};
use parquet::errors::ParquetError;
use parquet::file::properties::{EnabledStatistics, WriterProperties, WriterPropertiesPtr};
use parquet::file::writer::{SerializedFileWriter, SerializedPageWriter, TrackedWrite};
use rayon::prelude::*;

use std::sync::mpsc::{sync_channel, SyncSender};
use std::thread::JoinHandle;

use parquet::schema::types::{ColumnDescPtr, ColumnPath};

use crate::columns::{self, TableColumns};
use crate::error::{Error, Result};
use crate::{dict_codes, int_pages};
use trawl_capture::schema::{ColType, TableDef};

pub use trawl_capture::layout::{is_capture, segment_archive, table_file};

/// Writer settings: zstd level 1 (none for a small table, see
/// [`SMALL_TABLE_BYTES`]); dictionary encoding for strings and flags; delta
/// encoding for signed 64-bit integers and UTC times (sorted ids, times,
/// periods; unsigned ones, addresses, stay plain); 32-bit ids
/// plain (mostly constant runs, which zstd takes for free); no min/max
/// statistics for addresses, payloads and dictionary strings.
fn writer_properties(def: &TableDef, small: bool) -> WriterProperties {
    writer_properties_builder(def, small).build()
}

/// The settings trawl writes table `def` with (as [`TableWriter`] does for
/// a table of more than [`SMALL_TABLE_BYTES`]), for writers of other
/// layouts (an archive's segments).
pub fn table_writer_properties(def: &TableDef) -> WriterProperties {
    writer_properties_builder(def, false).build()
}

fn writer_properties_builder(
    def: &TableDef,
    small: bool,
) -> parquet::file::properties::WriterPropertiesBuilder {
    let compression = if small {
        Compression::UNCOMPRESSED
    } else {
        Compression::ZSTD(ZstdLevel::try_new(1).unwrap())
    };
    let mut b = WriterProperties::builder()
        .set_compression(compression)
        .set_max_row_group_row_count(Some(ROW_GROUP_ROWS))
        .set_created_by(format!("trawl {}", env!("CARGO_PKG_VERSION")));
    for c in def.columns {
        let dict = matches!(c.ty, ColType::Utf8 | ColType::DictUtf8 | ColType::Bool);
        b = b.set_column_dictionary_enabled(ColumnPath::from(c.name), dict);
        if matches!(
            c.ty,
            ColType::UInt64 | ColType::Binary | ColType::ListUInt64 | ColType::DictUtf8
        ) {
            // Addresses, payloads and repeated names: min/max statistics
            // prune little, and computing them compared every string.
            b = b.set_column_statistics_enabled(ColumnPath::from(c.name), EnabledStatistics::None);
        }
        if matches!(c.ty, ColType::Int64 | ColType::TimeUtc) {
            // Ids, times and periods: sorted or repeating, so deltas are
            // small and zstd has little left to do.
            b = b.set_column_encoding(ColumnPath::from(c.name), Encoding::DELTA_BINARY_PACKED);
        }
    }
    if def.name == "mem_access" {
        // Tens of millions of rows per GB of log. `kind` is written from
        // its dictionary keys, `size` and `source_id` as dictionaries of
        // their few values (`encode_column`); should that not apply, kind
        // is written plain (parquet's dictionary interns every value).
        b = b.set_column_dictionary_enabled(ColumnPath::from("kind"), false);
        // Pages of up to a million rows (within the byte limit): with the
        // default 20,000 rows a 1 GB log's 22 M rows made 1,100 pages per
        // column, each compressed on its own (a zstd frame set up per
        // page); bigger pages made mem_access 29 % smaller (26 -> 18.6 MB)
        // and its writing ~10 % cheaper. Min/max of the constant
        // source_id and of size prune nothing: not computed.
        b = b
            .set_data_page_row_count_limit(1 << 20)
            .set_column_statistics_enabled(ColumnPath::from("source_id"), EnabledStatistics::None)
            .set_column_statistics_enabled(ColumnPath::from("size"), EnabledStatistics::None);
    }
    b
}

/// Rows per Parquet row group.
const ROW_GROUP_ROWS: usize = 512 * 1024;

/// Rows per row group of table `def`: an archive's `capture_file`, read
/// for a few captures at a time, in small ones (their `capture` statistics
/// skip the others; it is written in capture order).
fn row_group_rows(def: &TableDef) -> usize {
    if def.name == trawl_capture::schema::ARCHIVE_FILE.name {
        16 * 1024
    } else {
        ROW_GROUP_ROWS
    }
}

/// A row group is written early when its rows hold this much Arrow
/// memory: rows of long strings (symbol names, instruction text) would
/// otherwise hold hundreds of MB waiting for their 512 K rows (the
/// symbols of the 8 GB recording of bench/large.sh: 170 MB).
const ROW_GROUP_BYTES: usize = 48 << 20;

/// A table whose rows hold less Arrow memory than this when it is closed
/// is written then, on the closing thread, uncompressed, its columns one
/// after another. Parquet's writer sets up a zstd compressor and
/// decompressor for every column chunk (about 50 µs), whatever its size:
/// a perf capture of a short run has some 25 tables of a few rows, and
/// with a thread, a rayon fan-out and zstd per table, writing them was
/// most of an archive ingest of such runs. Page encodings (dictionaries,
/// deltas) are the same, so the file stays small.
const SMALL_TABLE_BYTES: usize = 1 << 20;

/// Streams batches of one table into a Parquet file. The first batches
/// are held; once they pass [`SMALL_TABLE_BYTES`], encoding and
/// compression run on a thread of their own, so conversion and Parquet
/// encoding overlap; at most two batches wait in between. Each row group's
/// columns are encoded in parallel on the rayon pool (the pattern of
/// parquet's `ArrowColumnWriter` example), so a table of tens of millions
/// of rows is not held to one core. A table still small when it is closed
/// is written then, on the caller's thread.
pub struct TableWriter {
    def: &'static TableDef,
    path: PathBuf,
    /// Batches not yet given to a worker (no worker yet).
    held: Vec<RecordBatch>,
    held_bytes: usize,
    tx: Option<SyncSender<RecordBatch>>,
    worker: Option<JoinHandle<Result<()>>>,
    /// The file is written (or failed): nothing more to do at drop.
    finished: bool,
    rows: u64,
    /// The staged capture's tables held in memory, when its directory is
    /// one ([`CaptureWriter::create_held`]): a table still small at close
    /// goes there, not to a file.
    hold: Option<Arc<Held>>,
    /// Whether the table went to `hold`.
    was_held: bool,
}

/// A column chunk ready to append: from parquet's Arrow column writer, or
/// encoded here (dictionary keys and small integers, [`dict_codes`];
/// 64-bit integers, [`int_pages`]; other required integers,
/// [`write_plain_ints`]).
enum Chunk {
    Arrow(ArrowColumnChunk),
    Encoded(bytes::Bytes, ColumnCloseResult),
}

/// An Int32, UInt32, Int64 or UInt64 column without nulls written with
/// parquet's typed column writer straight from the Arrow value buffers
/// (a nullable one with definition levels of 1): the Arrow writer first
/// builds a list of non-null row indices and gathers the values through
/// it into a new vector (tens of millions of rows of `mem_access` copied
/// twice per column). Same encoder, pages, statistics and page index;
/// `None` for other types.
fn write_plain_ints(
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    batches: &[RecordBatch],
    i: usize,
) -> std::result::Result<Option<Chunk>, ParquetError> {
    use arrow::array::AsArray;
    use arrow::datatypes::{DataType, Int32Type, Int64Type, UInt32Type, UInt64Type};
    let ty = batches[0].column(i).data_type().clone();
    if !matches!(
        ty,
        DataType::Int32 | DataType::UInt32 | DataType::Int64 | DataType::UInt64
    ) || descr.max_def_level() > 1
        || descr.max_rep_level() != 0
        || batches.iter().any(|b| b.column(i).null_count() > 0)
    {
        return Ok(None);
    }
    let ones = match descr.max_def_level() {
        1 => vec![1i16; batches.iter().map(|b| b.num_rows()).max().unwrap_or(0)],
        _ => Vec::new(),
    };
    let mut sink = TrackedWrite::new(Vec::new());
    let close = {
        let pages = Box::new(SerializedPageWriter::new(&mut sink));
        let mut w = get_column_writer(descr, props.clone(), pages);
        for b in batches {
            let c = b.column(i);
            let def = (!ones.is_empty()).then(|| &ones[..c.len()]);
            // Unsigned values are stored as the same bits, as the Arrow
            // writer does (the column's UINT annotation orders
            // statistics).
            match (&mut w, &ty) {
                (ColumnWriter::Int32ColumnWriter(t), DataType::Int32) => {
                    t.write_batch(c.as_primitive::<Int32Type>().values(), def, None)?;
                }
                (ColumnWriter::Int32ColumnWriter(t), DataType::UInt32) => {
                    let v = c.as_primitive::<UInt32Type>().values();
                    t.write_batch(v.inner().typed_data::<i32>(), def, None)?;
                }
                (ColumnWriter::Int64ColumnWriter(t), DataType::Int64) => {
                    t.write_batch(c.as_primitive::<Int64Type>().values(), def, None)?;
                }
                (ColumnWriter::Int64ColumnWriter(t), DataType::UInt64) => {
                    let v = c.as_primitive::<UInt64Type>().values();
                    t.write_batch(v.inner().typed_data::<i64>(), def, None)?;
                }
                _ => return Ok(None),
            }
        }
        w.close()?
    };
    let bytes = bytes::Bytes::from(sink.into_inner()?);
    Ok(Some(Chunk::Encoded(bytes, close)))
}

/// Column `i` of a row group's batches encoded here rather than by
/// parquet's Arrow column writer, when one of these applies: a string
/// dictionary column without statistics as its dictionary keys
/// ([`dict_codes::encode`]; nullable or not); a required Int32 column
/// whose values lie in 0..=255
/// as a dictionary of them ([`dict_codes::encode_small_ints`]); a required
/// INT64 column [`int_pages::plan`] takes ([`int_pages::encode`]); any
/// other required integer column through the typed writer
/// ([`write_plain_ints`]). `None`: the Arrow writer's turn.
fn encode_column(
    field: &arrow::datatypes::Field,
    descr: ColumnDescPtr,
    props: &WriterPropertiesPtr,
    batches: &[RecordBatch],
    i: usize,
) -> std::result::Result<Option<Chunk>, ParquetError> {
    use arrow::datatypes::DataType;
    let cols: Vec<&ArrayRef> = batches.iter().map(|b| b.column(i)).collect();
    let path = descr.path().clone();
    let codec = props.compression(&path);
    let page_rows = props.data_page_row_count_limit();
    let encoded = |(bytes, close)| Some(Chunk::Encoded(bytes, close));
    let no_stats = props.statistics_enabled(&path) == EnabledStatistics::None;
    if dict_codes::supports(codec)
        && no_stats
        && matches!(field.data_type(), DataType::Dictionary(k, v)
            if **k == DataType::Int32 && **v == DataType::Utf8)
    {
        if let Some(dict) = dict_codes::shared_dictionary(&cols, field.is_nullable()) {
            return dict_codes::encode(descr, codec, page_rows, &dict, &cols).map(encoded);
        }
    }
    if field.is_nullable() && cols.iter().any(|c| c.null_count() > 0) {
        return Ok(None);
    }
    // From here every row has a value: a nullable column's pages get
    // definition levels of 1 (`perf_sample`'s times, ids and addresses
    // are nullable and never null in a recording that has them).
    if dict_codes::supports(codec)
        && !field.is_nullable()
        && field.data_type() == &DataType::Int32
        && !props.write_page_header_statistics(&path)
        && descr.sort_order() == parquet::basic::SortOrder::SIGNED
    {
        if let Some((values, code)) = dict_codes::small_ints(&cols) {
            let stats = props.statistics_enabled(&path);
            return dict_codes::encode_small_ints(
                descr, codec, page_rows, stats, &values, &code, &cols,
            )
            .map(encoded);
        }
    }
    if let Some(plan) = int_pages::plan(&descr, props) {
        use arrow::array::AsArray;
        use arrow::datatypes::{Int64Type, UInt64Type};
        let buffers: Option<Vec<&arrow::buffer::Buffer>> = cols
            .iter()
            .map(|c| match c.data_type() {
                DataType::Int64 => Some(c.as_primitive::<Int64Type>().values().inner()),
                DataType::UInt64 => Some(c.as_primitive::<UInt64Type>().values().inner()),
                _ => None,
            })
            .collect();
        if let Some(buffers) = buffers {
            return int_pages::encode(descr, props, plan, &buffers).map(encoded);
        }
    }
    write_plain_ints(descr, props, batches, i)
}

/// The worker's side: batches gathered into row groups, each encoded
/// column by column in parallel and appended in order.
struct RowGroupEncoder {
    path: PathBuf,
    schema: SchemaRef,
    file: SerializedFileWriter<File>,
    factory: ArrowRowGroupWriterFactory,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    /// Arrow memory of `pending` (each batch's share of its buffers).
    pending_bytes: usize,
    row_groups: usize,
    /// Rows per row group.
    group_rows: usize,
    /// Columns encoded in parallel on the rayon pool.
    parallel: bool,
}

impl RowGroupEncoder {
    fn err(path: &Path) -> impl Fn(ParquetError) -> Error + '_ {
        move |source| Error::Parquet {
            path: path.to_path_buf(),
            source,
        }
    }

    fn write(&mut self, mut batch: RecordBatch) -> Result<()> {
        let per_row = batch.get_array_memory_size() / batch.num_rows().max(1);
        while batch.num_rows() > 0 {
            // As many rows as fit under both bounds (one at least).
            let by_bytes =
                (ROW_GROUP_BYTES.saturating_sub(self.pending_bytes) / per_row.max(1)).max(1);
            let take = (self.group_rows - self.pending_rows)
                .min(by_bytes)
                .min(batch.num_rows());
            self.pending.push(batch.slice(0, take));
            self.pending_rows += take;
            self.pending_bytes += take * per_row;
            batch = batch.slice(take, batch.num_rows() - take);
            if self.pending_rows == self.group_rows || self.pending_bytes >= ROW_GROUP_BYTES {
                self.flush()?;
            }
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.pending_rows == 0 {
            return Ok(());
        }
        let batches = std::mem::take(&mut self.pending);
        self.pending_rows = 0;
        self.pending_bytes = 0;
        let err = Self::err(&self.path);
        let writers = self
            .factory
            .create_column_writers(self.row_groups)
            .map_err(&err)?;
        // Every column of a trawl table is one Parquet leaf (flat values
        // or a list of them).
        debug_assert_eq!(writers.len(), self.schema.fields().len());
        let schema = &self.schema;
        let descr = self.file.schema_descr();
        let props = self.file.properties();
        let encode = |(i, mut w): (usize, parquet::arrow::arrow_writer::ArrowColumnWriter)| {
            let field = schema.field(i);
            if let Some(c) = encode_column(field, descr.column(i), props, &batches, i)? {
                return Ok(c);
            }
            for b in &batches {
                for leaf in compute_leaves(field, b.column(i))? {
                    w.write(&leaf)?;
                }
            }
            w.close().map(Chunk::Arrow)
        };
        let chunks: Vec<std::result::Result<Chunk, ParquetError>> = if self.parallel {
            writers.into_par_iter().enumerate().map(encode).collect()
        } else {
            writers.into_iter().enumerate().map(encode).collect()
        };
        let mut rg = self.file.next_row_group().map_err(&err)?;
        for c in chunks {
            match c.map_err(&err)? {
                Chunk::Arrow(c) => c.append_to_row_group(&mut rg).map_err(&err)?,
                Chunk::Encoded(bytes, close) => rg.append_column(&bytes, close).map_err(&err)?,
            }
        }
        rg.close().map_err(&err)?;
        self.row_groups += 1;
        Ok(())
    }

    fn close(mut self) -> Result<()> {
        self.flush()?;
        self.file.close().map_err(Self::err(&self.path))?;
        Ok(())
    }
}

impl RowGroupEncoder {
    /// Creates the table's file; `small`: see [`SMALL_TABLE_BYTES`].
    fn create(def: &'static TableDef, path: &Path, small: bool) -> Result<Self> {
        let file = File::create(path).map_err(|e| Error::io(path, e))?;
        let schema = def.schema();
        let (file, factory) =
            ArrowWriter::try_new(file, schema.clone(), Some(writer_properties(def, small)))
                .and_then(|w| w.into_serialized_writer())
                .map_err(Self::err(path))?;
        Ok(RowGroupEncoder {
            path: path.to_path_buf(),
            schema,
            file,
            factory,
            pending: Vec::new(),
            pending_rows: 0,
            pending_bytes: 0,
            row_groups: 0,
            group_rows: row_group_rows(def),
            parallel: !small,
        })
    }
}

/// The Arrow memory of a batch's rows (not of its builders' spare
/// capacity, which a batch of a few rows can hold megabytes of).
pub fn slice_bytes(batch: &RecordBatch) -> usize {
    batch
        .columns()
        .iter()
        .map(|c| {
            c.to_data()
                .get_slice_memory_size()
                .unwrap_or(usize::MAX / 64)
        })
        .sum()
}

impl TableWriter {
    fn create(def: &'static TableDef, path: &Path) -> Result<Self> {
        Ok(TableWriter {
            def,
            path: path.to_path_buf(),
            held: Vec::new(),
            held_bytes: 0,
            tx: None,
            worker: None,
            finished: false,
            rows: 0,
            hold: path.parent().and_then(held_at),
            was_held: false,
        })
    }

    /// Starts the worker thread and gives it the held batches.
    fn start(&mut self) -> Result<()> {
        let mut enc = RowGroupEncoder::create(self.def, &self.path, false)?;
        let (tx, rx) = sync_channel::<RecordBatch>(2);
        let worker = std::thread::Builder::new()
            .name(format!("parquet-{}", self.def.name))
            .spawn(move || -> Result<()> {
                for batch in rx {
                    enc.write(batch)?;
                }
                enc.close()
            })
            .map_err(|e| Error::io(&self.path, e))?;
        self.tx = Some(tx);
        self.worker = Some(worker);
        for b in std::mem::take(&mut self.held) {
            self.send(b)?;
        }
        self.held_bytes = 0;
        Ok(())
    }

    fn send(&mut self, batch: RecordBatch) -> Result<()> {
        let sent = self.tx.as_ref().is_some_and(|tx| tx.send(batch).is_ok());
        if !sent {
            // The worker stopped: its error says why.
            return self.join().and(Err(Error::Io {
                path: self.def.name.into(),
                source: std::io::Error::other("parquet writer thread stopped"),
            }));
        }
        Ok(())
    }

    /// Writes the rows appended to a table's column builders (declared
    /// with [`table_columns!`](crate::columns) for this table) and
    /// empties them.
    pub fn write_rows<C: TableColumns>(&mut self, cols: &mut C) -> Result<()> {
        assert!(
            std::ptr::eq(C::DEF, self.def),
            "builders of {} written to {}",
            C::DEF.name,
            self.def.name
        );
        self.write(&columns::batch(cols)?)
    }

    pub fn write(&mut self, batch: &RecordBatch) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        self.rows += batch.num_rows() as u64;
        if self.worker.is_some() {
            return self.send(batch.clone());
        }
        if self.finished {
            return Err(Error::Io {
                path: self.def.name.into(),
                source: std::io::Error::other("parquet writer already closed"),
            });
        }
        self.held_bytes += slice_bytes(batch);
        self.held.push(batch.clone());
        if self.held_bytes >= SMALL_TABLE_BYTES {
            self.start()?;
        }
        Ok(())
    }

    pub fn rows(&self) -> u64 {
        self.rows
    }

    /// Finishes the file: the worker's, or the held batches written here.
    fn join(&mut self) -> Result<()> {
        self.tx = None;
        if self.worker.is_none() && !self.finished {
            self.finished = true;
            if let Some(h) = &self.hold {
                h.put(self.def.name, compact(std::mem::take(&mut self.held)));
                self.was_held = true;
                // A file of the table written before (a large one) is
                // replaced.
                let _ = fs::remove_file(table_file(&h.dir, self.def.name));
                return Ok(());
            }
            let mut enc = RowGroupEncoder::create(self.def, &self.path, true)?;
            for b in std::mem::take(&mut self.held) {
                enc.write(b)?;
            }
            return enc.close();
        }
        self.finished = true;
        match self.worker.take() {
            Some(h) => h.join().unwrap_or_else(|_| {
                Err(Error::Io {
                    path: self.def.name.into(),
                    source: std::io::Error::other("parquet writer thread panicked"),
                })
            }),
            None => Ok(()),
        }
    }

    fn close(mut self) -> Result<u64> {
        self.join()?;
        Ok(self.rows)
    }
}

/// The small tables of captures staged in memory
/// ([`CaptureWriter::create_held`]), by staging directory: a table that
/// stays under [`SMALL_TABLE_BYTES`] is kept as its batches instead of
/// being written to a file, and read back from here
/// ([`crate::readback`]), as if it were a file of the directory. An
/// archive ingest stages thousands of short runs, each some 26 tables of
/// a few rows, only to append them to its segment: creating, reading and
/// removing those files (and ext4 finding inodes for them) was a fifth of
/// its time.
static HELD: Mutex<Vec<Arc<Held>>> = Mutex::new(Vec::new());

/// `batches` in buffers of their own size: a batch of a few rows can hold
/// its builders' spare capacity (64 K values per column), megabytes for a
/// table of a short run, which a held table would keep until its capture
/// is appended to its segment.
fn compact(batches: Vec<RecordBatch>) -> Vec<RecordBatch> {
    batches
        .into_iter()
        .map(|b| {
            if b.get_array_memory_size() <= 2 * slice_bytes(&b) + 4096 {
                return b;
            }
            let all = arrow::array::UInt32Array::from_iter_values(0..b.num_rows() as u32);
            arrow::compute::take_record_batch(&b, &all).unwrap_or(b)
        })
        .collect()
}

/// The tables held for one staging directory.
pub struct Held {
    dir: PathBuf,
    tables: Mutex<HashMap<&'static str, Vec<RecordBatch>>>,
}

impl Held {
    fn put(&self, table: &'static str, batches: Vec<RecordBatch>) {
        self.tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(table, batches);
    }

    fn forget(&self, table: &str) {
        self.tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(table);
    }

    /// The batches of `table`, when it is held.
    pub fn get(&self, table: &str) -> Option<Vec<RecordBatch>> {
        self.tables
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(table)
            .cloned()
    }
}

/// The tables held for the staging directory `dir`, if it is one.
pub fn held_at(dir: &Path) -> Option<Arc<Held>> {
    HELD.lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .find(|h| h.dir == dir)
        .cloned()
}

/// A staged capture held rather than committed
/// ([`CaptureWriter::into_held`]): its directory (the tables written as
/// files) and its small tables in memory, readable through
/// [`crate::readback`] at [`HeldCapture::dir`] until it is dropped, which
/// removes both.
pub struct HeldCapture {
    held: Arc<Held>,
}

impl HeldCapture {
    pub fn dir(&self) -> &Path {
        &self.held.dir
    }
}

impl std::fmt::Debug for HeldCapture {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "HeldCapture({})", self.held.dir.display())
    }
}

impl Drop for HeldCapture {
    fn drop(&mut self) {
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|h| !Arc::ptr_eq(h, &self.held));
        let _ = fs::remove_dir_all(&self.held.dir);
    }
}

impl Drop for TableWriter {
    fn drop(&mut self) {
        if self.hold.is_some() && self.worker.is_none() && !self.finished {
            // Dropped before its close (its rows failed, or a panic): a
            // held table is left as it was, not replaced by what it got.
            self.finished = true;
            self.held.clear();
            return;
        }
        let _ = self.join();
    }
}

/// A capture being written. Tables become visible at [`CaptureWriter::commit`].
pub struct CaptureWriter {
    dest: PathBuf,
    tmp: PathBuf,
    committed: bool,
    /// Small tables held in memory ([`Self::create_held`]).
    held: Option<Arc<Held>>,
}

impl CaptureWriter {
    /// Prepares to write the capture `dest`. An existing capture there is
    /// replaced at commit; an existing non-empty directory that is not a
    /// capture is refused.
    pub fn create(dest: &Path) -> Result<Self> {
        Self::create_staged(dest, None)
    }

    /// [`Self::create`], staging the tables in `staging` (a directory on
    /// the same file system) instead of next to `dest`: an archive keeps
    /// its captures' staging directories out of the `ARCHIVE/*/` that
    /// readers glob.
    pub fn create_staged(dest: &Path, staging: Option<&Path>) -> Result<Self> {
        if dest.exists() {
            let empty = fs::read_dir(dest)
                .map_err(|e| Error::io(dest, e))?
                .next()
                .is_none();
            if !empty && !is_capture(dest) {
                return Err(Error::NotACapture { path: dest.into() });
            }
        }
        let parent = match dest.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        fs::create_dir_all(&parent).map_err(|e| Error::io(&parent, e))?;
        let parent = match staging {
            Some(s) => {
                fs::create_dir_all(s).map_err(|e| Error::io(s, e))?;
                s.to_path_buf()
            }
            None => parent,
        };
        let name = dest
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "capture".into());
        // Leftovers of interrupted runs.
        if let Ok(rd) = fs::read_dir(&parent) {
            let prefix = format!(".{name}.trawl-tmp-");
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().into_owned();
                if let Some(pid) = n.strip_prefix(&prefix) {
                    let alive = Path::new("/proc").join(pid).exists();
                    if !alive {
                        let _ = fs::remove_dir_all(e.path());
                    }
                }
            }
        }
        let tmp = parent.join(format!(".{name}.trawl-tmp-{}", std::process::id()));
        if tmp.exists() {
            fs::remove_dir_all(&tmp).map_err(|e| Error::io(&tmp, e))?;
        }
        fs::create_dir(&tmp).map_err(|e| Error::io(&tmp, e))?;
        Ok(CaptureWriter {
            dest: dest.to_path_buf(),
            tmp,
            committed: false,
            held: None,
        })
    }

    /// [`Self::create_staged`], its small tables held in memory rather
    /// than written (see [`HELD`]); the capture is taken with
    /// [`Self::into_held`] instead of being committed.
    pub fn create_held(dest: &Path, staging: Option<&Path>) -> Result<Self> {
        let mut w = Self::create_staged(dest, staging)?;
        let h = Arc::new(Held {
            dir: w.tmp.clone(),
            tables: Default::default(),
        });
        HELD.lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(h.clone());
        w.held = Some(h);
        Ok(w)
    }

    /// The capture staged by [`Self::create_held`], not committed: its
    /// tables stay readable at its staging directory while the
    /// [`HeldCapture`] lives. None for a writer made otherwise.
    pub fn into_held(mut self) -> Option<HeldCapture> {
        let held = self.held.take()?;
        // Removed by the HeldCapture, not by this writer's drop.
        self.committed = true;
        Some(HeldCapture { held })
    }

    /// Whether the tables are held ([`Self::create_held`]).
    pub fn is_held(&self) -> bool {
        self.held.is_some()
    }

    /// Prepares to rewrite some tables of the existing capture `dest`
    /// (`trawl symbolize`): the staging directory starts as a copy of it
    /// (hard links: no data copied; a table replaced in staging gets a new
    /// file, the capture's stays as it was), and [`Self::commit`] exchanges
    /// the two, so a crash or a full disk leaves the capture as it was or
    /// wholly rewritten.
    pub fn restage(dest: &Path) -> Result<Self> {
        if !is_capture(dest) {
            return Err(Error::NotACapture { path: dest.into() });
        }
        let w = Self::create_staged(dest, None)?;
        for e in fs::read_dir(dest).map_err(|e| Error::io(dest, e))? {
            let e = e.map_err(|e| Error::io(dest, e))?;
            let to = w.tmp.join(e.file_name());
            let ft = e.file_type().map_err(|err| Error::io(e.path(), err))?;
            if !ft.is_file() {
                continue;
            }
            if fs::hard_link(e.path(), &to).is_err() {
                fs::copy(e.path(), &to).map_err(|err| Error::io(&to, err))?;
            }
        }
        Ok(w)
    }

    /// Opens a table for streaming writes; close it with
    /// [`Self::close_table`] before [`Self::commit`].
    pub fn open_table(&mut self, def: &'static TableDef) -> Result<TableWriter> {
        TableWriter::create(def, &table_file(&self.tmp, def.name))
    }

    pub fn close_table(&mut self, w: TableWriter) -> Result<u64> {
        w.close()
    }

    /// Writes a whole (small) table at once: the rows appended to its
    /// column builders.
    pub fn write_table<C: TableColumns>(&mut self, cols: &mut C) -> Result<u64> {
        let mut w = self.open_table(C::DEF)?;
        w.write_rows(cols)?;
        w.close()
    }

    /// Directory the tables are being written to (not yet visible).
    pub fn staging_dir(&self) -> &Path {
        &self.tmp
    }

    /// Makes the capture visible, replacing an older capture at `dest`.
    /// The two directories are exchanged in one step (renameat2 with
    /// RENAME_EXCHANGE), so a crash at any moment leaves the old capture or
    /// the new one at `dest`, never neither; the old one, now at the
    /// staging name, is removed after (or by the next run). Where the file
    /// system cannot exchange, the old capture is moved aside first. Runs
    /// writing the same capture at once each commit whole: the last wins.
    pub fn commit(mut self) -> Result<PathBuf> {
        if self.dest.exists() {
            if exchange(&self.tmp, &self.dest).is_ok() {
                let _ = fs::remove_dir_all(&self.tmp);
            } else {
                let old = self.tmp.with_extension("old");
                fs::rename(&self.dest, &old).map_err(|e| Error::io(&self.dest, e))?;
                fs::rename(&self.tmp, &self.dest).map_err(|e| Error::io(&self.dest, e))?;
                let _ = fs::remove_dir_all(&old);
            }
        } else if let Err(e) = fs::rename(&self.tmp, &self.dest) {
            // Another run committed the same capture meanwhile: this one
            // replaces it whole (the last to commit wins).
            let taken = matches!(e.raw_os_error(), Some(libc::ENOTEMPTY) | Some(libc::EEXIST));
            if !(taken && exchange(&self.tmp, &self.dest).is_ok()) {
                return Err(Error::io(&self.dest, e));
            }
            let _ = fs::remove_dir_all(&self.tmp);
        }
        self.committed = true;
        Ok(self.dest.clone())
    }
}

impl Drop for CaptureWriter {
    fn drop(&mut self) {
        if let Some(h) = self.held.take() {
            HELD.lock()
                .unwrap_or_else(|e| e.into_inner())
                .retain(|x| !Arc::ptr_eq(x, &h));
        }
        if !self.committed {
            let _ = fs::remove_dir_all(&self.tmp);
        }
    }
}

/// Exchanges two paths atomically (Linux renameat2, RENAME_EXCHANGE).
fn exchange(a: &Path, b: &Path) -> std::io::Result<()> {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (ca, cb) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths; renameat2 reads them only.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            ca.as_ptr(),
            libc::AT_FDCWD,
            cb.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Writes (or replaces) one table of an existing capture atomically: the
/// batches go to a temporary file that is renamed over `<table>.parquet`.
pub fn replace_table(dir: &Path, def: &'static TableDef, batches: &[RecordBatch]) -> Result<u64> {
    replace_table_with(dir, def, |w| batches.iter().try_for_each(|b| w.write(b)))
}

/// [`replace_table`], the batches written by `fill` as it makes them (a
/// table too big to hold at once).
pub fn replace_table_with(
    dir: &Path,
    def: &'static TableDef,
    fill: impl FnOnce(&mut TableWriter) -> Result<()>,
) -> Result<u64> {
    let tmp = dir.join(format!(
        ".{}.parquet.trawl-tmp-{}",
        def.name,
        std::process::id()
    ));
    let result = (|| {
        let mut w = TableWriter::create(def, &tmp)?;
        fill(&mut w)?;
        let hold = w.hold.clone();
        w.join()?;
        let rows = w.rows;
        if w.was_held {
            // Held in memory (a staged capture's small table).
            return Ok(rows);
        }
        let dest = table_file(dir, def.name);
        fs::rename(&tmp, &dest).map_err(|e| Error::io(&dest, e))?;
        if let Some(h) = hold {
            // Written as a file: the rows held before are replaced.
            h.forget(def.name);
        }
        Ok(rows)
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::columns::batch;
    use arrow::array::{Int32Builder, StringBuilder};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;

    table_columns! {
        #[derive(Default)]
        struct MetaCols for trawl_capture::schema::CAPTURE_META {
            source_id: Int32Builder,
            key: StringBuilder,
            value: StringBuilder,
        }
    }

    fn meta_batch(rows: usize, len: usize) -> RecordBatch {
        let mut c = MetaCols::default();
        let value = "v".repeat(len);
        for i in 0..rows {
            c.source_id.append_value(i as i32);
            c.key.append_value(format!("k{i}"));
            c.value.append_value(&value);
        }
        batch(&mut c).unwrap()
    }

    /// (rows, compression of the first column chunk) of a written table.
    fn written(path: &Path) -> (usize, Option<Compression>) {
        let b = ParquetRecordBatchReaderBuilder::try_new(File::open(path).unwrap()).unwrap();
        let md = b.metadata().clone();
        let rows = b.build().unwrap().map(|b| b.unwrap().num_rows()).sum();
        let c = (md.num_row_groups() > 0).then(|| md.row_group(0).column(0).compression());
        (rows, c)
    }

    #[test]
    fn small_tables_are_written_at_close_uncompressed_large_ones_streamed_with_zstd() {
        let d = tempfile::tempdir().unwrap();
        let def = &trawl_capture::schema::CAPTURE_META;
        // A few rows, from builders with spare capacity: held, then written
        // at close without compression.
        let small = d.path().join("small.parquet");
        let mut w = TableWriter::create(def, &small).unwrap();
        w.write(&meta_batch(5, 10)).unwrap();
        assert!(
            w.worker.is_none() && !small.exists(),
            "a small table waits for close"
        );
        assert_eq!(w.close().unwrap(), 5);
        assert_eq!(written(&small), (5, Some(Compression::UNCOMPRESSED)));
        // No rows at all: a file with the schema and no row group.
        let empty = d.path().join("empty.parquet");
        TableWriter::create(def, &empty).unwrap().close().unwrap();
        assert_eq!(written(&empty), (0, None));
        // Past SMALL_TABLE_BYTES: a worker, zstd.
        let large = d.path().join("large.parquet");
        let mut w = TableWriter::create(def, &large).unwrap();
        for _ in 0..3 {
            w.write(&meta_batch(1000, 500)).unwrap();
        }
        assert!(w.worker.is_some(), "1.5 MB of rows start the worker");
        assert_eq!(w.close().unwrap(), 3000);
        let (rows, c) = written(&large);
        assert_eq!(rows, 3000);
        assert!(matches!(c, Some(Compression::ZSTD(_))), "{c:?}");
        // Dropped without close: the file is finished all the same.
        let dropped = d.path().join("dropped.parquet");
        let mut w = TableWriter::create(def, &dropped).unwrap();
        w.write(&meta_batch(3, 1)).unwrap();
        drop(w);
        assert_eq!(written(&dropped).0, 3);
    }

    const fn col(
        name: &'static str,
        ty: trawl_capture::schema::ColType,
        nullable: bool,
    ) -> trawl_capture::schema::ColumnDef {
        trawl_capture::schema::ColumnDef {
            name,
            ty,
            nullable,
            doc: "",
        }
    }

    /// Nullable columns as `perf_sample` has them, and a required one.
    static MIXED: TableDef = TableDef {
        name: "mixed",
        doc: "",
        columns: &[
            col("a", trawl_capture::schema::ColType::Int32, true),
            col("b", trawl_capture::schema::ColType::UInt32, true),
            col("c", trawl_capture::schema::ColType::Int64, true),
            col("d", trawl_capture::schema::ColType::UInt64, true),
            col("e", trawl_capture::schema::ColType::DictUtf8, true),
            col("f", trawl_capture::schema::ColType::Int32, false),
        ],
    };

    table_columns! {
        #[derive(Default)]
        struct MixedCols for MIXED {
            a: crate::columns::OptPrim<arrow::datatypes::Int32Type>,
            b: crate::columns::OptPrim<arrow::datatypes::UInt32Type>,
            c: crate::columns::OptPrim<arrow::datatypes::Int64Type>,
            d: crate::columns::OptPrim<arrow::datatypes::UInt64Type>,
            e: crate::columns::DictKeys,
            f: crate::columns::Prim<arrow::datatypes::Int32Type>,
        }
    }

    /// Nullable integer and dictionary columns: a row group without nulls
    /// (written here from the buffers, with definition levels; the
    /// dictionary growing from batch to batch) and one with nulls
    /// (parquet's Arrow writer) read back by parquet's reader as made,
    /// with the statistics of the values written.
    #[test]
    fn nullable_columns_without_nulls_are_written_from_their_buffers() {
        use arrow::array::{Array, AsArray};
        use arrow::datatypes::{Int32Type, Int64Type, UInt32Type};
        let mut x = 99u64;
        let mut next = move || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            x >> 20
        };
        let names = ["swapper", "cc1", "ld", "as"];
        let mut cols = MixedCols::default();
        // What each row holds, as made: (a, b, c, d, e, f).
        type Row = (
            Option<i32>,
            Option<u32>,
            Option<i64>,
            Option<u64>,
            Option<&'static str>,
            i32,
        );
        let mut made: Vec<Row> = Vec::new();
        let mut batches = Vec::new();
        // A full row group without nulls (the last name first seen in its
        // second batch), then a row group with some.
        for (rows, nulls, known) in [
            (ROW_GROUP_ROWS / 2, false, 3),
            (ROW_GROUP_ROWS / 2, false, 4),
            (3000, true, 4),
        ] {
            for i in 0..rows {
                let r = next();
                let null = nulls && i % 7 == 3;
                let row: Row = (
                    (!null).then_some(r as i32 % 40_000 - 20_000),
                    (!null).then_some((r % 2) as u32 + u32::MAX - 1),
                    (!null).then_some(1_000_000 + i as i64 * 20_000 + (r % 997) as i64),
                    (!null).then_some(r << 20),
                    (!null).then_some(names[(r % known) as usize]),
                    (r % 4) as i32,
                );
                cols.a.push(row.0);
                cols.b.push(row.1);
                cols.c.push(row.2);
                cols.d.push(row.3);
                let key = row.4.map(|n| cols.e.intern(n));
                cols.e.push(key);
                cols.f.push(row.5);
                made.push(row);
            }
            batches.push(batch(&mut cols).unwrap());
        }
        let d = tempfile::tempdir().unwrap();
        let path = d.path().join("mixed.parquet");
        let mut w = TableWriter::create(&MIXED, &path).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();

        let r = ParquetRecordBatchReaderBuilder::try_new(File::open(&path).unwrap()).unwrap();
        let md = r.metadata().clone();
        assert_eq!(md.num_row_groups(), 2);
        let mut got: Vec<Row> = Vec::new();
        for b in r.build().unwrap() {
            let b = b.unwrap();
            let a = b.column(0).as_primitive::<Int32Type>();
            let bb = b.column(1).as_primitive::<UInt32Type>();
            let c = b.column(2).as_primitive::<Int64Type>();
            let dd = b.column(3).as_primitive::<arrow::datatypes::UInt64Type>();
            let e = arrow::compute::cast(b.column(4), &arrow::datatypes::DataType::Utf8).unwrap();
            let e = e.as_string::<i32>();
            let f = b.column(5).as_primitive::<Int32Type>();
            for i in 0..b.num_rows() {
                let name = e.is_valid(i).then(|| {
                    *names
                        .iter()
                        .find(|n| **n == e.value(i))
                        .expect("a name made")
                });
                got.push((
                    a.is_valid(i).then(|| a.value(i)),
                    bb.is_valid(i).then(|| bb.value(i)),
                    c.is_valid(i).then(|| c.value(i)),
                    dd.is_valid(i).then(|| dd.value(i)),
                    name,
                    f.value(i),
                ));
            }
        }
        assert_eq!(got.len(), made.len());
        assert!(got == made, "rows differ");
        // Row group 0 (no nulls): statistics of its 512 K values, from the
        // rows made.
        let rg0 = md.row_group(0);
        let first = &made[..ROW_GROUP_ROWS];
        let st = rg0.column(0).statistics().unwrap();
        let min = first.iter().filter_map(|r| r.0).min().unwrap();
        let max = first.iter().filter_map(|r| r.0).max().unwrap();
        assert_eq!(st.min_bytes_opt(), Some(&min.to_le_bytes()[..]));
        assert_eq!(st.max_bytes_opt(), Some(&max.to_le_bytes()[..]));
        assert_eq!(st.null_count_opt(), Some(0));
        let st = rg0.column(2).statistics().unwrap();
        let min = first.iter().filter_map(|r| r.2).min().unwrap();
        assert_eq!(st.min_bytes_opt(), Some(&min.to_le_bytes()[..]));
        // Unsigned columns keep their order: 2^32 - 2 is the smallest.
        let st = rg0.column(1).statistics().unwrap();
        assert_eq!(st.min_bytes_opt(), Some(&(u32::MAX - 1).to_le_bytes()[..]));
        // Row group 1 has nulls: counted.
        let st = md.row_group(1).column(0).statistics().unwrap();
        assert_eq!(st.null_count_opt(), Some(3000 / 7 + 1));
    }

    #[test]
    fn a_held_capture_keeps_small_tables_in_memory_and_large_ones_in_files() {
        use crate::readback::{has_table, read_table};
        let d = tempfile::tempdir().unwrap();
        let def = &trawl_capture::schema::CAPTURE_META;
        let rows = |dir: &Path| -> usize {
            read_table(dir, def)
                .unwrap()
                .iter()
                .map(RecordBatch::num_rows)
                .sum()
        };
        let mut cap = CaptureWriter::create_held(&d.path().join("c"), Some(d.path())).unwrap();
        let dir = cap.staging_dir().to_path_buf();
        let mut c = MetaCols::default();
        c.source_id.append_value(0);
        c.key.append_value("k");
        c.value.append_value("v");
        cap.write_table(&mut c).unwrap();
        assert!(!table_file(&dir, def.name).exists(), "held, not written");
        assert!(has_table(&dir, def));
        assert_eq!(rows(&dir), 1);
        // Replaced by a table too large to hold: a file, the held rows
        // forgotten.
        let big: Vec<RecordBatch> = (0..3).map(|_| meta_batch(1000, 500)).collect();
        replace_table(&dir, def, &big).unwrap();
        assert!(table_file(&dir, def.name).is_file());
        assert_eq!(rows(&dir), 3000);
        // And by a small one again: held, the file removed.
        replace_table(&dir, def, &[meta_batch(2, 1)]).unwrap();
        assert!(!table_file(&dir, def.name).exists());
        assert_eq!(rows(&dir), 2);
        // A replacement whose rows fail leaves the table as it was.
        let failed = replace_table_with(&dir, def, |w| {
            w.write(&meta_batch(7, 1))?;
            Err(Error::Io {
                path: def.name.into(),
                source: std::io::Error::other("rows failed"),
            })
        });
        assert!(failed.is_err());
        assert_eq!(rows(&dir), 2);
        // Taken instead of committed: readable until dropped, then gone.
        let held = cap.into_held().expect("held");
        assert_eq!(held.dir(), dir);
        assert_eq!(rows(&dir), 2);
        drop(held);
        assert!(!dir.exists() && held_at(&dir).is_none());
        assert!(!has_table(&dir, def));
        // A writer made otherwise holds nothing.
        let plain = CaptureWriter::create(&d.path().join("p")).unwrap();
        assert!(held_at(plain.staging_dir()).is_none());
        assert!(plain.into_held().is_none());
    }
}
