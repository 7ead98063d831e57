//! What the symbolizer learns about one module, kept so that it is learnt
//! once: the load segments, the function symbols perf would choose, and
//! the DWARF answer (inline chain and source lines) of every address range
//! it has been asked about. A module's facts are keyed by build-id (or by
//! path, size and modification time without one) and shared by every
//! capture of a process through [`Memo`], and across processes through a
//! [`FactStore`] (the persistent symbol store is written by trawl-enrich,
//! in Parquet; this crate knows nothing of the format).
//!
//! DWARF is learnt a *window* at a time: the whole function containing a
//! requested address (or the 4 KiB page around it, for addresses outside
//! any function symbol or in one larger than 64 KiB). A window is cut at
//! every place where addr2line's answer can change: the rows of the line
//! tables, and the ranges of the functions and inlined calls of the units
//! that hold it. Between two cuts the answer is asked of addr2line once,
//! so an address answered from the facts is answered exactly as
//! addr2line answers it, and a later capture that samples other
//! instructions of the same functions opens no file.

use std::collections::HashMap;
use std::path::PathBuf;

use gimli::{EndianSlice, RunTimeEndian};

use crate::demangle::NameCache;
use crate::dwarf::LineFrame;
use crate::elf::{LoadSegments, Sym, SymbolMap, TableKind};
use crate::kallsyms::Kallsyms;
use crate::request::{Resolved, SymbolHit};

/// Functions larger than this are learnt a page at a time.
const MAX_WINDOW: u64 = 64 << 10;
const PAGE: u64 = 4096;

/// An address range with one DWARF answer throughout: the inline chain,
/// innermost first, as [`crate::dwarf::frames`] gives it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineRange {
    pub lo: u64,
    pub hi: u64,
    pub frames: Vec<LineFrame>,
}

/// What a module's files say regardless of the addresses asked: where they
/// are, the symbol table chosen, the load segments.
#[derive(Clone, Debug, Default)]
pub struct Base {
    /// File whose program headers translated offsets to addresses.
    pub binary: Option<PathBuf>,
    /// File whose symbol table named the functions, and which table.
    pub symbols_file: Option<PathBuf>,
    pub table: Option<TableKind>,
    /// File whose DWARF gives source lines; None: the module has none.
    pub debug_info: Option<PathBuf>,
    pub segments: LoadSegments,
    /// Function symbols with their names as stored in the file (demangled
    /// when looked up).
    pub symbols: SymbolMap,
    /// Where debug files were looked for when this was learnt (a digest of
    /// the debug directories, debuginfod servers and roots given): facts
    /// without DWARF are learnt again where one looks elsewhere.
    pub searched: Option<String>,
}

/// Everything learnt about one module.
#[derive(Clone, Debug, Default)]
pub struct ModuleFacts {
    pub base: Base,
    /// Virtual address ranges whose DWARF answers are all in `lines`
    /// (sorted, disjoint). Addresses in them without a `lines` range have
    /// no DWARF answer.
    pub covered: Vec<(u64, u64)>,
    /// Sorted, disjoint.
    pub lines: Vec<LineRange>,
}

/// Learnt facts to add to a module's entry: its base when the entry is
/// new, and the windows learnt.
#[derive(Clone, Copy, Debug)]
pub struct Part<'a> {
    pub base: Option<&'a Base>,
    pub covered: &'a [(u64, u64)],
    pub lines: &'a [LineRange],
}

