//! Diagnostics: what a lenient reader skipped or repaired, and where.
//!
//! Every reader reports bad input here instead of failing ("parsing never
//! fails"). The list becomes the `diagnostic` table of the capture; under
//! `--strict` the first diagnostic ends the run instead.

pub use record::{Diagnostic, Position, Severity};

pub(crate) mod record;

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

    /// The diagnostics kept so far, in order; the list is left empty.
    pub fn take_all(&mut self) -> Vec<Diagnostic> {
        std::mem::take(&mut self.list)
    }

    /// How many diagnostics of each kind were counted but not kept.
    pub fn not_kept(&self) -> Vec<(&'static str, u64)> {
        let mut v: Vec<_> = self
            .counts
            .iter()
            .filter(|(_, &n)| n > Self::MAX_PER_KIND)
            .map(|(k, n)| (*k, n - Self::MAX_PER_KIND))
            .collect();
        v.sort();
        v
    }

    /// Counts `n` more diagnostics of `kind` that were reported elsewhere
    /// and not kept ([`Diagnostics::not_kept`]).
    pub fn count_not_kept(&mut self, kind: &'static str, n: u64) {
        *self.counts.entry(kind).or_insert(0) += n;
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
    ) -> crate::error::Result<()> {
        let d = Diagnostic {
            source: self.source.clone(),
            position,
            severity,
            kind,
            message: message.into(),
        };
        if self.strict {
            return Err(crate::error::Error::Diagnostic(Box::new(d)));
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
        for (kind, more) in self.not_kept() {
            self.list.push(Diagnostic {
                source: self.source.clone(),
                position: Position::None,
                severity: Severity::Warning,
                kind,
                message: format!(
                    "{more} more diagnostics of this kind were not kept ({} in all)",
                    more + Self::MAX_PER_KIND
                ),
            });
        }
        self.list
    }

    /// The diagnostics kept so far.
    pub fn kept(&self) -> &[Diagnostic] {
        &self.list
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
