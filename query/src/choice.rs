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

    fn parse(s: &str) -> Option<Self> {
        Self::ALL.iter().copied().find(|v| v.name() == s)
    }
}

impl Choice for crate::analyses::HotspotKey {
    const ALL: &'static [Self] = &crate::analyses::HotspotKey::ALL;
    fn name(self) -> &'static str {
        crate::analyses::HotspotKey::name(self)
    }
    fn doc(self) -> &'static str {
        crate::analyses::HotspotKey::doc(self)
    }
}

impl Choice for crate::energy::EnergyKey {
    const ALL: &'static [Self] = &crate::energy::EnergyKey::ALL;
    fn name(self) -> &'static str {
        crate::energy::EnergyKey::name(self)
    }
    fn doc(self) -> &'static str {
        crate::energy::EnergyKey::doc(self)
    }
}

impl Choice for crate::memlog::PageSort {
    const ALL: &'static [Self] = &[Self::Address, Self::Accesses, Self::First, Self::Touched];
    fn name(self) -> &'static str {
        match self {
            Self::Address => "address",
            Self::Accesses => "accesses",
            Self::First => "first",
            Self::Touched => "touched",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Address => "by capture, input and page address",
            Self::Accesses => "most accessed first",
            Self::First => "in order of first access",
            Self::Touched => "most bytes touched first",
        }
    }
}

impl Choice for crate::memlog::View {
    const ALL: &'static [Self] = &[Self::Used, Self::Full];
    fn name(self) -> &'static str {
        match self {
            Self::Used => "used",
            Self::Full => "full",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Used => "only pages touched at least once (rows not contiguous)",
            Self::Full => "the whole address range (or --addr-range), contiguous",
        }
    }
}

impl Choice for crate::lbr::View {
    const ALL: &'static [Self] = &[
        Self::Functions,
        Self::Summary,
        Self::Points,
        Self::Transitions,
        Self::Sequence,
    ];
    fn name(self) -> &'static str {
        match self {
            Self::Functions => "functions",
            Self::Summary => "summary",
            Self::Points => "points",
            Self::Transitions => "transitions",
            Self::Sequence => "sequence",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Functions => "per function: samples, points, time and share under the method (lbr_functions)",
            Self::Summary => "samples, branch entries, points per sample: the resolution gained (lbr_summary)",
            Self::Points => "every sample and pseudo-sample with its time and weight (lbr_points)",
            Self::Transitions => "branches per (from function, to function, call/return/other) (lbr_transition)",
            Self::Sequence => "per sample: the branch sources FROM15 … FROM0, oldest first, then the sampled function (lbr_sequence)",
        }
    }
}

impl Choice for crate::timeline::TimelineKey {
    const ALL: &'static [Self] = &[Self::Function, Self::Module, Self::Process];
    fn name(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Module => "module",
            Self::Process => "process",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Function => "the leaf function (exclusive time)",
            Self::Module => "the leaf's module",
            Self::Process => "comm[pid]",
        }
    }
}
