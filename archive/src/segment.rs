//! Segments: the captures of an archive stored together, one Parquet file
//! per table (`ARCHIVE/segment=NAME/<table>.parquet`), so that what a
//! question costs grows with the rows it reads, not with the captures.
//!
//! A capture's tables are written whole by the ingest pipeline into a
//! staging directory, as any capture is; [`Segment::add`] then appends
//! them to the segment:
//!
//! - Tables of a capture's rows (`perf_sample`, `syscall`, ...) get a
//!   leading `capture` column (the capture's name), rows clustered by
//!   capture: a capture's rows of a table are one range of its file, whose
//!   first row and length the manifest records (`capture_file.first_row`,
//!   `rows`), so reading one capture reads that range.
//! - The id tables (`schema::SHARED`: modules, frames, stacks and what
//!   symbolization learnt of them) are one dictionary for the segment, as
//!   Grafana Pyroscope keeps one symbol database per block: a module,
//!   frame or stack several captures hold is stored once, and their ids
//!   (`module_id`, `frame_id`, `stack_id`) are renumbered into the
//!   segment's, in every table that names them.
//!
//! Two captures' modules become one only when nothing a capture would
//! read of it changes: the same path, build-id, kind and symbol files
//! (`symbol_file`'s row), and, at every address both symbolized, the same
//! inline chain of names and lines (a rebuilt binary at the same path
//! without a build-id, or a kernel at another KASLR offset, differs at the
//! addresses both hold and stays apart). Frames are equal when their
//! module, address, context and return-address flag are; stacks when their
//! frames are, in order. A frame's `example_pid` and `example_ip` are those
//! of the first capture that held it.
//!
//! Nothing is written for a table no capture of the segment has rows in.
//! The segment is built in a staging directory and renamed into place
//! whole by [`Segment::finish`].

use std::collections::HashMap;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use arrow::array::{Array, ArrayRef, AsArray, Int64Array, RecordBatch, StringArray, UInt32Array};
use arrow::datatypes::{DataType, Field, Int32Type, Int64Type, Schema, SchemaRef, UInt64Type};
use parquet::arrow::arrow_reader::{ParquetRecordBatchReaderBuilder, RowSelection, RowSelector};
use parquet::arrow::ArrowWriter;
use trawl_capture::schema::{self, TableDef};
use trawl_ingest::readback::read_table;

use crate::{Error, Result};

/// The directory of segment `name` in `archive`.
pub fn segment_dir(archive: &Path, name: &str) -> PathBuf {
    archive.join(format!("segment={name}"))
}

/// Where one capture's rows of one table are in its segment's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Range {
    pub table: &'static str,
    pub first_row: i64,
    pub rows: i64,
    /// Smallest and largest `time_ns` of the rows (tables with times).
    pub time_ns: Option<(i64, i64)>,
}

/// One table file of a segment, as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFile {
    pub table: &'static str,
    pub size_bytes: i64,
    pub rows: i64,
}

/// The tables whose ids are renumbered, and which columns.
const STACK_REFS: &[(&str, &[&str])] = &[
    ("perf_sample", &["stack_id"]),
    ("perf_branch", &["stack_id"]),
    ("syscall", &["stack_id"]),
    ("strace_event", &["stack_id"]),
    ("perf_sample_symbolized", &["stack_id"]),
];
const FRAME_REFS: &[(&str, &[&str])] = &[("perf_branch", &["from_frame_id", "to_frame_id"])];
const MODULE_REFS: &[(&str, &[&str])] = &[("perf_mapping", &["module_id"])];

/// Ids of one capture to the segment's: dense while ids are small
/// (trawl numbers from 0), else hashed.
#[derive(Default)]
struct IdMap {
    dense: Vec<i64>,
    sparse: HashMap<i64, i64>,
}

impl IdMap {
    const NONE: i64 = i64::MIN;

    fn insert(&mut self, from: i64, to: i64) {
        match usize::try_from(from) {
            Ok(i) if i <= 2 * self.dense.len() + 4096 => {
                if self.dense.len() <= i {
                    self.dense.resize(i + 1, Self::NONE);
                }
                self.dense[i] = to;
            }
            _ => {
                self.sparse.insert(from, to);
            }
        }
    }

