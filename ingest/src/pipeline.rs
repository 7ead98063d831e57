//! One ingest: every input opened, read by its format's reader into its
//! converter, the source, metadata and diagnostic tables written, the
//! capture committed atomically.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arrow::array::{Int32Builder, Int64Builder, StringBuilder};

use crate::detect::{open_input, text_source, Format, Opened};
use crate::diag::{Diagnostic, Diagnostics, Position, Severity};
use crate::error::{Error, Result};
use crate::progress::Progress;
use crate::writer::CaptureWriter;
use crate::{compressed, energy, memlog, metrics, perf, readback, strace, unwind};
use trawl_capture::schema;

#[derive(Clone, Debug, Default)]
pub struct IngestOptions {
    /// Fail at the first diagnostic instead of recording it.
    pub strict: bool,
    /// IANA zone of local wall-clock times in metric inputs (vmstat `-t`,
    /// iostat, CSV without offsets), e.g. `Europe/Berlin`; they get a
    /// `metric.utc_ns` only when it is given.
    pub tz: Option<String>,
    /// Filters and page size for memory logs (lackey, binary).
    pub mem: memlog::MemOptions,
    /// Where to stage the tables before the capture is renamed into place
    /// (default: next to it, hidden).
    pub staging: Option<PathBuf>,
    /// Bytes of input read so far (all inputs together), for a progress
    /// display on another thread: advanced within perf.data inputs and
    /// uncompressed strace and lackey text, and at the end of every input.
    pub progress: Option<Arc<AtomicU64>>,
    /// Set from another thread to stop the ingest: the readers look at it
    /// where they report progress (every 64 K perf records, 64 K strace
    /// lines, block of a memory log, input), and the run fails with
    /// [`Error::Interrupted`] without writing the capture.
    pub cancel: Option<Arc<std::sync::atomic::AtomicBool>>,
    /// How far a gzip/zstd input may expand (`--max-expansion`).
    pub expansion: compressed::ExpansionLimit,
}

#[derive(Clone, Debug)]
pub struct InputSummary {
    pub path: String,
    pub format: Format,
    pub bytes: u64,
    pub records: u64,
    pub samples: u64,
    pub diagnostics: Vec<Diagnostic>,
    /// The clock of the input's times (`source.clock`).
    pub clock: String,
    /// Native time + this = ns since the epoch (UTC), when known.
    pub utc_offset_ns: Option<i64>,
}

#[derive(Clone, Debug)]
pub struct IngestSummary {
    pub out: PathBuf,
    pub inputs: Vec<InputSummary>,
}