/// Where module facts are kept between processes. Implementations make
/// each save atomic, share the store safely between processes, and turn
/// an entry they cannot read back intact into `None` (and a problem for
/// [`FactStore::take_problems`]), so that it is learnt again.
pub trait FactStore: Send + Sync + std::fmt::Debug {
    /// A module's facts (all its saved parts), or None when the store has
    /// no whole entry for `key`.
    fn load(&self, key: &str) -> Option<ModuleFacts>;
    /// Adds a part to `key`'s entry (a part with a base starts a new one).
    fn save(&self, key: &str, part: Part<'_>);
    /// Kernel symbols saved under `key`.
    fn load_kernel(&self, key: &str) -> Option<Kallsyms>;
    fn save_kernel(&self, key: &str, k: &Kallsyms);
    /// The decoded functions of `key` the store holds among those starting
    /// at `starts` (virtual addresses, sorted), in address order.
    fn load_code(&self, key: &str, starts: &[u64]) -> Vec<FunctionCode>;
    /// Adds decoded functions to `key`'s entry.
    fn save_code(&self, key: &str, code: &[FunctionCode]);
    /// The unwind sections and load segments of `key`, when kept.
    fn load_cfi(&self, key: &str) -> Option<Cfi>;
    fn save_cfi(&self, key: &str, cfi: &Cfi);
    /// What went wrong reading or writing the store since the last call.
    fn take_problems(&self) -> Vec<StoreProblem>;
}

/// Something that went wrong with a part of a [`FactStore`]: none of it
/// changes an answer (a part that does not read back is learnt again, a
/// part that cannot be written is learnt again next time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreProblem {
    /// `symbol_store_damaged` (a part did not read back whole: removed,
    /// learnt again) or `symbol_store_unwritable`.
    pub kind: &'static str,
    /// The part's file.
    pub path: String,
    pub message: String,
}

impl std::fmt::Display for StoreProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "symbol store: {}: {}", self.path, self.message)
    }
}

impl ModuleFacts {
    /// Facts from a saved base and parts.
    pub fn from_parts(base: Base, covered: Vec<(u64, u64)>, lines: Vec<LineRange>) -> Self {
        let mut f = ModuleFacts {
            base,
            covered: Vec::new(),
            lines: Vec::new(),
        };
        f.add(covered, lines);
        f
    }

    /// Adds learnt windows (overlaps with what is known are dropped: the
    /// same module gives the same answers).
    pub fn add(&mut self, covered: Vec<(u64, u64)>, lines: Vec<LineRange>) {
        // Both are kept sorted and disjoint: nothing new, nothing to do
        // (every capture of an archive asks, most learn nothing).
        if covered.is_empty() && lines.is_empty() {
            return;
        }
        self.covered.extend(covered);
        self.covered.sort_unstable();
        let mut merged: Vec<(u64, u64)> = Vec::with_capacity(self.covered.len());
        for (lo, hi) in self.covered.drain(..) {
            match merged.last_mut() {
                Some(l) if lo <= l.1 => l.1 = l.1.max(hi),
                _ => merged.push((lo, hi)),
            }
        }
        self.covered = merged;
        self.lines.extend(lines);
        self.lines.sort_by_key(|r| (r.lo, r.hi));
        let mut out: Vec<LineRange> = Vec::with_capacity(self.lines.len());
        for mut r in self.lines.drain(..) {
            if let Some(l) = out.last() {
                if r.lo < l.hi {
                    if r.hi <= l.hi {
                        continue;
                    }
                    r.lo = l.hi;
                }
            }
            out.push(r);
        }
        self.lines = out;
    }

    /// The virtual address of file offset `off` (the vdso's offsets are
    /// its addresses when no segment holds them).
    pub fn vaddr_of(&self, off: u64, is_vdso: bool) -> Option<u64> {
        let segs = &self.base.segments;
        if segs.is_empty() || is_vdso && segs.offset_to_vaddr(off).is_none() {
            Some(off)
        } else {
            segs.offset_to_vaddr(off)
        }
    }

    /// Is the DWARF answer of `vaddr` known (or is there no DWARF)?
    pub fn knows(&self, vaddr: u64) -> bool {
        if self.base.debug_info.is_none() {
            return true;
        }
        let i = self.covered.partition_point(|c| c.0 <= vaddr);
        i > 0 && vaddr < self.covered[i - 1].1
    }

    /// The window to learn for `vaddr`: its function, or its page.
    pub fn window(&self, vaddr: u64) -> (u64, u64) {
        match self.base.symbols.find(vaddr) {
            Some(s) if s.end > s.start && s.end - s.start <= MAX_WINDOW && vaddr < s.end => {
                (s.start, s.end)
            }
            _ => {
                let lo = vaddr & !(PAGE - 1);
                (lo, lo.saturating_add(PAGE))
            }
        }
    }

