//! `trawl ingest`: capture files into a capture directory of Parquet tables.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::cmd::symbolize::SymArgs;

#[derive(Args)]
pub(crate) struct IngestArgs {
    /// Input files (format detected from content); `-` reads standard input.
    #[arg(required = true)]
    pub(crate) inputs: Vec<PathBuf>,
    /// Capture directory to write (replaced if it is already a capture).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    #[command(flatten)]
    pub(crate) conv: ConvertArgs,
}

/// How inputs become a capture: the options `ingest` and `archive ingest`
/// share.
#[derive(Args)]
pub(crate) struct ConvertArgs {
    /// Fail at the first diagnostic instead of recording it (archive: and
    /// stop at the first failed capture).
    #[arg(long)]
    pub(crate) strict: bool,
    /// IANA time zone of local wall-clock times in metric inputs (vmstat
    /// `-t`, iostat/sysstat in the locale's format, CSV times without an
    /// offset), e.g. `Europe/Berlin`: they become UTC (`metric.utc_ns`) and
    /// can be aligned with perf and strace times.
    #[arg(long, value_name = "ZONE")]
    pub(crate) tz: Option<String>,
    /// Do not symbolize (run `trawl symbolize` later).
    #[arg(long)]
    pub(crate) no_symbolize: bool,
    /// Also write `perf_sample_symbolized.parquet`: every sample with its
    /// leaf's function, module and source line, for readers without trawl
    /// (pandas, Polars, DuckDB on the files). trawl sql and Python have it
    /// as a view whether or not it is written.
    #[arg(long, conflicts_with = "no_symbolize")]
    pub(crate) flat: bool,
    /// Do not unwind `--call-graph dwarf` user stacks (keep only the
    /// kernel callchain and the sampled ip; the registers and stack bytes
    /// stay in `perf_user_stack`).
    #[arg(long)]
    pub(crate) no_unwind: bool,
    /// A gzip or zstd input may expand to this many times the compressed
    /// bytes read (after its first 64 MiB); past it the input is read no
    /// further and a `decompression_limit` diagnostic says so (a
    /// decompression bomb). 0: no limit.
    #[arg(long, value_name = "RATIO", default_value_t = trawl_ingest::compressed::ExpansionLimit::DEFAULT_RATIO)]
    pub(crate) max_expansion: u64,
    #[command(flatten)]
    pub(crate) mem: MemArgs,
    #[command(flatten)]
    pub(crate) sym: SymArgs,
}

impl ConvertArgs {
    pub(crate) fn options(&self) -> trawl_ingest::IngestOptions {
        trawl_ingest::IngestOptions {
            strict: self.strict,
            tz: self.tz.clone(),
            mem: self.mem.options(),
            staging: None,
            progress: None,
            cancel: None,
            hold: false,
            expansion: trawl_ingest::compressed::ExpansionLimit {
                ratio: self.max_expansion,
                ..Default::default()
            },
        }
    }

    /// How captures are enriched as they are ingested, with `cfg`
    /// (--no-symbolize, --flat, --no-unwind).
    pub(crate) fn enrichment<'a>(
        &self,
        cfg: &'a trawl_symbolize::Config,
    ) -> trawl_enrich::Enrichment<'a> {
        trawl_enrich::Enrichment {
            cfg,
            symbolize: !self.no_symbolize,
            flat: self.flat,
            unwind: !self.no_unwind,
        }
    }
}

