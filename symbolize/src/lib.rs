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
pub mod facts;
mod file;
mod find;
pub mod kallsyms;
pub mod memo;
pub mod objsyms;
pub mod perfmap;
pub mod request;
pub mod unwind;

pub use demangle::demangle;
pub use demangle::NameCache;
pub use dwarf::LineFrame;
pub use facts::{FactStore, ModuleFacts, StoreProblem};
pub use find::Config;
pub use kallsyms::Kallsyms;
pub use request::{ModuleRequest, ModuleResult, Resolved, Status, SymbolHit};

use elf::{choose_symbols, LoadSegments, SymbolMap, TableKind};
use find::facts_key;
use rayon::prelude::*;
use std::path::PathBuf;

/// The GNU build-id of an ELF file, in hex.
pub fn build_id_of(path: &std::path::Path) -> Option<String> {
    file::Loaded::open(path)?.build_id()
}

/// Resolves every request, modules in parallel. Files are answered from
/// what is known of them ([`facts`]: this process's memo, then the
/// persistent store of `cfg`), and opened only to learn what is not.
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
                symbolize_file(cfg, &r)
            }
        })
        .collect()
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

/// Where a config looks for debug files beyond the standard places (see
/// [`facts::Base::searched`]).
fn searched(cfg: &Config) -> String {
    use std::hash::Hasher;
    let mut h = twox_hash::XxHash64::with_seed(0);
    h.write(
        format!(
            "{:?}|{:?}|{:?}|{:?}",
            cfg.debug_dirs, cfg.symfs, cfg.remap, cfg.debuginfod
        )
        .as_bytes(),
    );
    format!("{:016x}", h.finish())
}

/// Facts without DWARF may be incomplete where a debug file could be
/// found now: other debug directories or debuginfod servers than when
/// they were learnt, or a file for the build-id in the system debug
/// directory. Such facts are learnt again, once per process.
fn may_learn_more(cfg: &Config, r: &ModuleRequest, f: &ModuleFacts) -> bool {
    let elsewhere = !cfg.debug_dirs.is_empty() || cfg.debuginfod.is_some();
    f.base.debug_info.is_none()
        && ((elsewhere && f.base.searched.as_deref() != Some(searched(cfg).as_str()))
            || r.build_id.as_deref().is_some_and(|b| {
                b.len() > 2
                    && cfg.system_debug.iter().any(|d| {
                        d.join(".build-id")
                            .join(&b[..2])
                            .join(format!("{}.debug", &b[2..]))
                            .is_file()
                    })
            }))
}

/// Learns now what [`symbolize`] will need of module `r` whatever the
/// addresses asked (`r.addresses` is not read): a file's facts from the
/// store, else its symbol table and load segments from its files (saved
/// to the store); the running kernel's symbols. What is learnt is kept in
/// `cfg`'s memo, shared by its clones, where a later `symbolize` of the
/// module finds it: ingest calls this on a thread of its own when a
/// module's first frame is met, while the samples are still being read.
/// Nothing is learnt that `symbolize` of the module would not learn.
pub fn prepare(cfg: &Config, r: &ModuleRequest) {
    if r.kernel {
        // A kallsyms file the user names is read by each `symbolize`.
        if cfg.kallsyms.is_none() {
            let _ = cfg.kallsyms();
        }
        return;
    }
    if is_perf_map_path(&r.path) {
        return;
    }
    let Some(key) = facts_key(cfg, r) else {
        return;
    };
    let slot = cfg.memo().slot(&key, cfg.store.as_ref());
    let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
    match fill(cfg, r, Some(&key), &mut held) {
        Ok((true, _)) => {
            if let (Some(store), Some(f)) = (&cfg.store, held.as_ref()) {
                store.save(
                    &key,
                    facts::Part {
                        base: Some(&f.base),
                        covered: &[],
                        lines: &[],
                    },
                );
            }
        }
        Ok((false, _)) => {}
        Err(e) => cfg.memo().put_failure(&key, e),
    }
}

/// Fills `held`, the memo's facts of module `r` (under `key`), from its
/// files when neither the memo nor the store knew them (or they may be
/// incomplete: see [`may_learn_more`]). Returns whether they were learnt
/// now, and the module's files when they were opened for it.
fn fill(
    cfg: &Config,
    r: &ModuleRequest,
    key: Option<&str>,
    held: &mut Option<ModuleFacts>,
) -> Result<(bool, Option<std::sync::Arc<memo::Opened>>), ModuleResult> {
    if held.as_ref().is_some_and(|f| may_learn_more(cfg, r, f))
        && key.is_some_and(|k| cfg.memo().first_recheck(k))
    {
        *held = None;
        if let Some(k) = key {
            cfg.memo().open_forget(k);
        }
    }
    if held.is_some() {
        return Ok((false, None));
    }
    if let Some(mut e) = key.and_then(|k| cfg.memo().take_failure(k)) {
        e.symbols = vec![Resolved::default(); r.addresses.len()];
        return Err(e);
    }
    let found = open_module(cfg, r, key)?;
    let mut base = learn_base(&found.found, r.addresses.len())?;
    base.searched = Some(searched(cfg));
    *held = Some(ModuleFacts {
        base,
        ..Default::default()
    });
    Ok((true, Some(found)))
}

