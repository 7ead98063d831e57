//! The tables enrichment writes (`symbol`, `symbol_file`, `instruction`,
//! `mem_symbol`, the flat `perf_sample_symbolized`) and what it reads of a
//! capture to write them (modules, frames, addresses, mappings). Ingest
//! writes only what it read; every table that names frames is written here.

use std::collections::BTreeSet;
use std::fs::File;
use std::path::Path;
use std::sync::Arc;

use arrow::array::StringDictionaryBuilder;
use arrow::array::{
    Array, ArrayRef, AsArray, BinaryBuilder, BooleanBuilder, DictionaryArray, Int32Array,
    Int32Builder, Int64Array, Int64Builder, RecordBatch, StringBuilder, TimestampNanosecondArray,
    UInt32Array, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{Int32Type, Int64Type, TimestampNanosecondType, UInt32Type, UInt64Type};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use trawl_ingest::columns::{self, Whole};
use trawl_ingest::readback::{col, read_columns, read_table};
use trawl_ingest::schema;
use trawl_ingest::table_columns;
use trawl_ingest::writer::{replace_table, replace_table_with, table_file, TableWriter};
use trawl_ingest::{Error, Result};

#[derive(Clone, Debug)]
pub struct ModuleRow {
    pub module_id: i64,
    pub path: String,
    pub build_id: Option<String>,
    pub is_kernel: bool,
    pub is_file: bool,
}

pub fn read_modules(dir: &Path) -> Result<Vec<ModuleRow>> {
    let mut out = Vec::new();
    let def = &schema::MODULE;
    for b in read_table(dir, def)? {
        let id = col(&b, def, "module_id")?.as_primitive::<Int64Type>();
        let path = col(&b, def, "path")?.as_string::<i32>();
        let bid = col(&b, def, "build_id")?.as_string::<i32>();
        let k = col(&b, def, "is_kernel")?.as_boolean();
        let f = col(&b, def, "is_file")?.as_boolean();
        for i in 0..b.num_rows() {
            out.push(ModuleRow {
                module_id: id.value(i),
                path: path.value(i).to_string(),
                build_id: (!bid.is_null(i)).then(|| bid.value(i).to_string()),
                is_kernel: k.value(i),
                is_file: f.value(i),
            });
        }
    }
    Ok(out)
}

/// The `capture_meta` pairs (source_id, key, value).
pub fn read_meta(dir: &Path) -> Result<Vec<(i32, String, String)>> {
    let mut out = Vec::new();
    let def = &schema::CAPTURE_META;
    for b in read_table(dir, def)? {
        let s = col(&b, def, "source_id")?.as_primitive::<arrow::datatypes::Int32Type>();
        let k = col(&b, def, "key")?.as_string::<i32>();
        let v = col(&b, def, "value")?.as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((s.value(i), k.value(i).to_string(), v.value(i).to_string()));
        }
    }
    Ok(out)
}

/// Calls `f(module_id, rel_pc, is_return)` for every frame with a module.
fn each_frame(dir: &Path, mut f: impl FnMut(i64, u64, bool)) -> Result<()> {
    let def = &schema::FRAME;
    for b in read_columns(dir, def, Some(&["module_id", "rel_pc", "is_return"]))? {
        let m = col(&b, def, "module_id")?.as_primitive::<Int64Type>();
        let pc = col(&b, def, "rel_pc")?.as_primitive::<UInt64Type>();
        let ret = col(&b, def, "is_return")?.as_boolean();
        for i in 0..b.num_rows() {
            if !m.is_null(i) {
                f(m.value(i), pc.value(i), ret.value(i));
            }
        }
    }
    Ok(())
}

