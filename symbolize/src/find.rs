//! Finding the files that describe a module: the binary (program headers,
//! symbols) and separate debug files, checked against the build-id.
//!
//! The binary ([`locate`]) is looked for, in order: under each matching
//! `--remap-path` prefix; below `--symfs`/`--sysroot` (and its
//! `usr/lib/debug/.build-id`); in each `--debug-dir` by build-id, recorded
//! path, file name, and a scan of the directory for the build-id; in
//! perf's build-id cache (`~/.debug`); at the recorded path; for `[vdso]`
//! finally the running kernel's, copied from this process's memory; and
//! last from debuginfod. A file whose build-id differs from the capture's
//! is refused, and a separate debug file is never taken for the binary.
//! Debug files: by build-id in the debug directories, the sysroot,
//! `/usr/lib/debug/.build-id` and `~/.debug`, then by `.gnu_debuglink`
//! (beside the binary, in its `.debug/`, under `/usr/lib/debug`, in the
//! debug directories), then from debuginfod when none has DWARF. With
//! `--symfs` or `--remap-path` ([`Config::confined`]) every place is
//! inside a root given, opened as that root's `/`.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use crate::file::{hex, Cand, Found, Loaded};
use crate::kallsyms::Kallsyms;
use crate::request::{ModuleRequest, Status};

/// Where to look for binaries, debug files and kernel symbols.
#[derive(Clone, Debug, Default)]
pub struct Config {
    /// `--debug-dir DIR` (repeatable): searched by build-id
    /// (`DIR/.build-id/xx/rest[.debug]`), by recorded path below DIR, by
    /// file name, and by scanning DIR for an ELF file with the build-id.
    pub debug_dirs: Vec<PathBuf>,
    /// `--symfs DIR` / `--sysroot DIR`: recorded paths are looked up below
    /// DIR first (captures made on another machine).
    pub symfs: Option<PathBuf>,
    /// `--remap-path FROM=TO` (repeatable): a recorded path starting with
    /// FROM is looked up with FROM replaced by TO, before anything else.
    pub remap: Vec<(String, PathBuf)>,
    /// perf's build-id cache, `~/.debug` by default.
    pub buildid_cache: Option<PathBuf>,
    /// System debug directories, `/usr/lib/debug` by default.
    pub system_debug: Vec<PathBuf>,
    /// Do not use files at their recorded path (only with symfs / debug dirs).
    pub no_recorded_paths: bool,
    /// `--kallsyms FILE`.
    pub kallsyms: Option<PathBuf>,
    /// The capture's kernel build-id and release, to decide whether the
    /// running kernel's `/proc/kallsyms` describes it.
    pub kernel_build_id: Option<String>,
    pub kernel_release: Option<String>,
    /// debuginfod servers for build-ids not found here (`--debuginfod`,
    /// `DEBUGINFOD_URLS`); None: no network.
    pub debuginfod: Option<crate::debuginfod::Debuginfod>,
    /// Where module facts are kept between processes (the symbol store);
    /// None: only in this process.
    pub store: Option<Arc<dyn crate::facts::FactStore>>,
    index: Arc<OnceLock<HashMap<String, Cand>>>,
    /// What is known of modules, shared by this config and its clones (an
    /// archive ingest symbolizes its captures with clones of one config:
    /// the same libc is learnt once).
    memo: Arc<crate::memo::Memo>,
}