/// Converts `inputs` (paths, or `-` for standard input) into the capture
/// directory `out`. `before_commit` runs on the staging directory after all
/// tables are written and before the capture becomes visible (the CLI
/// symbolizes there, so a capture appears complete or not at all).
pub fn ingest(
    inputs: &[PathBuf],
    out: &Path,
    opts: &IngestOptions,
    before_commit: impl FnOnce(&Path) -> Result<()>,
) -> Result<IngestSummary> {
    ingest_with_unwinder(inputs, out, opts, None, before_commit)
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

/// [`ingest`], unwinding `--call-graph dwarf` samples with `unwinder`.
pub fn ingest_with_unwinder(
    inputs: &[PathBuf],
    out: &Path,
    opts: &IngestOptions,
    unwinder: Option<Box<dyn unwind::StackUnwinder>>,
    before_commit: impl FnOnce(&Path) -> Result<()>,
) -> Result<IngestSummary> {
    let tz = match &opts.tz {
        Some(z) => Some(
            z.parse::<chrono_tz::Tz>()
                .map_err(|_| Error::BadZone(z.clone()))?,
        ),
        None => None,
    };
    let mut cap = CaptureWriter::create_staged(out, opts.staging.as_deref())?;
    let mut conv = perf::convert::PerfConverter::new(&mut cap)?;
    let mut sconv = strace::convert::StraceConverter::new(&mut cap)?;
    let mut mconv = metrics::convert::MetricConverter::new(&mut cap, tz)?;
    let mut mem = memlog::convert::MemConverter::new();
    let mut econv = energy::convert::EnergyConverter::new(&mut cap)?;
    opts.mem.check().map_err(Error::Usage)?;
    let mut extra_meta = Vec::new();
    if let Some(u) = unwinder {
        conv.set_unwinder(u);
    }
    let mut summaries = Vec::new();
    let mut base = 0u64;
    for (i, input) in inputs.iter().enumerate() {
        let name = input.to_string_lossy().into_owned();
        let mut diags = Diagnostics::new(name.clone(), opts.strict);
        let size = std::fs::metadata(input).map_or(0, |m| m.len());
        let progress = (opts.progress.is_some() || opts.cancel.is_some()).then(|| Progress {
            done: opts.progress.clone().unwrap_or_default(),
            base,
            cancel: opts.cancel.clone(),
        });
        base += size;
        let Opened {
            format,
            stream,
            compression,
            expansion,
        } = open_input(input, &name, opts.expansion, opts.strict)?;
        conv.begin_source(i as i32);
        sconv.begin_source(i as i32);
        mconv.begin_source(i as i32);
        econv.begin_source(i as i32);
        // (clock, utc offset) of the input; perf's are filled in below from
        // its header.
        let mut clock = ("none".to_string(), None);
        let stats = match format {
            Format::PerfFile if compression.is_some() => {
                return Err(Error::BadInput {
                    path: input.clone(),
                    offset: 0,
                    message: format!(
                        "a {}-compressed perf.data file: decompress it first (perf reads it at random offsets)",
                        compression.unwrap_or("")
                    ),
                })
            }
            Format::PerfFile => {
                let st = perf::ingest_perf(input, stream, false, &mut conv, &mut diags, progress.as_ref())?;
                power_readings(&mut conv, &mut econv, &mut diags)?;
                st
            }
            Format::Lackey | Format::MemBinary => {
                mem.begin_source(&mut cap, i as i32)?;
                let st = match (format, stream) {
                    (Format::Lackey, stream) => {
                        let mut text = text_source(input, stream)?;
                        memlog::ingest_text(
                            &mut text,
                            &name,
                            &opts.mem,
                            &mut mem,
                            &mut diags,
                            progress.as_ref(),
                        )?
                    }
                    (_, stream) => {
                        let mut s: Box<dyn Read + Send> = match stream {
                            Some(s) => s,
                            None => Box::new(
                                std::fs::File::open(input).map_err(|e| Error::io(input, e))?,
                            ),
                        };
                        memlog::ingest_binary(&mut s, &opts.mem, &mut mem, &mut diags)?
                    }
                };
                if let Some(c) = compression {
                    extra_meta.push((i as i32, "compression".to_string(), c.to_string()));
                }
                extra_meta.extend(st.meta.into_iter().map(|(k, v)| (i as i32, k, v)));
                perf::PerfStats {
                    bytes: st.bytes,
                    records: st.records,
                    samples: st.rows,
                    pipe: false,
                }
            }
            Format::ProcMaps => {
                let bytes = read_whole(input, stream, &mut diags)?;
                let text = String::from_utf8_lossy(&bytes);
                let (maps, bad) = memlog::maps::parse(&text);
                for (line, t) in bad {
                    diags.report(
                        Position::Line(line),
                        Severity::Warning,
                        "bad_row",
                        format!("not a /proc/PID/maps line: {t:?}: skipped"),
                    )?;
                }
                mem.maps(&mut cap, i as i32, &maps)?;
                perf::PerfStats {
                    bytes: bytes.len() as u64,
                    records: maps.len() as u64,
                    samples: 0,
                    pipe: false,
                }
            }
            Format::PerfPipe => {
                let st = perf::ingest_perf(input, stream, true, &mut conv, &mut diags, progress.as_ref())?;
                power_readings(&mut conv, &mut econv, &mut diags)?;
                st
            }
            Format::Vmstat
            | Format::Iostat
            | Format::IostatJson
            | Format::Sysstat
            | Format::Sadf
            | Format::MetricCsv => {
                let bytes = read_whole(input, stream, &mut diags)?;
                let kind = match format {
                    Format::Vmstat => metrics::Kind::Vmstat,
                    Format::Iostat => metrics::Kind::Iostat,
                    Format::IostatJson => metrics::Kind::IostatJson,
                    Format::Sysstat => metrics::Kind::Sysstat,
                    Format::Sadf => metrics::Kind::Sadf,
                    _ => metrics::Kind::Csv,
                };
                let before = mconv.points;
                let rows = metrics::read(kind, &bytes, &mut diags, &mut mconv)?;
                mconv.flush()?;
                clock = metric_clock(&mconv.clock, &opts.tz, &mut diags)?;
                perf::PerfStats {
                    bytes: bytes.len() as u64,
                    records: rows,
                    samples: mconv.points - before,
                    pipe: false,
                }
            }
            Format::Powercap | Format::PerfStat | Format::Turbostat => {
                let bytes = read_whole(input, stream, &mut diags)?;
                let text = String::from_utf8_lossy(&bytes);
                let before = econv.readings;
                let rows = if format == Format::Powercap {
                    clock = ("utc".into(), Some(0));
                    econv.set_utc_offset(Some(0));
                    energy::read_powercap(&text, &mut diags, &mut econv)?
                } else if format == Format::Turbostat {
                    clock = ("utc".into(), Some(0));
                    econv.set_utc_offset(Some(0));
                    energy::read_turbostat(&text, &mut diags, &mut econv)?
                } else {
                    clock = ("perf-stat:relative".into(), None);
                    energy::read_perf_stat(&text, &mut diags, &mut econv)?
                };
                for (line, kind, message) in std::mem::take(&mut econv.problems) {
                    diags.report(Position::Line(line), Severity::Warning, kind, message)?;
                }
                econv.flush()?;
                perf::PerfStats {
                    bytes: bytes.len() as u64,
                    records: rows,
                    samples: econv.readings - before,
                    pipe: false,
                }
            }
            Format::Strace => {
                let s = strace::ingest_strace(
                    input,
                    stream,
                    &mut sconv,
                    &mut conv.stacks,
                    &mut conv.syscalls,
                    &mut diags,
                    progress.as_ref(),
                )?;
                extra_meta.push((
                    i as i32,
                    "strace_time".to_string(),
                    s.time_kind.as_str().to_string(),
                ));
                clock = match s.time_kind {
                    strace::reader::TimeKind::Epoch => ("utc".into(), Some(0)),
                    k => (format!("strace:{}", k.as_str()), None),
                };
                perf::PerfStats {
                    bytes: s.bytes,
                    records: s.lines,
                    samples: s.calls,
                    pipe: false,
                }
            }
        };
        if let Some(e) = expansion.filter(|e| e.stopped()) {
            diags.report(
                Position::Byte(e.consumed()),
                Severity::Error,
                "decompression_limit",
                format!(
                    "the {} stream {}: the rest is not read",
                    compression.unwrap_or("compressed"),
                    opts.expansion.exceeded(e.produced(), e.consumed())
                ),
            )?;
        }
        if let Some(p) = &progress {
            p.at(size)?;
        }
        summaries.push(InputSummary {
            path: name,
            format,
            bytes: stats.bytes,
            records: stats.records,
            samples: stats.samples,
            diagnostics: diags.into_vec(),
            clock: clock.0,
            utc_offset_ns: clock.1,
        });
    }
    sconv.finish(&mut cap, &mut conv.stacks, &mut conv.syscalls)?;
    mconv.finish(&mut cap)?;
    econv.finish(&mut cap)?;
    mem.finish(&mut cap)?;
    let mut pairs = conv.finish(&mut cap)?;
    for (i, s) in summaries.iter_mut().enumerate() {
        if matches!(s.format, Format::PerfFile | Format::PerfPipe) {
            (s.clock, s.utc_offset_ns) = perf_clock(&pairs, i as i32);
        }
    }
    pairs.extend(extra_meta);
    write_source_tables(&mut cap, &summaries, pairs)?;
    before_commit(cap.staging_dir())?;
    let out = cap.commit()?;
    Ok(IngestSummary {
        out,
        inputs: summaries,
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

/// The clock of a perf.data input from its header metadata: with clock data
/// (`perf record -k CLOCK`), the wall time and the clock's time read
/// together give the offset to UTC.
fn perf_clock(meta: &[(i32, String, String)], source: i32) -> (String, Option<i64>) {
    let get = |k: &str| {
        meta.iter()
            .find(|(s, key, _)| *s == source && key == k)
            .and_then(|(_, _, v)| v.parse::<i64>().ok())
    };
    match (
        get("clockid"),
        get("clock_wall_ns"),
        get("clock_clockid_ns"),
    ) {
        (Some(id), Some(wall), Some(clk)) => (
            format!("perf:{}", perf::header::clockid_name(id)),
            Some(wall - clk),
        ),
        (Some(id), _, _) => (format!("perf:{}", perf::header::clockid_name(id)), None),
        _ => ("perf".into(), None),
    }
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

fn write_source_tables(
    cap: &mut CaptureWriter,
    inputs: &[InputSummary],
    meta: Vec<(i32, String, String)>,
) -> Result<()> {
    table_columns! {
        #[derive(Default)]
        struct SourceCols for schema::SOURCE {
            source_id: Int32Builder,
            path: StringBuilder,
            format: StringBuilder,
            size_bytes: Int64Builder,
            records: Int64Builder,
            diagnostics: Int64Builder,
            clock: StringBuilder,
            utc_offset_ns: Int64Builder,
        }
    }
    table_columns! {
        #[derive(Default)]
        struct MetaCols for schema::CAPTURE_META {
            source_id: Int32Builder,
            key: StringBuilder,
            value: StringBuilder,
        }
    }

    let mut c = SourceCols::default();
    for (i, s) in inputs.iter().enumerate() {
        c.source_id.append_value(i as i32);
        c.path.append_value(&s.path);
        c.format.append_value(s.format.name());
        c.size_bytes.append_value(s.bytes as i64);
        c.records.append_value(s.records as i64);
        c.diagnostics.append_value(s.diagnostics.len() as i64);
        c.clock.append_value(&s.clock);
        c.utc_offset_ns.append_option(s.utc_offset_ns);
    }
    cap.write_table(&mut c)?;

    let mut c = MetaCols::default();
    for (s, k, v) in meta {
        c.source_id.append_value(s);
        c.key.append_value(k);
        c.value.append_value(v);
    }
    cap.write_table(&mut c)?;

    let mut c = readback::DiagnosticCols::default();
    for (i, s) in inputs.iter().enumerate() {
        for d in &s.diagnostics {
            c.push(i as i32, d);
        }
    }
    cap.write_table(&mut c)?;
    Ok(())
}
