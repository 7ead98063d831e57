//! What this process knows of modules, in front of the persistent store:
//! facts per module, kernel symbols, the last modules kept open. Shared by
//! a `Config` and its clones.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::facts::{FactStore, ModuleFacts};
use crate::kallsyms::Kallsyms;

/// Facts in memory, shared by a `Config` and its clones (an
/// archive ingest symbolizes its captures with clones of one config), in
/// front of the persistent store when there is one.
#[derive(Debug, Default)]
pub struct Memo {
    modules: Mutex<HashMap<String, Arc<Mutex<Option<ModuleFacts>>>>>,
    kernels: Mutex<HashMap<String, Option<Arc<Kallsyms>>>>,
    /// Keys whose facts lacked DWARF and were learnt again this process
    /// (once is enough: see `may_learn_more`).
    rechecked: Mutex<std::collections::HashSet<String>>,
    /// The last modules opened, kept open (their DWARF decompressed once
    /// per run; see [`Opened`]).
    open: Mutex<Vec<(String, Arc<Opened>)>>,
    /// Captures symbolized with this memo ([`Memo::begin_capture`]): from
    /// the second on, modules costly to open are kept open beyond the
    /// last few (see [`KEEP_OPEN`]).
    captures: std::sync::atomic::AtomicUsize,
    /// Modules [`crate::prepare`] failed to learn, with the answer: the
    /// next `symbolize` of the module takes it instead of trying again, so
    /// that learning ahead changes no answer (a second try may fail
    /// otherwise: debuginfod's cache remembers a refused file as missing).
    failed: Mutex<HashMap<String, crate::ModuleResult>>,
    /// Times a module's files were opened to learn something (for tests
    /// and the benchmark: a warm store opens none).
    pub opened: std::sync::atomic::AtomicUsize,
}

/// Modules kept open per process: a debug file's compressed sections are
/// inflated once per run, not once per capture that samples a function
/// not learnt yet (an archive of runs of the same programs). The last
/// [`KEEP_OPEN`] used stay whatever they hold; of the others, when the
/// memo serves several captures, those whose compressed DWARF was inflated
/// (what is costly to open again), most recently used first, while their
/// inflated sections hold at most [`KEEP_INFLATED`] together,
/// [`KEEP_OPEN_MAX`] modules in all. With only the last four kept, an
/// archive of runs of `ls`, `gzip`, `sha256sum` and a program of its own
/// inflated the debug files of libc and ld.so eleven times each: 15 % of
/// its time. One capture symbolizes each module once: keeping them there
/// only raised the peak memory of a system-wide ingest by a quarter.
const KEEP_OPEN: usize = 4;
const KEEP_OPEN_MAX: usize = 32;
const KEEP_INFLATED: usize = 32 << 20;

/// A module's files, opened, with their DWARF sections once loaded.
pub struct Opened {
    /// addr2line contexts over `sections`, kept between uses: a context
    /// remembers the units, line tables and functions it has parsed, so a
    /// module's DWARF is parsed once per run, not once per capture that
    /// samples a function not learnt yet. One per thread using it at a
    /// time (a context is not `Sync`). Borrow from `sections`: declared
    /// before them, so dropped first.
    contexts: Mutex<Vec<crate::dwarf::Ctx<'static>>>,
    /// Borrows from `found`'s mapped (or owned) bytes, which never move
    /// while `found` lives: declared before it, so dropped first.
    sections: std::sync::OnceLock<Option<crate::dwarf::Sections<'static>>>,
    pub(crate) found: crate::file::Found,
}

impl std::fmt::Debug for Opened {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Opened({})", self.found.binary.path.display())
    }
}

impl Opened {
    pub(crate) fn new(found: crate::file::Found) -> Opened {
        Opened {
            contexts: Default::default(),
            sections: Default::default(),
            found,
        }
    }