impl Config {
    /// The locations perf uses by default.
    pub fn standard() -> Config {
        Config {
            buildid_cache: std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".debug")),
            system_debug: vec![PathBuf::from("/usr/lib/debug")],
            ..Default::default()
        }
    }

    /// Adds a debug directory (the build-id index of the directories is
    /// made again when next needed; this config's clones keep theirs).
    pub fn add_debug_dir(&mut self, d: PathBuf) {
        if !self.debug_dirs.contains(&d) {
            self.debug_dirs.push(d);
            self.index = Default::default();
        }
    }

    /// The facts this config and its clones share.
    pub fn memo(&self) -> &crate::memo::Memo {
        &self.memo
    }

    /// With `--sysroot`/`--symfs` or `--remap-path`, files are looked up
    /// only inside the roots given (the sysroot, the remap targets, the
    /// debug directories), each resolved as its own `/`: not at their
    /// recorded paths, in `~/.debug`, `/usr/lib/debug` or the running
    /// kernel's `/proc/kallsyms` and vdso.
    pub fn confined(&self) -> bool {
        self.symfs.is_some() || !self.remap.is_empty()
    }

    /// `rel` below a debug directory: inside it when confined.
    fn in_debug_dir(&self, d: &Path, rel: impl AsRef<Path>) -> Cand {
        if self.confined() {
            Cand::in_root(d, rel)
        } else {
            Cand::Path(d.join(rel))
        }
    }

    /// Kernel symbols to use, and where they came from. The running
    /// kernel's `/proc/kallsyms` is read once per process (reading it costs
    /// the kernel tens of milliseconds), and kept in the symbol store under
    /// the kernel's build-id: a later process, or a capture of that kernel
    /// symbolized after a reboot into another, reads it from there.
    pub(crate) fn kallsyms(&self) -> Option<(Arc<Kallsyms>, PathBuf)> {
        if let Some(p) = &self.kallsyms {
            return Kallsyms::load(p).ok().map(|k| (Arc::new(k), p.clone()));
        }
        if self.confined() {
            return None;
        }
        let p = PathBuf::from("/proc/kallsyms");
        // Read once per process, whatever the configs.
        static RUNNING: OnceLock<Option<Arc<Kallsyms>>> = OnceLock::new();
        let read = || {
            RUNNING
                .get_or_init(|| {
                    Kallsyms::load(&p)
                        .ok()
                        .filter(|k| !k.is_empty())
                        .map(Arc::new)
                })
                .clone()
        };
        let running = || {
            let running_bid = running_kernel_build_id();
            let running_rel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .ok()
                .map(|s| s.trim().to_string());
            match (&self.kernel_build_id, &running_bid) {
                (Some(a), Some(b)) => a.eq_ignore_ascii_case(b),
                _ => match (&self.kernel_release, &running_rel) {
                    (Some(a), Some(b)) => a == b,
                    _ => false,
                },
            }
        };
        let valid_bid = self
            .kernel_build_id
            .as_deref()
            .map(str::to_ascii_lowercase)
            .filter(|b| (4..=128).contains(&b.len()) && b.bytes().all(|c| c.is_ascii_hexdigit()));
        let k = match valid_bid {
            Some(b) => self
                .memo
                .kernel(&format!("kernel-{b}"), self.store.as_ref(), || {
                    running().then(read).flatten()
                })?,
            None => {
                if !running() {
                    return None;
                }
                read()?
            }
        };
        Some((k, p))
    }

    fn build_id_index(&self) -> &HashMap<String, Cand> {
        self.index.get_or_init(|| {
            let mut map = HashMap::new();
            let mut budget = 20_000usize;
            for d in &self.debug_dirs {
                let mut found = HashMap::new();
                scan(d, 0, &mut budget, &mut found);
                for (b, (p, _)) in found {
                    let rel = p.strip_prefix(d).unwrap_or(&p).to_path_buf();
                    map.entry(b).or_insert_with(|| self.in_debug_dir(d, rel));
                }
            }
            map
        })
    }
}

/// Files by build-id under `dir`, each with whether it holds code.
fn scan(dir: &Path, depth: usize, budget: &mut usize, map: &mut HashMap<String, (PathBuf, bool)>) {
    if depth > 6 || *budget == 0 {
        return;
    }
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        if *budget == 0 {
            return;
        }
        *budget -= 1;
        let p = e.path();
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            scan(&p, depth + 1, budget, map);
        } else if ft.is_file() {
            let Some(l) = Loaded::open(&p) else { continue };
            if let Some(b) = l.build_id() {
                // A binary wins over a separate debug file of the same
                // build-id (perf's cache keeps both side by side).
                match map.entry(b) {
                    std::collections::hash_map::Entry::Vacant(v) => {
                        v.insert((p, l.has_code()));
                    }
                    std::collections::hash_map::Entry::Occupied(mut o) => {
                        if !o.get().1 && l.has_code() {
                            o.insert((p, true));
                        }
                    }
                }
            }
        }
    }
}