/// A file module: answered from its facts, learning (and keeping) what
/// the addresses asked need.
fn symbolize_file(cfg: &Config, r: &ModuleRequest) -> ModuleResult {
    let is_vdso = r.path == "[vdso]";
    let key = facts_key(cfg, r);
    let slot = match &key {
        Some(k) => cfg.memo().slot(k, cfg.store.as_ref()),
        None => Default::default(),
    };
    let mut held = slot.lock().unwrap_or_else(|e| e.into_inner());
    let (fresh, mut opened) = match fill(cfg, r, key.as_deref(), &mut held) {
        Ok(f) => f,
        Err(e) => return e,
    };
    let Some(facts) = held.as_mut() else {
        unreachable!("filled above")
    };
    let missing: Vec<u64> = r
        .addresses
        .iter()
        .filter_map(|&o| facts.vaddr_of(o, is_vdso))
        .filter(|&v| !facts.knows(v))
        .collect();
    let mut message = None;
    let (covered, lines) = if missing.is_empty() {
        (Vec::new(), Vec::new())
    } else {
        if opened.is_none() {
            match open_module(cfg, r, key.as_deref()) {
                Ok(f) => opened = Some(f),
                Err(e) => {
                    message = Some(format!(
                        "source lines of {} addresses unknown: {}",
                        missing.len(),
                        e.message.unwrap_or_default()
                    ))
                }
            }
        }
        match &opened {
            Some(found) => learn_lines(found, facts, &missing),
            None => (Vec::new(), Vec::new()),
        }
    };
    if let (Some(k), Some(store)) = (&key, &cfg.store) {
        if fresh || !covered.is_empty() {
            store.save(
                k,
                facts::Part {
                    base: fresh.then_some(&facts.base),
                    covered: &covered,
                    lines: &lines,
                },
            );
        }
    }
    facts.add(covered, lines);
    let mut names = NameCache::default();
    let symbols = r
        .addresses
        .iter()
        .map(|&o| match facts.vaddr_of(o, is_vdso) {
            Some(v) => facts.resolve(v, &mut names),
            None => Resolved::default(),
        })
        .collect();
    let b = &facts.base;
    ModuleResult {
        status: Status::Ok,
        binary: b.binary.clone(),
        symbols_file: b.symbols_file.clone(),
        table: b.table.map(TableKind::as_str),
        debug_info: b.debug_info.clone(),
        message,
        symbols,
    }
}

/// Finds a module's files (counted in the memo: a module whose facts are
/// known is not opened).
fn open_module(
    cfg: &Config,
    r: &ModuleRequest,
    key: Option<&str>,
) -> Result<std::sync::Arc<memo::Opened>, ModuleResult> {
    if let Some(m) = key.and_then(|k| cfg.memo().open_get(k)) {
        return Ok(m);
    }
    cfg.memo()
        .opened
        .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let found = find::locate(cfg, &r.path, r.build_id.as_deref())
        .map_err(|(status, msg)| ModuleResult::failed(status, msg, r.addresses.len()))?;
    let m = std::sync::Arc::new(memo::Opened::new(found));
    if let Some(k) = key {
        cfg.memo().open_put(k, m.clone());
    }
    Ok(m)
}

/// What a module's files say whatever the addresses: the symbol table
/// (the binary's .symtab, else a debug file's, else .dynsym), the load
/// segments, which file has DWARF.
fn learn_base(found: &file::Found, n: usize) -> Result<facts::Base, ModuleResult> {
    let bin_obj = object::File::parse(&*found.binary.data).map_err(|e| {
        ModuleResult::failed(
            Status::Error,
            format!("{}: {e}", found.binary.path.display()),
            n,
        )
    })?;
    let chosen = choose_symbols(found, &bin_obj);
    // DWARF: the binary's own, else the first debug file that has some.
    let debug_info = if dwarf::has_info(&bin_obj) {
        Some(found.binary.path.clone())
    } else {
        found.debug.iter().find_map(|d| {
            object::File::parse(&*d.data)
                .ok()
                .filter(dwarf::has_info)
                .map(|_| d.path.clone())
        })
    };
    if chosen.is_none() && debug_info.is_none() {
        return Err(ModuleResult {
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
        });
    }
    let (symbols, symbols_file, table) = match chosen {
        Some((m, p, k)) => (m, Some(p), Some(k)),
        None => (SymbolMap::default(), None, None),
    };
    Ok(facts::Base {
        binary: Some(found.binary.path.clone()),
        symbols_file,
        table,
        debug_info,
        segments: LoadSegments::from_data(&found.binary.data).unwrap_or_default(),
        symbols,
        searched: None,
    })
}

/// The DWARF answers of the windows (functions or pages) holding
/// `vaddrs`: the windows and their line ranges. Many windows are learnt
/// on several threads, each with its own addr2line context.
fn learn_lines(
    opened: &memo::Opened,
    facts: &ModuleFacts,
    vaddrs: &[u64],
) -> (Vec<(u64, u64)>, Vec<facts::LineRange>) {
    let Some(path) = &facts.base.debug_info else {
        return (Vec::new(), Vec::new());
    };
    if opened.sections(path).is_none() {
        return (Vec::new(), Vec::new());
    }
    let windows = facts::windows(facts, vaddrs.iter().copied());
    let bytes: u64 = windows.iter().map(|w| w.1 - w.0).sum();
    let runs = rayon::current_num_threads()
        .min(usize::try_from(bytes / (64 << 10)).unwrap_or(usize::MAX))
        .min(windows.len())
        .max(1);
    let chunk = windows.len().div_ceil(runs);
    let learn = |w: &[(u64, u64)]| -> Vec<facts::LineRange> {
        opened
            .with_context(path, |ctx| {
                facts::learn_windows(ctx, w, &mut NameCache::default())
            })
            .unwrap_or_default()
    };
    let lines: Vec<facts::LineRange> = if runs > 1 {
        windows.par_chunks(chunk).flat_map_iter(learn).collect()
    } else {
        learn(&windows)
    };
    (windows, lines)
}