    /// What is known of `vaddr` (which must be [`Self::knows`]).
    pub fn resolve(&self, vaddr: u64, names: &mut NameCache) -> Resolved {
        let symbol = self.base.symbols.find(vaddr).map(|s| SymbolHit {
            name: names.demangle(&s.name),
            offset: vaddr - s.start,
        });
        let i = self.lines.partition_point(|r| r.lo <= vaddr);
        let inline = match i.checked_sub(1).map(|i| &self.lines[i]) {
            Some(r) if vaddr < r.hi => r.frames.clone(),
            _ => Vec::new(),
        };
        Resolved { symbol, inline }
    }

    /// The symbols as stored (for the persistent store).
    pub fn symbols(&self) -> &[Sym] {
        self.base.symbols.syms()
    }
}

/// Distinct windows of `vaddrs`, merged where they overlap.
pub fn windows(facts: &ModuleFacts, vaddrs: impl IntoIterator<Item = u64>) -> Vec<(u64, u64)> {
    let mut w: Vec<(u64, u64)> = vaddrs.into_iter().map(|a| facts.window(a)).collect();
    w.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(w.len());
    for (lo, hi) in w {
        match out.last_mut() {
            Some(l) if lo <= l.1 => l.1 = l.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

use crate::dwarf::Ctx;

/// The DWARF answers over each window, cut where they can change (see the
/// module documentation); ranges without an answer are left out.
pub fn learn_windows(
    ctx: &Ctx<'_>,
    windows: &[(u64, u64)],
    names: &mut NameCache,
) -> Vec<LineRange> {
    // Per unit (by its offset in .debug_info), the sorted ends of the
    // ranges of its functions and inlined calls and of the unit itself.
    let mut unit_cuts: HashMap<usize, Vec<u64>> = HashMap::new();
    let mut out: Vec<LineRange> = Vec::new();
    for &(lo, hi) in windows {
        if hi <= lo {
            continue;
        }
        let mut cuts: Vec<u64> = vec![lo, hi];
        let mut probes = vec![lo];
        if let Ok(rows) = ctx.find_location_range(lo, hi) {
            for (addr, len, _) in rows {
                let end = addr.saturating_add(len);
                if addr > lo && addr < hi {
                    cuts.push(addr);
                    probes.push(addr);
                }
                if end > lo && end < hi {
                    cuts.push(end);
                }
            }
        }
        // The range ends of each unit holding a probe, once per unit (the
        // probes of a function are mostly in one).
        let mut units: Vec<usize> = Vec::new();
        for p in probes {
            let Some(unit) = ctx.find_dwarf_and_unit(p).skip_all_loads() else {
                continue;
            };
            let key = unit.header.offset().0;
            if units.contains(&key) {
                continue;
            }
            units.push(key);
            let ends = unit_cuts
                .entry(key)
                .or_insert_with(|| unit_range_ends(unit));
            let from = ends.partition_point(|&e| e <= lo);
            cuts.extend(ends[from..].iter().take_while(|&&e| e < hi));
        }
        cuts.sort_unstable();
        cuts.dedup();
        for w in cuts.windows(2) {
            let frames = crate::dwarf::frames(ctx, w[0], names);
            if frames.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some(l) if l.hi == w[0] && l.frames == frames => l.hi = w[1],
                _ => out.push(LineRange {
                    lo: w[0],
                    hi: w[1],
                    frames,
                }),
            }
        }
    }
    out
}

/// The sorted, distinct start and end addresses of the ranges of a unit,
/// its subprograms and its inlined calls.
fn unit_range_ends(unit: gimli::UnitRef<'_, EndianSlice<'_, RunTimeEndian>>) -> Vec<u64> {
    let mut ends = Vec::new();
    let mut push = |it: gimli::Result<gimli::RangeIter<EndianSlice<'_, RunTimeEndian>>>| {
        if let Ok(mut it) = it {
            while let Ok(Some(r)) = it.next() {
                if r.begin < r.end {
                    ends.push(r.begin);
                    ends.push(r.end);
                }
            }
        }
    };
    push(unit.unit_ranges());
    let mut entries = unit.entries();
    // A corrupt unit cannot loop: the cursor only moves forward.
    while let Ok(Some(e)) = entries.next_dfs() {
        if matches!(
            e.tag(),
            gimli::DW_TAG_subprogram | gimli::DW_TAG_inlined_subroutine | gimli::DW_TAG_entry_point
        ) {
            push(unit.die_ranges(e));
        }
    }
    ends.sort_unstable();
    ends.dedup();
    ends
}

/// One decoded instruction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Insn {
    /// File offset (how frames address the module: `frame.rel_pc`).
    pub offset: u64,
    /// Virtual address in the file, as objdump prints it.
    pub address: u64,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// AT&T syntax.
    pub text: String,
}

