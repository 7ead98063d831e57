//! The tables enrichment writes (`symbol`, `symbol_file`, `instruction`,
//! `mem_symbol`; the flat `perf_sample_symbolized` in `flat.rs`) and what it
//! reads of a capture to write them (modules, frames, addresses, mappings).
//! Ingest writes only what it read; every table that names frames is written
//! by enrichment.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use arrow::array::StringDictionaryBuilder;
use arrow::array::{
    Array, AsArray, BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, RecordBatch,
    StringBuilder, UInt32Builder, UInt64Builder,
};
use arrow::datatypes::{Int32Type, Int64Type, UInt64Type};
use trawl_ingest::columns;
use trawl_ingest::readback::{col, has_table, read_columns, read_table};
use trawl_ingest::schema;
use trawl_ingest::table_columns;
use trawl_ingest::writer::{replace_table, replace_table_with, TableWriter};
use trawl_ingest::Result;

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
    if !has_table(dir, def) {
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
    if !has_table(dir, def) {
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
    if !has_table(dir, def) {
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
    if !has_table(dir, def) {
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