/// Filters and page size for memory access logs (lackey, binary).
#[derive(Args, Clone)]
pub(crate) struct MemArgs {
    /// Memory logs: kinds of records to keep, letters of ILSM (I instruction
    /// fetch, L load, S store, M modify); ordinals still count every
    /// instruction.
    #[arg(long = "mem-kinds", value_name = "KINDS", default_value = "ILSM", value_parser = parse_kinds)]
    pub(crate) kinds: u8,
    /// Memory logs: keep only accesses in LO-HI (hex, HI exclusive) or
    /// LO+LEN (e.g. `0x1ffefff000+64k`); repeatable.
    #[arg(long = "mem-range", value_name = "RANGE", value_parser = parse_mem_range)]
    pub(crate) ranges: Vec<(u64, u64)>,
    /// Memory logs: also keep every instruction fetch as a `mem_access` row
    /// (by default fetches are summarised per address in `mem_fetch`).
    #[arg(long = "fetch-rows")]
    pub(crate) fetch_rows: bool,
    /// Memory logs: page size of `mem_page` (power of two, 64 B–2 MiB; e.g.
    /// 4096, 64k, 2M). Default 4096, or the binary log's.
    #[arg(long = "page-size", value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) page_size: Option<u64>,
}

impl Default for MemArgs {
    fn default() -> Self {
        MemArgs {
            kinds: 0b1111,
            ranges: Vec::new(),
            fetch_rows: false,
            page_size: None,
        }
    }
}

impl MemArgs {
    pub(crate) fn options(&self) -> trawl_ingest::memlog::MemOptions {
        trawl_ingest::memlog::MemOptions {
            filter: trawl_ingest::memlog::Filter {
                kinds: self.kinds,
                ranges: self.ranges.clone(),
                fetch_rows: self.fetch_rows,
            },
            page_size: self.page_size,
        }
    }
}

pub(crate) fn parse_kinds(s: &str) -> std::result::Result<u8, String> {
    trawl_ingest::memlog::Filter::parse_kinds(s)
}

pub(crate) fn parse_mem_range(s: &str) -> std::result::Result<(u64, u64), String> {
    trawl_ingest::memlog::Filter::parse_range(s)
}

pub(crate) fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    trawl_ingest::memlog::parse_size(s)
}

pub(crate) fn ingest(a: &IngestArgs) -> Result<()> {
    use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    use std::sync::Arc;

    // A progress bar of input bytes on a terminal (nothing otherwise),
    // drawn from a counter the ingest advances.
    let total: u64 = a
        .inputs
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
    bar.set_style(
        ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {bytes}/{total_bytes} {binary_bytes_per_sec} ETA {eta} {msg}",
        )
        .expect("template"),
    );
    let done = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut opts = a.conv.options();
    opts.progress = Some(done.clone());
    // One config for unwinding and symbolizing: what one learns of a
    // binary the other finds in memory.
    let cfg = a.conv.sym.config_with_store(None);
    let how = a.conv.enrichment(&cfg);
    let result = std::thread::scope(|scope| {
        if !bar.is_hidden() {
            let (bar, done, stop) = (bar.clone(), done.clone(), stop.clone());
            scope.spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    bar.set_position(done.load(Ordering::Relaxed));
                    std::thread::sleep(std::time::Duration::from_millis(100));
                }
            });
        }
        let r = trawl_enrich::ingest(&a.inputs, &a.output, &opts, &how, |step| {
            bar.set_message(step.to_string());
            Ok(())
        });
        stop.store(true, Ordering::Relaxed);
        r
    });
    bar.finish_and_clear();
    let (summary, sym) = result?;
    for s in &summary.inputs {
        let (records, items) = s.format.units();
        eprintln!(
            "{}: {} ({} bytes): {} {records}, {} {items}, {} diagnostics",
            s.path,
            s.format.name(),
            s.bytes,
            s.records,
            s.samples,
            s.diagnostics.len()
        );
        for d in s.diagnostics.iter().take(5) {
            eprintln!("  {d}");
        }
        if s.diagnostics.len() > 5 {
            eprintln!(
                "  ... {} more in the `diagnostic` table",
                s.diagnostics.len() - 5
            );
        }
    }
    for l in sym.report.iter().chain(&sym.problems).chain(&sym.warnings) {
        eprintln!("{l}");
    }
    eprintln!("wrote {}", summary.out.display());
    // What was learnt of the binaries (symbol tables, source lines) is
    // freed on a thread of its own, which the end of the process may cut
    // short: tens of milliseconds on the caller's thread otherwise.
    let _ = std::thread::Builder::new().spawn(move || drop(cfg));
    Ok(())
}