/// Distinct (module_id, address to look up) of all frames with a module,
/// sorted: `rel_pc`, minus 1 for return addresses (as `symbol.rel_pc`
/// documents).
pub fn read_frame_addresses(dir: &Path) -> Result<Vec<(i64, u64)>> {
    let mut out = Vec::new();
    each_frame(dir, |m, pc, ret| {
        out.push((m, pc.saturating_sub(u64::from(ret))));
    })?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// Distinct (module_id, rel_pc) of the frames that are not return
/// addresses (where an instruction was sampled: sample leaves, branch
/// ends), sorted: the functions `instruction` decodes.
pub fn read_ip_addresses(dir: &Path) -> Result<Vec<(i64, u64)>> {
    let mut out = Vec::new();
    each_frame(dir, |m, pc, ret| {
        if !ret {
            out.push((m, pc));
        }
    })?;
    out.sort_unstable();
    out.dedup();
    Ok(out)
}

/// A frame of the `frame` table: where it is.
#[derive(Clone, Copy, Debug)]
pub struct FrameRow {
    pub frame_id: i64,
    pub module_id: Option<i64>,
    pub rel_pc: u64,
    pub is_return: bool,
}

/// The frames whose id `want` accepts.
pub fn read_frames(dir: &Path, want: impl Fn(i64) -> bool) -> Result<Vec<FrameRow>> {
    let def = &schema::FRAME;
    let mut out = Vec::new();
    for b in read_table(dir, def)? {
        let id = col(&b, def, "frame_id")?.as_primitive::<Int64Type>();
        let m = col(&b, def, "module_id")?.as_primitive::<Int64Type>();
        let pc = col(&b, def, "rel_pc")?.as_primitive::<UInt64Type>();
        let ret = col(&b, def, "is_return")?.as_boolean();
        for i in 0..b.num_rows() {
            if id.is_null(i) || !want(id.value(i)) {
                continue;
            }
            out.push(FrameRow {
                frame_id: id.value(i),
                module_id: (!m.is_null(i)).then(|| m.value(i)),
                rel_pc: pc.value(i),
                is_return: ret.value(i),
            });
        }
    }
    Ok(out)
}

/// (module_id, rel_pc) of the `symbol` rows that name `function` by its
/// ELF symbol (the real function, as `perf annotate` names it).
pub fn read_function_addresses(dir: &Path, function: &str) -> Result<Vec<(i64, u64)>> {
    let def = &schema::SYMBOL;
    if !table_file(dir, def.name).is_file() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for b in read_table(dir, def)? {
        let m = col(&b, def, "module_id")?.as_primitive::<Int64Type>();
        let pc = col(&b, def, "rel_pc")?.as_primitive::<UInt64Type>();
        let f = col(&b, def, "function")?.as_string::<i32>();
        let off = col(&b, def, "symbol_offset")?;
        for i in 0..b.num_rows() {
            if !f.is_null(i) && !off.is_null(i) && f.value(i) == function {
                out.push((m.value(i), pc.value(i)));
            }
        }
    }
    Ok(out)
}

/// The `instruction` table's batches, and the (module_id, function) pairs
/// it holds (empty without the table).
pub fn read_instructions(dir: &Path) -> Result<(Vec<RecordBatch>, BTreeSet<(i64, String)>)> {
    let def = &schema::INSTRUCTION;
    if !table_file(dir, def.name).is_file() {
        return Ok(Default::default());
    }
    let batches = read_table(dir, def)?;
    let mut held = BTreeSet::new();
    for b in &batches {
        let m = col(b, def, "module_id")?.as_primitive::<Int64Type>();
        let f = col(b, def, "function")?.as_string::<i32>();
        for i in 0..b.num_rows() {
            if !f.is_null(i) {
                held.insert((m.value(i), f.value(i).to_string()));
            }
        }
    }
    Ok((batches, held))
}

/// Where symbolization found each module's binary (`symbol_file`:
/// module_id, binary), for the modules it found.
pub fn read_symbol_binaries(dir: &Path) -> Result<Vec<(i64, String)>> {
    let def = &schema::SYMBOL_FILE;
    if !table_file(dir, def.name).is_file() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for b in read_table(dir, def)? {
        let m = col(&b, def, "module_id")?.as_primitive::<Int64Type>();
        let bin = col(&b, def, "binary")?.as_string::<i32>();
        for i in 0..b.num_rows() {
            if !bin.is_null(i) {
                out.push((m.value(i), bin.value(i).to_string()));
            }
        }
    }
    Ok(out)
}

/// A row of `instruction`.
#[derive(Clone, Debug)]
pub struct InstructionRow {
    pub module_id: i64,
    pub function: Arc<str>,
    pub function_rel_pc: u64,
    pub rel_pc: u64,
    pub address: u64,
    pub bytes: Vec<u8>,
    pub text: String,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub inline_function: Option<String>,
}

table_columns! {
    #[derive(Default)]
    struct InstructionCols for schema::INSTRUCTION {
        module_id: Int64Builder,
        function: StringBuilder,
        function_rel_pc: UInt64Builder,
        rel_pc: UInt64Builder,
        address: UInt64Builder,
        size: UInt32Builder,
        bytes: BinaryBuilder,
        text: StringBuilder,
        file: StringBuilder,
        line: UInt32Builder,
        inline_function: StringBuilder,
    }
}

/// Writes (replacing) the `instruction` table of a capture.
pub fn write_instructions(dir: &Path, rows: &[InstructionRow]) -> Result<()> {
    write_instructions_with(dir, |sink| sink.write(rows))?;
    Ok(())
}

/// Where [`write_instructions_with`] takes rows: each call's rows are
/// written out (in row groups) before the next, so only one chunk is held.
pub struct RowSink<'a> {
    w: &'a mut TableWriter,
}

