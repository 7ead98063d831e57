//! What a caller asks of the symbolizer and what comes back: modules and
//! addresses in, names, inline chains and a status per module out.

use std::path::PathBuf;

use crate::dwarf::LineFrame;

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
    pub(crate) fn failed(status: Status, message: String, n: usize) -> Self {
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
