//! # trawl-enrich
//!
//! The stages that join the crates on a capture: symbolizing its frames
//! (the `module`/`frame` tables → `symbol` and `symbol_file`, through
//! trawl-symbolize) and its memory log's mapped objects (`mem_symbol`),
//! and the adapter that lets ingest unwind user stacks with
//! trawl-symbolize's DWARF unwinder. `ingest` never symbolizes and
//! `symbolize` knows nothing of captures: this crate is where the two meet
//! (the CLI runs it on the staging directory before a capture is
//! committed, and for `trawl symbolize`).

use std::collections::BTreeMap;
use std::path::Path;

use trawl_ingest::capture::{self, SymbolFileRow, SymbolRow};
use trawl_symbolize::{ModuleRequest, Status};

/// Errors of a stage: reading or writing the capture.
pub type Result<T> = std::result::Result<T, trawl_ingest::Error>;

pub struct Summary {
    pub modules: usize,
    pub addresses: usize,
    pub resolved: usize,
    pub failed: Vec<String>,
}

impl Summary {
    pub fn line(&self) -> String {
        let mut s = format!(
            "symbolized {} of {} addresses in {} modules",
            self.resolved, self.addresses, self.modules
        );
        for f in self.failed.iter().take(8) {
            s.push_str(&format!("\n  {f}"));
        }
        if self.failed.len() > 8 {
            s.push_str(&format!(
                "\n  ... {} more in the `symbol_file` table",
                self.failed.len() - 8
            ));
        }
        s
    }
}

pub fn symbolize_capture(dir: &Path, cfg: &trawl_symbolize::Config) -> Result<Summary> {
    let modules = capture::read_modules(dir)?;
    let addrs = capture::read_frame_addresses(dir)?;
    let mut by_module: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for (m, pc) in addrs {
        by_module.entry(m).or_default().push(pc);
    }
    let mut cfg = cfg.clone();
    if let Some(k) = modules
        .iter()
        .find(|m| m.is_kernel && m.path == "[kernel.kallsyms]")
    {
        cfg.kernel_build_id = k.build_id.clone();
    }
    cfg.kernel_release = capture::read_meta(dir)?
        .into_iter()
        .find(|(_, k, _)| k == "os_release")
        .map(|(_, _, v)| v);
    let mut reqs = Vec::new();
    let mut ids = Vec::new();
    let mut files = Vec::new();
    for m in &modules {
        let Some(a) = by_module.remove(&m.module_id) else {
            continue;
        };
        if !m.is_file && !m.is_kernel && !trawl_symbolize::is_perf_map_path(&m.path) {
            files.push(SymbolFileRow {
                module_id: m.module_id,
                path: m.path.clone(),
                binary: None,
                symbols: None,
                debug_info: None,
                status: Status::NotAFile.as_str(),
                message: None,
            });
            continue;
        }
        ids.push(m.module_id);
        reqs.push(ModuleRequest {
            path: m.path.clone(),
            build_id: m.build_id.clone(),
            kernel: m.is_kernel,
            addresses: a,
        });
    }
    let n_addr: usize = reqs.iter().map(|r| r.addresses.len()).sum();
    let mut resolved = 0;
    let mut failed = Vec::new();
    // A few modules at a time (as many as run in parallel), their rows
    // written before the next: memory holds their results only.
    let batch = rayon::current_num_threads().max(1);
    let mut work = ids
        .iter()
        .copied()
        .zip(reqs)
        .collect::<Vec<_>>()
        .into_iter()
        .peekable();
    capture::write_symbols_with(dir, |sink| {
        while work.peek().is_some() {
            let part: Vec<(i64, ModuleRequest)> = work.by_ref().take(batch).collect();
            let (part_ids, part_reqs): (Vec<i64>, Vec<ModuleRequest>) = part.into_iter().unzip();
            let results = trawl_symbolize::symbolize(&cfg, part_reqs.clone());
            let mut rows = Vec::new();
            for ((id, req), res) in part_ids.iter().zip(&part_reqs).zip(results) {
                if res.status != Status::Ok {
                    failed.push(format!(
                        "{}: {}{}",
                        req.path,
                        res.status.as_str(),
                        res.message
                            .as_deref()
                            .map(|m| format!(" ({m})"))
                            .unwrap_or_default()
                    ));
                }
                let file = res
                    .symbols_file
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned());
                let dwarf_file = res
                    .debug_info
                    .as_ref()
                    .map(|p| p.to_string_lossy().into_owned());
                for (pc, hit) in req.addresses.iter().zip(&res.symbols) {
                    if hit.symbol.is_some() || hit.inline.iter().any(|l| l.function.is_some()) {
                        resolved += 1;
                    }
                    push_rows(&mut rows, *id, *pc, hit, res.table, &file, &dwarf_file);
                }
                files.push(SymbolFileRow {
                    module_id: *id,
                    path: req.path.clone(),
                    binary: res
                        .binary
                        .as_ref()
                        .map(|p| p.to_string_lossy().into_owned()),
                    symbols: file,
                    debug_info: dwarf_file,
                    status: res.status.as_str(),
                    message: res.message.clone(),
                });
            }
            sink.write(&rows)?;
        }
        Ok(())
    })?;
    files.sort_by_key(|f| f.module_id);
    capture::write_symbol_files(dir, &files)?;
    decode_functions(dir, &cfg, &modules)?;
    Ok(Summary {
        modules: ids.len(),
        addresses: n_addr,
        resolved,
        failed,
    })
}