impl RowSink<'_> {
    /// Writes rows read back from the table (kept when it is rewritten).
    pub fn write_batch(&mut self, b: &RecordBatch) -> Result<()> {
        self.w.write(b)
    }

    pub fn write(&mut self, rows: &[InstructionRow]) -> Result<()> {
        for chunk in rows.chunks(64 * 1024) {
            let mut c = InstructionCols::default();
            for r in chunk {
                c.module_id.append_value(r.module_id);
                c.function.append_value(&r.function);
                c.function_rel_pc.append_value(r.function_rel_pc);
                c.rel_pc.append_value(r.rel_pc);
                c.address.append_value(r.address);
                c.size.append_value(r.bytes.len() as u32);
                c.bytes.append_value(&r.bytes);
                c.text.append_value(&r.text);
                c.file.append_option(r.file.as_deref());
                c.line.append_option(r.line);
                c.inline_function
                    .append_option(r.inline_function.as_deref());
            }
            self.w.write_rows(&mut c)?;
        }
        Ok(())
    }
}

/// Writes (replaces) `instruction` from the rows `fill` hands its sink,
/// a chunk at a time. Returns the rows written.
pub fn write_instructions_with(
    dir: &Path,
    fill: impl FnOnce(&mut RowSink<'_>) -> Result<()>,
) -> Result<u64> {
    replace_table_with(dir, &schema::INSTRUCTION, |w| fill(&mut RowSink { w }))
}

#[derive(Clone, Debug)]
pub struct SymbolRow {
    pub module_id: i64,
    pub rel_pc: u64,
    pub inline_depth: i32,
    pub inlined: bool,
    pub function: Option<String>,
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
    pub symbol_offset: Option<u64>,
    pub symbol_source: Option<&'static str>,
    pub symbol_file: Option<String>,
}

#[derive(Clone, Debug)]
pub struct SymbolFileRow {
    pub module_id: i64,
    pub path: String,
    pub binary: Option<String>,
    pub symbols: Option<String>,
    pub debug_info: Option<String>,
    pub status: &'static str,
    pub message: Option<String>,
}

table_columns! {
    #[derive(Default)]
    struct SymbolCols for schema::SYMBOL {
        module_id: Int64Builder,
        rel_pc: UInt64Builder,
        inline_depth: Int32Builder,
        inlined: BooleanBuilder,
        function: StringBuilder,
        file: StringBuilder,
        line: UInt32Builder,
        column: UInt32Builder,
        symbol_offset: UInt64Builder,
        symbol_source: StringBuilder,
        symbol_file: StringBuilder,
    }
}

table_columns! {
    #[derive(Default)]
    struct SymbolFileCols for schema::SYMBOL_FILE {
        module_id: Int64Builder,
        path: StringBuilder,
        binary: StringBuilder,
        symbols: StringBuilder,
        debug_info: StringBuilder,
        status: StringBuilder,
        message: StringBuilder,
    }
}

/// Writes (replacing) the `symbol` and `symbol_file` tables of a capture.
pub fn write_symbols(dir: &Path, rows: &[SymbolRow], files: &[SymbolFileRow]) -> Result<()> {
    write_symbols_with(dir, |sink| sink.write(rows))?;
    write_symbol_files(dir, files)
}

/// Where [`write_symbols_with`] takes rows, a chunk at a time.
pub struct SymbolSink<'a> {
    w: &'a mut TableWriter,
}

