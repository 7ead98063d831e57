//! Function symbols of one ELF file, chosen the way perf chooses them.
//!
//! perf (`tools/perf/util/symbol-elf.c`, `symbol.c`) keeps STT_FUNC and
//! STT_GNU_IFUNC symbols, and STT_NOTYPE labels of default visibility, with
//! a name, defined in an executable section; of several symbols at one address it keeps the best by
//! `choose_best_symbol` (non-zero size, then non-weak, then global, then
//! fewer leading underscores, then the longer name); a symbol of size zero
//! extends to the next symbol.

use object::elf::{STB_GLOBAL, STB_WEAK, STT_FUNC, STT_GNU_IFUNC, STT_NOTYPE};
use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
use object::{
    Object, ObjectSection, ObjectSymbol, ObjectSymbolTable, SectionIndex, SectionKind,
    SymbolSection,
};

#[derive(Clone, Debug)]
pub struct Sym {
    pub start: u64,
    pub end: u64,
    pub name: String,
    binding: u8,
}

impl Sym {
    /// A symbol as stored after perf's rules were applied.
    pub fn new(start: u64, end: u64, name: String) -> Sym {
        Sym {
            start,
            end,
            name,
            binding: 0,
        }
    }
}

/// Where a symbol table came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TableKind {
    Symtab,
    Dynsym,
}

impl TableKind {
    pub fn as_str(self) -> &'static str {
        match self {
            TableKind::Symtab => "symtab",
            TableKind::Dynsym => "dynsym",
        }
    }
}

/// Sorted, deduplicated function symbols of one file (virtual addresses).
#[derive(Clone, Debug, Default)]
pub struct SymbolMap {
    syms: Vec<Sym>,
}

fn prefix_underscores(s: &str) -> usize {
    s.bytes().take_while(|&b| b == b'_').count()
}

/// perf's `choose_best_symbol`: true when `a` is better than `b`.
fn a_is_better(a: &Sym, b: &Sym) -> bool {
    let (la, lb) = (a.end - a.start, b.end - b.start);
    if la > 0 && lb == 0 {
        return true;
    }
    if la == 0 && lb > 0 {
        return false;
    }
    let (wa, wb) = (a.binding == STB_WEAK.0, b.binding == STB_WEAK.0);
    if wb && !wa {
        return true;
    }
    if wa && !wb {
        return false;
    }
    let (ga, gb) = (a.binding == STB_GLOBAL.0, b.binding == STB_GLOBAL.0);
    if ga && !gb {
        return true;
    }
    if gb && !ga {
        return false;
    }
    let (ua, ub) = (prefix_underscores(&a.name), prefix_underscores(&b.name));
    if ub > ua {
        return true;
    }
    if ua > ub {
        return false;
    }
    a.name.len() >= b.name.len()
}

impl SymbolMap {
    /// Reads the function symbols of `.symtab` (or `.dynsym`) of `file`.
    /// Sections are judged by `sections_of` when the symbols come from a
    /// separate debug file whose section headers are kept (NOBITS text).
    pub fn from_object(file: &object::File<'_>, kind: TableKind) -> SymbolMap {
        let iter: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = match kind {
            TableKind::Symtab => Box::new(file.symbols()),
            TableKind::Dynsym => Box::new(file.dynamic_symbols()),
        };
        let mut syms = Vec::new();
        for s in iter {
            let (st_type, binding, visibility) = match s.flags() {
                object::SymbolFlags::Elf { st_info, st_other } => {
                    (st_info.st_type(), st_info.st_bind().0, st_other.0 & 3)
                }
                _ => continue,
            };
            // elf_sym__is_function, or elf_sym__is_label: a named NOTYPE
            // symbol with default visibility (e.g. ld.so's _dl_start_user).
            let is_label = st_type == STT_NOTYPE && visibility == 0;
            if st_type != STT_FUNC && st_type != STT_GNU_IFUNC && !is_label {
                continue;
            }
            let SymbolSection::Section(idx) = s.section() else {
                continue;
            };
            if !is_exec_section(file, idx) {
                continue;
            }
            let Ok(name) = s.name() else { continue };
            if name.is_empty() {
                continue;
            }
            let start = s.address();
            syms.push(Sym {
                start,
                end: start.saturating_add(s.size()),
                name: name.to_string(),
                binding,
            });
        }
        Self::from_syms(syms)
    }