    /// The DWARF sections of the file at `path` (the binary or one of its
    /// debug files), decompressed on first use.
    pub(crate) fn sections(
        &self,
        path: &std::path::Path,
    ) -> Option<&crate::dwarf::Sections<'static>> {
        self.sections
            .get_or_init(|| {
                let bytes: &[u8] = if path == self.found.binary.path {
                    &self.found.binary.data
                } else {
                    &self.found.debug.iter().find(|d| d.path == path)?.data
                };
                // SAFETY: the bytes are a memory map or a heap buffer owned
                // by `self.found`, which is never changed and outlives
                // `self.sections` (dropped first); moving `Opened` moves
                // neither.
                let bytes: &'static [u8] =
                    unsafe { std::mem::transmute::<&[u8], &'static [u8]>(bytes) };
                object::File::parse(bytes)
                    .ok()
                    .and_then(|o| crate::dwarf::Sections::load(&o))
            })
            .as_ref()
    }
}

/// Which of the modules kept open, least recently used first, stay open
/// (see [`KEEP_OPEN`]): each with the bytes of its inflated sections and
/// whether the memo serves several captures.
fn to_keep(modules: &[(usize, bool)]) -> Vec<bool> {
    let n = modules.len();
    let mut keep = vec![false; n];
    let (mut kept, mut held) = (0, 0);
    for i in (0..n).rev() {
        let (inflated, shared) = modules[i];
        let recent = n - i <= KEEP_OPEN;
        let costly = shared && inflated > 0 && held + inflated <= KEEP_INFLATED;
        if (recent || costly) && kept < KEEP_OPEN_MAX {
            keep[i] = true;
            kept += 1;
            held += inflated;
        }
    }
    keep
}

impl Opened {
    /// Bytes of DWARF sections inflated for this module so far.
    fn inflated_bytes(&self) -> usize {
        self.sections
            .get()
            .and_then(Option::as_ref)
            .map_or(0, crate::dwarf::Sections::inflated_bytes)
    }

    /// Runs `f` with an addr2line context over the DWARF of the file at
    /// `path` (see [`Opened::sections`]): one of those kept, else a new
    /// one, kept again afterwards. None when the file has no DWARF.
    pub(crate) fn with_context<T>(
        &self,
        path: &std::path::Path,
        f: impl FnOnce(&crate::dwarf::Ctx<'static>) -> T,
    ) -> Option<T> {
        let sections = self.sections(path)?;
        let kept = self
            .contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .pop();
        let ctx = match kept {
            Some(c) => c,
            // SAFETY: the context borrows `sections`' buffers (owned by
            // the `OnceLock`, never changed once set, and not moved by
            // moving `self`) and `found`'s bytes; it is kept in
            // `self.contexts`, dropped before either.
            None => unsafe {
                std::mem::transmute::<crate::dwarf::Ctx<'_>, crate::dwarf::Ctx<'static>>(
                    sections.context()?,
                )
            },
        };
        let out = f(&ctx);
        self.contexts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(ctx);
        Some(out)
    }
}

impl Memo {
    /// The module kept open under `key`, if it still is.
    pub(crate) fn open_get(&self, key: &str) -> Option<Arc<Opened>> {
        let mut o = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let i = o.iter().position(|(k, _)| k == key)?;
        let e = o.remove(i);
        let m = e.1.clone();
        o.push(e);
        Some(m)
    }

    /// Closes the module kept open under `key` (its files may differ now).
    pub(crate) fn open_forget(&self, key: &str) {
        let mut o = self.open.lock().unwrap_or_else(|e| e.into_inner());
        o.retain(|(k, _)| k != key);
    }

    /// Keeps `m` open under `key`; the least recently used go while more
    /// than [`KEEP_OPEN`] are kept and they are too many or hold too much
    /// ([`KEEP_OPEN_MAX`], [`KEEP_INFLATED`]).
    pub(crate) fn open_put(&self, key: &str, m: Arc<Opened>) {
        let mut o = self.open.lock().unwrap_or_else(|e| e.into_inner());
        o.retain(|(k, _)| k != key);
        o.push((key.to_string(), m));
        let shared = self.captures.load(std::sync::atomic::Ordering::Relaxed) > 1;
        let sizes: Vec<(usize, bool)> = o
            .iter()
            .map(|(_, m)| (m.inflated_bytes(), shared))
            .collect();
        let mut keep = to_keep(&sizes).into_iter();
        o.retain(|_| keep.next().unwrap_or(true));
    }
    /// Counts a capture about to be symbolized with this memo.
    pub fn begin_capture(&self) {
        self.captures
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Keeps `prepare`'s failure to learn `key`.
    pub(crate) fn put_failure(&self, key: &str, r: crate::ModuleResult) {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_string(), r);
    }