/// Writes `instruction`: the decoded code of every function in which an
/// instruction was sampled (a frame that is not a return address), each
/// instruction with its source line. Modules whose file is not found or
/// whose machine has no decoder are left out (their `symbol_file` row
/// already says why the file was not read).
fn decode_functions(
    dir: &Path,
    cfg: &trawl_symbolize::Config,
    modules: &[capture::ModuleRow],
) -> Result<usize> {
    let mut by_module: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for (m, pc) in capture::read_ip_addresses(dir)? {
        by_module.entry(m).or_default().push(pc);
    }
    let mut reqs = Vec::new();
    for m in modules {
        if m.is_kernel || !m.is_file || trawl_symbolize::is_perf_map_path(&m.path) {
            continue;
        }
        if let Some(a) = by_module.remove(&m.module_id) {
            reqs.push((
                m.module_id,
                ModuleRequest {
                    path: m.path.clone(),
                    build_id: m.build_id.clone(),
                    kernel: false,
                    addresses: a,
                },
            ));
        }
    }
    // Module by module, functions as they are decoded, in chunks, so that
    // memory holds one chunk's code, lines and rows (a system-wide
    // recording samples tens of thousands of functions in binaries such
    // as LLVM: 8.6 M instructions; a chunk of 1 M held ~640 MB). The lines
    // are looked up once each: not kept in a shared cache.
    const CHUNK: usize = 1 << 17;
    let mut line_cfg = cfg.clone();
    line_cfg.share_results = false;
    let mut n = 0usize;
    capture::write_instructions_with(dir, |sink| {
        for (id, r) in reqs {
            // Functions as they are decoded, a chunk at a time: the chunk's
            // lines looked up, its rows written.
            let mut chunk: Vec<trawl_symbolize::disasm::FunctionCode> = Vec::new();
            let mut count = 0usize;
            let mut failed: Result<()> = Ok(());
            let mut flush = |chunk: &mut Vec<trawl_symbolize::disasm::FunctionCode>| -> Result<()> {
                let req = ModuleRequest {
                    addresses: chunk
                        .iter()
                        .flat_map(|f| f.insns.iter().map(|i| i.offset))
                        .collect(),
                    ..r.clone()
                };
                let lines = trawl_symbolize::symbolize(&line_cfg, vec![req])
                    .pop()
                    .map(|l| l.symbols)
                    .unwrap_or_default();
                let mut rows = Vec::with_capacity(lines.len());
                let mut at = lines.into_iter();
                for f in chunk.drain(..) {
                    let name: std::sync::Arc<str> = f.name.into();
                    for i in f.insns {
                        let l = at.next().unwrap_or_default();
                        let inner = l.inline.first();
                        rows.push(capture::InstructionRow {
                            module_id: id,
                            function: name.clone(),
                            function_rel_pc: f.offset,
                            rel_pc: i.offset,
                            address: i.address,
                            bytes: i.bytes,
                            text: i.text,
                            file: inner.and_then(|l| l.file.clone()),
                            line: inner.and_then(|l| l.line),
                            inline_function: inner
                                .filter(|_| l.inline.len() > 1)
                                .and_then(|l| l.function.clone()),
                        });
                    }
                }
                n += rows.len();
                sink.write(&rows)
            };
            let code = trawl_symbolize::disasm::function_code_each(cfg, &r, |f| {
                if failed.is_err() {
                    return;
                }
                count += f.insns.len();
                chunk.push(f);
                if count >= CHUNK {
                    count = 0;
                    failed = flush(&mut chunk);
                }
            });
            failed?;
            if code.status == Status::Ok && !chunk.is_empty() {
                flush(&mut chunk)?;
            }
        }
        Ok(())
    })?;
    Ok(n)
}

