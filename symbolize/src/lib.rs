//! # trawl-symbolize
//!
//! (module, address) → function name, from the ELF symbol tables of the
//! mapped files, found where perf finds them: the recorded path, perf's
//! build-id cache (`~/.debug`), `/usr/lib/debug/.build-id/xx/….debug`,
//! `.gnu_debuglink`, and directories the user names. A file whose build-id
//! differs from the one in the capture is refused, never silently used.
//!
//! Principal types: [`Config`] (where to look), [`ModuleRequest`] (a module
//! and the addresses to resolve), [`symbolize`] (resolves many modules in
//! parallel), [`Kallsyms`] (kernel symbols).
//!
//! ```no_run
//! use trawl_symbolize::{symbolize, Config, ModuleRequest};
//! let cfg = Config::default();
//! let out = symbolize(&cfg, vec![ModuleRequest {
//!     path: "/usr/lib/x86_64-linux-gnu/libc.so.6".into(),
//!     build_id: None,
//!     kernel: false,
//!     addresses: vec![0x28000],
//! }]);
//! println!("{:?}", out[0].symbols[0]);
//! ```
//!
//! Architecture invariant: this crate knows nothing of Arrow, Parquet or
//! perf records; it maps addresses to names.

pub mod debuginfod;
mod demangle;
pub mod disasm;
pub mod dwarf;
pub mod elf;
mod find;
pub mod kallsyms;
pub mod objsyms;
pub mod perfmap;
pub mod unwind;

pub use demangle::demangle;
pub use dwarf::LineFrame;
pub use find::Config;
pub use kallsyms::Kallsyms;

use elf::{LoadSegments, SymbolMap, TableKind};
use rayon::prelude::*;
use std::path::PathBuf;

/// A module and the addresses (relative to it: file offsets for files,
/// absolute addresses for the kernel) to resolve.
#[derive(Clone, Debug)]
pub struct ModuleRequest {
    pub path: String,
    /// Build-id in hex, when the capture recorded one.
    pub build_id: Option<String>,
    pub kernel: bool,
    pub addresses: Vec<u64>,
}

/// One resolved address.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SymbolHit {
    /// Demangled function name.
    pub name: String,
    /// Offset of the address from the start of the symbol.
    pub offset: u64,
}

/// Everything known about one address.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resolved {
    /// The ELF symbol containing the address (perf's `sym`).
    pub symbol: Option<SymbolHit>,
    /// The DWARF inline chain, innermost first: the last entry is the
    /// function the ELF symbol names, the others were inlined into it.
    /// Empty without DWARF for the address.
    pub inline: Vec<LineFrame>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    NotFound,
    BuildIdMismatch,
    NoSymbols,
    NotAFile,
    Error,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::NotFound => "not_found",
            Status::BuildIdMismatch => "build_id_mismatch",
            Status::NoSymbols => "no_symbols",
            Status::NotAFile => "not_a_file",
            Status::Error => "error",
        }
    }
}

/// The result for one module: one entry per requested address, in order.
#[derive(Clone, Debug)]
pub struct ModuleResult {
    pub status: Status,
    /// File whose program headers translated offsets to addresses.
    pub binary: Option<PathBuf>,
    /// File whose symbol table named the functions.
    pub symbols_file: Option<PathBuf>,
    pub table: Option<&'static str>,
    /// File whose DWARF gave source lines, when one had any.
    pub debug_info: Option<PathBuf>,
    pub message: Option<String>,
    pub symbols: Vec<Resolved>,
}

impl ModuleResult {
    fn failed(status: Status, message: String, n: usize) -> Self {
        ModuleResult {
            status,
            binary: None,
            symbols_file: None,
            table: None,
            debug_info: None,
            message: Some(message),
            symbols: vec![Resolved::default(); n],
        }
    }
}

/// The GNU build-id of an ELF file, in hex.
pub fn build_id_of(path: &std::path::Path) -> Option<String> {
    find::Loaded::open(path)?.build_id()
}

/// Below this many addresses a module is resolved on one thread.
const PARALLEL_MIN: usize = 4096;

