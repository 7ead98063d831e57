//! DWARF stack unwinding of sampled user stacks (perf `--call-graph
//! dwarf`), with framehop over each mapped file's CFI (`.eh_frame` /
//! `.eh_frame_hdr`, or `.debug_frame`), taken from the symbol store or
//! read from the file, found like symbols (build-id checked), once.
//!
//! The caller gives, per sample, the process's executable mappings, the
//! registers (ip, sp, bp) and the stack bytes perf copied from sp upwards;
//! [`DwarfUnwinder::unwind`] returns the frames innermost first: the
//! sampled ip, then return addresses (as found on the stack: callers of
//! return addresses look them up at address - 1).

use std::collections::HashMap;
use std::ops::{Deref, Range};
use std::sync::Arc;

use framehop::x86_64::{CacheX86_64, UnwindRegsX86_64, UnwinderX86_64};
use framehop::{ExplicitModuleSectionInfo, FrameAddress, Module, Unwinder};
use object::{Object, ObjectSection};

use crate::elf::LoadSegments;
use crate::find::{self, Config};

/// A section's bytes, shared by every process that maps the file.
#[derive(Clone)]
pub struct Slice(Arc<Vec<u8>>);

impl Deref for Slice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.0
    }
}

pub use crate::facts::{Cfi, CfiSection};

/// The unwind sections of one file.
struct UnwindFile {
    segs: LoadSegments,
    text: Option<Range<u64>>,
    eh_frame: Option<(Range<u64>, Slice)>,
    eh_frame_hdr: Option<(Range<u64>, Slice)>,
    /// `.debug_frame` of the binary or its debug file: CFI for binaries
    /// without `.eh_frame` (built with -fno-asynchronous-unwind-tables).
    debug_frame: Option<Slice>,
    got: Option<Range<u64>>,
}

impl UnwindFile {
    /// The module's unwind facts: the store's, else read from its files
    /// (and kept in the store).
    fn load(cfg: &Config, path: &str, build_id: Option<&str>) -> Option<UnwindFile> {
        let key = crate::find::module_key(cfg, path, build_id);
        let store = key.as_deref().zip(cfg.store.as_ref());
        if let Some(c) = store.and_then(|(k, st)| st.load_cfi(k)) {
            return UnwindFile::from_cfi(c);
        }
        cfg.memo()
            .opened
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let cfi = read_cfi(cfg, path, build_id)?;
        if let Some((k, st)) = store {
            st.save_cfi(k, &cfi);
        }
        UnwindFile::from_cfi(cfi)
    }

    fn from_cfi(c: Cfi) -> Option<UnwindFile> {
        let mut f = UnwindFile {
            segs: LoadSegments::from_segs(c.segments),
            text: None,
            eh_frame: None,
            eh_frame_hdr: None,
            debug_frame: None,
            got: None,
        };
        for s in c.sections {
            let slice = Slice(Arc::new(s.data));
            match s.name.as_str() {
                ".text" => f.text = Some(s.svma),
                ".got" => f.got = Some(s.svma),
                ".eh_frame" => f.eh_frame = Some((s.svma, slice)),
                ".eh_frame_hdr" => f.eh_frame_hdr = Some((s.svma, slice)),
                ".debug_frame" => f.debug_frame = Some(slice),
                _ => {}
            }
        }
        (f.eh_frame.is_some() || f.debug_frame.is_some()).then_some(f)
    }

    fn module(&self, name: &str, start: u64, end: u64, pgoff: u64) -> Option<Module<Slice>> {
        // An executable mapping: the one of the segment holding .text.
        let vaddr = self
            .segs
            .mapping_vaddr(pgoff, self.text.as_ref().map(|t| t.start))?;
        let base_avma = start.checked_sub(vaddr)?;
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.clone(),
            // framehop reads code bytes for Mach-O only.
            text: None,
            got_svma: self.got.clone(),
            eh_frame_svma: self.eh_frame.as_ref().map(|t| t.0.clone()),
            eh_frame: self.eh_frame.as_ref().map(|t| t.1.clone()),
            eh_frame_hdr_svma: self.eh_frame_hdr.as_ref().map(|t| t.0.clone()),
            eh_frame_hdr: self.eh_frame_hdr.as_ref().map(|t| t.1.clone()),
            stubs_svma: None,
            stub_helper_svma: None,
            unwind_info: None,
            debug_frame: self.debug_frame.clone(),
            text_segment_svma: None,
            text_segment: None,
        };
        Some(Module::new(name.to_string(), start..end, base_avma, info))
    }
}