impl SymbolSink<'_> {
    pub fn write(&mut self, rows: &[SymbolRow]) -> Result<()> {
        for chunk in rows.chunks(64 * 1024) {
            let mut c = SymbolCols::default();
            for r in chunk {
                c.module_id.append_value(r.module_id);
                c.rel_pc.append_value(r.rel_pc);
                c.inline_depth.append_value(r.inline_depth);
                c.inlined.append_value(r.inlined);
                c.function.append_option(r.function.as_deref());
                c.file.append_option(r.file.as_deref());
                c.line.append_option(r.line);
                c.column.append_option(r.column);
                c.symbol_offset.append_option(r.symbol_offset);
                c.symbol_source.append_option(r.symbol_source);
                c.symbol_file.append_option(r.symbol_file.as_deref());
            }
            self.w.write_rows(&mut c)?;
        }
        Ok(())
    }
}

/// Writes (replaces) `symbol` from the rows `fill` hands its sink, a
/// chunk at a time. Returns the rows written.
pub fn write_symbols_with(
    dir: &Path,
    fill: impl FnOnce(&mut SymbolSink<'_>) -> Result<()>,
) -> Result<u64> {
    replace_table_with(dir, &schema::SYMBOL, |w| fill(&mut SymbolSink { w }))
}

/// Writes (replaces) `symbol_file`.
pub fn write_symbol_files(dir: &Path, files: &[SymbolFileRow]) -> Result<()> {
    let mut c = SymbolFileCols::default();
    for r in files {
        c.module_id.append_value(r.module_id);
        c.path.append_value(&r.path);
        c.binary.append_option(r.binary.as_deref());
        c.symbols.append_option(r.symbols.as_deref());
        c.debug_info.append_option(r.debug_info.as_deref());
        c.status.append_value(r.status);
        c.message.append_option(r.message.as_deref());
    }
    replace_table(dir, &schema::SYMBOL_FILE, &[columns::batch(&mut c)?])?;
    Ok(())
}

/// A row of `mem_map`: (source_id, start, end, file offset, path).
pub type MemMapRow = (i32, u64, u64, u64, String);

/// The mappings of a capture's maps files (none when it has no `mem_map`).
pub fn read_mem_maps(dir: &Path) -> Result<Vec<MemMapRow>> {
    let def = &schema::MEM_MAP;
    if !table_file(dir, def.name).is_file() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for b in read_table(dir, def)? {
        let s = col(&b, def, "source_id")?.as_primitive::<arrow::datatypes::Int32Type>();
        let st = col(&b, def, "start_address")?.as_primitive::<UInt64Type>();
        let en = col(&b, def, "end_address")?.as_primitive::<UInt64Type>();
        let off = col(&b, def, "file_offset")?.as_primitive::<UInt64Type>();
        let path = col(&b, def, "path")?.as_string::<i32>();
        for i in 0..b.num_rows() {
            out.push((
                s.value(i),
                st.value(i),
                en.value(i),
                off.value(i),
                path.value(i).to_string(),
            ));
        }
    }
    Ok(out)
}

/// A row of `mem_symbol`.
#[derive(Clone, Debug)]
pub struct MemSymbolRow {
    pub source_id: i32,
    pub path: String,
    pub name: String,
    pub kind: &'static str,
    pub start: u64,
    pub end: u64,
    pub size: u64,
    pub section: Option<String>,
}

table_columns! {
    #[derive(Default)]
    struct MemSymbolCols for schema::MEM_SYMBOL {
        source_id: Int32Builder,
        path: StringBuilder,
        name: StringBuilder,
        kind: StringDictionaryBuilder<Int32Type>,
        start_address: UInt64Builder,
        end_address: UInt64Builder,
        size: Int64Builder,
        section: StringBuilder,
    }
}

/// Writes (replacing) the `mem_symbol` table of a capture.
pub fn write_mem_symbols(dir: &Path, rows: &[MemSymbolRow]) -> Result<()> {
    let mut c = MemSymbolCols::default();
    for r in rows {
        c.source_id.append_value(r.source_id);
        c.path.append_value(&r.path);
        c.name.append_value(&r.name);
        c.kind.append_value(r.kind);
        c.start_address.append_value(r.start);
        c.end_address.append_value(r.end);
        c.size.append_value(r.size as i64);
        c.section.append_option(r.section.as_deref());
    }
    replace_table(dir, &schema::MEM_SYMBOL, &[columns::batch(&mut c)?])?;
    Ok(())
}

table_columns! {
    /// `perf_sample_symbolized`: columns of `perf_sample` read back and
    /// the leaf's names, given whole.
    struct FlatCols for schema::PERF_SAMPLE_SYMBOLIZED {
        sample_id: Whole<Int64Array>,
        source_id: Whole<Int32Array>,
        time_ns: Whole<Int64Array>,
        time_utc: Whole<TimestampNanosecondArray>,
        pid: Whole<Int32Array>,
        tid: Whole<Int32Array>,
        comm: Whole<DictionaryArray<Int32Type>>,
        cpu: Whole<UInt32Array>,
        event: Whole<DictionaryArray<Int32Type>>,
        period: Whole<Int64Array>,
        cpu_mode: Whole<DictionaryArray<Int32Type>>,
        stack_id: Whole<Int64Array>,
        function: Whole<DictionaryArray<Int32Type>>,
        module: Whole<DictionaryArray<Int32Type>>,
        srcline: Whole<DictionaryArray<Int32Type>>,
        file: Whole<DictionaryArray<Int32Type>>,
        line: Whole<UInt32Array>,
    }
}

/// A frame that is the leaf of some stack, not named yet.
const WANTED: u32 = u32::MAX - 1;
/// Not a leaf frame (or no stack, in `LeafNames::stack_dense`).
const NONE: u32 = u32::MAX;

/// What a leaf frame is called in the flat table (perf's `sym`, `dso` and
/// `srcline` of the sample's ip, and the source position).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeafName<'a> {
    pub function: &'a str,
    pub module: &'a str,
    pub srcline: &'a str,
    pub file: Option<&'a str>,
    pub line: Option<u32>,
}

