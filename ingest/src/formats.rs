//! Every input format trawl reads, one entry each: its name (`source.format`),
//! what `trawl ingest` calls its records and rows, how its first bytes are
//! recognised, and its reader (the input's records into its converter,
//! returning what was read and the clock of its times). [`detect`] tries
//! the entries in order. A new format is its parser, in its family's folder
//! (`perf/`, `memlog/`, `strace/`, `energy/`, `metrics/`, or a new one), and
//! an entry here.

use std::io::Read;
use std::path::Path;

use crate::diag::{Diagnostics, Position, Severity};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::writer::CaptureWriter;
use crate::{energy, memlog, metrics, perf, strace};

/// An input format (one of the entries of `FORMATS`).
#[derive(Clone, Copy)]
pub struct Format(&'static FormatDef);

impl Format {
    /// Its name, as `source.format` records it.
    pub fn name(self) -> &'static str {
        self.0.name
    }

    /// What its records and the rows made of them are called ("lines",
    /// "system calls").
    pub fn units(self) -> (&'static str, &'static str) {
        (self.0.records, self.0.items)
    }

    /// Whether its clock is known only at the end, from perf's header.
    pub(crate) fn clock_from_perf_header(self) -> bool {
        self.0.perf_clock
    }

    /// Reads `input`'s records into their converter in `sinks`.
    pub(crate) fn read(self, sinks: &mut Sinks<'_>, input: Input<'_>) -> Result<ReadStats> {
        (self.0.read)(sinks, input)
    }
}

impl PartialEq for Format {
    fn eq(&self, other: &Format) -> bool {
        std::ptr::eq(self.0, other.0)
    }
}

impl Eq for Format {}

impl std::fmt::Debug for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.0.name)
    }
}

/// How many bytes [`detect`] looks at.
pub const HEAD_BYTES: usize = 4096;

/// The format of an input from its first bytes (up to [`HEAD_BYTES`]): the
/// first entry of [`FORMATS`] that recognises them.
pub fn detect(head: &[u8]) -> Option<Format> {
    FORMATS.iter().find(|f| (f.sniff)(head)).map(Format)
}

/// One input format.
pub(crate) struct FormatDef {
    name: &'static str,
    /// What users call it, for the list of known formats (empty: said by
    /// another entry).
    what: &'static str,
    records: &'static str,
    items: &'static str,
    sniff: fn(&[u8]) -> bool,
    read: fn(&mut Sinks<'_>, Input<'_>) -> Result<ReadStats>,
    /// Its clock comes from perf's header, read at the end.
    perf_clock: bool,
}

/// The formats trawl reads, as users call them: `perf.data (...), strace
/// output, ...`.
pub(crate) fn known() -> String {
    FORMATS
        .iter()
        .map(|f| f.what)
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join(", ")
}