/// Demangled names, computed once per distinct mangled name.
#[derive(Default)]
pub struct NameCache {
    map: std::collections::HashMap<String, String>,
}

impl NameCache {
    pub fn demangle(&mut self, raw: &str) -> String {
        if let Some(d) = self.map.get(raw) {
            return d.clone();
        }
        let d = demangle(raw);
        self.map.insert(raw.to_string(), d.clone());
        d
    }
}

/// Resolves every request, modules in parallel. With
/// `cfg.share_results`, files with a build-id go
/// through the results cache `cfg` shares with its clones (see
/// [`find::ResultCache`]): addresses resolved for an earlier capture are
/// not looked up again, and a module whose addresses are all known is not
/// opened.
pub fn symbolize(cfg: &Config, requests: Vec<ModuleRequest>) -> Vec<ModuleResult> {
    // Kernel symbols only when a kernel module is asked for.
    let kallsyms = requests
        .iter()
        .any(|r| r.kernel)
        .then(|| cfg.kallsyms())
        .flatten();
    requests
        .into_par_iter()
        .map(|r| {
            if r.kernel {
                symbolize_kernel(&r, kallsyms.as_ref())
            } else if is_perf_map_path(&r.path) {
                symbolize_perf_map(cfg, &r)
            } else {
                match r.build_id.as_deref() {
                    Some(bid) if cfg.share_results => symbolize_cached(cfg, bid, &r),
                    _ => symbolize_file(cfg, &r),
                }
            }
        })
        .collect()
}

/// [`symbolize_file`] for the addresses the cache does not hold yet.
fn symbolize_cached(cfg: &Config, bid: &str, r: &ModuleRequest) -> ModuleResult {
    let cache = cfg.results();
    let missing: Vec<u64> = {
        let c = cache.lock().unwrap_or_else(|e| e.into_inner());
        let known = c.get(bid);
        r.addresses
            .iter()
            .copied()
            .filter(|a| known.is_none_or(|m| !m.by_addr.contains_key(a)))
            .collect()
    };
    let c = if missing.is_empty() {
        cache.lock().unwrap_or_else(|e| e.into_inner())
    } else {
        let all = missing.len() == r.addresses.len();
        let mut fresh = symbolize_file(
            cfg,
            &ModuleRequest {
                path: r.path.clone(),
                build_id: r.build_id.clone(),
                kernel: false,
                addresses: missing.clone(),
            },
        );
        if fresh.status != Status::Ok {
            // Not cached: another capture may name another file. When some
            // addresses were known, the answer is the whole request's.
            return if all { fresh } else { symbolize_file(cfg, r) };
        }
        let symbols = std::mem::take(&mut fresh.symbols);
        let mut c = cache.lock().unwrap_or_else(|e| e.into_inner());
        let m = c
            .entry(bid.to_string())
            .or_insert_with(|| find::CachedModule {
                result: fresh,
                by_addr: Default::default(),
            });
        m.by_addr.extend(missing.into_iter().zip(symbols));
        c
    };
    match c.get(bid) {
        Some(m) => ModuleResult {
            symbols: r.addresses.iter().map(|a| m.by_addr[a].clone()).collect(),
            ..m.result.clone()
        },
        // No addresses asked and none known.
        None => {
            drop(c);
            symbolize_file(cfg, r)
        }
    }
}

/// Is `path` a JIT map, `/tmp/perf-PID.map` (the module name perf and
/// trawl give to a process's anonymous executable memory)?
pub fn is_perf_map_path(path: &str) -> bool {
    path.strip_prefix("/tmp/perf-")
        .and_then(|r| r.strip_suffix(".map"))
        .is_some_and(|pid| !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()))
}