    fn get(&self, from: i64) -> Option<i64> {
        let d = usize::try_from(from)
            .ok()
            .and_then(|i| self.dense.get(i).copied())
            .filter(|&v| v != Self::NONE);
        d.or_else(|| self.sparse.get(&from).copied())
    }
}

/// A module of the segment: its rows' hashes by address (the inline chain
/// symbolization gave each address).
struct SegModule {
    chains: HashMap<u64, u64>,
}

/// One table's file being written.
struct Out {
    writer: ArrowWriter<File>,
    path: PathBuf,
    rows: i64,
}

/// A segment being built.
pub(crate) struct Segment {
    pub(crate) name: String,
    staging: PathBuf,
    outs: HashMap<&'static str, Out>,
    /// Module identity (path, build-id, kind, symbol files) → the segment
    /// modules with it.
    module_keys: HashMap<[u8; 16], Vec<i64>>,
    modules: Vec<SegModule>,
    frames: HashMap<(i64, u64, String, bool), i64>,
    stacks: HashMap<[u8; 16], i64>,
    instructions: std::collections::HashSet<(i64, u64, u64)>,
    pub(crate) captures: Vec<(String, Vec<Range>)>,
    /// Rows appended to the per-capture tables so far.
    capture_rows: i64,
}

/// A segment is committed once its captures' tables hold this many rows
/// (a few seconds of reading for a report over it; one capture's rows of
/// it read in a fraction of a second)...
pub const SEGMENT_ROWS: i64 = 8 << 20;
/// ... or it holds this many captures.
pub const SEGMENT_CAPTURES: usize = 20_000;

fn arrow_err(table: &str, e: impl std::fmt::Display) -> Error {
    Error::Other(format!("segment: {table}: {e}"))
}

impl Segment {
    /// A new segment `name`, built in `staging` (a directory of its own,
    /// created here; the caller renames it into the archive).
    pub(crate) fn new(name: String, staging: PathBuf) -> Result<Segment> {
        let _ = std::fs::remove_dir_all(&staging);
        std::fs::create_dir_all(&staging).map_err(|e| Error::io(&staging, e))?;
        Ok(Segment {
            name,
            staging,
            outs: HashMap::new(),
            module_keys: HashMap::new(),
            modules: Vec::new(),
            frames: HashMap::new(),
            stacks: HashMap::new(),
            instructions: Default::default(),
            captures: Vec::new(),
            capture_rows: 0,
        })
    }

    /// Whether no capture was added.
    pub(crate) fn is_empty(&self) -> bool {
        self.captures.is_empty()
    }

    /// Rows of its captures' tables so far.
    pub(crate) fn capture_rows(&self) -> i64 {
        self.capture_rows
    }

    /// Whether the segment holds enough: rows of its captures' tables
    /// ([`SEGMENT_ROWS`]) or captures ([`SEGMENT_CAPTURES`]).
    pub(crate) fn is_full(&self) -> bool {
        self.capture_rows >= SEGMENT_ROWS || self.captures.len() >= SEGMENT_CAPTURES
    }

    /// Appends `batch` (in `schema`) to the segment's file of `def`.
    fn write(
        &mut self,
        def: &'static TableDef,
        schema: &SchemaRef,
        batch: &RecordBatch,
    ) -> Result<()> {
        if batch.num_rows() == 0 {
            return Ok(());
        }
        if !self.outs.contains_key(def.name) {
            let path = self.staging.join(format!("{}.parquet", def.name));
            let f = File::create(&path).map_err(|e| Error::io(&path, e))?;
            let props = trawl_ingest::writer::table_writer_properties(def);
            let writer = ArrowWriter::try_new(f, schema.clone(), Some(props))
                .map_err(|e| arrow_err(def.name, e))?;
            self.outs.insert(
                def.name,
                Out {
                    writer,
                    path,
                    rows: 0,
                },
            );
        }
        let out = self.outs.get_mut(def.name).expect("inserted");
        out.writer
            .write(batch)
            .map_err(|e| arrow_err(def.name, e))?;
        out.rows += batch.num_rows() as i64;
        Ok(())
    }

