//! Every function and data object of an ELF file with its section, for
//! attributing memory accesses (the "functions of each library never
//! executed" and "data never touched" of Mibu et al., memory access
//! analysis for memory saving).

use object::{Object, ObjectSection, ObjectSymbol, SymbolKind, SymbolSection};

use crate::elf::LoadSegments;
use crate::find::{locate, Config};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjSym {
    pub name: String,
    /// `function` or `object`.
    pub kind: &'static str,
    /// Link-time virtual address.
    pub vaddr: u64,
    pub size: u64,
    pub section: Option<String>,
}

/// The symbols of one object file and how to place them at run time.
pub struct ObjectSymbols {
    pub syms: Vec<ObjSym>,
    pub segments: LoadSegments,
    /// The file the symbols came from.
    pub symbols_file: String,
}

impl ObjectSymbols {
    /// Load bias of a mapping of file offset `offset` at `start`:
    /// run-time address = link-time address + bias.
    pub fn bias(&self, start: u64, offset: u64) -> Option<u64> {
        let v = self.segments.mapping_vaddr(offset, None)?;
        Some(start.wrapping_sub(v))
    }
}

fn read_syms(file: &object::File<'_>, dynamic: bool) -> Vec<ObjSym> {
    let iter: Box<dyn Iterator<Item = object::Symbol<'_, '_>>> = if dynamic {
        Box::new(file.dynamic_symbols())
    } else {
        Box::new(file.symbols())
    };
    let mut out = Vec::new();
    for s in iter {
        // STT_FUNC and STT_GNU_IFUNC (the resolvers of memcpy, strlen, ...,
        // which ld.so runs at relocation; perf keeps them too) are
        // functions; STT_OBJECT, STT_COMMON and STT_TLS data objects.
        let kind = match s.kind() {
            SymbolKind::Text => "function",
            SymbolKind::Data | SymbolKind::Tls => "object",
            _ => continue,
        };
        let SymbolSection::Section(idx) = s.section() else {
            continue;
        };
        let Ok(name) = s.name() else { continue };
        // Defined in a section (checked above): object's is_definition()
        // would also drop IFUNC and TLS symbols.
        if name.is_empty() {
            continue;
        }
        let section = file
            .section_by_index(idx)
            .ok()
            .and_then(|sec| sec.name().ok().map(str::to_string));
        out.push(ObjSym {
            name: crate::demangle::demangle(name),
            kind,
            vaddr: s.address(),
            size: s.size(),
            section,
        });
    }
    out.sort_by(|a, b| (a.vaddr, &a.name).cmp(&(b.vaddr, &b.name)));
    out.dedup_by(|a, b| a.vaddr == b.vaddr && a.name == b.name);
    out
}

/// Finds `path` (as named in a maps file) the way [`crate::symbolize`]
/// does and reads its functions and data objects: `.symtab` of the binary
/// or of its debug file, else `.dynsym`.
pub fn object_symbols(cfg: &Config, path: &str) -> Result<ObjectSymbols, String> {
    let found = locate(cfg, path, None).map_err(|(_, m)| m)?;
    let segments = LoadSegments::from_data(&found.binary.data)
        .ok_or_else(|| format!("{}: no ELF program headers", found.binary.path.display()))?;
    let mut best: Option<(Vec<ObjSym>, String)> = None;
    for l in std::iter::once(&found.binary).chain(found.debug.iter()) {
        let Ok(f) = object::File::parse(&*l.data) else {
            continue;
        };
        let syms = read_syms(&f, false);
        if !syms.is_empty() {
            best = Some((syms, l.path.display().to_string()));
            break;
        }
    }
    if best.is_none() {
        if let Ok(f) = object::File::parse(&*found.binary.data) {
            let syms = read_syms(&f, true);
            if !syms.is_empty() {
                best = Some((syms, found.binary.path.display().to_string()));
            }
        }
    }
    let (syms, symbols_file) =
        best.ok_or_else(|| format!("{}: no symbols", found.binary.path.display()))?;
    Ok(ObjectSymbols {
        syms,
        segments,
        symbols_file,
    })
}