/// The leaves of a capture's stacks, for [`write_sample_symbolized`]: the
/// frame at depth 0 of every stack (read from the `stack` table), and the
/// names of those frames ([`LeafNames::set`]). Each distinct
/// name is held once and per leaf frame only codes, so a recording with
/// millions of distinct stacks costs a few bytes per stack and per leaf
/// frame rather than names per stack.
#[derive(Default)]
pub struct LeafNames {
    /// stack_id → its leaf's frame_id, while both are dense (they are
    /// numbered from 0 as first seen); `NONE`: no such stack.
    stack_dense: Vec<u32>,
    /// stack_id → frame_id for what `stack_dense` does not hold.
    stack_sparse: rustc_hash::FxHashMap<i64, i64>,
    /// frame_id → row of its names, `WANTED` or `NONE`.
    frame_dense: Vec<u32>,
    frame_sparse: rustc_hash::FxHashMap<i64, u32>,
    function: Names,
    module: Names,
    srcline: Names,
    file: Names,
    line: Vec<Option<u32>>,
}

/// Below this an id is an index into a vector; above, a key of a map (ids
/// from a hostile capture may be anything).
fn dense_index(id: i64, count: usize) -> Option<usize> {
    usize::try_from(id)
        .ok()
        .filter(|&i| i < 16 * count + (1 << 20) && i < NONE as usize - 1)
}

