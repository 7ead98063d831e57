//! Diagnostics: what a lenient reader skipped or repaired, and where.
//!
//! Every reader reports bad input here instead of failing ("parsing never
//! fails"). The list becomes the `diagnostic` table of the capture; under
//! `--strict` the first diagnostic ends the run instead.

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

/// Collects diagnostics for one input. Repeated diagnostics of the same kind
/// are counted but only the first [`Diagnostics::MAX_PER_KIND`] are kept, so a
/// corrupt 10 GB file cannot produce a 10 GB diagnostic table.
#[derive(Debug)]
pub struct Diagnostics {
    source: String,
    strict: bool,
    list: Vec<Diagnostic>,
    counts: std::collections::HashMap<&'static str, u64>,
}

impl Diagnostics {
    pub const MAX_PER_KIND: u64 = 100;

    pub fn new(source: impl Into<String>, strict: bool) -> Self {
        Diagnostics {
            source: source.into(),
            strict,
            list: Vec::new(),
            counts: Default::default(),
        }
    }

    pub fn source(&self) -> &str {
        &self.source
    }

    /// Records a diagnostic. Returns `Err` under strict mode, so callers can
    /// use `?` to stop at the first one.
    pub fn report(
        &mut self,
        position: Position,
        severity: Severity,
        kind: &'static str,
        message: impl Into<String>,
    ) -> crate::Result<()> {
        let d = Diagnostic {
            source: self.source.clone(),
            position,
            severity,
            kind,
            message: message.into(),
        };
        if self.strict {
            return Err(crate::Error::Diagnostic(Box::new(d)));
        }
        let n = self.counts.entry(kind).or_insert(0);
        *n += 1;
        if *n <= Self::MAX_PER_KIND {
            self.list.push(d);
        }
        Ok(())
    }

    /// Diagnostics kept, plus one summary line per kind that overflowed.
    pub fn into_vec(mut self) -> Vec<Diagnostic> {
        let mut over: Vec<_> = self
            .counts
            .iter()
            .filter(|(_, &n)| n > Self::MAX_PER_KIND)
            .map(|(k, n)| (*k, *n))
            .collect();
        over.sort();
        for (kind, n) in over {
            self.list.push(Diagnostic {
                source: self.source.clone(),
                position: Position::None,
                severity: Severity::Warning,
                kind,
                message: format!(
                    "{} more diagnostics of this kind were not kept ({} in all)",
                    n - Self::MAX_PER_KIND,
                    n
                ),
            });
        }
        self.list
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    pub fn len(&self) -> usize {
        self.list.len()
    }
}

/// The first 80 characters of `s`, for quoting input in a message.
pub fn clip(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((k, _)) => &s[..k],
        None => s,
    }
}
