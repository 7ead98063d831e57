//! The machine code of functions (`instruction`), decoded when a report
//! asks for it: `report annotate FUNCTION` decodes that function's code
//! in the captures it reads ([`ensure`]), once, and keeps it in the
//! capture; `trawl symbolize --code` decodes every sampled function
//! ([`crate::decode_functions`]), for a capture that must be annotated on
//! a machine without its binaries. Ingest decodes nothing.

use std::collections::BTreeMap;
use std::path::Path;

use crate::tables;
use trawl_symbolize::{ModuleRequest, Status};

use crate::Result;

/// What [`ensure`] did for one capture.
#[derive(Debug, Default)]
pub struct Ensured {
    /// Instructions decoded now (0: the capture held the code already, or
    /// no module of it names the function).
    pub decoded: usize,
    /// Modules whose code could not be read, with why.
    pub failed: Vec<String>,
}

/// Makes sure the capture in `dir` holds the code of `function` (the ELF
/// name, as `hotspots --no-inline` shows it) in every module that names
/// it (only modules whose path contains `module`, when given): decoded
/// from the binary and written into `instruction` with the rows already
/// there (atomically), unless the table holds it already.
pub fn ensure(
    dir: &Path,
    function: &str,
    module: Option<&str>,
    cfg: &trawl_symbolize::Config,
) -> Result<Ensured> {
    let modules = tables::read_modules(dir)?;
    let (old, held) = tables::read_instructions(dir)?;
    let mut by_module: BTreeMap<i64, Vec<u64>> = BTreeMap::new();
    for (m, pc) in tables::read_function_addresses(dir, function)? {
        if held.contains(&(m, function.to_string())) {
            continue;
        }
        let path = modules.iter().find(|r| r.module_id == m).map(|r| &r.path);
        if module.is_some_and(|want| path.is_none_or(|p| !p.contains(want))) {
            continue;
        }
        // One address of the function finds it.
        by_module.entry(m).or_insert_with(|| vec![pc]);
    }
    let reqs = crate::code_requests(&modules, by_module);
    if reqs.is_empty() {
        return Ok(Ensured::default());
    }
    // Where the capture's symbolization found the binaries (a debug
    // directory given then, not now) is looked in too; a file there is
    // still checked against the build-id.
    let mut cfg = cfg.clone();
    for (m, bin) in tables::read_symbol_binaries(dir)? {
        if reqs.iter().any(|(id, _)| *id == m) {
            if let Some(parent) = Path::new(&bin).parent().filter(|p| p.is_absolute()) {
                cfg.add_debug_dir(parent.to_path_buf());
            }
        }
    }
    let mut e = Ensured::default();
    e.decoded = write(dir, &cfg, reqs, old, &mut e.failed)?;
    Ok(e)
}

/// Rewrites `instruction` with the rows of `keep` and the functions of
/// `reqs` decoded, each instruction with its source line. Returns the
/// instructions decoded.
pub(crate) fn write(
    dir: &Path,
    cfg: &trawl_symbolize::Config,
    reqs: Vec<(i64, ModuleRequest)>,
    keep: Vec<arrow::array::RecordBatch>,
    failed: &mut Vec<String>,
) -> Result<usize> {
    // Module by module, functions as they are decoded, in chunks, so that
    // memory holds one chunk's code, lines and rows (a system-wide
    // recording samples tens of thousands of functions in binaries such
    // as LLVM: 8.6 M instructions).
    const CHUNK: usize = 1 << 17;
    let mut n = 0usize;
    tables::write_instructions_with(dir, |sink| {
        for b in &keep {
            sink.write_batch(b)?;
        }
        for (id, r) in reqs {
            let mut chunk: Vec<trawl_symbolize::disasm::FunctionCode> = Vec::new();
            let mut count = 0usize;
            let mut status: Result<()> = Ok(());
            let mut flush = |chunk: &mut Vec<trawl_symbolize::disasm::FunctionCode>| -> Result<()> {
                // The lines of the instructions: the functions' windows are
                // known once one address of each was symbolized.
                let req = ModuleRequest {
                    addresses: chunk
                        .iter()
                        .flat_map(|f| f.insns.iter().map(|i| i.offset))
                        .collect(),
                    ..r.clone()
                };
                let lines = trawl_symbolize::symbolize(cfg, vec![req])
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
                        rows.push(tables::InstructionRow {
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
                if status.is_err() {
                    return;
                }
                count += f.insns.len();
                chunk.push(f);
                if count >= CHUNK {
                    count = 0;
                    status = flush(&mut chunk);
                }
            });
            status?;
            if code.status != Status::Ok {
                failed.push(format!(
                    "{}: {}{}",
                    r.path,
                    code.status.as_str(),
                    code.message.map(|m| format!(" ({m})")).unwrap_or_default()
                ));
            } else if !chunk.is_empty() {
                flush(&mut chunk)?;
            }
        }
        Ok(())
    })?;
    Ok(n)
}

/// `annotate`'s source of code (see trawl-query's `code` module): decodes
/// with its config when a call first asks for a function.
pub struct Decoder(pub trawl_symbolize::Config);

impl trawl_query::session::CodeSource for Decoder {
    fn ensure(
        &self,
        dir: &Path,
        function: &str,
        module: Option<&str>,
    ) -> std::result::Result<(), String> {
        let e = ensure(dir, function, module, &self.0).map_err(|e| e.to_string())?;
        if e.decoded == 0 && !e.failed.is_empty() {
            return Err(format!(
                "the code of {function:?} could not be read: {}",
                e.failed.join("; ")
            ));
        }
        Ok(())
    }
}

/// The code source the CLI and the Python package give their sessions:
/// binaries where perf finds them, debuginfod servers of
/// `$DEBUGINFOD_URLS`, the default symbol store.
pub fn standard_source() -> std::sync::Arc<dyn trawl_query::session::CodeSource> {
    let mut cfg = trawl_symbolize::Config::standard();
    cfg.debuginfod = trawl_symbolize::debuginfod::Debuginfod::from_env();
    // Without a store the code is still decoded: the store only saves
    // looking up the lines again.
    let _ = crate::symbol_store::attach(&mut cfg, &crate::symbol_store::Choice::Default, None);
    std::sync::Arc::new(Decoder(cfg))
}
