//! DWARF stack unwinding of sampled user stacks (perf `--call-graph
//! dwarf`), with framehop over the `.eh_frame` / `.eh_frame_hdr` / `.text`
//! of the mapped files, found like symbols (build-id checked).
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

/// A byte range of a memory-mapped file, shared by every process that maps
/// it.
#[derive(Clone)]
pub struct Slice {
    map: Arc<find::Bytes>,
    range: Range<usize>,
}

impl Deref for Slice {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.map[self.range.clone()]
    }
}

/// The unwind sections of one file.
struct UnwindFile {
    segs: LoadSegments,
    text: Option<(Range<u64>, Slice)>,
    eh_frame: Option<(Range<u64>, Slice)>,
    eh_frame_hdr: Option<(Range<u64>, Slice)>,
    /// `.debug_frame` of the binary or its debug file: CFI for code that
    /// `.eh_frame` does not describe (some hand-written assembly, binaries
    /// built with -fno-asynchronous-unwind-tables).
    debug_frame: Option<Slice>,
    got: Option<Range<u64>>,
}

impl UnwindFile {
    fn load(cfg: &Config, path: &str, build_id: Option<&str>) -> Option<UnwindFile> {
        let found = find::locate(cfg, path, build_id).ok()?;
        let map = Arc::new(found.binary.data);
        let obj = object::File::parse(&map[..]).ok()?;
        let section = |name: &str| -> Option<(Range<u64>, Slice)> {
            let s = obj.section_by_name(name)?;
            let (off, size) = s.file_range()?;
            let (off, size) = (usize::try_from(off).ok()?, usize::try_from(size).ok()?);
            if off.checked_add(size)? > map.len() {
                return None;
            }
            Some((
                s.address()..s.address() + s.size(),
                Slice {
                    map: map.clone(),
                    range: off..off + size,
                },
            ))
        };
        let text = section(".text");
        let eh_frame = section(".eh_frame");
        let eh_frame_hdr = section(".eh_frame_hdr");
        let debug_frame = std::iter::once(map.clone())
            .chain(found.debug.into_iter().map(|d| Arc::new(d.data)))
            .find_map(|m| {
                let o = object::File::parse(&m[..]).ok()?;
                let s = o.section_by_name(".debug_frame")?;
                if s.size() == 0 {
                    return None;
                }
                // Compressed in Debian's -dbg files: keep a copy then.
                match s.compressed_file_range().ok()?.format {
                    object::CompressionFormat::None => {
                        let (off, size) = s.file_range()?;
                        let (off, size) = (usize::try_from(off).ok()?, usize::try_from(size).ok()?);
                        (off.checked_add(size)? <= m.len()).then(|| Slice {
                            map: m.clone(),
                            range: off..off + size,
                        })
                    }
                    _ => {
                        let v = s.uncompressed_data().ok()?.into_owned();
                        let n = v.len();
                        Some(Slice {
                            map: Arc::new(find::Bytes::Owned(v)),
                            range: 0..n,
                        })
                    }
                }
            });
        let got = obj
            .section_by_name(".got")
            .map(|s| s.address()..s.address() + s.size());
        let segs = LoadSegments::from_data(&map[..])?;
        Some(UnwindFile {
            segs,
            text,
            eh_frame,
            eh_frame_hdr,
            debug_frame,
            got,
        })
    }

    fn module(&self, name: &str, start: u64, end: u64, pgoff: u64) -> Option<Module<Slice>> {
        let vaddr = self.segs.offset_to_vaddr(pgoff)?;
        let base_avma = start.checked_sub(vaddr)?;
        let info = ExplicitModuleSectionInfo {
            base_svma: 0,
            text_svma: self.text.as_ref().map(|t| t.0.clone()),
            text: self.text.as_ref().map(|t| t.1.clone()),
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