impl LeafNames {
    /// The leaf frame of every stack of the capture in `dir` (none without
    /// a `stack` table).
    pub fn read(dir: &Path) -> Result<LeafNames> {
        let mut s = LeafNames::default();
        let def = &schema::STACK;
        let path = table_file(dir, def.name);
        if !path.is_file() {
            return Ok(s);
        }
        let f = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let reader = ParquetRecordBatchReaderBuilder::try_new(f)
            .and_then(|b| {
                let mask = parquet::arrow::ProjectionMask::columns(
                    b.parquet_schema(),
                    ["stack_id", "depth", "frame_id"],
                );
                b.with_projection(mask).with_batch_size(256 * 1024).build()
            })
            .map_err(|source| Error::Parquet {
                path: path.clone(),
                source,
            })?;
        let (mut stacks, mut frames) = (0usize, 0usize);
        for b in reader {
            let b = b.map_err(|source| Error::Arrow {
                table: def.name.into(),
                source,
            })?;
            let stack = col(&b, def, "stack_id")?.as_primitive::<Int64Type>();
            let depth = col(&b, def, "depth")?.as_primitive::<Int32Type>();
            let frame = col(&b, def, "frame_id")?.as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                if depth.is_null(i) || depth.value(i) != 0 || stack.is_null(i) || frame.is_null(i) {
                    continue;
                }
                let (id, f) = (stack.value(i), frame.value(i));
                stacks += 1;
                let fd = dense_index(f, frames);
                match (dense_index(id, stacks), fd) {
                    (Some(i), Some(fi)) => {
                        if s.stack_dense.len() <= i {
                            s.stack_dense.resize(i + 1, NONE);
                        }
                        s.stack_dense[i] = fi as u32;
                    }
                    _ => {
                        s.stack_sparse.insert(id, f);
                    }
                }
                match fd {
                    Some(fi) => {
                        if s.frame_dense.len() <= fi {
                            s.frame_dense.resize(fi + 1, NONE);
                        }
                        if s.frame_dense[fi] == NONE {
                            s.frame_dense[fi] = WANTED;
                            frames += 1;
                        }
                    }
                    None => {
                        if s.frame_sparse.insert(f, WANTED).is_none() {
                            frames += 1;
                        }
                    }
                }
            }
        }
        Ok(s)
    }

    /// Is frame `id` the leaf of a stack, not named yet?
    pub fn wants(&self, id: i64) -> bool {
        let slot = match usize::try_from(id)
            .ok()
            .filter(|&f| f < self.frame_dense.len())
        {
            Some(f) => self.frame_dense[f],
            None => match self.frame_sparse.get(&id) {
                Some(&r) => r,
                None => return false,
            },
        };
        slot == WANTED
    }

    /// Names leaf frame `id` (frames that are no stack's leaf, or are
    /// named already, are skipped).
    pub fn set(&mut self, id: i64, name: &LeafName<'_>) {
        let row = self.line.len() as u32;
        let slot = match usize::try_from(id)
            .ok()
            .filter(|&f| f < self.frame_dense.len())
        {
            Some(f) => &mut self.frame_dense[f],
            None => match self.frame_sparse.get_mut(&id) {
                Some(r) => r,
                None => return,
            },
        };
        if *slot != WANTED {
            return;
        }
        *slot = row;
        self.function.push(Some(name.function));
        self.module.push(Some(name.module));
        self.srcline.push(Some(name.srcline));
        self.file.push(name.file);
        self.line.push(name.line);
    }

    /// The row of the names of the leaf of stack `id`.
    fn row_of_stack(&self, id: i64) -> Option<i32> {
        let f = match usize::try_from(id)
            .ok()
            .and_then(|i| self.stack_dense.get(i))
        {
            Some(&f) if f != NONE => f as i64,
            _ => *self.stack_sparse.get(&id)?,
        };
        let r = match usize::try_from(f)
            .ok()
            .and_then(|i| self.frame_dense.get(i))
        {
            Some(&r) => r,
            None => *self.frame_sparse.get(&f)?,
        };
        (r < WANTED).then_some(r as i32)
    }

    /// Leaf frames named so far.
    pub fn len(&self) -> usize {
        self.line.len()
    }

    pub fn is_empty(&self) -> bool {
        self.line.is_empty()
    }
}