/// One function's code.
#[derive(Clone, Debug)]
pub struct FunctionCode {
    /// Demangled symbol name.
    pub name: String,
    /// File offset and virtual address of its first byte.
    pub offset: u64,
    pub address: u64,
    pub insns: Vec<Insn>,
}

/// What unwinding needs of a module, kept in the symbol store so that a
/// later run opens none of its files: its load segments, and the sections
/// framehop reads for an ELF file — `.eh_frame` with `.eh_frame_hdr`, or
/// `.debug_frame` (of the binary or its debug file) when the binary has
/// no `.eh_frame` (framehop ignores `.debug_frame` otherwise) — and the
/// addresses of `.text` and `.got` (bases of CFI pointer encodings).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cfi {
    /// (file offset, virtual address, size) of each load segment.
    pub segments: Vec<(u64, u64, u64)>,
    pub sections: Vec<CfiSection>,
}

/// One section of a [`Cfi`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CfiSection {
    /// `.eh_frame`, `.eh_frame_hdr`, `.debug_frame`, or `.text` / `.got`
    /// (addresses only: `data` empty).
    pub name: String,
    /// Its virtual addresses in the file.
    pub svma: std::ops::Range<u64>,
    pub data: Vec<u8>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::elf::TableKind;

    /// Learns every function (or `limit` of them, spread over the file)
    /// of the ELF file `path` a window at a time, then checks that every
    /// byte address of them is answered as addr2line answers it directly.
    fn check(path: &std::path::Path, limit: usize) {
        let data = std::fs::read(path).unwrap();
        let obj = object::File::parse(&*data).unwrap();
        let sections = crate::dwarf::Sections::load(&obj).expect("DWARF");
        let ctx = sections.context().unwrap();
        let map = SymbolMap::from_object(&obj, TableKind::Symtab);
        let syms: Vec<Sym> = map.syms().to_vec();
        let step = (syms.len() / limit).max(1);
        let picked: Vec<&Sym> = syms
            .iter()
            .step_by(step)
            .filter(|s| s.end > s.start && s.end - s.start <= MAX_WINDOW)
            .collect();
        let mut facts = ModuleFacts {
            base: Base {
                symbols: map,
                debug_info: Some(path.to_path_buf()),
                ..Default::default()
            },
            ..Default::default()
        };
        let mut names = NameCache::default();
        let w = windows(&facts, picked.iter().map(|s| s.start));
        let lines = learn_windows(&ctx, &w, &mut names);
        facts.add(w, lines);
        let mut checked = 0;
        let mut answers = Vec::new();
        for s in picked {
            for a in s.start..s.end {
                assert!(facts.knows(a));
                let want = crate::dwarf::frames(&ctx, a, &mut names);
                let r = facts.resolve(a, &mut names);
                assert_eq!(r.inline, want, "{} at {a:#x} ({})", path.display(), s.name);
                answers.push((a, r.inline, r.symbol.map(|s| s.name)));
                checked += 1;
            }
        }
        assert!(checked > 100, "{checked}");
        // And binutils' addr2line on the same file and addresses: the same
        // inline chain, level by level (function, file name, line).
        let addrs: Vec<u64> = answers.iter().map(|(a, ..)| *a).collect();
        let gnu = addr2line_levels("addr2line", path, &addrs);
        let mut llvm = None;
        for (i, ((a, got, symbol), g)) in answers.iter().zip(&gnu).enumerate() {
            let mine: Vec<Level> = got
                .iter()
                .map(|f| (f.function.clone(), f.file.as_deref().map(base), f.line))
                .collect();
            if mine == *g {
                continue;
            }
            // binutils 2.40 names the wrong file of a DWARF 5 line table
            // now and then (libc_start_call_main.h for libc-start.c), and
            // gives the address where a line table's sequence ends (its
            // first address past the code, `_fini` after `.text`) the
            // sequence's last line: llvm-addr2line breaks the tie.
            let l = llvm.get_or_insert_with(|| addr2line_levels("llvm-addr2line", path, &addrs));
            let l = &l[i];
            if mine.is_empty() {
                // No DWARF for the address: addr2line names the ELF symbol
                // (trawl's symbol, apart from the inline chain) and no line.
                let no_line = |v: &Vec<Level>| v.iter().all(|x| x.2.is_none());
                assert!(
                    (no_line(g) && g.iter().all(|x| x.0.is_none() || x.0 == *symbol)) || no_line(l),
                    "{} at {a:#x}: trawl no line, symbol {symbol:?}; addr2line {g:?}, llvm-addr2line {l:?}",
                    path.display()
                );
                continue;
            }
            let same_but_file = mine.len() == g.len()
                && mine
                    .iter()
                    .zip(g)
                    .zip(l)
                    .all(|((m, g), l)| m.0 == g.0 && m.2 == g.2 && (m.1 == g.1 || m.1 == l.1));
            assert!(
                same_but_file,
                "{} at {a:#x}: trawl {mine:?}, addr2line {g:?}, llvm-addr2line {l:?}",
                path.display()
            );
        }
    }

    /// One inline level as (function, file name, line); `None` where the
    /// tool prints `??` or line 0.
    type Level = (Option<String>, Option<String>, Option<u32>);

    fn base(p: &str) -> String {
        p.rsplit('/').next().unwrap_or(p).to_string()
    }

    /// `tool -a -f -i -C -e path` (binutils' addr2line, or
    /// llvm-addr2line) on `addrs`, read from its standard input: each
    /// address's levels, innermost first; empty where it knows nothing.
    fn addr2line_levels(tool: &str, path: &std::path::Path, addrs: &[u64]) -> Vec<Vec<Level>> {
        use std::io::Write;
        let mut child = std::process::Command::new(tool)
            .args(["-a", "-f", "-i", "-C", "-e"])
            .arg(path)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("{tool} (tests/run.sh installs binutils and llvm): {e}"));
        let input: String = addrs.iter().map(|a| format!("{a:#x}\n")).collect();
        let mut stdin = child.stdin.take().unwrap();
        let feeder = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
        let out = child.wait_with_output().unwrap();
        feeder.join().unwrap().unwrap();
        assert!(out.status.success(), "{tool} failed");
        let text = String::from_utf8_lossy(&out.stdout);
        let mut res: Vec<Vec<Level>> = Vec::with_capacity(addrs.len());
        let mut lines = text.lines();
        while let Some(l) = lines.next() {
            if l.starts_with("0x") {
                res.push(Vec::new());
                continue;
            }
            let func = (l != "??").then(|| l.to_string());
            let loc = lines.next().unwrap_or("??:0");
            let loc = loc.split(" (discriminator").next().unwrap();
            let (file, line) = loc.rsplit_once(':').unwrap_or((loc, "0"));
            let file = (file != "??" && !file.is_empty()).then(|| base(file));
            let line = line.parse::<u32>().ok().filter(|&n| n > 0);
            res.last_mut()
                .expect("an address first")
                .push((func, file, line));
        }
        // A tool that knows nothing prints one empty level.
        for r in &mut res {
            if r.len() == 1 && r[0] == (None, None, None) {
                r.clear();
            }
        }
        assert_eq!(res.len(), addrs.len(), "{tool}: one answer per address");
        res
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../fixtures/perf/bin")
            .join(name)
    }

    #[test]
    fn windows_answer_every_address_as_addr2line() {
        // Fixture programs with inlining (inl), recursion and calls.
        for b in ["hot", "inl", "calls"] {
            check(&fixture(b), usize::MAX);
        }
    }

    #[test]
    fn windows_answer_libc_as_addr2line() {
        // libc from Debian's libc6-dbg (its debug file, by build-id): deep
        // inlining, functions in assembly, several units per function.
        let libc = std::path::Path::new("/usr/lib/x86_64-linux-gnu/libc.so.6");
        let bid = crate::file::Loaded::open(libc)
            .and_then(|l| l.build_id())
            .expect("libc has a build-id");
        let dbg = std::path::PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &bid[..2],
            &bid[2..]
        ));
        assert!(dbg.is_file(), "libc6-dbg is installed (tests/run.sh)");
        check(&dbg, 300);
    }
}