    fn rows_of(&self, table: &str) -> i64 {
        self.outs.get(table).map_or(0, |o| o.rows)
    }

    /// Appends the capture `name` whose tables are in `dir` (a capture
    /// directory, or a held one: see `trawl_ingest::writer::HeldCapture`;
    /// left as it is).
    pub(crate) fn add(&mut self, name: &str, dir: &Path) -> Result<()> {
        let read = |def: &'static TableDef| read_if_there(dir, def);
        let (module_map, frame_map, mut stack_map) = self.add_dictionary(dir)?;

        let mut ranges = Vec::new();
        for def in schema::TABLES.iter().copied().filter(|d| !d.is_shared()) {
            let batches = read(def)?;
            let first_row = self.rows_of(def.name);
            let mut rows = 0i64;
            let mut time: Option<(i64, i64)> = None;
            let out_schema = capture_schema(def);
            for b in batches {
                if b.num_rows() == 0 {
                    continue;
                }
                let b = self.remap(def, b, &module_map, &frame_map, &mut stack_map)?;
                if let Some(t) = b.column_by_name("time_ns") {
                    if let (Some(lo), Some(hi)) = (
                        arrow::compute::min(t.as_primitive::<Int64Type>()),
                        arrow::compute::max(t.as_primitive::<Int64Type>()),
                    ) {
                        time = Some(time.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
                    }
                }
                let n = b.num_rows();
                let mut cols: Vec<ArrayRef> = Vec::with_capacity(b.num_columns() + 1);
                cols.push(Arc::new(StringArray::from_iter_values(
                    std::iter::repeat_n(name, n),
                )));
                cols.extend(b.columns().iter().cloned());
                let out = RecordBatch::try_new(out_schema.clone(), cols)
                    .map_err(|e| arrow_err(def.name, e))?;
                self.write(def, &out_schema, &out)?;
                rows += n as i64;
            }
            self.capture_rows += rows;
            if rows > 0 {
                ranges.push(Range {
                    table: def.name,
                    first_row,
                    rows,
                    time_ns: time,
                });
            }
        }
        self.captures.push((name.to_string(), ranges));
        Ok(())
    }

    /// Appends the captures `live` (name, and per table the first row and
    /// rows of its range) of the segment in `dir`: its modules, frames,
    /// stacks and symbols join this segment's once, then each capture's
    /// rows are copied with their ids renumbered. Rows of the segment's
    /// other captures (replaced or removed since) are left behind.
    pub(crate) fn add_segment(
        &mut self,
        dir: &Path,
        live: &[(String, HashMap<String, (i64, i64)>)],
    ) -> Result<()> {
        let (module_map, frame_map, mut stack_map) = self.add_dictionary(dir)?;
        let mut ranges: Vec<Vec<Range>> = vec![Vec::new(); live.len()];
        for def in schema::TABLES.iter().copied().filter(|d| !d.is_shared()) {
            let path = trawl_capture::layout::table_file(dir, def.name);
            if !path.is_file() {
                continue;
            }
            let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
            let builder = ParquetRecordBatchReaderBuilder::try_new(f)
                .map_err(|e| arrow_err(def.name, format!("{}: {e}", path.display())))?;
            let file_rows = builder.metadata().file_metadata().num_rows();
            // The live captures' ranges in file order (a range outside the
            // file, or overlapping the one before, is not read).
            let mut want: Vec<(usize, i64, i64)> = live
                .iter()
                .enumerate()
                .filter_map(|(k, (_, t))| {
                    let &(first, rows) = t.get(def.name)?;
                    (rows > 0 && first >= 0 && first + rows <= file_rows)
                        .then_some((k, first, rows))
                })
                .collect();
            want.sort_by_key(|w| w.1);
            let mut end = 0i64;
            want.retain(|w| {
                let ok = w.1 >= end;
                end = end.max(w.1 + w.2);
                ok
            });
            if want.is_empty() {
                continue;
            }
            // Only those rows are decoded, a batch at a time: memory holds
            // one batch, whatever the segment's size.
            let mut sel = Vec::new();
            let mut at = 0i64;
            for &(_, first, rows) in &want {
                if first > at {
                    sel.push(RowSelector::skip((first - at) as usize));
                }
                sel.push(RowSelector::select(rows as usize));
                at = first + rows;
            }
            let reader = builder
                .with_row_selection(RowSelection::from(sel))
                .with_batch_size(64 * 1024)
                .build()
                .map_err(|e| arrow_err(def.name, e))?;
            let out_schema = capture_schema(def);
            // The range being copied: its index in `want`, rows left, and
            // its Range so far.
            let mut cur = 0usize;
            let mut left = want[0].2;
            let mut range: Option<Range> = None;
            for batch in reader {
                let batch = batch.map_err(|e| arrow_err(def.name, e))?;
                let mut off = 0usize;
                while off < batch.num_rows() && cur < want.len() {
                    let take = (left as usize).min(batch.num_rows() - off);
                    let b = self.remap(
                        def,
                        batch.slice(off, take),
                        &module_map,
                        &frame_map,
                        &mut stack_map,
                    )?;
                    let time = b.column_by_name("time_ns").and_then(|t| {
                        let t = t.as_primitive::<Int64Type>();
                        arrow::compute::min(t).zip(arrow::compute::max(t))
                    });
                    let b = RecordBatch::try_new(out_schema.clone(), b.columns().to_vec())
                        .map_err(|e| arrow_err(def.name, e))?;
                    let r = range.get_or_insert(Range {
                        table: def.name,
                        first_row: self.rows_of(def.name),
                        rows: 0,
                        time_ns: None,
                    });
                    r.rows += take as i64;
                    if let Some((lo, hi)) = time {
                        r.time_ns =
                            Some(r.time_ns.map_or((lo, hi), |(a, z)| (a.min(lo), z.max(hi))));
                    }
                    self.write(def, &out_schema, &b)?;
                    self.capture_rows += take as i64;
                    off += take;
                    left -= take as i64;
                    if left == 0 {
                        ranges[want[cur].0].push(range.take().expect("written"));
                        cur += 1;
                        left = want.get(cur).map_or(0, |w| w.2);
                    }
                }
            }
            // A file shorter than its footer said: what was read is kept.
            if let Some(r) = range.take() {
                ranges[want[cur].0].push(r);
            }
        }
        for ((name, _), r) in live.iter().zip(ranges) {
            self.captures.push((name.clone(), r));
        }
        Ok(())
    }

    /// Adds the id tables of the capture or segment in `dir` (modules with
    /// their symbol files and symbols, frames, stacks, decoded code) to
    /// the segment's; returns its module, frame and stack ids as the
    /// segment's.
    fn add_dictionary(&mut self, dir: &Path) -> Result<(IdMap, IdMap, IdMap)> {
        let read = |def: &'static TableDef| read_if_there(dir, def);
        let modules = read(&schema::MODULE)?;
        let symbol_files = read(&schema::SYMBOL_FILE)?;
        let symbols = read(&schema::SYMBOL)?;
        let module_map = self.add_modules(&modules, &symbol_files, &symbols)?;
        let frames = read(&schema::FRAME)?;
        let frame_map = self.add_frames(&frames, &module_map)?;
        let stacks = read(&schema::STACK)?;
        let stack_map = self.add_stacks(&stacks, &frame_map)?;
        let instructions = read(&schema::INSTRUCTION)?;
        self.add_instructions(&instructions, &module_map)?;
        Ok((module_map, frame_map, stack_map))
    }

    /// The capture's modules as the segment's: each joins a segment module
    /// of the same identity whose symbols agree with its own wherever both
    /// symbolized an address, else becomes a new one. Writes the new
    /// modules, symbol files and symbol rows.
    fn add_modules(
        &mut self,
        modules: &[RecordBatch],
        symbol_files: &[RecordBatch],
        symbols: &[RecordBatch],
    ) -> Result<IdMap> {
        let def = &schema::MODULE;
        // symbol_file's row of each module, hashed (all but module_id).
        let mut sf_hash: HashMap<i64, (u64, usize, usize)> = HashMap::new();
        for (bi, b) in symbol_files.iter().enumerate() {
            let ids = b.column(0).as_primitive::<Int64Type>();
            let h = row_hashes(b, 1)?;
            for i in 0..b.num_rows() {
                sf_hash.insert(ids.value(i), (h[i], bi, i));
            }
        }
        // Each module's symbols: rel_pc → the hash of its chain, and the
        // rows.
        let mut chains: HashMap<i64, HashMap<u64, (u64, Vec<(usize, usize)>)>> = HashMap::new();
        for (bi, b) in symbols.iter().enumerate() {
            let ids = b.column(0).as_primitive::<Int64Type>();
            let pcs = b.column(1).as_primitive::<UInt64Type>();
            let h = row_hashes(b, 2)?;
            for i in 0..b.num_rows() {
                let e = chains
                    .entry(ids.value(i))
                    .or_default()
                    .entry(pcs.value(i))
                    .or_insert((0, Vec::new()));
                // Order-independent within a chain: levels are distinct rows.
                e.0 =
                    e.0.wrapping_add(h[i].wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ h[i]);
                e.1.push((bi, i));
            }
        }
        let mut map = IdMap::default();
        let mut new_modules: Vec<(usize, usize, i64)> = Vec::new();
        let mut new_sf: Vec<(usize, usize, i64)> = Vec::new();
        let mut new_symbols: Vec<(usize, usize, i64)> = Vec::new();
        for (bi, b) in modules.iter().enumerate() {
            let ids = b.column(0).as_primitive::<Int64Type>();
            let h = row_hashes(b, 1)?;
            for i in 0..b.num_rows() {
                let id = ids.value(i);
                let sf = sf_hash.get(&id);
                let mut key = blake3::Hasher::new();
                key.update(&h[i].to_le_bytes());
                key.update(&sf.map_or(0, |s| s.0).to_le_bytes());
                key.update(&[u8::from(sf.is_some())]);
                let key: [u8; 16] = key.finalize().as_bytes()[..16].try_into().expect("16");
                let mine = chains.remove(&id).unwrap_or_default();
                let cands: Vec<i64> = self.module_keys.get(&key).cloned().unwrap_or_default();
                let found = cands.iter().copied().find(|&m| {
                    let seg = &self.modules[m as usize].chains;
                    mine.iter()
                        .all(|(pc, (h, _))| seg.get(pc).is_none_or(|s| s == h))
                });
                let m = match found {
                    Some(m) => m,
                    None => {
                        let m = self.modules.len() as i64;
                        self.modules.push(SegModule {
                            chains: HashMap::new(),
                        });
                        self.module_keys.entry(key).or_default().push(m);
                        new_modules.push((bi, i, m));
                        if let Some(&(_, sb, si)) = sf {
                            new_sf.push((sb, si, m));
                        }
                        m
                    }
                };
                let seg = &mut self.modules[m as usize].chains;
                for (pc, (h, rows)) in mine {
                    if let std::collections::hash_map::Entry::Vacant(e) = seg.entry(pc) {
                        e.insert(h);
                        new_symbols.extend(rows.into_iter().map(|(b, r)| (b, r, m)));
                    }
                }
                map.insert(id, m);
            }
        }
        self.write_picked(def, modules, &new_modules, "module_id")?;
        self.write_picked(&schema::SYMBOL_FILE, symbol_files, &new_sf, "module_id")?;
        self.write_picked(&schema::SYMBOL, symbols, &new_symbols, "module_id")?;
        Ok(map)
    }

    /// Writes the rows `picked` (batch, row, new id) of `batches` with
    /// column `id_col` set to the new ids.
    fn write_picked(
        &mut self,
        def: &'static TableDef,
        batches: &[RecordBatch],
        picked: &[(usize, usize, i64)],
        id_col: &str,
    ) -> Result<()> {
        let schema = plain_schema(def);
        for (bi, b) in batches.iter().enumerate() {
            let rows: Vec<(u32, i64)> = picked
                .iter()
                .filter(|p| p.0 == bi)
                .map(|p| (p.1 as u32, p.2))
                .collect();
            if rows.is_empty() {
                continue;
            }
            let idx = UInt32Array::from_iter_values(rows.iter().map(|r| r.0));
            let ids = Int64Array::from_iter_values(rows.iter().map(|r| r.1));
            let k = b
                .schema()
                .index_of(id_col)
                .map_err(|e| arrow_err(def.name, e))?;
            let cols: Vec<ArrayRef> = b
                .columns()
                .iter()
                .enumerate()
                .map(|(j, c)| {
                    if j == k {
                        Ok(Arc::new(ids.clone()) as ArrayRef)
                    } else {
                        arrow::compute::take(c, &idx, None)
                    }
                })
                .collect::<std::result::Result<_, _>>()
                .map_err(|e| arrow_err(def.name, e))?;
            let out =
                RecordBatch::try_new(schema.clone(), cols).map_err(|e| arrow_err(def.name, e))?;
            self.write(def, &schema, &out)?;
        }
        Ok(())
    }

    /// The capture's frames as the segment's; writes the new ones.
    fn add_frames(&mut self, frames: &[RecordBatch], modules: &IdMap) -> Result<IdMap> {
        let def = &schema::FRAME;
        let schema = plain_schema(def);
        let mut map = IdMap::default();
        for b in frames {
            let id = b.column(0).as_primitive::<Int64Type>();
            let module = b.column(1).as_primitive::<Int64Type>();
            let pc = b.column(2).as_primitive::<UInt64Type>();
            let ctx = arrow::compute::cast(b.column(3), &DataType::Utf8)
                .map_err(|e| arrow_err(def.name, e))?;
            let ctx = ctx.as_string::<i32>();
            let ret = b.column(4).as_boolean();
            let mut keep: Vec<u32> = Vec::new();
            let mut new_ids: Vec<i64> = Vec::new();
            let mut new_modules: Vec<Option<i64>> = Vec::new();
            for i in 0..b.num_rows() {
                let m = (!module.is_null(i)).then(|| modules.get(module.value(i)).unwrap_or(-1));
                let key = (
                    m.unwrap_or(-2),
                    pc.value(i),
                    ctx.value(i).to_string(),
                    ret.value(i),
                );
                let n = self.frames.len() as i64;
                let f = *self.frames.entry(key).or_insert_with(|| {
                    keep.push(i as u32);
                    new_ids.push(n);
                    new_modules.push(m);
                    n
                });
                map.insert(id.value(i), f);
            }
            if keep.is_empty() {
                continue;
            }
            let idx = UInt32Array::from(keep);
            let mut cols: Vec<ArrayRef> = Vec::with_capacity(b.num_columns());
            cols.push(Arc::new(Int64Array::from(new_ids)));
            cols.push(Arc::new(Int64Array::from(new_modules)));
            for c in &b.columns()[2..] {
                cols.push(arrow::compute::take(c, &idx, None).map_err(|e| arrow_err(def.name, e))?);
            }
            let out =
                RecordBatch::try_new(schema.clone(), cols).map_err(|e| arrow_err(def.name, e))?;
            self.write(def, &schema, &out)?;
        }
        Ok(map)
    }

    /// The capture's stacks as the segment's; writes the new ones.
    fn add_stacks(&mut self, stacks: &[RecordBatch], frames: &IdMap) -> Result<IdMap> {
        let def = &schema::STACK;
        // (stack, depth, segment frame) of every row, put in order.
        let mut rows: Vec<(i64, i32, i64)> = Vec::new();
        for b in stacks {
            let id = b.column(0).as_primitive::<Int64Type>();
            let depth = b.column(1).as_primitive::<Int32Type>();
            let frame = b.column(2).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                let f = frames.get(frame.value(i)).unwrap_or(-1);
                rows.push((id.value(i), depth.value(i), f));
            }
        }
        rows.sort_unstable();
        let mut map = IdMap::default();
        let (mut out_id, mut out_depth, mut out_frame) = (Vec::new(), Vec::new(), Vec::new());
        let mut start = 0;
        while start < rows.len() {
            let sid = rows[start].0;
            let mut end = start + 1;
            while end < rows.len() && rows[end].0 == sid {
                end += 1;
            }
            let mut h = blake3::Hasher::new();
            for r in &rows[start..end] {
                h.update(&r.1.to_le_bytes());
                h.update(&r.2.to_le_bytes());
            }
            let key: [u8; 16] = h.finalize().as_bytes()[..16].try_into().expect("16");
            let n = self.stacks.len() as i64;
            let s = *self.stacks.entry(key).or_insert_with(|| {
                for r in &rows[start..end] {
                    out_id.push(n);
                    out_depth.push(r.1);
                    out_frame.push(r.2);
                }
                n
            });
            map.insert(sid, s);
            start = end;
        }
        if !out_id.is_empty() {
            let schema = plain_schema(def);
            let cols: Vec<ArrayRef> = vec![
                Arc::new(Int64Array::from(out_id)),
                Arc::new(arrow::array::Int32Array::from(out_depth)),
                Arc::new(Int64Array::from(out_frame)),
            ];
            let out =
                RecordBatch::try_new(schema.clone(), cols).map_err(|e| arrow_err(def.name, e))?;
            self.write(def, &schema, &out)?;
        }
        Ok(map)
    }

