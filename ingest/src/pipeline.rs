//! One ingest: every input opened, read by its format's reader into its
//! converter, the source, metadata and diagnostic tables written, the
//! capture committed atomically.

use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use arrow::array::{Int32Builder, Int64Builder, StringBuilder};

use crate::detect::{open_input, Opened};
use crate::diag::{Diagnostic, Diagnostics, Position, Severity};
use crate::error::{Error, Result};
use crate::formats::{Format, Input, ReadStats, Sinks};
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
    /// Not committed: the capture is handed back held
    /// ([`IngestSummary::held`]), its small tables in memory rather than
    /// files (an archive appends it to a segment and drops it).
    pub hold: bool,
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

#[derive(Debug)]
pub struct IngestSummary {
    pub out: PathBuf,
    pub inputs: Vec<InputSummary>,
    /// The capture, with [`IngestOptions::hold`]: its tables are read at
    /// its directory (through [`crate::readback`]) until it is dropped.
    pub held: Option<crate::writer::HeldCapture>,
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
    ingest_with(inputs, out, opts, Seams::default(), before_commit)
}

/// What enrichment lends ingest while the samples are read: the
/// unwinder of `--call-graph dwarf` stacks, and a sink told of each
/// module as its first frame is met (trawl-enrich learns its symbols
/// then).
#[derive(Default)]
pub struct Seams {
    pub unwinder: Option<Box<dyn unwind::StackUnwinder>>,
    pub modules: Option<Box<dyn crate::stacks::ModuleSink>>,
}

/// [`ingest`] with enrichment's [`Seams`].
pub fn ingest_with(
    inputs: &[PathBuf],
    out: &Path,
    opts: &IngestOptions,
    seams: Seams,
    before_commit: impl FnOnce(&Path) -> Result<()>,
) -> Result<IngestSummary> {
    let mut run = Run::new(out, opts, seams)?;
    let mut summaries = Vec::new();
    let mut base = 0u64;
    for (i, input) in inputs.iter().enumerate() {
        let size = std::fs::metadata(input).map_or(0, |m| m.len());
        let progress = (opts.progress.is_some() || opts.cancel.is_some()).then(|| Progress {
            done: opts.progress.clone().unwrap_or_default(),
            base,
            cancel: opts.cancel.clone(),
        });
        base += size;
        summaries.push(run.input(i as i32, input, progress.as_ref())?);
        if let Some(p) = &progress {
            p.at(size)?;
        }
    }
    run.finish(summaries, before_commit)
}

/// One ingest under way: the staged capture and a converter per kind of
/// input, each input's rows going to its converter.
struct Run<'o> {
    opts: &'o IngestOptions,
    cap: CaptureWriter,
    conv: perf::convert::PerfConverter,
    sconv: strace::convert::StraceConverter,
    mconv: metrics::convert::MetricConverter,
    mem: memlog::convert::MemConverter,
    econv: energy::convert::EnergyConverter,
    /// `capture_meta` rows the inputs add (compression, strace's times).
    extra_meta: Vec<(i32, String, String)>,
}