/// The formats, in the order they are tried.
pub(crate) static FORMATS: &[FormatDef] = &[
    FormatDef {
        name: "perf.data-pipe",
        what: "",
        records: "records",
        items: "samples",
        sniff: |h| perf::reader::sniff(h) == Some(true),
        read: read_perf_pipe,
        perf_clock: true,
    },
    FormatDef {
        name: "perf.data",
        what: "perf.data (file and pipe mode, zstd-compressed or not)",
        records: "records",
        items: "samples",
        sniff: |h| perf::reader::sniff(h) == Some(false),
        read: read_perf_file,
        perf_clock: true,
    },
    FormatDef {
        name: "trawl-memlog",
        what: "trawlmem memory logs (.tmem)",
        records: "records",
        items: "mem_access rows",
        sniff: memlog::binary::sniff,
        read: read_memlog_binary,
        perf_clock: false,
    },
    FormatDef {
        name: "lackey",
        what: "valgrind lackey logs",
        records: "records",
        items: "mem_access rows",
        sniff: memlog::lackey::sniff,
        read: read_lackey,
        perf_clock: false,
    },
    FormatDef {
        name: "proc-maps",
        what: "/proc/PID/maps",
        records: "mappings",
        items: "samples",
        sniff: memlog::maps::sniff,
        read: read_maps,
        perf_clock: false,
    },
    FormatDef {
        name: "strace",
        what: "strace output",
        records: "lines",
        items: "system calls",
        sniff: strace::sniff,
        read: read_strace,
        perf_clock: false,
    },
    FormatDef {
        name: "powercap-csv",
        what: "RAPL powercap CSV (scripts/rapl-sample.py)",
        records: "readings",
        items: "energy rows",
        sniff: |h| energy::sniff(h) == Some(energy::Kind::Powercap),
        read: |s, i| read_energy(s, i, energy::Kind::Powercap),
        perf_clock: false,
    },
    FormatDef {
        name: "perf-stat",
        what: "perf stat -I -x, output",
        records: "readings",
        items: "energy rows",
        sniff: |h| energy::sniff(h) == Some(energy::Kind::PerfStat),
        read: |s, i| read_energy(s, i, energy::Kind::PerfStat),
        perf_clock: false,
    },
    FormatDef {
        name: "turbostat",
        what: "turbostat output",
        records: "readings",
        items: "energy rows",
        sniff: |h| energy::sniff(h) == Some(energy::Kind::Turbostat),
        read: |s, i| read_energy(s, i, energy::Kind::Turbostat),
        perf_clock: false,
    },
    FormatDef {
        name: "vmstat",
        what: "vmstat",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::Vmstat),
        read: |s, i| read_metrics(s, i, metrics::Kind::Vmstat),
        perf_clock: false,
    },
    FormatDef {
        name: "iostat",
        what: "iostat",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::Iostat),
        read: |s, i| read_metrics(s, i, metrics::Kind::Iostat),
        perf_clock: false,
    },
    FormatDef {
        name: "iostat-json",
        what: "iostat -o JSON",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::IostatJson),
        read: |s, i| read_metrics(s, i, metrics::Kind::IostatJson),
        perf_clock: false,
    },
    FormatDef {
        name: "mpstat/pidstat",
        what: "mpstat, pidstat",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::Sysstat),
        read: |s, i| read_metrics(s, i, metrics::Kind::Sysstat),
        perf_clock: false,
    },
    FormatDef {
        name: "sadf",
        what: "sadf -d",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::Sadf),
        read: |s, i| read_metrics(s, i, metrics::Kind::Sadf),
        perf_clock: false,
    },
    FormatDef {
        name: "metric-csv",
        what: "metric CSV (a header naming time, metric and value, optionally entity)",
        records: "rows",
        items: "points",
        sniff: |h| metrics::sniff(h) == Some(metrics::Kind::Csv),
        read: |s, i| read_metrics(s, i, metrics::Kind::Csv),
        perf_clock: false,
    },
];

/// Where a reader puts what it reads: the converters of one ingest.
pub(crate) struct Sinks<'a> {
    pub(crate) mem_opts: &'a memlog::MemOptions,
    /// `--tz`: the zone of local times in metric inputs.
    pub(crate) tz: &'a Option<String>,
    pub(crate) cap: &'a mut CaptureWriter,
    pub(crate) perf: &'a mut perf::convert::PerfConverter,
    pub(crate) strace: &'a mut strace::convert::StraceConverter,
    pub(crate) metric: &'a mut metrics::convert::MetricConverter,
    pub(crate) mem: &'a mut memlog::convert::MemConverter,
    pub(crate) energy: &'a mut energy::convert::EnergyConverter,
    /// `capture_meta` rows of this input (key, value), in order.
    pub(crate) meta: &'a mut Vec<(String, String)>,
}

/// One opened input.
pub(crate) struct Input<'a> {
    pub(crate) source: i32,
    pub(crate) path: &'a Path,
    pub(crate) name: &'a str,
    /// Standard input or a decompressing stream; `None`: the file itself.
    pub(crate) stream: Option<Box<dyn Read + Send>>,
    /// `gzip` or `zstd`.
    pub(crate) compression: Option<&'static str>,
    pub(crate) diags: &'a mut Diagnostics,
    pub(crate) progress: Option<&'a Progress>,
}

/// What a reader read, and the clock of the input's times (`source.clock`,
/// the offset to UTC when known).
pub(crate) struct ReadStats {
    pub(crate) bytes: u64,
    pub(crate) records: u64,
    pub(crate) samples: u64,
    pub(crate) clock: (String, Option<i64>),
}

impl ReadStats {
    fn new(bytes: u64, records: u64, samples: u64) -> ReadStats {
        ReadStats {
            bytes,
            records,
            samples,
            clock: ("none".into(), None),
        }
    }

    fn with_clock(mut self, clock: impl Into<String>, utc_offset_ns: Option<i64>) -> ReadStats {
        self.clock = (clock.into(), utc_offset_ns);
        self
    }
}

fn read_perf_file(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    // A file-mode perf.data is read at the offsets its header names:
    // standard input and a decompressing stream are spooled to a temporary
    // file (deleted when done) first.
    let spooled = match i.stream {
        Some(mut st) => Some(spool(&mut st, i.path)?),
        None => None,
    };
    if let Some(c) = i.compression {
        s.meta.push(("compression".to_string(), c.to_string()));
    }
    let path = spooled.as_ref().map_or(i.path, |t| t.path());
    let st = perf::ingest_perf(path, None, false, s.perf, i.diags, i.progress)?;
    power_readings(s.perf, s.energy, i.diags)?;
    Ok(ReadStats::new(st.bytes, st.records, st.samples))
}