    /// The capture's decoded instructions the segment does not hold yet.
    fn add_instructions(&mut self, batches: &[RecordBatch], modules: &IdMap) -> Result<()> {
        let def = &schema::INSTRUCTION;
        let mut picked = Vec::new();
        for (bi, b) in batches.iter().enumerate() {
            let m = b.column(0).as_primitive::<Int64Type>();
            let start = b.column(2).as_primitive::<UInt64Type>();
            let pc = b.column(3).as_primitive::<UInt64Type>();
            for i in 0..b.num_rows() {
                let Some(sm) = modules.get(m.value(i)) else {
                    continue;
                };
                if self.instructions.insert((sm, start.value(i), pc.value(i))) {
                    picked.push((bi, i, sm));
                }
            }
        }
        self.write_picked(def, batches, &picked, "module_id")
    }

    /// `b` of table `def` with its ids made the segment's. A stack id the
    /// capture's `stack` does not hold (no frames) becomes the segment's
    /// id of the empty stack.
    fn remap(
        &mut self,
        def: &TableDef,
        b: RecordBatch,
        modules: &IdMap,
        frames: &IdMap,
        stacks: &mut IdMap,
    ) -> Result<RecordBatch> {
        let mut cols = b.columns().to_vec();
        let lists: [(&[(&str, &[&str])], u8); 3] =
            [(STACK_REFS, 0), (FRAME_REFS, 1), (MODULE_REFS, 2)];
        for (refs, kind) in lists {
            let Some((_, names)) = refs.iter().find(|(t, _)| *t == def.name) else {
                continue;
            };
            for name in names.iter() {
                let k = b
                    .schema()
                    .index_of(name)
                    .map_err(|e| arrow_err(def.name, e))?;
                let a = b.column(k).as_primitive::<Int64Type>();
                let mut out = arrow::array::Int64Builder::with_capacity(a.len());
                for i in 0..a.len() {
                    if a.is_null(i) {
                        out.append_null();
                        continue;
                    }
                    let v = a.value(i);
                    let m = match kind {
                        0 => match stacks.get(v) {
                            Some(s) => s,
                            None => {
                                let s = self.empty_stack();
                                stacks.insert(v, s);
                                s
                            }
                        },
                        1 => frames.get(v).unwrap_or(-1),
                        _ => modules.get(v).unwrap_or(-1),
                    };
                    out.append_value(m);
                }
                cols[k] = Arc::new(out.finish());
            }
        }
        RecordBatch::try_new(b.schema(), cols).map_err(|e| arrow_err(def.name, e))
    }

