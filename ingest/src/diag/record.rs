//! One diagnostic: what was wrong, how bad, and where in the input.

use std::fmt;

/// How bad a diagnostic is. Both kinds fail a `--strict` run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Something unusual that was handled without losing data
    /// (e.g. an unknown record type that was skipped on purpose).
    Warning,
    /// Data was lost or could not be interpreted (truncation, corruption).
    Error,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Warning => "warning",
            Severity::Error => "error",
        }
    }
}

/// Where in its input a diagnostic happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Position {
    /// Byte offset into a binary file.
    Byte(u64),
    /// Byte offset of a compressed record, plus the offset inside its
    /// decompressed stream.
    Compressed { record: u64, inner: u64 },
    /// 1-based line number of a text file.
    Line(u64),
    /// The whole input.
    None,
}

impl Position {
    pub fn byte_offset(&self) -> Option<u64> {
        match *self {
            Position::Byte(b) => Some(b),
            Position::Compressed { record, .. } => Some(record),
            _ => None,
        }
    }
    pub fn line(&self) -> Option<u64> {
        match *self {
            Position::Line(l) => Some(l),
            _ => None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Diagnostic {
    /// Input file as the user named it (`-` for standard input).
    pub source: String,
    pub position: Position,
    pub severity: Severity,
    /// Short machine-readable kind, e.g. `truncated`, `bad_record_size`.
    pub kind: &'static str,
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.position {
            Position::Byte(b) => write!(f, "{}@{}", self.source, b)?,
            Position::Compressed { record, inner } => write!(
                f,
                "{}@{} (compressed record, decompressed offset {})",
                self.source, record, inner
            )?,
            Position::Line(l) => write!(f, "{}:{}", self.source, l)?,
            Position::None => write!(f, "{}", self.source)?,
        }
        write!(
            f,
            ": {} [{}]: {}",
            self.severity.as_str(),
            self.kind,
            self.message
        )
    }
}