    /// Adds perf's synthesized PLT symbols (`dso__synthesize_plt_symbols`):
    /// a `.plt` symbol for the PLT header and one `<name>@plt` per
    /// `.rela.plt` / `.rel.plt` relocation, in relocation order, over the
    /// entries of `.plt.sec` when present (x86 IBT) or `.plt` after its
    /// header. IRELATIVE relocations have no symbol and become `@plt`.
    pub fn with_plt(mut self, file: &object::File<'_>) -> SymbolMap {
        let syms = plt_symbols(file);
        if syms.is_empty() {
            return self;
        }
        let mut all = std::mem::take(&mut self.syms);
        all.extend(syms);
        Self::from_syms(all)
    }

    fn from_syms(mut syms: Vec<Sym>) -> SymbolMap {
        syms.sort_by(|a, b| a.start.cmp(&b.start));
        // symbols__fixup_duplicate
        let mut out: Vec<Sym> = Vec::with_capacity(syms.len());
        for s in syms {
            if let Some(last) = out.last_mut() {
                if last.start == s.start {
                    // perf keeps the earlier symbol unless the later one is
                    // strictly better.
                    if !a_is_better(last, &s) {
                        *last = s;
                    }
                    continue;
                }
            }
            out.push(s);
        }
        // symbols__fixup_end
        for i in 0..out.len() {
            if out[i].end == out[i].start {
                out[i].end = match out.get(i + 1) {
                    Some(next) => next.start,
                    None => {
                        (out[i].start & !4095)
                            + 4096
                            + if out[i].start & 4095 != 0 { 4096 } else { 0 }
                    }
                };
            }
        }
        SymbolMap { syms: out }
    }

    /// A map of symbols already chosen, deduplicated and sized (as
    /// [`SymbolMap::syms`] gives them), e.g. read back from the store.
    pub fn from_chosen(mut syms: Vec<Sym>) -> SymbolMap {
        syms.sort_by_key(|s| s.start);
        SymbolMap { syms }
    }

    /// The symbols, by address.
    pub fn syms(&self) -> &[Sym] {
        &self.syms
    }

    pub fn len(&self) -> usize {
        self.syms.len()
    }

    pub fn is_empty(&self) -> bool {
        self.syms.is_empty()
    }

    /// The symbol containing `addr` (a virtual address).
    pub fn find(&self, addr: u64) -> Option<&Sym> {
        let i = self.syms.partition_point(|s| s.start <= addr);
        // Nested symbols: look back a little for one that still contains addr.
        for s in self.syms[..i].iter().rev().take(16) {
            if addr < s.end || (addr == s.start && s.start == s.end) {
                return Some(s);
            }
        }
        None
    }
}

fn plt_symbols(file: &object::File<'_>) -> Vec<Sym> {
    use object::ObjectSection;
    let mut out = Vec::new();
    let Some(plt) = file.section_by_name(".plt") else {
        return out;
    };
    let (rel, rela) = match file.section_by_name(".rela.plt") {
        Some(s) => (s, true),
        None => match file.section_by_name(".rel.plt") {
            Some(s) => (s, false),
            None => return out,
        },
    };
    let Ok(data) = rel.data() else { return out };
    let is64 = file.is_64();
    let le = file.is_little_endian();
    let entsize = match (is64, rela) {
        (true, true) => 24,
        (true, false) => 16,
        (false, true) => 12,
        (false, false) => 8,
    };
    let rd = |b: &[u8]| -> u64 {
        let mut v = 0u64;
        for (i, x) in b.iter().enumerate() {
            if le {
                v |= (*x as u64) << (8 * i);
            } else {
                v = (v << 8) | *x as u64;
            }
        }
        v
    };
    const HEADER: u64 = 16;
    const ENTRY: u64 = 16;
    let plt_sec = file.section_by_name(".plt.sec");
    out.push(Sym {
        start: plt.address(),
        end: plt.address()
            + if plt_sec.is_some() {
                plt.size()
            } else {
                HEADER
            },
        name: ".plt".into(),
        binding: STB_GLOBAL.0,
    });
    let mut at = match &plt_sec {
        Some(s) => s.address(),
        None => plt.address() + HEADER,
    };
    let limit = match &plt_sec {
        Some(s) => s.address() + s.size(),
        None => plt.address() + plt.size(),
    };
    for r in data.chunks_exact(entsize) {
        if at + ENTRY > limit {
            break;
        }
        let word = if is64 { 8 } else { 4 };
        let info = rd(&r[word..2 * word]);
        let symidx = if is64 { info >> 32 } else { info >> 8 };
        let name = if symidx == 0 {
            String::new()
        } else {
            file.dynamic_symbol_table()
                .and_then(|t| t.symbol_by_index(object::SymbolIndex(symidx as usize)).ok())
                .and_then(|s| s.name().ok().map(crate::demangle))
                .unwrap_or_default()
        };
        out.push(Sym {
            start: at,
            end: at + ENTRY,
            name: format!("{name}@plt"),
            binding: STB_GLOBAL.0,
        });
        at += ENTRY;
    }
    out
}