/// Addresses (absolute) of a process's anonymous memory, named by the JIT
/// map the process wrote.
fn symbolize_perf_map(cfg: &Config, r: &ModuleRequest) -> ModuleResult {
    let n = r.addresses.len();
    let Some(found) = find::locate_perf_map(cfg, &r.path) else {
        return ModuleResult::failed(
            Status::NotFound,
            format!(
                "{}: no JIT map found (it is written by the JIT while the process runs; copy it next to the capture and pass --debug-dir)",
                r.path
            ),
            n,
        );
    };
    let path = found.display_path();
    let map = match perfmap::PerfMap::load(&found) {
        Ok(m) => m,
        Err(e) => {
            return ModuleResult::failed(Status::Error, format!("{}: {e}", path.display()), n)
        }
    };
    let message = (!map.bad_lines.is_empty()).then(|| {
        let shown: Vec<String> = map
            .bad_lines
            .iter()
            .take(5)
            .map(|l| l.to_string())
            .collect();
        format!(
            "{}: {} lines are not `START SIZE NAME` and were skipped (line {}{})",
            path.display(),
            map.bad_lines.len(),
            shown.join(", "),
            if map.bad_lines.len() > 5 { ", ..." } else { "" }
        )
    });
    let symbols = r
        .addresses
        .iter()
        .map(|&a| Resolved {
            symbol: map.find(a).map(|(name, offset)| SymbolHit {
                name: name.to_string(),
                offset,
            }),
            inline: Vec::new(),
        })
        .collect();
    ModuleResult {
        status: if map.is_empty() {
            Status::NoSymbols
        } else {
            Status::Ok
        },
        binary: None,
        symbols_file: Some(path),
        table: Some("perf_map"),
        debug_info: None,
        message,
        symbols,
    }
}

fn symbolize_kernel(
    r: &ModuleRequest,
    k: Option<&(std::sync::Arc<Kallsyms>, PathBuf)>,
) -> ModuleResult {
    let Some((k, path)) = k else {
        return ModuleResult::failed(
            Status::NotFound,
            "no kallsyms: the running kernel does not match the capture, or /proc/kallsyms is unreadable; pass --kallsyms FILE".into(),
            r.addresses.len(),
        );
    };
    let symbols = r
        .addresses
        .iter()
        .map(|&a| Resolved {
            symbol: k.find(a).map(|(name, offset)| SymbolHit {
                name: name.to_string(),
                offset,
            }),
            inline: Vec::new(),
        })
        .collect();
    ModuleResult {
        status: Status::Ok,
        binary: None,
        symbols_file: Some(path.clone()),
        table: Some("kallsyms"),
        debug_info: None,
        message: None,
        symbols,
    }
}

/// The symbol table of a located file: the binary's .symtab, else a debug
/// file's, else .dynsym; with perf's synthesized PLT symbols.
pub(crate) fn choose_symbols(
    found: &find::Found,
    bin_obj: &object::File<'_>,
) -> Option<(SymbolMap, PathBuf, TableKind)> {
    let mut chosen: Option<(SymbolMap, PathBuf, TableKind)> = None;
    let m = SymbolMap::from_object(bin_obj, TableKind::Symtab);
    if !m.is_empty() {
        chosen = Some((m, found.binary.path.clone(), TableKind::Symtab));
    }
    if chosen.is_none() {
        for d in &found.debug {
            if let Ok(o) = object::File::parse(&*d.data) {
                let m = SymbolMap::from_object(&o, TableKind::Symtab);
                if !m.is_empty() {
                    chosen = Some((m, d.path.clone(), TableKind::Symtab));
                    break;
                }
            }
        }
    }
    if chosen.is_none() {
        let m = SymbolMap::from_object(bin_obj, TableKind::Dynsym);
        if !m.is_empty() {
            chosen = Some((m, found.binary.path.clone(), TableKind::Dynsym));
        }
    }
    chosen.map(|(m, p, k)| (m.with_plt(bin_obj), p, k))
}