/// The running kernel's build-id, from `/sys/kernel/notes`.
pub fn running_kernel_build_id() -> Option<String> {
    let data = std::fs::read("/sys/kernel/notes").ok()?;
    let mut i = 0;
    while i + 12 <= data.len() {
        let namesz = u32::from_ne_bytes(data[i..i + 4].try_into().ok()?) as usize;
        let descsz = u32::from_ne_bytes(data[i + 4..i + 8].try_into().ok()?) as usize;
        let ty = u32::from_ne_bytes(data[i + 8..i + 12].try_into().ok()?);
        let name_start = i + 12;
        let desc_start = name_start + namesz.div_ceil(4) * 4;
        let next = desc_start + descsz.div_ceil(4) * 4;
        if next > data.len() {
            return None;
        }
        if ty == 3 && data.get(name_start..name_start + 3) == Some(b"GNU") {
            return Some(hex(&data[desc_start..desc_start + descsz]));
        }
        i = next;
    }
    None
}

fn build_id_path(dir: &Path, bid: &str, suffix: &str) -> Option<PathBuf> {
    (bid.len() > 2).then(|| {
        dir.join(".build-id")
            .join(&bid[..2])
            .join(format!("{}{}", &bid[2..], suffix))
    })
}

fn is_special(path: &str) -> bool {
    !path.starts_with('/') || path.starts_with("//") || path.starts_with("/memfd:")
}

/// The rest of `path` after the prefix `from`, at a path-component
/// boundary.
fn remap_rest<'p>(path: &'p str, from: &str) -> Option<&'p str> {
    let from = from.trim_end_matches('/');
    let rest = path.strip_prefix(from)?;
    if rest.is_empty() {
        Some("")
    } else {
        rest.strip_prefix('/')
    }
}

/// Where the recorded `path` may be on this machine, first: under each
/// `--remap-path` prefix that matches, then below the symfs (each a root
/// the path cannot leave).
fn relocated(cfg: &Config, path: &str) -> Vec<Cand> {
    let mut cands = Vec::new();
    for (from, to) in &cfg.remap {
        if let Some(rest) = remap_rest(path, from) {
            cands.push(Cand::in_root(to, rest));
        }
    }
    if let Some(s) = &cfg.symfs {
        cands.push(Cand::in_root(s, path.trim_start_matches('/')));
    }
    cands
}

/// Where a JIT map (`/tmp/perf-PID.map`) recorded as `path` is: under a
/// remapped prefix, the symfs, a debug directory (by file name), or the
/// path itself (unless confined).
pub fn locate_perf_map(cfg: &Config, path: &str) -> Option<Cand> {
    let mut cands = relocated(cfg, path);
    if let Some(name) = Path::new(path).file_name() {
        cands.extend(cfg.debug_dirs.iter().map(|d| cfg.in_debug_dir(d, name)));
    }
    if !cfg.no_recorded_paths && !cfg.confined() {
        cands.push(Cand::Path(PathBuf::from(path)));
    }
    cands.into_iter().find(|c| c.open().is_ok())
}