fn is_exec_section(file: &object::File<'_>, idx: SectionIndex) -> bool {
    match file.section_by_index(idx) {
        Ok(sec) => match sec.flags() {
            object::SectionFlags::Elf { sh_flags, .. } => {
                sh_flags.0 & object::elf::SHF_EXECINSTR.0 != 0
            }
            _ => sec.kind() == SectionKind::Text,
        },
        Err(_) => false,
    }
}

/// PT_LOAD segments: (file offset, vaddr, file size) to turn a file offset
/// (what a sample's address is, relative to its mapping) into the virtual
/// address that symbols and DWARF use.
#[derive(Clone, Debug, Default)]
pub struct LoadSegments {
    segs: Vec<(u64, u64, u64)>,
}

impl LoadSegments {
    /// The load segments of the ELF file at `path` (memory-mapped: only
    /// the headers are read).
    pub fn from_path(path: &std::path::Path) -> Option<LoadSegments> {
        let l = crate::file::Loaded::open(path)?;
        Self::from_data(&l.data)
    }

    pub fn from_data(data: &[u8]) -> Option<LoadSegments> {
        let kind = object::FileKind::parse(data).ok()?;
        let mut segs = Vec::new();
        match kind {
            object::FileKind::Elf64 => {
                let f = ElfFile64::<object::Endianness>::parse(data).ok()?;
                let e = f.endian();
                for ph in f.elf_header().program_headers(e, data).ok()? {
                    if ph.p_type(e) == object::elf::PT_LOAD {
                        segs.push((
                            ph.p_offset(e),
                            ph.p_vaddr(e),
                            ph.p_filesz(e).max(ph.p_memsz(e)),
                        ));
                    }
                }
            }
            object::FileKind::Elf32 => {
                let f = object::read::elf::ElfFile32::<object::Endianness>::parse(data).ok()?;
                let e = f.endian();
                for ph in f.elf_header().program_headers(e, data).ok()? {
                    if ph.p_type(e) == object::elf::PT_LOAD {
                        segs.push((
                            ph.p_offset(e) as u64,
                            ph.p_vaddr(e) as u64,
                            ph.p_filesz(e).max(ph.p_memsz(e)) as u64,
                        ));
                    }
                }
            }
            _ => return None,
        }
        Some(LoadSegments { segs })
    }

    /// The link-time address of the start of a mapping of the file from
    /// offset `pgoff`: that of the segment the mapping was made for. A
    /// mapping starts at a page boundary, so its segment may start after
    /// `pgoff`, in a page it shares with the segment before (LLD lays
    /// segments out back to back: the executable one at file offset
    /// 0x27dc0 is mapped from offset 0x27000, inside the read-only one);
    /// the segment starting in the mapping's first 64 KiB is it, else the
    /// one holding `pgoff`.
    ///
    /// `holding`: a link-time address the mapping is known to hold (the
    /// `.text` of an executable mapping): the segment holding it is the
    /// mapping's when the mapping can start at `pgoff` (an LLD PIE maps
    /// file page 0 twice, read-only for the first segment and executable
    /// for the second, which starts at offset 0x680).
    pub fn mapping_vaddr(&self, pgoff: u64, holding: Option<u64>) -> Option<u64> {
        let starts_in = |o: u64| o >= pgoff && o - pgoff < 0x10000;
        if let Some(a) = holding {
            // Saturating: the headers are the file's, untrusted.
            if let Some(&(o, v, sz)) = self
                .segs
                .iter()
                .find(|(_, v, sz)| a >= *v && a < v.saturating_add(*sz))
            {
                if starts_in(o) {
                    return Some(v.wrapping_sub(o - pgoff));
                }
                if pgoff >= o && pgoff < o.saturating_add(sz) {
                    return Some(v.wrapping_add(pgoff - o));
                }
            }
        }
        self.segs
            .iter()
            .filter(|(o, _, _)| starts_in(*o))
            .min_by_key(|(o, _, _)| *o)
            .map(|(o, v, _)| v.wrapping_sub(o - pgoff))
            .or_else(|| self.offset_to_vaddr(pgoff))
    }

