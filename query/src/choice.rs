//! Options of the analyses that take one of a few named values (a
//! hotspot key, a sort order, a view): their names and what each means, so
//! a front end (the CLI's flags, `trawl functions`) lists the library's own
//! values instead of a copy.

/// A closed set of named values.
pub trait Choice: Copy + Send + Sync + 'static {
    /// Every value, the default first.
    const ALL: &'static [Self];
    /// The name a user writes.
    fn name(self) -> &'static str;
    /// What the value means.
    fn doc(self) -> &'static str;
    /// Other names it is known by (perf's, for instance).
    fn aliases(self) -> &'static [&'static str] {
        &[]
    }

    fn parse(s: &str) -> Option<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|v| v.name() == s || v.aliases().contains(&s))
    }
}