/// The rows of one address: one per inline level, innermost first; the
/// outermost level carries the ELF symbol (perf's `sym`) when there is one.
fn push_rows(
    rows: &mut Vec<SymbolRow>,
    module_id: i64,
    rel_pc: u64,
    hit: &trawl_symbolize::Resolved,
    table: Option<&'static str>,
    symbol_file: &Option<String>,
    dwarf_file: &Option<String>,
) {
    let sym = hit.symbol.as_ref();
    if hit.inline.is_empty() {
        rows.push(SymbolRow {
            module_id,
            rel_pc,
            inline_depth: 0,
            inlined: false,
            function: sym.map(|h| h.name.clone()),
            file: None,
            line: None,
            column: None,
            symbol_offset: sym.map(|h| h.offset),
            symbol_source: table.filter(|_| sym.is_some()),
            symbol_file: symbol_file.clone().filter(|_| sym.is_some()),
        });
        return;
    }
    let outer = hit.inline.len() - 1;
    for (d, l) in hit.inline.iter().enumerate() {
        let elf = if d == outer { sym } else { None };
        let function = elf.map(|h| h.name.clone()).or_else(|| l.function.clone());
        let (source, file) = match (elf, &function) {
            (Some(_), _) => (table, symbol_file.clone()),
            (None, Some(_)) => (Some("dwarf"), dwarf_file.clone()),
            (None, None) => (None, None),
        };
        rows.push(SymbolRow {
            module_id,
            rel_pc,
            inline_depth: d as i32,
            inlined: d < outer,
            function,
            file: l.file.clone(),
            line: l.line,
            column: l.column,
            symbol_offset: elf.map(|h| h.offset),
            symbol_source: source,
            symbol_file: file,
        });
    }
}