    /// The virtual address of file offset `off`.
    pub fn offset_to_vaddr(&self, off: u64) -> Option<u64> {
        self.segs
            .iter()
            .find(|(o, _, sz)| off >= *o && off < o + sz)
            .map(|(o, v, _)| off - o + v)
    }

    /// The file offset of virtual address `vaddr`.
    pub fn vaddr_to_offset(&self, vaddr: u64) -> Option<u64> {
        self.segs
            .iter()
            .find(|(_, v, sz)| vaddr >= *v && vaddr < v + sz)
            .map(|(o, v, _)| vaddr - v + o)
    }

    pub fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// (file offset, virtual address, size) of each segment.
    pub fn segs(&self) -> &[(u64, u64, u64)] {
        &self.segs
    }

    pub fn from_segs(segs: Vec<(u64, u64, u64)>) -> LoadSegments {
        LoadSegments { segs }
    }
}

/// The symbol table of a located file: the binary's .symtab, else a debug
/// file's, else .dynsym; with perf's synthesized PLT symbols.
pub(crate) fn choose_symbols(
    found: &crate::file::Found,
    bin_obj: &object::File<'_>,
) -> Option<(SymbolMap, std::path::PathBuf, TableKind)> {
    let mut chosen: Option<(SymbolMap, std::path::PathBuf, TableKind)> = None;
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

#[cfg(test)]
mod tests {
    /// Where a mapping starts, for the layouts of `readelf -lW` of
    /// fixtures/perf/bin/lld_static (LLD, static), bin/lld (LLD PIE) and a
    /// GNU ld PIE (segments page-aligned in the file).
    #[test]
    fn mapping_starts() {
        let lld_static = LoadSegments::from_segs(vec![
            (0, 0x200000, 0x27d9c),
            (0x27dc0, 0x228dc0, 0x77d00),
            (0x9fac0, 0x2a1ac0, 0x3970),
        ]);
        // The executable mapping: from offset 0x27000 at 0x228000.
        assert_eq!(
            lld_static.mapping_vaddr(0x27000, Some(0x228dc0)),
            Some(0x228000)
        );
        assert_eq!(lld_static.mapping_vaddr(0x27000, None), Some(0x228000));
        assert_eq!(lld_static.mapping_vaddr(0, None), Some(0x200000));
        let lld_pie = LoadSegments::from_segs(vec![
            (0, 0, 0x674),
            (0x680, 0x1680, 0x1d0),
            (0x850, 0x2850, 0x1d8),
        ]);
        // File page 0 mapped twice: read-only at the base, executable a
        // page above; .text (0x1680) tells the executable one.
        assert_eq!(lld_pie.mapping_vaddr(0, Some(0x1680)), Some(0x1000));
        assert_eq!(lld_pie.mapping_vaddr(0, None), Some(0));
        let gnu = LoadSegments::from_segs(vec![
            (0, 0, 0x628),
            (0x1000, 0x1000, 0x1b9),
            (0x2000, 0x2000, 0xe4),
        ]);
        assert_eq!(gnu.mapping_vaddr(0x1000, Some(0x1040)), Some(0x1000));
        assert_eq!(gnu.mapping_vaddr(0x2000, None), Some(0x2000));
    }

    use super::*;

    fn s(start: u64, size: u64, name: &str, binding: u8) -> Sym {
        Sym {
            start,
            end: start + size,
            name: name.into(),
            binding,
        }
    }

    #[test]
    fn duplicate_symbols_resolve_like_perf() {
        // Same address: global beats local, fewer underscores beat more,
        // longer names win ties (perf's choose_best_symbol).
        let m = SymbolMap::from_syms(vec![
            s(0x100, 0x10, "__close_nocancel", 0),
            s(0x100, 0x10, "__GI___close_nocancel", 0),
            s(0x200, 0x10, "__foo", STB_GLOBAL.0),
            s(0x200, 0x10, "foo", 0),
            s(0x300, 0, "zero", STB_GLOBAL.0),
            s(0x380, 8, "after", STB_GLOBAL.0),
        ]);
        assert_eq!(m.find(0x105).unwrap().name, "__GI___close_nocancel");
        assert_eq!(m.find(0x200).unwrap().name, "__foo");
        assert_eq!(m.find(0x37f).unwrap().name, "zero");
        assert_eq!(m.find(0x380).unwrap().name, "after");
        assert!(m.find(0x388).is_none());
        assert!(m.find(0x50).is_none());
    }
}