fn read_perf_pipe(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    let st = perf::ingest_perf(i.path, i.stream, true, s.perf, i.diags, i.progress)?;
    power_readings(s.perf, s.energy, i.diags)?;
    Ok(ReadStats::new(st.bytes, st.records, st.samples))
}

/// Power events read at the input's samples (`perf record -e
/// '{cpu-clock,power/energy-cores/}:S'`) → `energy` rows (their `line` is
/// the read's rank in time order); problems are reported at the sample's
/// byte offset.
fn power_readings(
    conv: &mut perf::convert::PerfConverter,
    econv: &mut energy::convert::EnergyConverter,
    diags: &mut Diagnostics,
) -> Result<()> {
    use energy::ReadingSink;
    let reads = conv.take_power_readings();
    econv.set_utc_offset(conv.utc_offset());
    if reads.is_empty() {
        return Ok(());
    }
    let mut at = Vec::with_capacity(reads.len());
    for (r, p) in reads {
        at.push(p);
        econv.reading(r);
    }
    for (rank, kind, message) in std::mem::take(&mut econv.problems) {
        let p = rank
            .checked_sub(1)
            .and_then(|i| at.get(i as usize).copied())
            .unwrap_or(Position::None);
        diags.report(p, Severity::Warning, kind, message)?;
    }
    econv.flush()
}

fn read_lackey(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    s.mem.begin_source(s.cap, i.source)?;
    let mut text = text_source(i.path, i.stream)?;
    let st = memlog::ingest_text(&mut text, i.name, s.mem_opts, s.mem, i.diags, i.progress)?;
    Ok(memlog_read(s, i.compression, st))
}

fn read_memlog_binary(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    s.mem.begin_source(s.cap, i.source)?;
    let mut r: Box<dyn Read + Send> = match i.stream {
        Some(st) => st,
        None => Box::new(std::fs::File::open(i.path).map_err(|e| Error::io(i.path, e))?),
    };
    let st = memlog::ingest_binary(&mut r, s.mem_opts, s.mem, i.diags)?;
    Ok(memlog_read(s, i.compression, st))
}

/// A memory log's statistics; its compression and metadata recorded.
fn memlog_read(
    s: &mut Sinks<'_>,
    compression: Option<&'static str>,
    st: memlog::MemStats,
) -> ReadStats {
    if let Some(c) = compression {
        s.meta.push(("compression".to_string(), c.to_string()));
    }
    s.meta.extend(st.meta);
    ReadStats::new(st.bytes, st.records, st.rows)
}

fn read_maps(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    let bytes = read_whole(i.path, i.stream, i.diags)?;
    let text = String::from_utf8_lossy(&bytes);
    let (maps, bad) = memlog::maps::parse(&text);
    for (line, t) in bad {
        i.diags.report(
            Position::Line(line),
            Severity::Warning,
            "bad_row",
            format!("not a /proc/PID/maps line: {t:?}: skipped"),
        )?;
    }
    s.mem.maps(s.cap, i.source, &maps)?;
    Ok(ReadStats::new(bytes.len() as u64, maps.len() as u64, 0))
}

fn read_strace(s: &mut Sinks<'_>, i: Input<'_>) -> Result<ReadStats> {
    let st = strace::ingest_strace(
        i.path,
        i.stream,
        s.strace,
        &mut s.perf.stacks,
        &mut s.perf.syscalls,
        i.diags,
        i.progress,
    )?;
    s.meta
        .push(("strace_time".to_string(), st.time_kind.as_str().to_string()));
    let read = ReadStats::new(st.bytes, st.lines, st.calls);
    Ok(match st.time_kind {
        strace::reader::TimeKind::Epoch => read.with_clock("utc", Some(0)),
        k => read.with_clock(format!("strace:{}", k.as_str()), None),
    })
}

fn read_energy(s: &mut Sinks<'_>, i: Input<'_>, kind: energy::Kind) -> Result<ReadStats> {
    let bytes = read_whole(i.path, i.stream, i.diags)?;
    let text = String::from_utf8_lossy(&bytes);
    let before = s.energy.readings;
    let (rows, clock) = match kind {
        energy::Kind::Powercap => {
            s.energy.set_utc_offset(Some(0));
            let rows = energy::read_powercap(&text, i.diags, s.energy)?;
            (rows, ("utc", Some(0)))
        }
        energy::Kind::Turbostat => {
            s.energy.set_utc_offset(Some(0));
            let rows = energy::read_turbostat(&text, i.diags, s.energy)?;
            (rows, ("utc", Some(0)))
        }
        energy::Kind::PerfStat => {
            let rows = energy::read_perf_stat(&text, i.diags, s.energy)?;
            (rows, ("perf-stat:relative", None))
        }
    };
    for (line, kind, message) in std::mem::take(&mut s.energy.problems) {
        i.diags
            .report(Position::Line(line), Severity::Warning, kind, message)?;
    }
    s.energy.flush()?;
    let read = ReadStats::new(bytes.len() as u64, rows, s.energy.readings - before);
    Ok(read.with_clock(clock.0, clock.1))
}