/// Writes `perf_sample_symbolized` into `dir`: every sample of
/// `perf_sample` (read in file order, which is time order) with the names
/// of its stack's leaf frame from `leaves`. Samples without a stack, or
/// whose leaf `leaves` did not name, get nulls. Returns the rows written;
/// nothing is written when the capture has no `perf_sample` table.
pub fn write_sample_symbolized(dir: &Path, leaves: &mut LeafNames) -> Result<u64> {
    use arrow::compute::{cast, take};
    let def = &schema::PERF_SAMPLE_SYMBOLIZED;
    let samples = table_file(dir, schema::PERF_SAMPLE.name);
    if !samples.is_file() {
        return Ok(0);
    }
    let arrow_err = |source| Error::Arrow {
        table: def.name.into(),
        source,
    };
    let lines = UInt32Array::from(std::mem::take(&mut leaves.line));
    let mut function = std::mem::take(&mut leaves.function);
    let mut module = std::mem::take(&mut leaves.module);
    let mut srcline = std::mem::take(&mut leaves.srcline);
    let mut file = std::mem::take(&mut leaves.file);
    let leaf_of = |stack: i64| leaves.row_of_stack(stack);

    let f = File::open(&samples).map_err(|e| Error::io(&samples, e))?;
    // Only the columns the flat table copies (perf_sample has 28), 64 K
    // rows at a time (256 K held ~90 MB more on the 8 GB recording).
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .and_then(|b| {
            let wanted = def.columns.iter().map(|c| c.name);
            let mask = parquet::arrow::ProjectionMask::columns(b.parquet_schema(), wanted);
            b.with_projection(mask).with_batch_size(64 * 1024).build()
        })
        .map_err(|source| Error::Parquet {
            path: samples.clone(),
            source,
        })?;
    replace_table_with(dir, def, |w| {
        for b in reader {
            let b = b.map_err(arrow_err)?;
            let n = b.num_rows();
            // A column of perf_sample as the flat table types it (null
            // in files written before it existed).
            let col = |name: &str| -> Result<ArrayRef> {
                let ty = def.columns[def.column_index(name).expect("column")]
                    .ty
                    .data_type();
                match b.column_by_name(name) {
                    Some(c) => cast(c, &ty).map_err(arrow_err),
                    None => Ok(arrow::array::new_null_array(&ty, n)),
                }
            };
            let i64s = |name: &str| col(name).map(|a| a.as_primitive::<Int64Type>().clone());
            let i32s = |name: &str| col(name).map(|a| a.as_primitive::<Int32Type>().clone());
            let dict = |name: &str| col(name).map(|a| a.as_dictionary::<Int32Type>().clone());
            let stack = i64s("stack_id")?;
            let keys: Int32Array = stack.iter().map(|id| id.and_then(leaf_of)).collect();
            let named = |names: &mut Names| names.batch(&keys).map_err(arrow_err);
            let mut cols = FlatCols {
                sample_id: i64s("sample_id")?.into(),
                source_id: i32s("source_id")?.into(),
                time_ns: i64s("time_ns")?.into(),
                time_utc: col("time_utc")?
                    .as_primitive::<TimestampNanosecondType>()
                    .clone()
                    .into(),
                pid: i32s("pid")?.into(),
                tid: i32s("tid")?.into(),
                comm: dict("comm")?.into(),
                cpu: col("cpu")?.as_primitive::<UInt32Type>().clone().into(),
                event: dict("event")?.into(),
                period: i64s("period")?.into(),
                cpu_mode: dict("cpu_mode")?.into(),
                stack_id: stack.clone().into(),
                function: named(&mut function)?.into(),
                module: named(&mut module)?.into(),
                srcline: named(&mut srcline)?.into(),
                file: named(&mut file)?.into(),
                line: take(&lines, &keys, None)
                    .map_err(arrow_err)?
                    .as_primitive::<UInt32Type>()
                    .clone()
                    .into(),
            };
            w.write(&columns::batch(&mut cols)?)?;
        }
        Ok(())
    })
}

/// One name column of the leaf frames, for the flat table: each distinct
/// name once, and per leaf its name's code. A batch gets a dictionary of
/// the names its samples use only: parquet's Arrow writer goes through a
/// dictionary's values for every batch, and a capture has millions of
/// leaves (2.1 M stacks for 22.6 M samples in bench/perf_ingest.sh's
/// recording: 48 s with the leaves as every batch's dictionary).
///
/// The distinct names are held back to back in one string, found again
/// through a table of 4-byte indices: ~13 bytes per name beyond its text
/// (an `Arc<str>` per name in a map took ~70; the 8 GB recording of
/// bench/large.sh has 840 K leaf frames, most with a srcline of their own).
#[derive(Default)]
struct Names {
    /// Distinct names, back to back.
    text: String,
    /// Per distinct name: where it ends in `text` (it starts where the
    /// previous one ends).
    ends: Vec<usize>,
    /// Indices of distinct names, hashed by their text.
    table: hashbrown::HashTable<u32>,
    /// Per leaf: its name's index; `u32::MAX` for null.
    code: Vec<u32>,
    /// Per name: its key in the batch being built (`u32::MAX`: not yet).
    local: Vec<u32>,
}

impl Names {
    /// Distinct name `i`.
    fn value(&self, i: u32) -> &str {
        let i = i as usize;
        let start = if i == 0 { 0 } else { self.ends[i - 1] };
        &self.text[start..self.ends[i]]
    }

    fn hash(v: &str) -> u64 {
        use std::hash::BuildHasher;
        rustc_hash::FxBuildHasher.hash_one(v)
    }

    /// Adds the name of the next leaf.
    fn push(&mut self, v: Option<&str>) {
        let c = match v {
            None => u32::MAX,
            Some(v) => {
                let h = Self::hash(v);
                match self.table.find(h, |&c| self.value(c) == v) {
                    Some(&c) => c,
                    None => {
                        let c = self.ends.len() as u32;
                        self.text.push_str(v);
                        self.ends.push(self.text.len());
                        let (text, ends) = (&self.text, &self.ends);
                        self.table.insert_unique(h, c, |&c| {
                            let i = c as usize;
                            let start = if i == 0 { 0 } else { ends[i - 1] };
                            Self::hash(&text[start..ends[i]])
                        });
                        self.local.push(u32::MAX);
                        c
                    }
                }
            }
        };
        self.code.push(c);
    }