    /// The segment's id of the stack without frames.
    fn empty_stack(&mut self) -> i64 {
        let key: [u8; 16] = blake3::hash(b"").as_bytes()[..16].try_into().expect("16");
        let n = self.stacks.len() as i64;
        *self.stacks.entry(key).or_insert(n)
    }

    /// Closes the files (flushed to disk) and renames the segment into
    /// `archive`; returns its files.
    pub(crate) fn finish(self, archive: &Path) -> Result<Vec<SegmentFile>> {
        let mut files = Vec::new();
        for (table, out) in self.outs {
            let f = out.writer.into_inner().map_err(|e| arrow_err(table, e))?;
            f.sync_all().map_err(|e| Error::io(&out.path, e))?;
            let size = f.metadata().map_err(|e| Error::io(&out.path, e))?.len() as i64;
            files.push(SegmentFile {
                table,
                size_bytes: size,
                rows: out.rows,
            });
        }
        files.sort_by_key(|f| f.table);
        if let Ok(d) = File::open(&self.staging) {
            let _ = d.sync_all();
        }
        let dest = segment_dir(archive, &self.name);
        std::fs::rename(&self.staging, &dest).map_err(|e| Error::io(&dest, e))?;
        if let Ok(d) = File::open(archive) {
            let _ = d.sync_all();
        }
        Ok(files)
    }
}