fn symbolize_file(cfg: &Config, r: &ModuleRequest) -> ModuleResult {
    let n = r.addresses.len();
    let found = match find::locate(cfg, &r.path, r.build_id.as_deref()) {
        Ok(f) => f,
        Err((status, msg)) => return ModuleResult::failed(status, msg, n),
    };
    let segs = LoadSegments::from_data(&found.binary.data).unwrap_or_default();
    // Symbol table: the binary's .symtab, else a debug file's, else .dynsym.
    let bin_obj = match object::File::parse(&*found.binary.data) {
        Ok(o) => o,
        Err(e) => {
            return ModuleResult::failed(
                Status::Error,
                format!("{}: {e}", found.binary.path.display()),
                n,
            )
        }
    };
    let chosen = choose_symbols(&found, &bin_obj);

    // DWARF: the binary's own, else the first debug file that has some.
    let mut dwarf: Option<(dwarf::Sections<'_>, PathBuf)> =
        dwarf::Sections::load(&bin_obj).map(|s| (s, found.binary.path.clone()));
    let debug_objs: Vec<(object::File<'_>, &PathBuf)> = found
        .debug
        .iter()
        .filter_map(|d| object::File::parse(&*d.data).ok().map(|o| (o, &d.path)))
        .collect();
    if dwarf.is_none() {
        dwarf = debug_objs
            .iter()
            .find_map(|(o, p)| dwarf::Sections::load(o).map(|s| (s, (*p).clone())));
    }
    let has_dwarf = dwarf.is_some();

    if chosen.is_none() && !has_dwarf {
        return ModuleResult {
            status: Status::NoSymbols,
            binary: Some(found.binary.path.clone()),
            symbols_file: None,
            table: None,
            debug_info: None,
            message: Some(format!(
                "no function symbols or DWARF in {} or its debug files{}",
                found.binary.path.display(),
                found.tried_note()
            )),
            symbols: vec![Resolved::default(); n],
        };
    }
    let is_vdso = r.path == "[vdso]";
    let vaddr_of = |off: u64| {
        if segs.is_empty() || is_vdso && segs.offset_to_vaddr(off).is_none() {
            Some(off)
        } else {
            segs.offset_to_vaddr(off)
        }
    };
    // Addresses in ascending order, split into one contiguous run per
    // thread: each run gets its own DWARF context (they are not shared
    // between threads) and walks the line tables of neighbouring units.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_unstable_by_key(|&i| r.addresses[i]);
    let runs = if n >= PARALLEL_MIN {
        rayon::current_num_threads().clamp(1, n / (PARALLEL_MIN / 2))
    } else {
        1
    };
    let chunk = n.div_ceil(runs.max(1)).max(1);
    let dwarf_sections = dwarf.as_ref().map(|(s, _)| s);
    let resolve_run = |run: &[usize]| -> Vec<(usize, Resolved)> {
        let ctx = dwarf_sections.and_then(|s| s.context());
        let mut names = NameCache::default();
        run.iter()
            .map(|&i| {
                let Some(vaddr) = vaddr_of(r.addresses[i]) else {
                    return (i, Resolved::default());
                };
                let symbol = chosen.as_ref().and_then(|(map, _, _)| {
                    map.find(vaddr).map(|s| SymbolHit {
                        name: names.demangle(&s.name),
                        offset: vaddr - s.start,
                    })
                });
                let inline = ctx
                    .as_ref()
                    .map(|c| dwarf::frames(c, vaddr, &mut names))
                    .unwrap_or_default();
                (i, Resolved { symbol, inline })
            })
            .collect()
    };
    let parts: Vec<Vec<(usize, Resolved)>> = if runs > 1 {
        order.par_chunks(chunk).map(resolve_run).collect()
    } else {
        vec![resolve_run(&order)]
    };
    let mut symbols = vec![Resolved::default(); n];
    for (i, res) in parts.into_iter().flatten() {
        symbols[i] = res;
    }
    let (symbols_file, table) = match chosen {
        Some((_, p, k)) => (Some(p), Some(k.as_str())),
        None => (None, None),
    };
    ModuleResult {
        status: Status::Ok,
        binary: Some(found.binary.path.clone()),
        symbols_file,
        table,
        debug_info: dwarf.as_ref().filter(|_| has_dwarf).map(|(_, p)| p.clone()),
        message: None,
        symbols,
    }
}
