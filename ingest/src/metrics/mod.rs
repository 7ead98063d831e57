//! Monitoring metrics (`vmstat -t -n N`, `iostat -x -t` text and JSON,
//! `mpstat`, `pidstat`, `sadf -d`, generic `time,metric,value[,entity]` CSV) → the long `metric` table: one
//! row per (time, entity, metric).
//!
//! - [`vmstat`], [`iostat`], [`sysstat`] (mpstat, pidstat), [`sadf`], [`csv`]:
//!   text → [`Point`]s (no Arrow).
//! - [`convert`]: points → Arrow batches of `metric`.

pub mod convert;
pub mod csv;
pub mod iostat;
pub mod sadf;
pub mod sysstat;
pub mod vmstat;

use crate::diag::{Diagnostics, Position, Severity};

/// One measurement.
#[derive(Clone, Debug, PartialEq)]
pub struct Point<'a> {
    /// Line of the input (1-based).
    pub line: u64,
    /// Index of the row (interval) in its input, 0-based.
    pub sample: i64,
    /// Time in ns on `clock` (null when the input has no times).
    pub time_ns: Option<i64>,
    /// `utc` (ns since the epoch), `local:ZONE` / `local` (the wall clock
    /// of that zone read as if it were UTC), or `none`.
    pub clock: &'a str,
    /// What the value is of (a device, a CPU, a process), if anything.
    pub entity: Option<&'a str>,
    pub metric: &'a str,
    pub value: f64,
    /// vmstat's first row: averages since boot, not the interval.
    pub since_boot: bool,
}

pub trait MetricSink {
    fn point(&mut self, p: &Point<'_>);
}

pub(crate) use crate::fields::{bad_value, bad_width, csv_fields};

/// The clock of a time zone name as vmstat prints it.
pub fn zone_clock(zone: &str) -> String {
    match zone {
        "UTC" | "GMT" | "Etc/UTC" | "UCT" | "Z" => "utc".into(),
        "" => "local".into(),
        z => format!("local:{z}"),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Vmstat,
    Iostat,
    IostatJson,
    Sysstat,
    Sadf,
    Csv,
}

pub fn sniff(head: &[u8]) -> Option<Kind> {
    if vmstat::sniff(head) {
        Some(Kind::Vmstat)
    } else if iostat::sniff_text(head) {
        Some(Kind::Iostat)
    } else if iostat::sniff_json(head) {
        Some(Kind::IostatJson)
    } else if sysstat::sniff(head) {
        Some(Kind::Sysstat)
    } else if sadf::sniff(head) {
        Some(Kind::Sadf)
    } else if csv::sniff(head) {
        Some(Kind::Csv)
    } else {
        None
    }
}

/// Reads one metrics file (its whole text) into `sink`; returns the rows
/// (intervals) read.
pub fn read(
    kind: Kind,
    bytes: &[u8],
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => std::borrow::Cow::Borrowed(t),
        Err(e) => {
            diags.report(
                Position::Byte(e.valid_up_to() as u64),
                Severity::Warning,
                "non_utf8",
                "bytes that are not UTF-8 were replaced by U+FFFD",
            )?;
            String::from_utf8_lossy(bytes)
        }
    };
    match kind {
        Kind::Vmstat => vmstat::read(&text, diags, sink),
        Kind::Iostat => iostat::read_text(&text, diags, sink),
        Kind::IostatJson => iostat::read_json(&text, diags, sink),
        Kind::Sysstat => sysstat::read(&text, diags, sink),
        Kind::Sadf => sadf::read(&text, diags, sink),
        Kind::Csv => csv::read(&text, diags, sink),
    }
}