/// Finds the binary and the debug files of a module.
pub fn locate(cfg: &Config, path: &str, build_id: Option<&str>) -> Result<Found, (Status, String)> {
    // A build-id is hex; anything else (from a crafted capture) is not
    // used to build paths.
    let bid = build_id
        .filter(|b| b.len() >= 4 && b.bytes().all(|c| c.is_ascii_hexdigit()))
        .map(|b| b.to_ascii_lowercase());
    let confined = cfg.confined();
    let mut cands: Vec<Cand> = relocated(cfg, path);
    let rel = path.trim_start_matches('/');
    if let (Some(b), Some(s)) = (&bid, &cfg.symfs) {
        // The sysroot's own build-id directory.
        cands.extend(build_id_path(Path::new("usr/lib/debug"), b, "").map(|r| Cand::in_root(s, r)));
    }
    for d in &cfg.debug_dirs {
        if let Some(b) = &bid {
            cands.extend(build_id_path(Path::new(""), b, "").map(|r| cfg.in_debug_dir(d, r)));
            cands.extend(build_id_path(Path::new(""), b, "/elf").map(|r| cfg.in_debug_dir(d, r)));
        }
        if !is_special(path) {
            cands.push(cfg.in_debug_dir(d, rel));
        }
        if let Some(name) = Path::new(path).file_name() {
            cands.push(cfg.in_debug_dir(d, name));
        }
    }
    if let (Some(b), false) = (&bid, cfg.debug_dirs.is_empty()) {
        if let Some(p) = cfg.build_id_index().get(b) {
            cands.push(p.clone());
        }
    }
    if let (Some(c), Some(b), false) = (&cfg.buildid_cache, &bid, confined) {
        cands.extend(build_id_path(c, b, "/elf").map(Cand::Path));
        if path == "[vdso]" {
            cands.push(Cand::Path(c.join("[vdso]").join(b).join("vdso")));
        }
    }
    if !cfg.no_recorded_paths && !confined && !is_special(path) {
        cands.push(Cand::Path(PathBuf::from(path)));
    }
    if is_special(path) && path != "[vdso]" {
        return Err((Status::NotAFile, format!("{path} is not a file")));
    }

    let mut mismatches = Vec::new();
    let mut binary = None;
    let vdso = (path == "[vdso]" && !confined).then(|| Cand::Path(PathBuf::from("[vdso]")));
    for c in cands.into_iter().chain(vdso) {
        let l = if c == Cand::Path(PathBuf::from("[vdso]")) {
            Loaded::running_vdso()
        } else {
            Loaded::open_cand(&c)
        };
        let Some(l) = l else { continue };
        match (&bid, l.build_id()) {
            (Some(want), Some(have)) if *want != have => {
                mismatches.push(format!("{} has build-id {have}", l.path.display()));
                continue;
            }
            _ => {}
        }
        // A separate debug file (its code sections NOBITS) has the
        // build-id too, e.g. beside the binary in a perf build-id cache
        // directory given as --debug-dir: its bytes are no code.
        if !l.has_code() {
            continue;
        }
        binary = Some(l);
        break;
    }
    // Not here: the executable from a debuginfod server, by build-id.
    let mut fetched: Vec<String> = Vec::new();
    if binary.is_none() && !is_special(path) {
        if let (Some(d), Some(b)) = (&cfg.debuginfod, &bid) {
            match d.fetch(b, crate::debuginfod::Artifact::Executable) {
                Ok(p) => binary = Loaded::open(&p),
                Err(e) => fetched.push(e),
            }
        }
    }
    let Some(binary) = binary else {
        let asked: String = fetched.iter().map(|e| format!("; {e}")).collect();
        return Err(if mismatches.is_empty() {
            (
                Status::NotFound,
                format!(
                    "{path}: no file found (build-id {}){asked}",
                    bid.as_deref().unwrap_or("unknown")
                ),
            )
        } else {
            (
                Status::BuildIdMismatch,
                format!(
                    "{path}: capture has build-id {}, refused: {}",
                    bid.as_deref().unwrap_or("?"),
                    mismatches.join("; ")
                ),
            )
        });
    };

    // Debug files.
    let bin_bid = bid.clone().or_else(|| binary.build_id());
    let mut dcands: Vec<Cand> = Vec::new();
    if let Some(b) = &bin_bid {
        for d in &cfg.debug_dirs {
            dcands
                .extend(build_id_path(Path::new(""), b, ".debug").map(|r| cfg.in_debug_dir(d, r)));
        }
        if let Some((root, _)) = &binary.at {
            dcands.extend(
                build_id_path(Path::new("usr/lib/debug"), b, ".debug")
                    .map(|r| Cand::in_root(root, r)),
            );
        }
        if !confined {
            for d in &cfg.system_debug {
                dcands.extend(build_id_path(d, b, ".debug").map(Cand::Path));
            }
            if let Some(c) = &cfg.buildid_cache {
                dcands.extend(build_id_path(c, b, "/debug").map(Cand::Path));
            }
        }
    }
    // `.gnu_debuglink` names a file next to the binary; the name comes from
    // the binary (untrusted): a plain file name only.
    let link = binary.debuglink().filter(|l| {
        !l.is_empty() && !l.contains('/') && l != "." && l != ".." && !l.contains('\0')
    });
    if let Some(link) = link {
        match &binary.at {
            Some((root, rel)) => {
                let dir = rel.parent().unwrap_or(Path::new(""));
                dcands.push(Cand::in_root(root, dir.join(&link)));
                dcands.push(Cand::in_root(root, dir.join(".debug").join(&link)));
                dcands.push(Cand::in_root(
                    root,
                    Path::new("usr/lib/debug").join(dir).join(&link),
                ));
            }
            None => {
                if let Some(dir) = binary.path.parent() {
                    dcands.push(Cand::Path(dir.join(&link)));
                    dcands.push(Cand::Path(dir.join(".debug").join(&link)));
                    if !confined {
                        for d in &cfg.system_debug {
                            dcands.push(Cand::Path(
                                d.join(dir.strip_prefix("/").unwrap_or(dir)).join(&link),
                            ));
                        }
                    }
                }
            }
        }
        for d in &cfg.debug_dirs {
            dcands.push(cfg.in_debug_dir(d, &link));
        }
    }
    let mut debug = Vec::new();
    let mut tried = Vec::new();
    for c in dcands {
        let shown = c.display_path();
        if shown == binary.path || debug.iter().any(|d: &Loaded| d.path == shown) {
            continue;
        }
        let Some(l) = Loaded::open_cand(&c) else {
            continue;
        };
        match (&bin_bid, l.build_id()) {
            (Some(want), Some(have)) if *want != have => {
                tried.push(format!("{} (build-id {have} differs)", shown.display()));
                continue;
            }
            _ => {}
        }
        debug.push(l);
    }
    // No DWARF here: the debug file from a debuginfod server.
    if let (Some(d), Some(b)) = (&cfg.debuginfod, &bin_bid) {
        if !binary.has_dwarf() && !debug.iter().any(Loaded::has_dwarf) {
            match d.fetch(b, crate::debuginfod::Artifact::Debuginfo) {
                Ok(p) => debug.extend(Loaded::open(&p)),
                Err(e) => tried.push(e),
            }
        }
    }
    Ok(Found {
        binary,
        debug,
        tried,
    })
}