/// The batches of table `def` in directory `dir` (none without its file).
fn read_if_there(dir: &Path, def: &'static TableDef) -> Result<Vec<RecordBatch>> {
    if !trawl_ingest::readback::has_table(dir, def) {
        return Ok(Vec::new());
    }
    Ok(read_table(dir, def)?)
}

/// The schema a segment's file of per-capture table `def` has: `capture`,
/// then the table's columns.
pub fn capture_schema(def: &TableDef) -> SchemaRef {
    let s = def.schema();
    let mut fields: Vec<Field> = vec![Field::new("capture", DataType::Utf8, false).with_metadata(
        HashMap::from([(
            "doc".to_string(),
            "Name of the capture the row belongs to (`capture.capture` of the archive's manifest)."
                .to_string(),
        )]),
    )];
    fields.extend(s.fields().iter().map(|f| f.as_ref().clone()));
    Arc::new(Schema::new(fields).with_metadata(segment_metadata(&s)))
}

/// The schema of a segment's file of shared table `def`.
fn plain_schema(def: &TableDef) -> SchemaRef {
    let s = def.schema();
    Arc::new(Schema::new(s.fields().clone()).with_metadata(segment_metadata(&s)))
}

fn segment_metadata(s: &Schema) -> HashMap<String, String> {
    let mut m = s.metadata().clone();
    m.insert("trawl.layout".into(), "segment".into());
    m
}

/// A hash of each row of `b` from column `from` on (equal rows, equal
/// hashes).
fn row_hashes(b: &RecordBatch, from: usize) -> Result<Vec<u64>> {
    let cols: Vec<ArrayRef> = b.columns()[from..]
        .iter()
        .map(|c| match c.data_type() {
            DataType::Dictionary(_, _) => arrow::compute::cast(c, &DataType::Utf8),
            _ => Ok(c.clone()),
        })
        .collect::<std::result::Result<_, _>>()
        .map_err(|e| arrow_err("hash", e))?;
    let fields: Vec<arrow::row::SortField> = cols
        .iter()
        .map(|c| arrow::row::SortField::new(c.data_type().clone()))
        .collect();
    let conv = arrow::row::RowConverter::new(fields).map_err(|e| arrow_err("hash", e))?;
    let rows = conv
        .convert_columns(&cols)
        .map_err(|e| arrow_err("hash", e))?;
    Ok((0..b.num_rows())
        .map(|i| {
            let h = blake3::hash(rows.row(i).as_ref());
            u64::from_le_bytes(h.as_bytes()[..8].try_into().expect("8"))
        })
        .collect())
}
