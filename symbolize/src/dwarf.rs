//! Source lines and inline chains from DWARF, through the addr2line crate.
//!
//! The sections are borrowed from the memory-mapped file; only compressed
//! sections (`SHF_COMPRESSED`, as in Debian's `-dbg` packages) are
//! decompressed into owned buffers, which live as long as the [`Sections`].

use std::borrow::Cow;
use std::collections::HashMap;

use gimli::{EndianSlice, RunTimeEndian, SectionId};
use object::{Object, ObjectSection};

/// One level of an address's inline chain.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LineFrame {
    /// Function at this level (demangled), when DWARF names it.
    pub function: Option<String>,
    /// Source file: the path DWARF records, joined to the compilation
    /// directory when relative (as `addr2line` prints it).
    pub file: Option<String>,
    pub line: Option<u32>,
    pub column: Option<u32>,
}

/// An addr2line context over a file's DWARF sections.
pub type Ctx<'d> = addr2line::Context<EndianSlice<'d, RunTimeEndian>>;

/// The DWARF sections of one file.
pub struct Sections<'d> {
    endian: RunTimeEndian,
    data: HashMap<SectionId, Cow<'d, [u8]>>,
}

/// Does `obj` have DWARF (a `.debug_info` with contents)? Nothing is
/// decompressed.
pub fn has_info(obj: &object::File<'_>) -> bool {
    obj.section_by_name(".debug_info").is_some_and(|info| {
        info.size() > 0 && !matches!(info.kind(), object::SectionKind::UninitializedData)
    })
}

impl<'d> Sections<'d> {
    /// The DWARF of `obj`, or None when it has no `.debug_info`.
    pub fn load(obj: &object::File<'d>) -> Option<Sections<'d>> {
        if !has_info(obj) {
            return None;
        }
        let endian = if obj.is_little_endian() {
            RunTimeEndian::Little
        } else {
            RunTimeEndian::Big
        };
        let mut data = HashMap::new();
        for id in [
            SectionId::DebugAbbrev,
            SectionId::DebugAddr,
            SectionId::DebugAranges,
            SectionId::DebugInfo,
            SectionId::DebugLine,
            SectionId::DebugLineStr,
            SectionId::DebugRanges,
            SectionId::DebugRngLists,
            SectionId::DebugStr,
            SectionId::DebugStrOffsets,
        ] {
            if let Some(s) = obj.section_by_name(id.name()) {
                if let Ok(d) = s.uncompressed_data() {
                    data.insert(id, d);
                }
            }
        }
        Some(Sections { endian, data })
    }

    /// Bytes of the sections decompressed into buffers of their own (the
    /// rest are borrowed from the file's map).
    pub fn inflated_bytes(&self) -> usize {
        self.data
            .values()
            .map(|d| match d {
                Cow::Owned(v) => v.len(),
                Cow::Borrowed(_) => 0,
            })
            .sum()
    }

    /// An addr2line context over these sections.
    pub fn context(&self) -> Option<Ctx<'_>> {
        let dwarf = gimli::Dwarf::load(|id| -> Result<_, gimli::Error> {
            Ok(EndianSlice::new(
                self.data.get(&id).map_or(&[][..], |c| &c[..]),
                self.endian,
            ))
        })
        .ok()?;
        addr2line::Context::from_dwarf(dwarf).ok()
    }
}

/// The inline chain at `vaddr`, innermost first; empty when DWARF has no
/// line or function for it.
pub fn frames(
    ctx: &addr2line::Context<EndianSlice<'_, RunTimeEndian>>,
    vaddr: u64,
    names: &mut crate::demangle::NameCache,
) -> Vec<LineFrame> {
    let mut out = Vec::new();
    let Ok(mut it) = ctx.find_frames(vaddr).skip_all_loads() else {
        return out;
    };
    // A malformed chain cannot loop forever: DWARF nesting is finite, but
    // cap it anyway.
    while let Ok(Some(f)) = it.next() {
        let function = f
            .function
            .as_ref()
            .and_then(|n| n.raw_name().ok())
            .map(|n| names.demangle(&n));
        let (file, line, column) = match &f.location {
            Some(l) => (l.file.map(str::to_string), l.line, l.column),
            None => (None, None, None),
        };
        out.push(LineFrame {
            function,
            file,
            line: line.filter(|&l| l > 0),
            column: column.filter(|&c| c > 0),
        });
        if out.len() >= 256 {
            break;
        }
    }
    out
}