    /// `prepare`'s failure to learn `key`, once.
    pub(crate) fn take_failure(&self, key: &str) -> Option<crate::ModuleResult> {
        self.failed
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(key)
    }

    /// True the first time `key` is asked (for facts learnt again once
    /// per process).
    pub(crate) fn first_recheck(&self, key: &str) -> bool {
        self.rechecked
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key.to_string())
    }

    /// The slot of `key`, filled from `store` the first time it is asked.
    pub(crate) fn slot(
        &self,
        key: &str,
        store: Option<&Arc<dyn FactStore>>,
    ) -> Arc<Mutex<Option<ModuleFacts>>> {
        let mut m = self.modules.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(s) = m.get(key) {
            return s.clone();
        }
        let s = Arc::new(Mutex::new(store.and_then(|st| st.load(key))));
        m.insert(key.to_string(), s.clone());
        s
    }

    /// Kernel symbols under `key`: this process's, else the store's, else
    /// `read()` (saved to the store).
    pub(crate) fn kernel(
        &self,
        key: &str,
        store: Option<&Arc<dyn FactStore>>,
        read: impl FnOnce() -> Option<Arc<Kallsyms>>,
    ) -> Option<Arc<Kallsyms>> {
        let mut m = self.kernels.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(k) = m.get(key) {
            return k.clone();
        }
        let k = match store.and_then(|s| s.load_kernel(key)) {
            Some(k) => Some(Arc::new(k)),
            None => {
                let k = read().filter(|k| !k.is_empty());
                if let (Some(k), Some(s)) = (&k, store) {
                    s.save_kernel(key, k);
                }
                k
            }
        };
        m.insert(key.to_string(), k.clone());
        k
    }
}

#[cfg(test)]
mod tests {
    use super::{to_keep, KEEP_INFLATED};

    #[test]
    fn modules_of_several_captures_stay_open_while_what_they_inflated_fits() {
        const MB: usize = 1 << 20;
        let (t, f) = (true, false);
        let again = |v: &[usize]| v.iter().map(|&b| (b, true)).collect::<Vec<_>>();
        // One capture: the last four only.
        // The last four stay, whatever they hold.
        assert_eq!(to_keep(&[(0, f); 4]), [t, t, t, t]);
        assert_eq!(to_keep(&[(99 * MB, f); 4]), [t, t, t, t]);
        // Older ones without inflated sections (cheap to open again) go.
        assert_eq!(to_keep(&again(&[0, 0, 0, 0, 0, 0])), [f, f, t, t, t, t]);
        // Older ones with inflated sections (libc's and ld.so's debug
        // files: 10 and 1 MB) stay while they fit, the most recent first,
        // when the memo serves several captures.
        assert_eq!(
            to_keep(&again(&[10 * MB, 0, MB, 0, 0, 0, 0])),
            [t, f, t, t, t, t, t]
        );
        assert_eq!(
            to_keep(&[
                (10 * MB, f),
                (0, f),
                (MB, f),
                (0, f),
                (0, f),
                (0, f),
                (0, f)
            ]),
            [f, f, f, t, t, t, t]
        );
        assert_eq!(
            to_keep(&again(&[20 * MB, 20 * MB, 0, 0, 0, 0])),
            [f, t, t, t, t, t]
        );
        assert_eq!(
            to_keep(&again(&[KEEP_INFLATED, 0, 0, 0, 0])),
            [t, t, t, t, t]
        );
        assert_eq!(
            to_keep(&again(&[KEEP_INFLATED + 1, 0, 0, 0, 0])),
            [f, t, t, t, t]
        );
        // Never more than the cap.
        assert_eq!(to_keep(&again(&[1; 40])).iter().filter(|&&k| k).count(), 32);
    }
}