impl<'o> Run<'o> {
    fn new(out: &Path, opts: &'o IngestOptions, seams: Seams) -> Result<Run<'o>> {
        let tz = match &opts.tz {
            Some(z) => Some(
                z.parse::<chrono_tz::Tz>()
                    .map_err(|_| Error::BadZone(z.clone()))?,
            ),
            None => None,
        };
        let mut cap = if opts.hold {
            CaptureWriter::create_held(out, opts.staging.as_deref())?
        } else {
            CaptureWriter::create_staged(out, opts.staging.as_deref())?
        };
        let mut conv = perf::convert::PerfConverter::new(&mut cap)?;
        let sconv = strace::convert::StraceConverter::new(&mut cap)?;
        let mconv = metrics::convert::MetricConverter::new(&mut cap, tz)?;
        let mem = memlog::convert::MemConverter::new();
        let econv = energy::convert::EnergyConverter::new(&mut cap)?;
        opts.mem.check().map_err(Error::Usage)?;
        if let Some(u) = seams.unwinder {
            conv.set_unwinder(u);
        }
        if let Some(m) = seams.modules {
            conv.stacks.set_module_sink(m);
        }
        Ok(Run {
            opts,
            cap,
            conv,
            sconv,
            mconv,
            mem,
            econv,
            extra_meta: Vec::new(),
        })
    }

    /// Reads input `i` (a path, or `-`) into its converter.
    fn input(&mut self, i: i32, input: &Path, progress: Option<&Progress>) -> Result<InputSummary> {
        let name = input.to_string_lossy().into_owned();
        let mut diags = Diagnostics::new(name.clone(), self.opts.strict);
        let opened = open_input(input, &name, self.opts.expansion, self.opts.strict)?;
        let (format, compression, expansion) =
            (opened.format, opened.compression, opened.expansion.clone());
        self.conv.begin_source(i);
        self.sconv.begin_source(i);
        self.mconv.begin_source(i);
        self.econv.begin_source(i);
        let stats = self.read(i, input, &name, opened, &mut diags, progress)?;
        if let Some(e) = expansion.filter(|e| e.stopped()) {
            diags.report(
                Position::Byte(e.consumed()),
                Severity::Error,
                "decompression_limit",
                format!(
                    "the {} stream {}: the rest is not read",
                    compression.unwrap_or("compressed"),
                    self.opts.expansion.exceeded(e.produced(), e.consumed())
                ),
            )?;
        }
        Ok(InputSummary {
            path: name,
            format,
            bytes: stats.bytes,
            records: stats.records,
            samples: stats.samples,
            diagnostics: diags.into_vec(),
            clock: stats.clock.0,
            utc_offset_ns: stats.clock.1,
        })
    }

    /// The input's records through its format's reader into its converter:
    /// what was read, and the clock of its times (perf's is filled in at
    /// the end, from its header).
    fn read(
        &mut self,
        i: i32,
        input: &Path,
        name: &str,
        opened: Opened,
        diags: &mut Diagnostics,
        progress: Option<&Progress>,
    ) -> Result<ReadStats> {
        let Opened {
            format,
            stream,
            compression,
            ..
        } = opened;
        let mut meta = Vec::new();
        let mut sinks = Sinks {
            mem_opts: &self.opts.mem,
            tz: &self.opts.tz,
            cap: &mut self.cap,
            perf: &mut self.conv,
            strace: &mut self.sconv,
            metric: &mut self.mconv,
            mem: &mut self.mem,
            energy: &mut self.econv,
            meta: &mut meta,
        };
        let read = format.read(
            &mut sinks,
            Input {
                source: i,
                path: input,
                name,
                stream,
                compression,
                diags,
                progress,
            },
        )?;
        self.extra_meta
            .extend(meta.into_iter().map(|(k, v)| (i, k, v)));
        Ok(read)
    }

    /// Every converter's last rows, the source, metadata and diagnostic
    /// tables, `before_commit` on the staging directory, the commit.
    fn finish(
        mut self,
        mut summaries: Vec<InputSummary>,
        before_commit: impl FnOnce(&Path) -> Result<()>,
    ) -> Result<IngestSummary> {
        let cap = &mut self.cap;
        self.sconv
            .finish(cap, &mut self.conv.stacks, &mut self.conv.syscalls)?;
        self.mconv.finish(cap)?;
        self.econv.finish(cap)?;
        self.mem.finish(cap)?;
        let mut pairs = self.conv.finish(cap)?;
        for (i, s) in summaries.iter_mut().enumerate() {
            if s.format.clock_from_perf_header() {
                (s.clock, s.utc_offset_ns) = perf_clock(&pairs, i as i32);
            }
        }
        pairs.extend(self.extra_meta);
        write_source_tables(&mut self.cap, &summaries, pairs)?;
        before_commit(self.cap.staging_dir())?;
        if self.cap.is_held() {
            let held = self.cap.into_held();
            return Ok(IngestSummary {
                out: held
                    .as_ref()
                    .map_or_else(PathBuf::new, |h| h.dir().to_path_buf()),
                inputs: summaries,
                held,
            });
        }
        let out = self.cap.commit()?;
        Ok(IngestSummary {
            out,
            inputs: summaries,
            held: None,
        })
    }
}

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

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int64Type, UInt64Type};

    use super::*;
    use crate::perf::convert::TEST_LIMITS;
    use crate::readback::read_columns;
    use trawl_capture::schema;

    /// Each sample's stack (its frames' module and address, leaf first),
    /// by sample id, of `inputs` ingested with `limits` (samples per
    /// batch, raw-callchain cache entries).
    fn stacks_of(inputs: &[PathBuf], limits: (usize, usize)) -> BTreeMap<i64, Vec<(i64, u64)>> {
        TEST_LIMITS.with(|l| l.set(limits));
        let dir = std::env::temp_dir().join(format!(
            "trawl-held-{}-{}-{}",
            std::process::id(),
            limits.0,
            limits.1
        ));
        let cap = dir.join("cap");
        let done = ingest(inputs, &cap, &IngestOptions::default(), |_| Ok(()));
        TEST_LIMITS.with(|l| l.set((crate::perf::convert::BATCH_ROWS, 200_000)));
        if let Err(e) = done {
            std::fs::remove_dir_all(&dir).ok();
            panic!("ingest with limits {limits:?}: {e}");
        }
        let mut frames = BTreeMap::new();
        for b in read_columns(
            &cap,
            &schema::FRAME,
            Some(&["frame_id", "module_id", "rel_pc"]),
        )
        .unwrap()
        {
            let (f, m, pc) = (
                b.column(0).as_primitive::<Int64Type>(),
                b.column(1).as_primitive::<Int64Type>(),
                b.column(2).as_primitive::<UInt64Type>(),
            );
            for i in 0..b.num_rows() {
                let m = if m.is_null(i) { -1 } else { m.value(i) };
                frames.insert(f.value(i), (m, pc.value(i)));
            }
        }
        let mut stacks: BTreeMap<i64, BTreeMap<i64, (i64, u64)>> = BTreeMap::new();
        for b in read_columns(
            &cap,
            &schema::STACK,
            Some(&["stack_id", "depth", "frame_id"]),
        )
        .unwrap()
        {
            let s = b.column(0).as_primitive::<Int64Type>();
            let d = arrow::compute::cast(b.column(1), &arrow::datatypes::DataType::Int64).unwrap();
            let d = d.as_primitive::<Int64Type>();
            let f = b.column(2).as_primitive::<Int64Type>();
            for i in 0..b.num_rows() {
                stacks
                    .entry(s.value(i))
                    .or_default()
                    .insert(d.value(i), frames[&f.value(i)]);
            }
        }
        let mut out = BTreeMap::new();
        for b in read_columns(&cap, &schema::PERF_SAMPLE, Some(&["sample_id", "stack_id"])).unwrap()
        {
            let (id, st) = (
                b.column(0).as_primitive::<Int64Type>(),
                b.column(1).as_primitive::<Int64Type>(),
            );
            for i in 0..b.num_rows() {
                let frames = match st.is_null(i) {
                    true => Vec::new(),
                    false => stacks[&st.value(i)].values().copied().collect(),
                };
                out.insert(id.value(i), frames);
            }
        }
        std::fs::remove_dir_all(&dir).ok();
        out
    }

    /// Samples are written a batch behind, their stack ids settled once
    /// the stack thread has interned their stacks; the raw-callchain cache
    /// is cleared when full, and an input whose stacks are interned at
    /// once (system call tracepoints) settles everything. With batches of
    /// 37 samples and a cache of 25 entries, every sample of three
    /// recordings (one with system call tracepoints between the others)
    /// keeps the stack it has with the limits trawl runs with.
    #[test]
    fn held_batches_and_cache_clears_keep_each_samples_stack() {
        let fx = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures/perf");
        let inputs: Vec<PathBuf> = ["procs.data", "io-syscalls.data", "clock.data"]
            .iter()
            .map(|f| fx.join(f))
            .collect();
        let usual = stacks_of(&inputs, (crate::perf::convert::BATCH_ROWS, 200_000));
        let small = stacks_of(&inputs, (37, 25));
        let with_stacks = usual.values().filter(|s| !s.is_empty()).count();
        assert!(
            usual.len() > 1000 && with_stacks > 1000,
            "{} samples, {with_stacks} with stacks",
            usual.len()
        );
        assert_eq!(usual.len(), small.len());
        for (id, s) in &usual {
            assert_eq!(Some(s), small.get(id), "sample {id}");
        }
    }
}