/// Reads a module's [`Cfi`] from its files (found like symbols, build-id
/// checked). None: not found, or no CFI.
fn read_cfi(cfg: &Config, path: &str, build_id: Option<&str>) -> Option<Cfi> {
    let found = find::locate(cfg, path, build_id).ok()?;
    let data: &[u8] = &found.binary.data;
    let obj = object::File::parse(data).ok()?;
    let mut sections = Vec::new();
    let mut add = |o: &object::File<'_>, name: &str, with_data: bool| -> Option<()> {
        let s = o.section_by_name(name)?;
        let bytes = if with_data {
            let b = s.uncompressed_data().ok()?.into_owned();
            if b.is_empty() {
                return None;
            }
            b
        } else {
            Vec::new()
        };
        sections.push(CfiSection {
            name: name.to_string(),
            svma: s.address()..s.address().saturating_add(s.size()),
            data: bytes,
        });
        Some(())
    };
    add(&obj, ".text", false);
    add(&obj, ".got", false);
    let eh = add(&obj, ".eh_frame", true).is_some();
    if eh {
        add(&obj, ".eh_frame_hdr", true);
    } else if add(&obj, ".debug_frame", true).is_none() {
        // Debian's -dbg files keep it compressed: inflated once, kept.
        for d in &found.debug {
            if let Ok(o) = object::File::parse(&*d.data) {
                if add(&o, ".debug_frame", true).is_some() {
                    break;
                }
            }
        }
    }
    let segments = LoadSegments::from_data(data)?.segs().to_vec();
    sections
        .iter()
        .any(|s| !s.data.is_empty())
        .then_some(Cfi { segments, sections })
}

/// The registers unwinding starts from.
#[derive(Clone, Copy, Debug)]
pub struct Regs {
    pub ip: u64,
    pub sp: u64,
    pub bp: u64,
}

/// An executable mapping of a process.
#[derive(Clone, Debug)]
pub struct Mapping {
    pub start: u64,
    pub end: u64,
    pub pgoff: u64,
    pub path: String,
    pub build_id: Option<String>,
}

/// Unwinds sampled stacks; keeps the files' unwind sections and one
/// framehop unwinder per process address space.
pub struct DwarfUnwinder {
    cfg: Config,
    files: HashMap<(String, Option<String>), Option<Arc<UnwindFile>>>,
    spaces: HashMap<(i32, u64), UnwinderX86_64<Slice>>,
    cache: CacheX86_64,
}

/// Most frames followed per stack (perf's default max-stack is 127).
const MAX_FRAMES: usize = 256;

impl DwarfUnwinder {
    pub fn new(cfg: Config) -> Self {
        DwarfUnwinder {
            cfg,
            files: HashMap::new(),
            spaces: HashMap::new(),
            cache: CacheX86_64::new(),
        }
    }

    fn space(
        &mut self,
        key: (i32, u64),
        maps: &mut dyn FnMut() -> Vec<Mapping>,
    ) -> &UnwinderX86_64<Slice> {
        if !self.spaces.contains_key(&key) {
            if self.spaces.len() >= 1024 {
                self.spaces.clear();
            }
            let mut u = UnwinderX86_64::new();
            for m in maps() {
                let k = (m.path.clone(), m.build_id.clone());
                let cfg = &self.cfg;
                let file = self
                    .files
                    .entry(k)
                    .or_insert_with(|| {
                        UnwindFile::load(cfg, &m.path, m.build_id.as_deref()).map(Arc::new)
                    })
                    .clone();
                if let Some(module) = file.and_then(|f| f.module(&m.path, m.start, m.end, m.pgoff))
                {
                    u.add_module(module);
                }
            }
            self.spaces.insert(key, u);
        }
        &self.spaces[&key]
    }

    /// Unwinds one stack; pushes frame addresses onto `out`, innermost
    /// first.
    pub fn unwind(
        &mut self,
        space: (i32, u64),
        maps: &mut dyn FnMut() -> Vec<Mapping>,
        regs: Regs,
        stack: &[u8],
        out: &mut Vec<u64>,
    ) {
        // Look the unwinder up first, then borrow the cache separately.
        self.space(space, maps);
        let unwinder = &self.spaces[&space];
        let Regs { ip, sp, bp } = regs;
        let mut read = |addr: u64| -> Result<u64, ()> {
            let off = usize::try_from(addr.checked_sub(sp).ok_or(())?).map_err(|_| ())?;
            let b = stack.get(off..off.checked_add(8).ok_or(())?).ok_or(())?;
            Ok(u64::from_le_bytes(b.try_into().map_err(|_| ())?))
        };
        let regs = UnwindRegsX86_64::new(ip, sp, bp);
        let mut it = unwinder.iter_frames(ip, regs, &mut self.cache, &mut read);
        loop {
            match it.next() {
                Ok(Some(FrameAddress::InstructionPointer(a))) => out.push(a),
                Ok(Some(FrameAddress::ReturnAddress(a))) => out.push(a.get()),
                // The end of the stack, or an unreadable stack address or
                // code without unwind information: the frames so far stay.
                Ok(None) | Err(_) => break,
            }
            if out.len() >= MAX_FRAMES {
                break;
            }
        }
    }
}