fn read_metrics(s: &mut Sinks<'_>, i: Input<'_>, kind: metrics::Kind) -> Result<ReadStats> {
    let bytes = read_whole(i.path, i.stream, i.diags)?;
    let before = s.metric.points;
    let rows = metrics::read(kind, &bytes, i.diags, s.metric)?;
    s.metric.flush()?;
    let (clock, offset) = metric_clock(&s.metric.clock, s.tz, i.diags)?;
    let read = ReadStats::new(bytes.len() as u64, rows, s.metric.points - before);
    Ok(read.with_clock(clock, offset))
}

/// The clock of a metric input, with a diagnostic for local times that
/// could not be placed on UTC.
fn metric_clock(
    c: &metrics::convert::SourceClock,
    tz: &Option<String>,
    diags: &mut Diagnostics,
) -> Result<(String, Option<i64>)> {
    let Some(clock) = c.clock.clone() else {
        return Ok(("none".into(), None));
    };
    if c.unplaced > 0 {
        diags.report(
            Position::None,
            Severity::Warning,
            "local_time",
            format!(
                "{} rows have local times ({clock}) and no zone was given: their utc_ns is null and they cannot be aligned with other inputs; ingest again with --tz ZONE (e.g. --tz Europe/Berlin)",
                c.unplaced
            ),
        )?;
    }
    for (line, text) in &c.nonexistent {
        diags.report(
            Position::Line(*line),
            Severity::Error,
            "nonexistent_local_time",
            format!(
                "{text} does not exist in {} (skipped by a daylight saving change): utc_ns left null",
                tz.as_deref().unwrap_or("?")
            ),
        )?;
    }
    let offset = (clock == "utc").then_some(0);
    Ok((clock, offset))
}

/// The text of `input`: its (decompressing) stream, else the file
/// (mapped).
pub(crate) fn text_source(
    input: &Path,
    stream: Option<Box<dyn Read + Send>>,
) -> Result<memlog::TextSource> {
    Ok(match stream {
        Some(s) => memlog::TextSource::Stream(s),
        None => memlog::TextSource::file(input).map_err(|e| Error::io(input, e))?,
    })
}

/// All of a text input: from its (decompressing) stream, else the file.
fn read_whole(
    input: &Path,
    stream: Option<Box<dyn Read + Send>>,
    diags: &mut Diagnostics,
) -> Result<Vec<u8>> {
    let mut r: Box<dyn Read + Send> = match stream {
        Some(s) => s,
        None => Box::new(std::fs::File::open(input).map_err(|e| Error::io(input, e))?),
    };
    let mut v = Vec::new();
    r.by_ref()
        .take(MAX_WHOLE_INPUT + 1)
        .read_to_end(&mut v)
        .map_err(|e| Error::io(input, e))?;
    if v.len() as u64 > MAX_WHOLE_INPUT {
        v.truncate(MAX_WHOLE_INPUT as usize);
        let keep = memchr::memrchr(b'\n', &v).map_or(0, |k| k + 1);
        v.truncate(keep);
        diags.report(
            Position::Byte(keep as u64),
            Severity::Error,
            "input_too_large",
            format!(
                "a monitoring, energy or maps input is read whole, and this one is larger than {} MiB: the lines after byte {keep} are skipped",
                MAX_WHOLE_INPUT >> 20
            ),
        )?;
    }
    Ok(v)
}

/// The largest monitoring, energy or `/proc/PID/maps` input read (these
/// are read whole; a day of `vmstat -t 1` is ~10 MB).
pub const MAX_WHOLE_INPUT: u64 = 1 << 30;

/// Copies a stream (standard input, a decompressed file) to a temporary
/// file in `TMPDIR`, removed when the handle is dropped.
fn spool(stream: &mut dyn Read, input: &Path) -> Result<tempfile::NamedTempFile> {
    let mut t = tempfile::Builder::new()
        .prefix("trawl-spool-")
        .tempfile()
        .map_err(|e| Error::io(input, e))?;
    std::io::copy(stream, &mut t).map_err(|e| Error::io(input, e))?;
    Ok(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every format has a name of its own (`source.format` tells them
    /// apart).
    #[test]
    fn names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for f in FORMATS {
            assert!(seen.insert(f.name), "{} named twice", f.name);
        }
    }
}