    /// The names of a batch's samples (`leaf`: each sample's leaf row, or
    /// null), as a dictionary of the names it uses.
    fn batch(
        &mut self,
        leaf: &Int32Array,
    ) -> std::result::Result<DictionaryArray<Int32Type>, arrow::error::ArrowError> {
        let mut used: Vec<u32> = Vec::new();
        let keys: Int32Array = leaf
            .iter()
            .map(|l| {
                let c = *self.code.get(l? as usize)?;
                if c == u32::MAX {
                    return None;
                }
                let k = &mut self.local[c as usize];
                if *k == u32::MAX {
                    *k = used.len() as u32;
                    used.push(c);
                }
                Some(*k as i32)
            })
            .collect();
        let values =
            arrow::array::StringArray::from_iter_values(used.iter().map(|&c| self.value(c)));
        for &c in &used {
            self.local[c as usize] = u32::MAX;
        }
        DictionaryArray::try_new(keys, Arc::new(values))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Names frames (frame_id, function) as the leaf naming would.
    fn add(l: &mut LeafNames, rows: &[(i64, &str)]) {
        for &(id, f) in rows {
            l.set(
                id,
                &LeafName {
                    function: f,
                    module: "/bin/x",
                    srcline: f,
                    file: Some("x.c"),
                    line: Some(7),
                },
            );
        }
    }

    #[test]
    fn leaf_frames_are_named_once() {
        let mut l = LeafNames::default();
        // Stacks 0, 1, 2 with leaves 3, 600000, 3; frame 5 is no leaf.
        l.frame_dense = vec![NONE; 600_001];
        l.frame_dense[3] = WANTED;
        l.frame_dense[600_000] = WANTED;
        l.stack_dense = vec![3, 600_000, 3];
        assert!(l.wants(3) && l.wants(600_000) && !l.wants(5));
        add(&mut l, &[(3, "f"), (5, "g"), (3, "again")]);
        add(&mut l, &[(600_000, "h")]);
        assert!(!l.wants(3));
        assert_eq!(l.len(), 2, "frame 5 is no leaf, frame 3 is named once");
        assert_eq!(l.row_of_stack(0), Some(0));
        assert_eq!(l.row_of_stack(1), Some(1));
        assert_eq!(l.row_of_stack(2), Some(0));
        assert_eq!(l.row_of_stack(3), None, "no such stack");
        assert_eq!(l.function.value(l.function.code[0]), "f");
        assert_eq!(l.function.value(l.function.code[1]), "h");
        assert_eq!(l.srcline.value(l.srcline.code[1]), "h");
    }

    #[test]
    fn names_are_held_once_and_given_back_by_code() {
        let mut n = Names::default();
        let words: Vec<String> = (0..20_000).map(|i| format!("f{}", i % 7_000)).collect();
        for (i, w) in words.iter().enumerate() {
            n.push((i % 11 != 0).then_some(w.as_str()));
        }
        n.push(Some(""));
        assert_eq!(
            n.ends.len(),
            7_001,
            "7,000 distinct words and the empty name"
        );
        for (i, w) in words.iter().enumerate() {
            match i % 11 {
                0 => assert_eq!(n.code[i], u32::MAX),
                _ => assert_eq!(n.value(n.code[i]), w),
            }
        }
        assert_eq!(n.value(n.code[20_000]), "");
    }

    #[test]
    fn hostile_frame_ids_are_one_range_and_a_map() {
        let mut l = LeafNames::default();
        // Ids a capture could claim: far apart, negative, near i64::MAX.
        let ids: Vec<i64> = (0..100)
            .map(|i| i << 40)
            .chain([-5, i64::MAX - 1])
            .collect();
        for (s, &f) in ids.iter().enumerate() {
            l.frame_sparse.insert(f, WANTED);
            l.stack_sparse.insert(s as i64 + (1 << 50), f);
        }
        add(&mut l, &[(i64::MAX - 1, "top"), (-5, "neg"), (7, "none")]);
        assert_eq!(l.len(), 2);
        assert_eq!(l.row_of_stack(101 + (1 << 50)), Some(0));
        assert_eq!(l.row_of_stack(100 + (1 << 50)), Some(1));
        assert_eq!(l.row_of_stack(1 << 50), None, "leaf 0 was not named");
    }
}