/// The key of a module's facts: its build-id, else (at its recorded
/// path, unless lookups are confined to other roots) the file's path, size
/// and modification time. None: not kept.
pub(crate) fn facts_key(cfg: &Config, r: &ModuleRequest) -> Option<String> {
    module_key(cfg, &r.path, r.build_id.as_deref())
}

/// [`facts_key`] of the module at `path` with `build_id`.
pub(crate) fn module_key(cfg: &Config, path: &str, build_id: Option<&str>) -> Option<String> {
    if let Some(b) = build_id {
        let b = b.to_ascii_lowercase();
        return ((4..=128).contains(&b.len()) && b.bytes().all(|c| c.is_ascii_hexdigit()))
            .then(|| format!("build-id-{b}"));
    }
    if cfg.confined() || cfg.no_recorded_paths || !path.starts_with('/') {
        return None;
    }
    let m = std::fs::metadata(path).ok().filter(|m| m.is_file())?;
    use std::hash::Hasher;
    use std::os::unix::fs::MetadataExt;
    let mut h = twox_hash::XxHash64::with_seed(0);
    h.write(path.as_bytes());
    h.write_u64(m.len());
    h.write_i64(m.mtime());
    h.write_i64(m.mtime_nsec());
    h.write_u64(m.ino());
    Some(format!("file-{:016x}", h.finish()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use object::Object;

    /// The running kernel's vdso, copied from memory, is an ELF image with
    /// a build-id and the clock functions (names from `vdso(7)`).
    #[test]
    fn running_vdso_is_read_from_memory() {
        let v = Loaded::running_vdso().expect("this process maps a vdso");
        assert_eq!(v.path, PathBuf::from("[vdso]"));
        assert!(v.build_id().is_some_and(|b| b.len() == 40));
        let o = object::File::parse(&*v.data).unwrap();
        use object::ObjectSymbol;
        let names: Vec<String> = o
            .dynamic_symbols()
            .filter_map(|s| s.name().ok().map(str::to_string))
            .collect();
        assert!(
            names.iter().any(|n| n == "__vdso_clock_gettime"),
            "{names:?}"
        );
    }

    #[test]
    fn remap_matches_whole_components() {
        assert_eq!(remap_rest("/opt/app/bin/x", "/opt/app"), Some("bin/x"));
        assert_eq!(remap_rest("/opt/app/bin/x", "/opt/app/"), Some("bin/x"));
        assert_eq!(remap_rest("/opt/apple/x", "/opt/app"), None);
        assert_eq!(remap_rest("/opt/app", "/opt/app"), Some(""));
    }
}