/// Places the functions and data objects of the files named in a
/// capture's `mem_map` at their run-time addresses (`mem_symbol`). Returns
/// a summary line, or `None` without maps.
pub fn symbolize_memory(dir: &Path, cfg: &trawl_symbolize::Config) -> Result<Option<String>> {
    let maps = capture::read_mem_maps(dir)?;
    if maps.is_empty() {
        return Ok(None);
    }
    // (source, path) → the mappings of the file, in address order.
    let mut files: BTreeMap<(i32, String), Vec<(u64, u64)>> = BTreeMap::new();
    for (sid, start, _end, off, path) in &maps {
        if path.starts_with('/') {
            files
                .entry((*sid, path.clone()))
                .or_default()
                .push((*start, *off));
        }
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    let mut placed = 0;
    for ((sid, path), mut maps) in files {
        maps.sort();
        let obj = match trawl_symbolize::objsyms::object_symbols(cfg, &path) {
            Ok(o) => o,
            Err(e) => {
                failed.push(format!("{path}: {e}"));
                continue;
            }
        };
        let Some(bias) = maps.iter().find_map(|&(s, o)| obj.bias(s, o)) else {
            failed.push(format!("{path}: no mapping matches its load segments"));
            continue;
        };
        placed += 1;
        for s in &obj.syms {
            let start = s.vaddr.wrapping_add(bias);
            rows.push(capture::MemSymbolRow {
                source_id: sid,
                path: path.clone(),
                name: s.name.clone(),
                kind: s.kind,
                start,
                end: start.saturating_add(s.size.max(1)),
                size: s.size,
                section: s.section.clone(),
            });
        }
    }
    capture::write_mem_symbols(dir, &rows)?;
    let mut line = format!(
        "placed {} symbols of {placed} mapped files (mem_symbol)",
        rows.len()
    );
    for f in failed.iter().take(8) {
        line.push_str(&format!("\n  {f}"));
    }
    Ok(Some(line))
}

/// framehop-based unwinding (trawl-symbolize) behind ingest's seam.
pub struct Unwinder(pub trawl_symbolize::unwind::DwarfUnwinder);

impl trawl_ingest::unwind::StackUnwinder for Unwinder {
    fn unwind(
        &mut self,
        space: (i32, u64),
        maps: &mut dyn FnMut() -> Vec<trawl_ingest::unwind::UserMapping>,
        regs: trawl_ingest::unwind::UserRegs,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) {
        let mut maps = || {
            maps()
                .into_iter()
                .map(|m| trawl_symbolize::unwind::Mapping {
                    start: m.start,
                    end: m.end,
                    pgoff: m.pgoff,
                    path: m.path,
                    build_id: m.build_id,
                })
                .collect()
        };
        self.0.unwind(
            space,
            &mut maps,
            trawl_symbolize::unwind::Regs {
                ip: regs.ip,
                sp: regs.sp,
                bp: regs.bp,
            },
            stack,
            out,
        );
    }
}

impl Unwinder {
    /// The unwinder of `--call-graph dwarf` stacks, finding binaries with
    /// `cfg`, behind ingest's seam.
    pub fn boxed(cfg: trawl_symbolize::Config) -> Box<dyn trawl_ingest::unwind::StackUnwinder> {
        Box::new(Unwinder(trawl_symbolize::unwind::DwarfUnwinder::new(cfg)))
    }
}

/// What the enrichment stages did to a staged capture (`report`: one line
/// each) and the stages that failed (`problems`).
#[derive(Debug, Default)]
pub struct Enriched {
    pub report: Vec<String>,
    pub problems: Vec<String>,
}

/// Every enrichment stage on a staged capture, with `cfg` (one config for
/// many captures shares its results cache): symbols of frames, then of
/// the memory log's mappings. A stage that fails is a problem, not an
/// error: the capture is still worth committing.
pub fn enrich(staging: &Path, cfg: &trawl_symbolize::Config) -> Enriched {
    let mut e = Enriched::default();
    match symbolize_capture(staging, cfg) {
        Ok(s) => {
            e.report.push(s.line());
            if let Err(err) = name_samples(staging) {
                e.problems
                    .push(format!("writing perf_sample_symbolized failed: {err:#}"));
            }
        }
        Err(err) => e.problems.push(format!("symbolization failed: {err:#}")),
    }
    match symbolize_memory(staging, cfg) {
        Ok(Some(l)) => e.report.push(l),
        Ok(None) => {}
        Err(err) => e
            .problems
            .push(format!("placing mem_map symbols failed: {err:#}")),
    }
    e
}

/// Writes (or rewrites) the flat table `perf_sample_symbolized` of a
/// symbolized capture: each sample with its leaf's function, module and
/// source line, named by trawl-query's `frame_name_range.sql` on the
/// capture's own tables, a range of frames at a time (names are kept per
/// distinct leaf frame, not per stack). Returns the rows written (0
/// without perf samples).
pub fn name_samples(dir: &Path) -> Result<u64> {
    /// Frames named per query: 128 K frames read a quarter of a row group
    /// of `frame`, and the query's joins hold those frames only.
    const FRAME_RANGE: i64 = 1 << 17;
    if !trawl_ingest::writer::table_file(dir, "perf_sample").is_file() {
        return Ok(0);
    }
    let query_err = |e: trawl_query::Error| {
        trawl_ingest::Error::Usage(format!(
            "{}: naming the samples' leaves: {e}",
            dir.display()
        ))
    };
    // On a thread of its own: the caller may be inside an async runtime.
    let mut leaves = capture::LeafNames::read(dir)?;
    let ranges = leaves.frame_ranges(FRAME_RANGE);
    std::thread::scope(|s| {
        s.spawn(|| {
            let rt = tokio::runtime::Builder::new_multi_thread()
                .enable_all()
                .build()
                .map_err(|source| trawl_ingest::Error::Io {
                    path: dir.into(),
                    source,
                })?;
            rt.block_on(async {
                let session = trawl_query::Session::open(&[dir.to_path_buf()])
                    .await
                    .map_err(query_err)?;
                // One partition: no repartitioning buffers between the
                // joins (the ranges keep each query small already).
                session
                    .sql("SET datafusion.execution.target_partitions = 1")
                    .await
                    .map_err(query_err)?;
                for (from, to) in ranges {
                    trawl_query::analyses::frame_names(&session, from, to, |b| leaves.add(b))
                        .await
                        .map_err(query_err)??;
                }
                Ok(())
            })
        })
        .join()
        .unwrap_or_else(|_| {
            Err(trawl_ingest::Error::Usage(
                "naming the samples' leaves: the query panicked".into(),
            ))
        })
    })?;
    capture::write_sample_symbolized(dir, &mut leaves)
}
