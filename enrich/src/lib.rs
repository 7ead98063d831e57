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

use crate::tables::{SymbolFileRow, SymbolRow};
use rustc_hash::FxHashMap;
use trawl_symbolize::{ModuleRequest, Status};

/// Errors of a stage: reading or writing the capture.
pub type Result<T> = std::result::Result<T, trawl_ingest::Error>;

pub mod flat;
pub mod instructions;
pub mod symbol_store;
pub mod tables;

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

/// Symbolizes the frames of the capture in `dir`: writes `symbol` and
/// `symbol_file`, and with `flat` the flat table `perf_sample_symbolized`
/// (each sample with its leaf's names, for readers without trawl; trawl's
/// sessions have it as a view) when the capture has perf samples.
pub fn symbolize_capture(dir: &Path, cfg: &trawl_symbolize::Config, flat: bool) -> Result<Summary> {
    let modules = tables::read_modules(dir)?;
    let addrs = tables::read_frame_addresses(dir)?;
    let flat = flat && trawl_ingest::readback::has_table(dir, &trawl_ingest::schema::PERF_SAMPLE);
    let mut leaves = if flat {
        flat::LeafNames::read(dir)?
    } else {
        flat::LeafNames::default()
    };
    let module_path: FxHashMap<i64, &str> = modules
        .iter()
        .map(|m| (m.module_id, m.path.as_str()))
        .collect();
    // The leaf frames, by the address their names are looked up at (a
    // return address inside its call), with their own address.
    let mut leaf_at: FxHashMap<(i64, u64), Vec<(i64, u64)>> = FxHashMap::default();
    let leaf_frames = if flat {
        tables::read_frames(dir, |id| leaves.wants(id))?
    } else {
        Vec::new()
    };
    for f in leaf_frames {
        match f.module_id {
            Some(m) => leaf_at
                .entry((m, lookup_pc(f.rel_pc, f.is_return)))
                .or_default()
                .push((f.frame_id, f.rel_pc)),
            None => name_leaf(&mut leaves, f.frame_id, f.rel_pc, "[unknown]", &[]),
        }
    }
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
    cfg.kernel_release = tables::read_meta(dir)?
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
    tables::write_symbols_with(dir, |sink| {
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
                    let at = rows.len();
                    push_rows(&mut rows, *id, *pc, hit, res.table, &file, &dwarf_file);
                    if let Some(frames) = leaf_at.remove(&(*id, *pc)) {
                        let path = module_path.get(id).copied().unwrap_or("[unknown]");
                        for (fid, rel_pc) in frames {
                            name_leaf(&mut leaves, fid, rel_pc, path, &rows[at..]);
                        }
                    }
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
    tables::write_symbol_files(dir, &files)?;
    // Leaves in modules nothing was looked up in (not files).
    for ((m, _), frames) in leaf_at {
        let path = module_path.get(&m).copied().unwrap_or("[unknown]");
        for (fid, rel_pc) in frames {
            name_leaf(&mut leaves, fid, rel_pc, path, &[]);
        }
    }
    if flat {
        flat::write_sample_symbolized(dir, &mut leaves)?;
    }
    Ok(Summary {
        modules: ids.len(),
        addresses: n_addr,
        resolved,
        failed,
    })
}

/// Writes `instruction`: the decoded code of every function in which an
/// instruction was sampled (a frame that is not a return address), each
/// instruction with its source line (`trawl symbolize --code`: a capture
/// that keeps the code of all its functions, for machines without the
/// binaries; `report annotate` decodes the one function it shows, see
/// [`instructions::ensure`]). Modules whose file is not found or whose machine
/// has no decoder are left out (their `symbol_file` row already says why
/// the file was not read).
pub fn decode_functions(dir: &Path, cfg: &trawl_symbolize::Config) -> Result<usize> {
    let modules = tables::read_modules(dir)?;
    let mut by_module: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for (m, pc) in tables::read_ip_addresses(dir)? {
        by_module.entry(m).or_default().push(pc);
    }
    let reqs = code_requests(&modules, by_module);
    instructions::write(dir, cfg, reqs, Vec::new(), &mut Vec::new())
}

/// The modules of `by_module`'s addresses that can be decoded.
fn code_requests(
    modules: &[tables::ModuleRow],
    mut by_module: BTreeMap<i64, Vec<u64>>,
) -> Vec<(i64, ModuleRequest)> {
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
    reqs
}

/// The address a frame's names are looked up at: a return address inside
/// its call (`symbol.rel_pc`).
fn lookup_pc(rel_pc: u64, is_return: bool) -> u64 {
    if is_return && rel_pc > 0 {
        rel_pc - 1
    } else {
        rel_pc
    }
}

/// Names leaf frame `id` (at `rel_pc` in the module at `module`) from the
/// `symbol` rows of its address, innermost level first, as the
/// `frame_name` view names a frame (query/analyses/perf/frame_name.sql:
/// the real function is the outermost level, the source line the
/// innermost one's, else `sym+offset`; an address nothing named is
/// `0x` and its 16 hex digits).
fn name_leaf(
    leaves: &mut flat::LeafNames,
    id: i64,
    rel_pc: u64,
    module: &str,
    levels: &[SymbolRow],
) {
    let placeholder = format!("0x{rel_pc:016x}");
    let base = |f: &str| f.rsplit('/').next().unwrap_or("").to_string();
    let level_srcline = |l: &SymbolRow| -> String {
        match (l.line, l.symbol_offset) {
            (Some(line), _) => format!("{}:{line}", base(l.file.as_deref().unwrap_or(""))),
            (None, Some(off)) => format!("{}+{off}", l.function.as_deref().unwrap_or("")),
            (None, None) => l.function.clone().unwrap_or_else(|| placeholder.clone()),
        }
    };
    let (Some(outer), Some(inner)) = (
        levels.iter().find(|l| !l.inlined),
        levels.iter().find(|l| l.inline_depth == 0),
    ) else {
        leaves.set(
            id,
            &flat::LeafName {
                function: &placeholder,
                module,
                srcline: &placeholder,
                file: None,
                line: None,
            },
        );
        return;
    };
    let srcline = if inner.line.is_some() {
        level_srcline(inner)
    } else {
        level_srcline(outer)
    };
    leaves.set(
        id,
        &flat::LeafName {
            function: outer.function.as_deref().unwrap_or(&placeholder),
            module,
            srcline: &srcline,
            file: inner.file.as_deref(),
            line: inner.line,
        },
    );
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
    let maps = tables::read_mem_maps(dir)?;
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
            rows.push(tables::MemSymbolRow {
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
    tables::write_mem_symbols(dir, &rows)?;
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

/// Learns the symbols of each module of a capture ahead, as ingest meets
/// the module's first frame ([`trawl_symbolize::prepare`], on a thread of
/// its own), so that symbolizing the capture after its last sample finds
/// them learnt: reading the samples and learning the modules overlap.
/// Dropped (ingest is done with the samples), it finishes the module
/// under way and leaves the rest to [`symbolize_capture`].
pub struct Prefetch {
    tx: Option<std::sync::mpsc::Sender<(ModuleRequest, Option<String>)>>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Prefetch {
    /// A prefetcher learning with `cfg` (clones share what they learn),
    /// behind ingest's seam.
    pub fn boxed(cfg: trawl_symbolize::Config) -> Box<dyn trawl_ingest::stacks::ModuleSink> {
        use std::sync::atomic::Ordering;
        // A capture begins: a memo serving several keeps the modules
        // costly to open (an archive's).
        cfg.memo().begin_capture();
        let (tx, rx) = std::sync::mpsc::channel::<(ModuleRequest, Option<String>)>();
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let stopped = stop.clone();
        let thread = std::thread::Builder::new()
            .name("trawl-prefetch".into())
            .spawn(move || {
                while let Ok((req, release)) = rx.recv() {
                    if stopped.load(Ordering::Relaxed) {
                        break;
                    }
                    // The kernel's as `symbolize_capture` configures it.
                    let kernel_cfg = req.kernel.then(|| {
                        let mut k = cfg.clone();
                        k.kernel_build_id = req.build_id.clone();
                        k.kernel_release = release;
                        k
                    });
                    trawl_symbolize::prepare(kernel_cfg.as_ref().unwrap_or(&cfg), &req);
                }
            })
            .ok();
        Box::new(Prefetch {
            tx: thread.is_some().then_some(tx),
            stop,
            thread,
        })
    }
}

impl trawl_ingest::stacks::ModuleSink for Prefetch {
    fn used(&mut self, m: &trawl_ingest::stacks::UsedModule<'_>) {
        // The modules `symbolize_capture` asks for (the kernel's symbols
        // are keyed by the kernel image's build-id).
        let wanted = if m.is_kernel {
            m.path == "[kernel.kallsyms]"
        } else {
            m.is_file
        };
        if let (true, Some(tx)) = (wanted, &self.tx) {
            let req = ModuleRequest {
                path: m.path.to_string(),
                build_id: m.build_id.map(str::to_string),
                kernel: m.is_kernel,
                addresses: Vec::new(),
            };
            let _ = tx.send((req, m.os_release.map(str::to_string)));
        }
    }
}

impl Drop for Prefetch {
    fn drop(&mut self) {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.tx = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What the enrichment stages did to a staged capture (`report`: one line
/// each), the stages that failed (`problems`), and what went wrong with
/// the symbol store (`warnings`: parts that did not read back and were
/// learnt again, parts that could not be written; also rows of the
/// capture's `diagnostic` table).
#[derive(Debug, Default)]
pub struct Enriched {
    pub report: Vec<String>,
    pub problems: Vec<String>,
    pub warnings: Vec<String>,
}

/// Every enrichment stage on a staged capture, with `cfg` (one config for
/// many captures shares what it learns): symbols of frames (with `flat`,
/// the flat table too), then of the memory log's mappings. A stage that
/// fails is a problem, not an error: the capture is still worth
/// committing.
pub fn enrich(staging: &Path, cfg: &trawl_symbolize::Config, flat: bool) -> Enriched {
    let mut e = Enriched::default();
    match symbolize_capture(staging, cfg, flat) {
        Ok(s) => e.report.push(s.line()),
        Err(err) => e.problems.push(format!("symbolization failed: {err:#}")),
    }
    match symbolize_memory(staging, cfg) {
        Ok(Some(l)) => e.report.push(l),
        Ok(None) => {}
        Err(err) => e
            .problems
            .push(format!("placing mem_map symbols failed: {err:#}")),
    }
    if let Some(store) = &cfg.store {
        let problems = store.take_problems();
        e.warnings.extend(problems.iter().map(|p| p.to_string()));
        let rows: Vec<trawl_ingest::Diagnostic> = problems
            .into_iter()
            .map(|p| trawl_ingest::Diagnostic {
                source: p.path,
                position: trawl_ingest::Position::None,
                severity: trawl_ingest::Severity::Warning,
                kind: p.kind,
                message: p.message,
            })
            .collect();
        if let Err(err) = trawl_ingest::readback::append_diagnostics(staging, &rows) {
            e.problems.push(format!(
                "recording the symbol store's problems failed: {err:#}"
            ));
        }
    }
    e
}

/// How a capture is enriched as it is ingested: the symbolizer's config
/// (also the unwinder's: what one learns of a binary the other finds in
/// memory), whether frames are named, the flat table written,
/// `--call-graph dwarf` stacks unwound.
pub struct Enrichment<'a> {
    pub cfg: &'a trawl_symbolize::Config,
    pub symbolize: bool,
    pub flat: bool,
    pub unwind: bool,
}

impl Enrichment<'_> {
    /// What ingest is lent while it reads the samples: the unwinder of
    /// `--call-graph dwarf` stacks when they are unwound, and the
    /// [`Prefetch`] of the modules' symbols when frames are named.
    pub fn seams(&self) -> trawl_ingest::Seams {
        trawl_ingest::Seams {
            unwinder: self.unwind.then(|| Unwinder::boxed(self.cfg.clone())),
            modules: self.symbolize.then(|| Prefetch::boxed(self.cfg.clone())),
        }
    }
}

/// Converts `inputs` into the capture `out` and enriches it in its staging
/// directory before it is committed, so that it appears complete or not
/// at all: the ingest of the CLI and of the Python package. `checkpoint`
/// runs before enrichment (`"symbolizing"`) and before the commit
/// (`"committing"`); an error from it abandons the capture.
pub fn ingest(
    inputs: &[std::path::PathBuf],
    out: &Path,
    opts: &trawl_ingest::IngestOptions,
    how: &Enrichment<'_>,
    mut checkpoint: impl FnMut(&str) -> trawl_ingest::Result<()>,
) -> trawl_ingest::Result<(trawl_ingest::IngestSummary, Enriched)> {
    let mut enriched = Enriched::default();
    let summary = trawl_ingest::ingest_with(inputs, out, opts, how.seams(), |staging| {
        if how.symbolize {
            checkpoint("symbolizing")?;
            enriched = enrich(staging, how.cfg, how.flat);
        }
        checkpoint("committing")
    })?;
    Ok((summary, enriched))
}
