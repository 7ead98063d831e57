//! `trawl`: turn performance captures into Parquet and answer questions
//! with SQL. This crate is glue: argument parsing, terminal output and exit
//! codes; the work is in trawl-ingest, trawl-symbolize and trawl-query.

mod cmd;
mod output;
mod plot;
mod symbols;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use output::{Format, OutputOpts};
use trawl_query::analyses::{self, HotspotKey, SampleFilter};
use trawl_query::lbr::Method;
use trawl_query::Session;

#[derive(Parser)]
#[command(name = "trawl", version, about = "perf.data and other performance captures → Parquet tables → SQL", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert capture files into a capture directory of Parquet tables.
    Ingest(IngestArgs),
    /// (Re)symbolize a capture, e.g. after adding --debug-dir.
    Symbolize {
        capture: PathBuf,
        #[command(flatten)]
        sym: SymArgs,
    },
    /// Run SQL over the tables of one or more captures.
    Sql(SqlArgs),
    /// List tables, columns, types and their documentation.
    Tables {
        /// Captures (optional with --markdown).
        captures: Vec<PathBuf>,
        /// Print docs/tables.md (the documentation of every table).
        #[arg(long)]
        markdown: bool,
    },
    /// List the SQL table functions (the analyses), their parameters and
    /// what they answer.
    Functions(cmd::functions::Args),
    /// Named analyses.
    #[command(subcommand)]
    Report(Report),
    /// Convert a capture file into another format.
    #[command(subcommand)]
    Convert(Convert),
    /// Draw a capture as an image.
    #[command(subcommand)]
    Render(Render),
    /// Symbolize addresses of one ELF file, printing what `addr2line -f -i
    /// -C` prints (function, then file:line, per inline level, innermost
    /// first); debug files are found as for captures.
    Addr2line(Addr2lineArgs),
    /// Ingest the bundled fixtures and show what trawl answers.
    Demo,
}

#[derive(Args)]
struct IngestArgs {
    /// Input files (format detected from content); `-` reads standard input.
    #[arg(required = true)]
    inputs: Vec<PathBuf>,
    /// Capture directory to write (replaced if it is already a capture).
    #[arg(short, long)]
    output: PathBuf,
    /// Fail at the first diagnostic instead of recording it.
    #[arg(long)]
    strict: bool,
    /// IANA time zone of local wall-clock times in metric inputs (vmstat
    /// `-t`, iostat/sysstat in the locale's format, CSV times without an
    /// offset), e.g. `Europe/Berlin`: they become UTC (`metric.utc_ns`) and
    /// can be aligned with perf and strace times.
    #[arg(long, value_name = "ZONE")]
    tz: Option<String>,
    /// Do not symbolize (run `trawl symbolize` later).
    #[arg(long)]
    no_symbolize: bool,
    /// Do not unwind `--call-graph dwarf` user stacks (keep only the
    /// kernel callchain and the sampled ip; the registers and stack bytes
    /// stay in `perf_user_stack`).
    #[arg(long)]
    no_unwind: bool,
    #[command(flatten)]
    mem: MemArgs,
    #[command(flatten)]
    sym: SymArgs,
}

/// Filters and page size for memory access logs (lackey, binary).
#[derive(Args, Clone)]
struct MemArgs {
    /// Memory logs: kinds of records to keep, letters of ILSM (I instruction
    /// fetch, L load, S store, M modify); ordinals still count every
    /// instruction.
    #[arg(long = "mem-kinds", value_name = "KINDS", default_value = "ILSM", value_parser = parse_kinds)]
    kinds: u8,
    /// Memory logs: keep only accesses in LO-HI (hex, HI exclusive) or
    /// LO+LEN (e.g. `0x1ffefff000+64k`); repeatable.
    #[arg(long = "mem-range", value_name = "RANGE", value_parser = parse_mem_range)]
    ranges: Vec<(u64, u64)>,
    /// Memory logs: also keep every instruction fetch as a `mem_access` row
    /// (by default fetches are summarised per address in `mem_fetch`).
    #[arg(long = "fetch-rows")]
    fetch_rows: bool,
    /// Memory logs: page size of `mem_page` (power of two, 64 B–2 MiB; e.g.
    /// 4096, 64k, 2M). Default 4096, or the binary log's.
    #[arg(long = "page-size", value_name = "BYTES", value_parser = parse_bytes)]
    page_size: Option<u64>,
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
    fn options(&self) -> trawl_ingest::memlog::MemOptions {
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

fn parse_kinds(s: &str) -> std::result::Result<u8, String> {
    trawl_ingest::memlog::Filter::parse_kinds(s)
}

fn parse_mem_range(s: &str) -> std::result::Result<(u64, u64), String> {
    trawl_ingest::memlog::Filter::parse_range(s)
}

fn parse_bytes(s: &str) -> std::result::Result<u64, String> {
    trawl_ingest::memlog::parse_size(s)
}

#[derive(Args, Clone, Default)]
struct SymArgs {
    /// Directory with binaries or debug files (searched by build-id, path
    /// and name); repeatable.
    #[arg(long = "debug-dir", value_name = "DIR")]
    debug_dirs: Vec<PathBuf>,
    /// Look up recorded paths below DIR first: a copy of the recording
    /// machine's file system (captures from another machine).
    #[arg(long, visible_alias = "sysroot", value_name = "DIR")]
    symfs: Option<PathBuf>,
    /// Look up recorded paths starting with FROM under TO instead, e.g.
    /// `--remap-path /opt/app=./build`; repeatable, tried before anything else.
    #[arg(long = "remap-path", value_name = "FROM=TO", value_parser = parse_remap)]
    remap: Vec<(String, PathBuf)>,
    /// Kernel symbols in /proc/kallsyms format.
    #[arg(long, value_name = "FILE")]
    kallsyms: Option<PathBuf>,
}

#[derive(Args)]
struct Addr2lineArgs {
    /// The executable or shared library.
    #[arg(short = 'e', long = "exe")]
    exe: PathBuf,
    /// Virtual addresses in hex (as addr2line takes them); read from
    /// standard input, one per line, when none are given.
    addresses: Vec<String>,
    /// Print each address before its frames (addr2line -a).
    #[arg(short = 'a', long)]
    addresses_out: bool,
    #[command(flatten)]
    sym: SymArgs,
}

#[derive(Args)]
struct SqlArgs {
    /// Captures (or directories of captures), then the query unless --file.
    #[arg(required = true, num_args = 1..)]
    args: Vec<String>,
    /// Read the query (or `;`-separated statements) from a file.
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Subcommand)]
enum Convert {
    /// A valgrind lackey log (text, gzip or zstd; `-` reads standard
    /// input) into trawl's binary memory log: fixed-size records in zstd
    /// blocks, filters applied while reading (see README).
    Lackey(ConvertLackeyArgs),
}

#[derive(Args)]
struct ConvertLackeyArgs {
    /// The lackey log, or `-` for standard input.
    input: PathBuf,
    /// Binary memory log to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Fail at the first diagnostic.
    #[arg(long)]
    strict: bool,
    #[command(flatten)]
    mem: MemArgs,
}

#[derive(Subcommand)]
enum Render {
    /// Memory accesses as an image: x = instruction ordinal, y = address
    /// (document 001). Colours: cyan store only, yellow load only, white
    /// both, black none. Writes the row → address mapping as CSV next to
    /// the image.
    Heatmap(HeatmapArgs),
}

#[derive(Args)]
struct HeatmapArgs {
    /// Capture with a memory log.
    capture: PathBuf,
    /// PNG file to write; the rows go to FILE with `.rows.csv`.
    #[arg(short, long)]
    output: PathBuf,
    /// `used`: only pages touched at least once (rows not contiguous);
    /// `full`: the whole address range (or --addr-range), contiguous.
    #[arg(long, value_enum, default_value = "used")]
    view: HeatView,
    /// Bytes per row (power of two), e.g. 4096 or 64. Default: the page
    /// size (used view), about 1024 rows (full view).
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    bytes_per_row: Option<u64>,
    /// Instructions per column, e.g. 16k or 512. Default: about 1024
    /// columns.
    #[arg(long, value_name = "N", value_parser = parse_bytes)]
    instr_per_col: Option<u64>,
    /// Zoom: addresses LO-HI (hex, HI exclusive) or LO+LEN.
    #[arg(long, value_name = "RANGE", value_parser = parse_mem_range)]
    addr_range: Option<(u64, u64)>,
    /// Zoom: instruction ordinals A..B (inclusive).
    #[arg(long, value_name = "A..B", value_parser = parse_ordinals)]
    ordinals: Option<(i64, i64)>,
    /// Pixels per cell (each cell drawn as N×N pixels).
    #[arg(long, default_value_t = 1)]
    scale: u32,
    /// The input of the capture to draw (`source.source_id`; default the
    /// first memory log).
    #[arg(long)]
    source: Option<i32>,
}

#[derive(Clone, Copy, ValueEnum)]
enum HeatView {
    Used,
    Full,
}

fn parse_ordinals(s: &str) -> std::result::Result<(i64, i64), String> {
    let (a, b) = s
        .split_once("..")
        .ok_or_else(|| format!("{s:?}: give ordinals as A..B"))?;
    let n = |t: &str| {
        trawl_ingest::memlog::parse_size(t)
            .map(|v| v as i64)
            .map_err(|_| format!("{t:?} is not an ordinal"))
    };
    let (a, b) = (n(a)?, n(b)?);
    if b < a {
        return Err(format!("{s:?}: empty range"));
    }
    Ok((a, b))
}

#[derive(Args)]
struct PagesArgs {
    /// Capture with a memory log.
    captures: Vec<PathBuf>,
    /// Page size: a multiple of the one the capture was ingested with.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    page_size: Option<u64>,
    #[arg(long, value_enum, default_value = "address")]
    sort: PagesSort,
    /// Show at most N pages.
    #[arg(long)]
    limit: Option<usize>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
enum PagesSort {
    Address,
    Accesses,
    First,
    Touched,
}

#[derive(Args)]
struct PageReuseArgs {
    /// Capture with a memory log.
    captures: Vec<PathBuf>,
    /// Page size: a multiple of the one the capture was ingested with.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    page_size: Option<u64>,
    /// `summary`: pages, the fewest pages needed, saving, pairs; `plan`:
    /// which pages can share one physical page, in order of use; `pairs`:
    /// the pairs (a, b) where a is never touched after b's first touch.
    #[arg(long, value_enum, default_value = "summary")]
    show: ReuseShow,
    /// Show at most N rows (plan, pairs).
    #[arg(long)]
    limit: Option<usize>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum ReuseShow {
    Summary,
    Plan,
    Pairs,
}

#[derive(Args)]
struct MemSymbolsArgs {
    /// Capture with a memory log and a maps file.
    captures: Vec<PathBuf>,
    /// Only functions or only data objects.
    #[arg(long, value_enum)]
    kind: Option<MemSymKind>,
    /// Only objects whose path contains this.
    #[arg(long)]
    object: Option<String>,
    /// Only symbols never executed / never touched.
    #[arg(long)]
    never: bool,
    /// Show at most N symbols.
    #[arg(long)]
    limit: Option<usize>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
enum MemSymKind {
    Function,
    Object,
}

#[derive(Args)]
struct MemObjectsArgs {
    /// Capture with a memory log and a maps file.
    captures: Vec<PathBuf>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Subcommand)]
enum Report {
    /// Pages of a memory log (lackey, binary) touched at least once, with
    /// accesses per kind, bytes touched and lifetime (first and last
    /// instruction ordinal).
    Pages(PagesArgs),
    /// Pages of a memory log whose lifetimes do not overlap could share
    /// one physical page: the fewest pages needed (most pages live at
    /// once), the saving, the sharing plan or the pairs (document 001).
    PageReuse(PageReuseArgs),
    /// Functions and data objects of the mapped files (a saved
    /// /proc/PID/maps ingested with the memory log): executed / touched or
    /// never.
    MemSymbols(MemSymbolsArgs),
    /// Per mapped object: pages mapped, touched and never touched;
    /// functions executed and never executed; data objects touched.
    MemObjects(MemObjectsArgs),
    /// Functions (or modules, source lines, addresses) by exclusive and
    /// inclusive cost.
    Hotspots(HotspotArgs),
    /// Who calls FUNCTION: attributed cost per caller (they sum to its
    /// inclusive cost).
    Callers(EdgeArgs),
    /// What FUNCTION calls: its exclusive cost and the attributed cost per
    /// callee (they sum to its inclusive cost).
    Callees(EdgeArgs),
    /// A flame graph (SVG) of the selected samples' stacks.
    Flamegraph(FlameArgs),
    /// Memory still allocated (mmap/brk/mremap regions not freed) at a
    /// time, from strace dumps: per process, application function, actual
    /// function and application source line (seed document 000).
    Unfreed(UnfreedArgs),
    /// Bytes read and written (return values of read/write-like calls) in
    /// a time window, from strace dumps: per process, application
    /// function, actual function, application source line and file.
    Io(IoArgs),
    /// Time ranges where monitoring metrics satisfy a rule (resource
    /// exhaustion), relative to --t0; with --runs, the ranges every run
    /// has (seed document 000, stage A).
    Exhaustion(ExhaustionArgs),
    /// What used CPU, memory or I/O inside exhaustion ranges: per range,
    /// process, application function, actual function and application
    /// source line (seed document 000, stage B).
    Cause(CauseArgs),
    /// Samples per time window and function (or module, process): the
    /// top N and the rest as [other], with shares; --plot draws them
    /// stacked.
    Timeline(TimelineArgs),
    /// Branch stacks (LBR, `perf record -b` / `-j any_call,any_ret`) as
    /// extra samples (seed document 003): time per function under a
    /// method, the resolution gained, the points, the transitions caller →
    /// callee, or each sample's call/return sequence.
    Lbr(LbrArgs),
    /// RAPL energy per function (or process, source line, CPU): each
    /// interval's package, cores and DRAM energy split across the samples
    /// taken in it by a per-core indicator (seed document 004, Fig. 2).
    Energy(EnergyArgs),
    /// Power model (document 004 §3.2–3.3): watts = a + Σ c_i · rate_i
    /// fitted by least squares over the intervals of a domain's energy
    /// counter (rates from counters read at the samples, or sampled
    /// periods); coefficients, R², and the sampling interval R_i = P / c_i
    /// that makes each sample of event i worth P joules.
    PowerModel(PowerModelArgs),
    /// Energy-based samples (document 004 §3.5): the samples of several
    /// events merged in time order and cut into runs whose modelled
    /// energy reaches a target P; each run is a power datum, its measured
    /// energy the RAPL counter over it. Mean, spread and share within
    /// ±5 %/±10 % of P for every subset of the events, next to runs of N
    /// consecutive time-based samples.
    PowerSamples(PowerSamplesArgs),
}

#[derive(Args)]
struct EnergyArgs {
    /// Captures with perf samples and energy readings of the same run.
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// What the joules are summed by: one or more keys, comma-separated
    /// (`package,function` gives each package's functions).
    #[arg(long, value_parser = energy_key(), value_delimiter = ',', default_value = "function")]
    by: Vec<trawl_query::energy::EnergyKey>,
    /// The perf event whose samples get the energy (default: the one with
    /// most samples).
    #[arg(long)]
    event: Option<String>,
    /// What a sample weighs in the package, cores, gpu and psys split:
    /// `period`, `samples` or `read:EVENT` (a counter read at the samples,
    /// e.g. read:cycles).
    #[arg(long, default_value = "period")]
    core_indicator: String,
    /// The same for the DRAM split (e.g. read:LLC-load-misses).
    #[arg(long, default_value = "period")]
    dram_indicator: String,
    /// The energy counters to read (`intel-rapl:0:0`,
    /// `power/energy-cores/@cpu-clock`; repeatable). Default: per domain
    /// (and per package, when the readings are of several: each package's
    /// energy goes to the samples on its CPUs), the one the event's
    /// samples read, else the one with most readings.
    #[arg(long)]
    zone: Vec<String>,
    #[command(flatten)]
    t0: T0Args,
    #[command(flatten)]
    out: OutputOpts,
}

/// The energy counter a power command models.
#[derive(Args)]
struct CounterArgs {
    /// The energy domain modelled.
    #[arg(long, default_value = "cores")]
    domain: String,
    /// The energy counter to read (see `report energy --zone`).
    #[arg(long)]
    zone: Vec<String>,
    /// The package (socket) modelled, when the domain is read per package:
    /// its counter, and the samples on its CPUs (perf_cpu).
    #[arg(long)]
    package: Option<i32>,
}

#[derive(Args)]
struct PowerModelArgs {
    /// A capture with energy readings and counters of the same run.
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// The events whose rates explain the power (comma-separated; default:
    /// every counter read at the samples, power events excepted).
    #[arg(long, value_delimiter = ',')]
    events: Vec<String>,
    #[command(flatten)]
    counter: CounterArgs,
    /// The samples whose counter reads give the rates (default: the
    /// leader of the group that read the domain's counter).
    #[arg(long)]
    event: Option<String>,
    /// Target energy per sample P (J) for R_i = P / c_i.
    #[arg(long, default_value_t = 1.0)]
    target: f64,
    /// Consecutive counter intervals are merged until they span this
    /// (RAPL counters step about every millisecond: 1 ms intervals carry
    /// one step whatever their length); `0` fits the raw intervals.
    #[arg(long, default_value = "10ms")]
    window: String,
    /// Print the intervals fitted on instead (t_ns, seconds, joules,
    /// watts, rate_1 … rate_k).
    #[arg(long)]
    intervals: bool,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct PowerSamplesArgs {
    /// Captures (one, or several inputs of the same run ingested together).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// The sampled events merged (comma-separated; default: every sampled
    /// event except the time event).
    #[arg(long, value_delimiter = ',')]
    events: Vec<String>,
    /// The time-based event compared.
    #[arg(long, default_value = "cpu-clock")]
    time_event: String,
    /// Target energy per datum P (J).
    #[arg(long, default_value_t = 1.0)]
    target: f64,
    /// Also group the time-based samples this many at a time (besides the
    /// count whose mean comes closest to P).
    #[arg(long)]
    group: Option<usize>,
    /// Joules per event of the model (EVENT=J, repeatable); default:
    /// fitted on the capture (`report power-model`).
    #[arg(long, value_name = "EVENT=J")]
    coef: Vec<String>,
    /// The model's constant power (W), with --coef.
    #[arg(long, default_value_t = 0.0)]
    intercept: f64,
    #[command(flatten)]
    counter: CounterArgs,
    /// Window of the fit when the model is fitted (see `report power-model`).
    #[arg(long, default_value = "10ms")]
    window: String,
    /// `summary` (per subset) or `data` (every power datum).
    #[arg(long, value_enum, default_value = "summary")]
    view: PowerView,
    /// Histograms of the data's energy (PNG or SVG): the best subset and
    /// the time-based runs (document 004 Fig. 6/8).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
enum PowerView {
    Summary,
    Data,
}

#[derive(Clone, Copy, ValueEnum)]
enum LbrView {
    /// Per function: samples, points, time and share under the method.
    Functions,
    /// Samples, branch entries, points per sample (resolution gained).
    Summary,
    /// Every sample and pseudo-sample with its time and weight.
    Points,
    /// Branches per (from function, to function, call/return/other).
    Transitions,
    /// Per sample: the branch sources FROM15 … FROM0 (oldest first), then
    /// the sampled function.
    Sequence,
}

#[derive(Args)]
struct LbrArgs {
    /// Captures (or directories of captures) with branch stacks.
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// How a sample's interval is shared with its branch entries: 0
    /// samples only; 1 equally; 2 each entry its function's execution
    /// ratio, the sample the rest; 3 in proportion to the ratios; cycles:
    /// by the entries' cycle counts.
    #[arg(long, default_value = "3")]
    method: String,
    /// Clock rate for --method cycles (default: the lowest rate at which
    /// no sample's entries outlast its interval).
    #[arg(long)]
    ghz: Option<f64>,
    #[arg(long, value_enum, default_value = "functions")]
    view: LbrView,
    /// Only this perf event.
    #[arg(long)]
    event: Option<String>,
    /// For --view points and sequence: only this sample (perf_sample.sample_id).
    #[arg(long)]
    sample: Option<i64>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
enum TimelineBy {
    Function,
    Module,
    Process,
}

#[derive(Args)]
struct TimelineArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// Window width: 10ms, 1s, 500us, ...
    #[arg(long, default_value = "100ms")]
    window: String,
    #[arg(long, value_enum, default_value = "function")]
    by: TimelineBy,
    /// Keys shown by name (by total over the capture); the rest is [other].
    #[arg(long, default_value_t = 10)]
    top: usize,
    /// The perf event (default: the one with most samples).
    #[arg(long)]
    event: Option<String>,
    /// Draw the shares stacked over time into this PNG or SVG file (the
    /// first capture).
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    /// Shade the ranges where this rule holds in the plot.
    #[command(flatten)]
    rule: RuleArgs,
    /// Count branch stack entries as samples too, timed by this method (0,
    /// 1, 2, 3 or cycles; see `trawl report lbr`).
    #[arg(long, value_name = "METHOD")]
    lbr: Option<String>,
    #[command(flatten)]
    t0: T0Args,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args, Clone)]
struct T0Args {
    /// Origin of relative times in each capture: `first` (the earliest
    /// event of any input), `exec:NAME` (the program's exec, from perf
    /// COMM records or strace execve), `@EPOCH_SECONDS` or an RFC 3339
    /// time, each optionally `+SECONDS`/`-SECONDS`.
    #[arg(long, default_value = "first", value_name = "SPEC")]
    t0: String,
}

impl T0Args {
    async fn open(&self, captures: &[PathBuf]) -> Result<Session> {
        let origin = trawl_query::time::Origin::parse(&self.t0)?;
        Ok(Session::open_at(captures, &origin).await?)
    }
}

#[derive(Args, Clone)]
struct RuleArgs {
    /// The rule: comparisons of metrics (as named in the `metric` table,
    /// `name[entity]` for one entity) and numbers with + - * /, combined
    /// with and/or/not, e.g. 'cpu_user+cpu_sys > 90 and runq > 2'.
    #[arg(long)]
    rule: Option<String>,
    /// Drop ranges shorter than this (after merging), e.g. 2s.
    #[arg(long, default_value = "0", value_name = "DURATION")]
    min_duration: String,
    /// Merge ranges separated by at most this, e.g. 1s.
    #[arg(long, default_value = "0", value_name = "DURATION")]
    gap: String,
}

impl RuleArgs {
    fn parse(&self) -> Result<Option<(trawl_query::ranges::Rule, trawl_query::ranges::RangeOpts)>> {
        use trawl_query::time::parse_duration_ns;
        let Some(r) = &self.rule else { return Ok(None) };
        Ok(Some((
            trawl_query::ranges::Rule::parse(r)?,
            trawl_query::ranges::RangeOpts {
                min_duration_ns: parse_duration_ns(&self.min_duration)?,
                gap_ns: parse_duration_ns(&self.gap)?,
            },
        )))
    }
}

#[derive(Args)]
struct ExhaustionArgs {
    /// Captures (or directories of captures): ranges per capture.
    captures: Vec<PathBuf>,
    /// Runs of the same workload: only the ranges present in every run
    /// (intersected on the relative time axis).
    #[arg(long, num_args = 1.., value_name = "CAPTURE")]
    runs: Vec<PathBuf>,
    #[command(flatten)]
    rule: RuleArgs,
    /// Draw each compared metric over time, its threshold and the ranges
    /// found (shaded) into this PNG or SVG file.
    #[arg(long, value_name = "FILE")]
    plot: Option<PathBuf>,
    #[command(flatten)]
    t0: T0Args,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct CauseArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// cpu (perf samples in the range), memory (allocated and not freed
    /// at the range's start) or io (bytes transferred from --lead before
    /// the range to its end).
    #[arg(long)]
    resource: String,
    /// The range START..END in seconds relative to --t0 (instead of --rule).
    #[arg(long, value_name = "START..END")]
    range: Option<String>,
    #[command(flatten)]
    rule: RuleArgs,
    /// Path prefix of the application's files (default: the directory of
    /// the traced executable).
    #[arg(long)]
    app: Option<String>,
    /// For io: also count this many seconds before each range.
    #[arg(long, default_value_t = 0.0)]
    lead: f64,
    /// For cpu: the perf event (default: the one with most samples).
    #[arg(long)]
    event: Option<String>,
    /// For memory: look at the range's `start` (document 000), or at the
    /// moment in the range when the traced processes held the most (`max`).
    #[arg(long, default_value = "start", value_parser = ["start", "max"])]
    at: String,
    /// For cpu: count branch stack entries as samples too, timed by this
    /// method (0, 1, 2, 3 or cycles; see `trawl report lbr`).
    #[arg(long, value_name = "METHOD")]
    lbr: Option<String>,
    #[command(flatten)]
    t0: T0Args,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct IoArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// Start of the window: `+SECONDS` after the first traced call, or a
    /// time in ns as in `syscall.time_ns` (default: the start).
    #[arg(long)]
    from: Option<String>,
    /// End of the window (exclusive), same forms (default: the end).
    #[arg(long)]
    to: Option<String>,
    /// Also count this many seconds before --from (document 000's lead
    /// time: I/O issued just before an exhaustion range feeds it).
    #[arg(long, default_value_t = 0.0)]
    lead: f64,
    /// Path prefix of the application's files (default: the directory of
    /// the traced executable).
    #[arg(long)]
    app: Option<String>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct UnfreedArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// `end` (default: what each process still held when it exited or the
    /// trace ended), `+SECONDS` after the first traced call, or a time in
    /// ns as in `syscall.time_ns`.
    #[arg(long, default_value = "end")]
    at: String,
    /// Path prefix of the application's files: its function is the first
    /// frame from the leaf in a module under it (default: the directory
    /// of the traced executable).
    #[arg(long)]
    app: Option<String>,
    #[command(flatten)]
    out: OutputOpts,
}

/// `--by` of energy: the library's keys, each with its help.
fn energy_key() -> impl clap::builder::TypedValueParser<Value = trawl_query::energy::EnergyKey> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    use trawl_query::energy::EnergyKey;
    PossibleValuesParser::new(EnergyKey::ALL.map(|k| PossibleValue::new(k.name()).help(k.doc())))
        .map(|s| EnergyKey::parse(&s).expect("a listed key"))
}

/// `--by` of hotspots: the library's keys, each with its help.
fn hotspot_key() -> impl clap::builder::TypedValueParser<Value = HotspotKey> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(HotspotKey::ALL.map(|k| PossibleValue::new(k.name()).help(k.doc())))
        .map(|s| HotspotKey::parse(&s).expect("a listed key"))
}

#[derive(Args, Clone, Default)]
struct MetricArgs {
    /// What a sample weighs: `period` (default, perf's Overhead),
    /// `samples`, a numeric perf_sample column (e.g. `weight`), or
    /// `read:EVENT` (the increase of a group-read counter).
    #[arg(long, default_value = "period")]
    weight: String,
    /// Attribute inlined code to its enclosing (ELF symbol) function only,
    /// as `perf report` does without --inline.
    #[arg(long)]
    no_inline: bool,
}

impl MetricArgs {
    fn parse(&self) -> Result<(analyses::Weight, analyses::StackOpts)> {
        Ok((
            analyses::Weight::parse(&self.weight)?,
            analyses::StackOpts {
                inline: !self.no_inline,
            },
        ))
    }
}

#[derive(Args)]
struct HotspotArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    #[arg(long, default_value = "function", value_parser = hotspot_key())]
    by: HotspotKey,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    metric: MetricArgs,
    /// Show at most N rows.
    #[arg(long, short = 'n')]
    limit: Option<usize>,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct EdgeArgs {
    /// The function, named as `trawl report hotspots` shows it.
    function: String,
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// Only occurrences in modules whose path contains this text.
    #[arg(long)]
    module: Option<String>,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    metric: MetricArgs,
    #[command(flatten)]
    out: OutputOpts,
}

#[derive(Args)]
struct FlameArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    captures: Vec<PathBuf>,
    /// SVG file to write.
    #[arg(short, long)]
    output: PathBuf,
    /// Title of the graph (default: the capture and event).
    #[arg(long)]
    title: Option<String>,
    /// Also write the folded stacks (`root;...;leaf weight`) to this file.
    #[arg(long, value_name = "FILE")]
    folded: Option<PathBuf>,
    #[command(flatten)]
    filter: FilterArgs,
    #[command(flatten)]
    metric: MetricArgs,
}

#[derive(Args, Clone, Default)]
struct FilterArgs {
    /// Event to analyse (default: the one with most samples).
    #[arg(long)]
    event: Option<String>,
    /// Only these processes (repeatable).
    #[arg(long)]
    pid: Vec<i32>,
    /// Only these threads (repeatable).
    #[arg(long)]
    tid: Vec<i32>,
    /// Only these command names (repeatable).
    #[arg(long)]
    comm: Vec<String>,
    /// Time range START..END in seconds on the capture clock, as `perf
    /// script` prints times (either side may be omitted).
    #[arg(long, value_name = "START..END")]
    time: Option<String>,
}

fn parse_time_range(s: &str) -> Result<(Option<i64>, Option<i64>)> {
    let (a, b) = s
        .split_once("..")
        .with_context(|| format!("--time {s:?}: expected START..END"))?;
    let p = |x: &str| -> Result<Option<i64>> {
        let x = x.trim();
        if x.is_empty() {
            return Ok(None);
        }
        let v: f64 = x
            .parse()
            .with_context(|| format!("--time: {x:?} is not a number of seconds"))?;
        Ok(Some((v * 1e9).round() as i64))
    };
    Ok((p(a)?, p(b)?))
}

impl FilterArgs {
    fn to_filter(&self) -> Result<SampleFilter> {
        let (from, to) = match &self.time {
            Some(t) => parse_time_range(t)?,
            None => (None, None),
        };
        Ok(SampleFilter {
            event: self.event.clone(),
            pids: self.pid.clone(),
            tids: self.tid.clone(),
            comms: self.comm.clone(),
            time_from_ns: from,
            time_to_ns: to,
        })
    }
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            eprintln!("trawl: {}", error_message(&e));
            ExitCode::FAILURE
        }
    }
}

/// The error and its causes, each cause once: DataFusion nests the same
/// error in layers whose messages repeat the inner one.
fn error_message(e: &anyhow::Error) -> String {
    let mut msg = String::new();
    for cause in e.chain() {
        let m = cause.to_string();
        if !msg.contains(&m) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&m);
        }
    }
    msg
}

fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?)
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Ingest(a) => ingest(&a),
        Cmd::Symbolize { capture, sym } => {
            if !trawl_ingest::writer::is_capture(&capture) {
                bail!("{}: not a trawl capture", capture.display());
            }
            let s = symbols::symbolize_capture(&capture, &sym.config())?;
            eprintln!("{}", s.line());
            if let Some(l) = symbols::symbolize_memory(&capture, &sym.config())? {
                eprintln!("{l}");
            }
            Ok(())
        }
        Cmd::Sql(a) => runtime()?.block_on(sql(a)),
        Cmd::Functions(a) => cmd::functions::run(a),
        Cmd::Tables { captures, markdown } => {
            if markdown {
                print!("{}", trawl_ingest::schema::render_markdown());
                return Ok(());
            }
            if captures.is_empty() {
                bail!("name a capture, or use --markdown");
            }
            runtime()?.block_on(tables(captures))
        }
        Cmd::Report(Report::Hotspots(a)) => runtime()?.block_on(hotspots(a)),
        Cmd::Report(Report::Callers(a)) => runtime()?.block_on(edges(a, true)),
        Cmd::Report(Report::Callees(a)) => runtime()?.block_on(edges(a, false)),
        Cmd::Report(Report::Flamegraph(a)) => runtime()?.block_on(flamegraph(a)),
        Cmd::Report(Report::Unfreed(a)) => runtime()?.block_on(unfreed(a)),
        Cmd::Report(Report::Io(a)) => runtime()?.block_on(io_report(a)),
        Cmd::Report(Report::Exhaustion(a)) => runtime()?.block_on(exhaustion(a)),
        Cmd::Report(Report::Cause(a)) => runtime()?.block_on(cause(a)),
        Cmd::Report(Report::Timeline(a)) => runtime()?.block_on(timeline(a)),
        Cmd::Report(Report::Lbr(a)) => runtime()?.block_on(report_lbr(a)),
        Cmd::Report(Report::Energy(a)) => runtime()?.block_on(report_energy(a)),
        Cmd::Report(Report::PowerModel(a)) => runtime()?.block_on(report_power_model(a)),
        Cmd::Report(Report::PowerSamples(a)) => runtime()?.block_on(report_power_samples(a)),
        Cmd::Report(Report::Pages(a)) => runtime()?.block_on(report_pages(a)),
        Cmd::Report(Report::PageReuse(a)) => runtime()?.block_on(report_page_reuse(a)),
        Cmd::Report(Report::MemSymbols(a)) => runtime()?.block_on(report_mem_symbols(a)),
        Cmd::Report(Report::MemObjects(a)) => runtime()?.block_on(report_mem_objects(a)),
        Cmd::Convert(Convert::Lackey(a)) => convert_lackey(a),
        Cmd::Render(Render::Heatmap(a)) => runtime()?.block_on(render_heatmap(a)),
        Cmd::Demo => runtime()?.block_on(demo()),
        Cmd::Addr2line(a) => {
            symbols::addr2line(&a.exe, &a.addresses, a.addresses_out, &a.sym.config())
        }
    }
}

fn parse_remap(s: &str) -> std::result::Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((from, to)) if from.starts_with('/') && !to.is_empty() => {
            Ok((from.to_string(), PathBuf::from(to)))
        }
        _ => Err(format!(
            "{s:?}: expected FROM=TO with FROM an absolute path prefix as recorded"
        )),
    }
}

impl SymArgs {
    fn config(&self) -> trawl_symbolize::Config {
        let mut c = trawl_symbolize::Config::standard();
        c.debug_dirs = self.debug_dirs.clone();
        c.symfs = self.symfs.clone();
        c.remap = self.remap.clone();
        c.kallsyms = self.kallsyms.clone();
        c
    }
}

fn ingest(a: &IngestArgs) -> Result<()> {
    let opts = trawl_ingest::IngestOptions {
        strict: a.strict,
        tz: a.tz.clone(),
        mem: a.mem.options(),
    };
    let cfg = a.sym.config();
    let mut sym_line = None;
    let unwinder: Option<Box<dyn trawl_ingest::unwind::StackUnwinder>> = if a.no_unwind {
        None
    } else {
        Some(Box::new(symbols::Unwinder(
            trawl_symbolize::unwind::DwarfUnwinder::new(cfg.clone()),
        )))
    };
    let summary =
        trawl_ingest::ingest_with_unwinder(&a.inputs, &a.output, &opts, unwinder, |staging| {
            if !a.no_symbolize {
                match symbols::symbolize_capture(staging, &cfg) {
                    Ok(s) => sym_line = Some(s.line()),
                    Err(e) => sym_line = Some(format!("symbolization failed: {e:#}")),
                }
                match symbols::symbolize_memory(staging, &cfg) {
                    Ok(Some(l)) => {
                        sym_line = Some(format!("{}\n{l}", sym_line.take().unwrap_or_default()))
                    }
                    Ok(None) => {}
                    Err(e) => sym_line = Some(format!("placing mem_map symbols failed: {e:#}")),
                }
            }
            Ok(())
        })?;
    for s in &summary.inputs {
        let (records, items) = match s.format {
            trawl_ingest::Format::Strace => ("lines", "system calls"),
            trawl_ingest::Format::Vmstat
            | trawl_ingest::Format::Iostat
            | trawl_ingest::Format::IostatJson
            | trawl_ingest::Format::Sysstat
            | trawl_ingest::Format::Sadf
            | trawl_ingest::Format::MetricCsv => ("rows", "points"),
            trawl_ingest::Format::Lackey | trawl_ingest::Format::MemBinary => {
                ("records", "mem_access rows")
            }
            trawl_ingest::Format::ProcMaps => ("mappings", "samples"),
            trawl_ingest::Format::Powercap
            | trawl_ingest::Format::PerfStat
            | trawl_ingest::Format::Turbostat => ("readings", "energy rows"),
            _ => ("records", "samples"),
        };
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
    if let Some(l) = sym_line {
        eprintln!("{l}");
    }
    eprintln!("wrote {}", summary.out.display());
    Ok(())
}

async fn sql(a: SqlArgs) -> Result<()> {
    let mut args = a.args.clone();
    let query = match &a.file {
        Some(f) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        None => {
            if args.len() < 2 {
                bail!("give one or more captures and then the query (or --file)");
            }
            args.pop().unwrap()
        }
    };
    let dirs: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
    let s = Session::open(&dirs).await?;
    let Some(df) = s.run_script(&query).await? else {
        bail!("no SQL statement given");
    };
    let batches = df.collect().await?;
    output::write(&batches, &a.out)
}

async fn tables(captures: Vec<PathBuf>) -> Result<()> {
    let s = Session::open(&captures).await?;
    let q = "SELECT table_name, column_name, data_type, is_nullable FROM information_schema.columns \
             WHERE table_schema = 'public' AND table_name NOT LIKE '\\_%' ESCAPE '\\' ORDER BY table_name, ordinal_position";
    let df = s.sql(q).await?;
    let batches = df.collect().await?;
    // Add each column's documentation from the schema definitions.
    use trawl_ingest::arrow::array::StringBuilder;
    use trawl_ingest::arrow::datatypes::{DataType, Field, Schema};
    let mut out = Vec::new();
    for b in batches {
        let t = trawl_query::string_values(b.column(0));
        let c = trawl_query::string_values(b.column(1));
        let mut doc = StringBuilder::new();
        for i in 0..b.num_rows() {
            let (tv, cv) = (t[i].as_deref().unwrap_or(""), c[i].as_deref().unwrap_or(""));
            let def = trawl_ingest::schema::table(tv);
            let d = if cv == "capture" {
                Some("Name of the capture directory the row comes from.")
            } else {
                def.and_then(|d| d.columns.iter().find(|col| col.name == cv))
                    .map(|col| col.doc)
            };
            doc.append_option(d);
        }
        let mut cols = b.columns().to_vec();
        cols.push(std::sync::Arc::new(doc.finish()));
        let mut fields: Vec<Field> = b
            .schema()
            .fields()
            .iter()
            .map(|f| f.as_ref().clone())
            .collect();
        fields.push(Field::new("description", DataType::Utf8, true));
        out.push(trawl_ingest::arrow::record_batch::RecordBatch::try_new(
            std::sync::Arc::new(Schema::new(fields)),
            cols,
        )?);
    }
    output::write(&out, &OutputOpts::default())
}

/// The samples a stack report reads: the event (checked, or the one with
/// most samples), the weight (checked), the filter and inline option.
async fn selection(
    s: &Session,
    filter: &FilterArgs,
    metric: &MetricArgs,
) -> Result<(SampleFilter, String, analyses::Weight, analyses::StackOpts)> {
    let (weight, opts) = metric.parse()?;
    let f = filter.to_filter()?;
    let event = analyses::choose_event(s, f.event.as_deref()).await?;
    analyses::check_weight(s, &weight).await?;
    Ok((f, event, weight, opts))
}

async fn hotspots(a: HotspotArgs) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let (filter, event, weight, opts) = selection(&s, &a.filter, &a.metric).await?;
    let key = a.by;
    let sel = analyses::Selection {
        filter: &filter,
        event: &event,
        weight: &weight,
        opts,
    };
    let mut df = analyses::hotspots(&s, key, &sel).await?;
    if let Some(n) = a.limit {
        df = df.limit(0, Some(n))?;
    }
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}

async fn edges(a: EdgeArgs, callers: bool) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let (filter, event, weight, opts) = selection(&s, &a.filter, &a.metric).await?;
    let f = analyses::FunctionMatch {
        function: a.function.clone(),
        module: a.module.clone(),
    };
    let sel = analyses::Selection {
        filter: &filter,
        event: &event,
        weight: &weight,
        opts,
    };
    let df = if callers {
        analyses::callers(&s, &f, &sel).await?
    } else {
        analyses::callees(&s, &f, &sel).await?
    };
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}

/// `--app`, or the traced executable's directory.
async fn app_prefix(s: &Session, app: &Option<String>) -> Result<String> {
    Ok(match app {
        Some(p) => p.clone(),
        None => trawl_query::memory::default_app(s).await?.ok_or_else(|| {
            anyhow::anyhow!("no traced system calls with stacks (strace -k) to find the application in; pass --app PATH_PREFIX")
        })?,
    })
}

async fn unfreed(a: UnfreedArgs) -> Result<()> {
    use trawl_query::memory;
    let s = Session::open(&a.captures).await?;
    let at = memory::At::parse(&a.at)?;
    let app = app_prefix(&s, &a.app).await?;
    let batches = memory::unfreed(&s, at, Some(&app)).await?.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("application: {app}*");
    }
    output::write(&batches, &a.out)
}

async fn io_report(a: IoArgs) -> Result<()> {
    use trawl_query::memory::At;
    let s = Session::open(&a.captures).await?;
    let from = a.from.as_deref().map(At::parse).transpose()?;
    let to = a.to.as_deref().map(At::parse).transpose()?;
    if !(a.lead.is_finite() && a.lead >= 0.0) {
        bail!("--lead {}: expected seconds >= 0", a.lead);
    }
    let app = app_prefix(&s, &a.app).await?;
    let lead_ns = (a.lead * 1e9).round() as i64;
    let batches = trawl_query::io::io(&s, from, to, lead_ns, Some(&app))
        .await?
        .collect()
        .await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("application: {app}*");
    }
    output::write(&batches, &a.out)
}

async fn exhaustion(a: ExhaustionArgs) -> Result<()> {
    use trawl_query::ranges;
    let Some((rule, opts)) = a.rule.parse()? else {
        bail!("give the rule with --rule, e.g. --rule 'cpu_user+cpu_sys > 90 and runq > 2'");
    };
    let common = !a.runs.is_empty();
    let dirs: Vec<PathBuf> = if common {
        if !a.captures.is_empty() {
            bail!("give the captures either before --runs or after it, not both");
        }
        a.runs.clone()
    } else if a.captures.is_empty() {
        bail!("name a capture (or several runs with --runs)");
    } else {
        a.captures.clone()
    };
    let s = a.t0.open(&dirs).await?;
    let per = ranges::ranges(&s, &rule, opts).await?;
    let table = matches!(a.out.format, Format::Table) && a.out.output.is_none();
    if table {
        for t in s.times().await? {
            eprintln!("{}: t0 = {}", t.capture, t.how);
        }
    }
    let mut bands: Vec<ranges::Range> = per.values().flatten().copied().collect();
    let batch = if common {
        let spans = ranges::spans(&s).await?;
        if let (Some(lo), Some(hi)) = (
            spans.iter().map(|x| x.1).min(),
            spans.iter().map(|x| x.1).max(),
        ) {
            if lo > 0 && (hi - lo) * 10 > lo {
                let list: Vec<String> = spans
                    .iter()
                    .map(|(c, t)| format!("{c} {:.1} s", *t as f64 / 1e9))
                    .collect();
                eprintln!(
                    "warning: the runs' metrics span different lengths ({}): ranges are compared on each run's own axis from its t0; pick the origin with --t0 (e.g. exec:PROGRAM) so the runs line up",
                    list.join(", ")
                );
            }
        }
        let runs: Vec<(String, Vec<ranges::Range>)> = s
            .captures()
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    per.get(&c.name).cloned().unwrap_or_default(),
                )
            })
            .collect();
        let all: Vec<Vec<ranges::Range>> = runs.iter().map(|r| r.1.clone()).collect();
        let common = ranges::merge(ranges::intersect(&all), Default::default());
        bands = common.clone();
        ranges::common_batch(&runs, &common)?
    } else {
        let mut rows: Vec<(String, Vec<ranges::Range>, Option<i64>)> = Vec::new();
        for c in s.captures() {
            rows.push((
                c.name.clone(),
                per.get(&c.name).cloned().unwrap_or_default(),
                ranges::origin_of(&s, &c.name).await?,
            ));
        }
        ranges::batch(&rows)?
    };
    if let Some(p) = &a.plot {
        let series = ranges::load(&s, &rule).await?;
        let panels: Vec<plot::Panel> = rule
            .comparisons()
            .into_iter()
            .map(|c| plot::Panel {
                label: format!("{} ({} {})", c.expr, c.op, c.threshold),
                threshold: Some(c.threshold),
                lines: series
                    .iter()
                    .map(|(cap, cs)| {
                        let v = ranges::sample(&c.expr, cs)
                            .into_iter()
                            .map(|(a, b, v)| (a as f64 / 1e9, b as f64 / 1e9, v))
                            .collect();
                        (cap.clone(), v)
                    })
                    .collect(),
            })
            .collect();
        let bands: Vec<plot::Band> = bands
            .iter()
            .map(|r| (r.start as f64 / 1e9, r.end as f64 / 1e9))
            .collect();
        plot::metrics(p, &format!("{} — t0: {}", rule, a.t0.t0), &panels, &bands)?;
        eprintln!("wrote {}", p.display());
    }
    output::write(&[batch], &a.out)
}

async fn timeline(a: TimelineArgs) -> Result<()> {
    use trawl_query::timeline::{self as tl, TimelineKey};
    let s = a.t0.open(&a.captures).await?;
    let window = trawl_query::time::parse_duration_ns(&a.window)?;
    let key = match a.by {
        TimelineBy::Function => TimelineKey::Function,
        TimelineBy::Module => TimelineKey::Module,
        TimelineBy::Process => TimelineKey::Process,
    };
    let lbr = a.lbr.as_deref().map(Method::parse).transpose()?;
    let (df, event) = tl::timeline(&s, window, key, a.top, a.event.as_deref(), lbr).await?;
    let batches = df.collect().await?;
    if let Some(p) = &a.plot {
        let first = &s.captures()[0].name;
        let mut cells: Vec<(f64, String, f64)> = Vec::new();
        for b in &batches {
            let cap = trawl_query::string_values(b.column(0));
            let w = trawl_query::float_values(b.column(1));
            let k = trawl_query::string_values(b.column(2));
            let pct = trawl_query::float_values(b.column(5));
            for i in 0..b.num_rows() {
                if cap[i].as_deref() == Some(first.as_str()) {
                    cells.push((
                        w[i].unwrap_or(0.0),
                        k[i].clone().unwrap_or_default(),
                        pct[i].unwrap_or(0.0),
                    ));
                }
            }
        }
        if cells.is_empty() {
            bail!("no samples to plot");
        }
        let width = window as f64 / 1e9;
        let lo = cells.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
        let hi = cells.iter().map(|c| c.0).fold(f64::NEG_INFINITY, f64::max);
        let n = ((hi - lo) / width).round() as usize + 1;
        let windows: Vec<f64> = (0..n).map(|i| lo + i as f64 * width).collect();
        let mut keys: Vec<(String, f64)> = Vec::new();
        for (_, k, p) in &cells {
            match keys.iter_mut().find(|x| &x.0 == k) {
                Some(x) => x.1 += p,
                None => keys.push((k.clone(), *p)),
            }
        }
        keys.sort_by(|a, b| {
            (a.0 == "[other]")
                .cmp(&(b.0 == "[other]"))
                .then(b.1.total_cmp(&a.1))
                .then(a.0.cmp(&b.0))
        });
        let mut pct = vec![vec![0.0; n]; keys.len()];
        for (w, k, p) in &cells {
            let i = (((w - lo) / width).round() as usize).min(n - 1);
            let j = keys.iter().position(|x| &x.0 == k).unwrap_or(0);
            pct[j][i] += p;
        }
        let bands: Vec<plot::Band> = match a.rule.parse()? {
            Some((rule, opts)) => trawl_query::ranges::ranges(&s, &rule, opts)
                .await?
                .get(first)
                .map(|v| {
                    v.iter()
                        .map(|r| (r.start as f64 / 1e9, r.end as f64 / 1e9))
                        .collect()
                })
                .unwrap_or_default(),
            None => Vec::new(),
        };
        let shares = plot::Shares {
            windows,
            width,
            keys: keys.into_iter().map(|k| k.0).collect(),
            pct,
        };
        plot::shares(
            p,
            &format!(
                "{first}: {event} by {} per {} (t0: {})",
                match a.by {
                    TimelineBy::Function => "function",
                    TimelineBy::Module => "module",
                    TimelineBy::Process => "process",
                },
                a.window,
                a.t0.t0
            ),
            &shares,
            &bands,
        )?;
        eprintln!("wrote {}", p.display());
    }
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}

async fn cause(a: CauseArgs) -> Result<()> {
    use trawl_query::ranges::Range;
    let resource = trawl_query::cause::Resource::parse(&a.resource)?;
    let s = a.t0.open(&a.captures).await?;
    let per: std::collections::BTreeMap<String, Vec<Range>> = match (&a.range, a.rule.parse()?) {
        (Some(r), None) => {
            let (from, to) = parse_time_range(r)?;
            let r = Range {
                start: from.unwrap_or(0),
                end: to.unwrap_or(i64::MAX / 2),
            };
            if r.end <= r.start {
                bail!(
                    "--range {:?}: the end must come after the start",
                    a.range.as_deref().unwrap_or("")
                );
            }
            s.captures()
                .iter()
                .map(|c| (c.name.clone(), vec![r]))
                .collect()
        }
        (None, Some((rule, opts))) => trawl_query::ranges::ranges(&s, &rule, opts).await?,
        _ => bail!("give either --range START..END or --rule RULE"),
    };
    if per.values().all(Vec::is_empty) {
        bail!("the rule holds nowhere: no ranges to look into");
    }
    if !(a.lead.is_finite() && a.lead >= 0.0) {
        bail!("--lead {}: expected seconds >= 0", a.lead);
    }
    let app = app_prefix(&s, &a.app).await?;
    let per: std::collections::BTreeMap<String, Vec<Range>> =
        per.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    let df = trawl_query::cause::cause(
        &s,
        resource,
        &per,
        &app,
        (a.lead * 1e9).round() as i64,
        a.event.as_deref(),
        if a.at == "max" {
            trawl_query::cause::MemoryAt::Max
        } else {
            trawl_query::cause::MemoryAt::Start
        },
        a.lbr.as_deref().map(Method::parse).transpose()?,
    )
    .await?;
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        for t in s.times().await? {
            eprintln!("{}: t0 = {}", t.capture, t.how);
        }
        eprintln!("application: {app}*");
    }
    output::write(&batches, &a.out)
}

async fn flamegraph(a: FlameArgs) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let (filter, event, weight, opts) = selection(&s, &a.filter, &a.metric).await?;
    let sel = analyses::Selection {
        filter: &filter,
        event: &event,
        weight: &weight,
        opts,
    };
    let tree = trawl_query::flame::frame_tree(&s, &sel).await?;
    if tree.total() <= 0 {
        bail!("no samples with stacks to draw");
    }
    let line = |(st, w): &(String, i64)| format!("{st} {w}");
    if let Some(p) = &a.folded {
        let all: Vec<String> = tree.folded(0).iter().map(line).collect();
        output::write_atomic(p, (all.join("\n") + "\n").as_bytes())?;
    }
    // inferno draws no frame narrower than its min_width, 0.01 % of the
    // total: frames under 1/23,600 (less than half that) are folded into
    // their parents before drawing (the picture is the same).
    let lines: Vec<String> = tree
        .folded(tree.total() / 23_600)
        .iter()
        .map(line)
        .collect();
    let mut o = inferno::flamegraph::Options::default();
    // The lines come sorted.
    o.no_sort = true;
    o.title = a.title.clone().unwrap_or_else(|| {
        let caps: Vec<String> = s.captures().iter().map(|c| c.name.clone()).collect();
        format!("{} — {event}", caps.join(", "))
    });
    o.count_name = weight.name().unwrap_or_else(|| "samples".into());
    let mut svg = Vec::new();
    inferno::flamegraph::from_lines(&mut o, lines.iter().map(String::as_str), &mut svg)
        .context("drawing the flame graph")?;
    output::write_atomic(&a.output, &svg)?;
    eprintln!(
        "wrote {} ({} frames wide enough to draw)",
        a.output.display(),
        lines.len()
    );
    Ok(())
}

fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fixtures")
}

async fn demo() -> Result<()> {
    let fx = fixtures_dir().join("perf");
    let input = fx.join("hot-fp.data");
    if !input.is_file() {
        bail!(
            "bundled fixture {} not found (run from a checkout)",
            input.display()
        );
    }
    let tmp = tempfile::tempdir()?;
    let cap = tmp.path().join("hot");
    println!(
        "$ trawl ingest fixtures/perf/hot-fp.data --debug-dir fixtures/perf/bin -o {}",
        cap.display()
    );
    let args = IngestArgs {
        inputs: vec![input],
        output: cap.clone(),
        strict: false,
        tz: None,
        no_symbolize: false,
        no_unwind: false,
        mem: MemArgs::default(),
        sym: SymArgs {
            debug_dirs: vec![fx.join("bin")],
            ..Default::default()
        },
    };
    ingest(&args)?;
    println!("\n$ trawl report hotspots {} --limit 12", cap.display());
    let s = Session::open(std::slice::from_ref(&cap)).await?;
    let weight = analyses::Weight::Period;
    let event = analyses::choose_event(&s, None).await?;
    println!("event: {event}");
    let sel = analyses::Selection {
        filter: &SampleFilter::default(),
        event: &event,
        weight: &weight,
        opts: Default::default(),
    };
    let df = analyses::hotspots(&s, HotspotKey::Function, &sel)
        .await?
        .limit(0, Some(12))?;
    output::write(&df.collect().await?, &OutputOpts::default())?;
    let q = "SELECT comm, pid, count(*) AS samples, round(sum(period) / 1e6, 1) AS cpu_ms FROM perf_sample GROUP BY comm, pid ORDER BY samples DESC";
    println!("\n$ trawl sql {} \"{q}\"", cap.display());
    let df = s.sql(q).await?;
    output::write(&df.collect().await?, &OutputOpts::default())?;
    Ok(())
}

async fn limited(
    df: trawl_query::datafusion::prelude::DataFrame,
    limit: Option<usize>,
) -> Result<Vec<trawl_query::datafusion::arrow::array::RecordBatch>> {
    let df = match limit {
        Some(n) => df.limit(0, Some(n))?,
        None => df,
    };
    Ok(df.collect().await?)
}

async fn report_energy(a: EnergyArgs) -> Result<()> {
    use trawl_query::energy::{self, Indicator};
    let s = a.t0.open(&a.captures).await?;
    let core = Indicator::parse(&a.core_indicator)?;
    let dram = Indicator::parse(&a.dram_indicator)?;
    let event = trawl_query::analyses::choose_event(&s, a.event.as_deref()).await?;
    let chains = energy::chosen_chains(&s, &event, &a.zone).await?;
    for c in &chains {
        eprintln!(
            "{}: {}{} from {} ({} intervals){}",
            c.capture,
            c.domain,
            c.package
                .map(|p| format!(" of package {p}"))
                .unwrap_or_default(),
            c.zone,
            c.intervals,
            if c.ignored.is_empty() {
                String::new()
            } else {
                format!("; not read: {}", c.ignored.join(", "))
            }
        );
    }
    let df = energy::report(&s, &a.by, &event, &core, &dram, &a.zone).await?;
    output::write(&df.collect().await?, &a.out)
}

async fn report_power_model(a: PowerModelArgs) -> Result<()> {
    use trawl_query::power;
    if !(a.target.is_finite() && a.target > 0.0) {
        bail!(
            "--target {}: expected a positive energy in joules",
            a.target
        );
    }
    let s = Session::open(&a.captures).await?;
    let events = if a.events.is_empty() {
        trawl_query::power::read_events(&s).await?
    } else {
        a.events.clone()
    };
    if events.is_empty() {
        bail!("no counters read at the samples: name the events with --events (sampled events count by their periods)");
    }
    let input = power::ModelInput {
        events: events.clone(),
        domain: a.counter.domain.clone(),
        zones: a.counter.zone.clone(),
        event: a.event.clone(),
        window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
        package: a.counter.package,
    };
    let src = power::model_intervals(&s, &input).await?;
    eprintln!(
        "{}: {}{} from {} ({} intervals); rates from {} at the {} samples{}",
        src.chain.capture,
        src.chain.domain,
        a.counter
            .package
            .map(|p| format!(" of package {p}"))
            .unwrap_or_default(),
        src.chain.zone,
        src.chain.intervals,
        src.how
            .iter()
            .map(|(e, h)| format!("{e} ({h})"))
            .collect::<Vec<_>>()
            .join(", "),
        src.event,
        a.counter
            .package
            .map(|_| " on its CPUs".to_string())
            .unwrap_or_default()
    );
    if a.intervals {
        let df = s.sql("SELECT * FROM power_interval ORDER BY t_ns").await?;
        return output::write(&df.collect().await?, &a.out);
    }
    let fit = power::fit(&s, events.len()).await?;
    let table = power::fit_table(&s, &events, &fit, a.target).await?;
    output::write(&[table], &a.out)
}

async fn report_power_samples(a: PowerSamplesArgs) -> Result<()> {
    use trawl_query::power;
    if !(a.target.is_finite() && a.target > 0.0) {
        bail!(
            "--target {}: expected a positive energy in joules",
            a.target
        );
    }
    if a.group == Some(0) {
        bail!("--group 0: expected a positive number of samples");
    }
    let s = Session::open(&a.captures).await?;
    let events = if a.events.is_empty() {
        power::sampled_events(&s, &a.time_event).await?
    } else {
        a.events.clone()
    };
    if events.is_empty() {
        bail!(
            "no sampled events besides {}: name them with --events",
            a.time_event
        );
    }
    if events.len() > 8 {
        bail!("{} events: at most 8 (every subset is tried)", events.len());
    }
    let mut model = power::Model {
        intercept_w: a.intercept,
        ..Default::default()
    };
    for c in &a.coef {
        let (e, v) = c
            .rsplit_once('=')
            .with_context(|| format!("--coef {c:?}: expected EVENT=JOULES"))?;
        let v: f64 = v
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("--coef {c:?}: {v:?} is not a number"))?;
        model.coef.insert(e.to_string(), v);
    }
    if model.coef.is_empty() {
        let input = power::ModelInput {
            events: events.clone(),
            domain: a.counter.domain.clone(),
            zones: a.counter.zone.clone(),
            event: None,
            window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
            package: a.counter.package,
        };
        power::model_intervals(&s, &input)
            .await
            .context("fitting the power model (or give it with --coef and --intercept)")?;
        let f = power::fit(&s, events.len()).await?;
        model.intercept_w = f.intercept;
        for (e, c) in events.iter().zip(&f.coef) {
            model.coef.insert(e.clone(), *c);
        }
        eprintln!(
            "model fitted on {} intervals (R² {:.4}): {:.4} W{}",
            f.n,
            f.r2,
            f.intercept,
            events
                .iter()
                .zip(&f.coef)
                .map(|(e, c)| format!(" + {c:.4e} J × {e}"))
                .collect::<String>()
        );
    }
    let input = power::PowerSamplesInput {
        events,
        time_event: a.time_event.clone(),
        target_j: a.target,
        group: a.group,
        model,
        domain: a.counter.domain.clone(),
        zones: a.counter.zone.clone(),
        package: a.counter.package,
    };
    let summary = power::power_samples(&s, &input).await?;
    if let Some(path) = &a.plot {
        plot_power_data(&s, &summary, path, a.target).await?;
        eprintln!("wrote {}", path.display());
    }
    match a.view {
        PowerView::Summary => output::write(&[summary], &a.out),
        PowerView::Data => {
            let df = s
                .sql("SELECT * FROM power_datum ORDER BY n_events DESC, events, datum")
                .await?;
            output::write(&df.collect().await?, &a.out)
        }
    }
}

/// Histograms of the best subset's data (most within ±10 %, then the
/// smallest mean error) and of each time-based grouping.
async fn plot_power_data(
    s: &Session,
    summary: &trawl_query::datafusion::arrow::array::RecordBatch,
    path: &Path,
    target: f64,
) -> Result<()> {
    use trawl_query::datafusion::arrow::array::{Array, AsArray};
    use trawl_query::datafusion::arrow::datatypes::Float64Type;
    let method = trawl_query::string_values(summary.column(0));
    let events = trawl_query::string_values(summary.column(1));
    let w10 = summary.column(7).as_primitive::<Float64Type>();
    let err = summary.column(8).as_primitive::<Float64Type>();
    let mut best: Option<(usize, f64, f64)> = None;
    let mut panels: Vec<String> = Vec::new();
    for i in 0..summary.num_rows() {
        if w10.is_null(i) {
            continue;
        }
        if method[i].as_deref() == Some("time") {
            panels.push(events[i].clone().unwrap_or_default());
        } else if best.is_none_or(|(_, w, e)| (w10.value(i), -err.value(i).abs()) > (w, -e.abs())) {
            best = Some((i, w10.value(i), err.value(i)));
        }
    }
    if let Some((i, _, _)) = best {
        panels.insert(0, events[i].clone().unwrap_or_default());
    }
    let mut hist = Vec::new();
    for p in panels {
        let v = trawl_query::power::datum_values(s, &p).await?;
        hist.push((p, v));
    }
    plot::histograms(path, "energy per power datum (J)", &hist, target)
}

async fn report_lbr(a: LbrArgs) -> Result<()> {
    use trawl_query::lbr::{self, View};
    let s = Session::open(&a.captures).await?;
    let mut method = Method::parse(&a.method)?;
    if let Some(g) = a.ghz {
        if !(g.is_finite() && g > 0.0) {
            bail!("--ghz {g}: expected a positive clock rate");
        }
        if method != Method::Cycles {
            bail!("--ghz applies to --method cycles");
        }
    }
    let view = match a.view {
        LbrView::Functions => View::Functions,
        LbrView::Summary => View::Summary,
        LbrView::Points => View::Points,
        LbrView::Transitions => View::Transitions,
        LbrView::Sequence => View::Sequence,
    };
    if !lbr::has_branches(&s).await? {
        bail!("no branch stacks in the capture: record with `perf record -b` or `-j any_call,any_ret,u` (LBR)");
    }
    if a.ghz.is_some() {
        method = Method::Cycles;
    }
    let df = lbr::report(&s, view, method, a.ghz, a.event.as_deref(), a.sample).await?;
    output::write(&df.collect().await?, &a.out)
}

async fn report_pages(a: PagesArgs) -> Result<()> {
    use trawl_query::memlog::{self, PageSort};
    let s = Session::open(&a.captures).await?;
    let sort = match a.sort {
        PagesSort::Address => PageSort::Address,
        PagesSort::Accesses => PageSort::Accesses,
        PagesSort::First => PageSort::First,
        PagesSort::Touched => PageSort::Touched,
    };
    let df = memlog::pages(&s, a.page_size, sort).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}

async fn report_page_reuse(a: PageReuseArgs) -> Result<()> {
    use std::sync::Arc;
    use trawl_query::datafusion::arrow::array::{
        ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray,
    };
    let s = Session::open(&a.captures).await?;
    if a.show == ReuseShow::Pairs {
        let df = trawl_query::memlog::reuse_pairs(&s, a.page_size).await?;
        return output::write(&limited(df, a.limit).await?, &a.out);
    }
    let reuse = trawl_query::memlog::page_reuse(&s, a.page_size).await?;
    if reuse.is_empty() {
        bail!("no memory log in the captures: ingest a lackey or binary memory log first");
    }
    let batch = if a.show == ReuseShow::Summary {
        let col_s = |f: &dyn Fn(&trawl_query::memlog::Reuse) -> String| -> ArrayRef {
            Arc::new(StringArray::from(reuse.iter().map(f).collect::<Vec<_>>()))
        };
        let col_i = |f: &dyn Fn(&trawl_query::memlog::Reuse) -> i64| -> ArrayRef {
            Arc::new(Int64Array::from(reuse.iter().map(f).collect::<Vec<_>>()))
        };
        RecordBatch::try_from_iter(vec![
            ("capture", col_s(&|r| r.capture.clone())),
            (
                "source_id",
                Arc::new(Int32Array::from(
                    reuse.iter().map(|r| r.source_id).collect::<Vec<_>>(),
                )) as ArrayRef,
            ),
            ("page_size", col_i(&|r| r.page_size as i64)),
            ("pages", col_i(&|r| r.pages as i64)),
            ("min_pages", col_i(&|r| r.min_pages as i64)),
            ("saving_pages", col_i(&|r| r.saving_pages() as i64)),
            (
                "saving_bytes",
                col_i(&|r| (r.saving_pages() as u64 * r.page_size) as i64),
            ),
            ("pairs", col_i(&|r| r.pairs as i64)),
            ("spanning_pages", col_i(&|r| r.spanning as i64)),
        ])?
    } else {
        let (mut cap, mut sid, mut slot, mut order, mut page, mut first, mut last) =
            (vec![], vec![], vec![], vec![], vec![], vec![], vec![]);
        for r in &reuse {
            for (k, sl) in r.plan.iter().enumerate() {
                for (j, l) in sl.iter().enumerate() {
                    cap.push(r.capture.clone());
                    sid.push(r.source_id);
                    slot.push(k as i64);
                    order.push(j as i64);
                    page.push(format!("{:#x}", l.page));
                    first.push(l.first);
                    last.push(l.last);
                }
            }
        }
        RecordBatch::try_from_iter(vec![
            ("capture", Arc::new(StringArray::from(cap)) as ArrayRef),
            ("source_id", Arc::new(Int32Array::from(sid)) as ArrayRef),
            (
                "physical_page",
                Arc::new(Int64Array::from(slot)) as ArrayRef,
            ),
            ("order", Arc::new(Int64Array::from(order)) as ArrayRef),
            ("page", Arc::new(StringArray::from(page)) as ArrayRef),
            (
                "first_ordinal",
                Arc::new(Int64Array::from(first)) as ArrayRef,
            ),
            ("last_ordinal", Arc::new(Int64Array::from(last)) as ArrayRef),
        ])?
    };
    let batch = match a.limit {
        Some(n) if n < batch.num_rows() => batch.slice(0, n),
        _ => batch,
    };
    output::write(&[batch], &a.out)
}

async fn report_mem_symbols(a: MemSymbolsArgs) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let mut w = vec!["true".to_string()];
    match a.kind {
        Some(MemSymKind::Function) => w.push("kind = 'function'".into()),
        Some(MemSymKind::Object) => w.push("kind = 'object'".into()),
        None => {}
    }
    if let Some(o) = &a.object {
        w.push(format!("strpos(path, '{}') > 0", o.replace('\'', "''")));
    }
    if a.never {
        w.push("NOT used".into());
    }
    let q = format!(
        "SELECT capture, path, name, kind, section, '0x' || to_hex(start_address) AS address, size,
                fetches, loads, stores, modifies, used, first_ordinal, last_ordinal
         FROM mem_symbol_use WHERE {} ORDER BY capture, path, start_address, name",
        w.join(" AND ")
    );
    let df = s.sql(&q).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}

async fn report_mem_objects(a: MemObjectsArgs) -> Result<()> {
    let s = Session::open(&a.captures).await?;
    let df = s
        .sql("SELECT * FROM mem_object_use ORDER BY capture, mapped_pages DESC, object")
        .await?;
    output::write(&df.collect().await?, &a.out)
}

fn convert_lackey(a: ConvertLackeyArgs) -> Result<()> {
    let name = a.input.to_string_lossy().into_owned();
    let (format, mut input, _) = trawl_ingest::open_text(&a.input)?;
    if format != trawl_ingest::Format::Lackey {
        bail!(
            "{name}: a {} file, not a valgrind lackey log",
            format.name()
        );
    }
    let dir = a
        .output
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new()
        .prefix(".trawl-convert-")
        .tempfile_in(dir)
        .with_context(|| format!("creating a file in {}", dir.display()))?;
    let out = std::io::BufWriter::with_capacity(1 << 20, tmp.reopen()?);
    let (out, sum) =
        trawl_ingest::memlog::to_binary(&mut input, &name, &a.mem.options(), a.strict, out)?;
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(tmp.path(), std::fs::Permissions::from_mode(0o644))?;
    tmp.persist(&a.output)
        .with_context(|| format!("writing {}", a.output.display()))?;
    eprintln!(
        "{name}: {} bytes of text, {} records, {} instructions → {} access records, {} fetched addresses; {} ({} bytes, {:.1}× smaller), {} diagnostics",
        sum.text_bytes,
        sum.records,
        sum.instructions,
        sum.rows,
        sum.fetch_addresses,
        a.output.display(),
        sum.binary_bytes,
        sum.text_bytes as f64 / sum.binary_bytes.max(1) as f64,
        sum.diagnostics.len()
    );
    for d in sum.diagnostics.iter().take(5) {
        eprintln!("  {d}");
    }
    Ok(())
}

async fn render_heatmap(a: HeatmapArgs) -> Result<()> {
    use trawl_query::memlog::{self, HeatOpts, View};
    let s = Session::open(std::slice::from_ref(&a.capture)).await?;
    let o = HeatOpts {
        view: match a.view {
            HeatView::Used => View::Used,
            HeatView::Full => View::Full,
        },
        bytes_per_row: a.bytes_per_row,
        instr_per_col: a.instr_per_col,
        addr: a.addr_range,
        ordinals: a.ordinals,
        source_id: a.source,
        ..Default::default()
    };
    if let Some(b) = o.bytes_per_row {
        if !b.is_power_of_two() {
            bail!("--bytes-per-row {b}: must be a power of two");
        }
    }
    let hm = memlog::heatmap(&s, &o).await?;
    plot::heatmap_png(&a.output, &hm, a.scale.max(1))?;
    let labels = memlog::row_labels(&s, &hm.rows).await?;
    let mut csv = String::from("row,start_address,end_address,bytes,object,symbol\n");
    let q = |t: &str| format!("\"{}\"", t.replace('"', "\"\""));
    for (i, ((lo, hi), (obj, sym))) in hm.rows.iter().zip(&labels).enumerate() {
        csv.push_str(&format!(
            "{i},{lo:#x},{hi:#x},{},{},{}\n",
            hi - lo,
            q(obj),
            q(sym)
        ));
    }
    let mut rows_path = a.output.clone().into_os_string();
    rows_path.push(".rows.csv");
    let rows_path = PathBuf::from(rows_path);
    output::write_atomic(&rows_path, csv.as_bytes())?;
    eprintln!(
        "{}: {} × {} cells ({} instructions per column from ordinal {}, {} bytes per row), {} accesses; rows in {}",
        a.output.display(),
        hm.width,
        hm.height,
        hm.instr_per_col,
        hm.ordinal0,
        hm.bytes_per_row,
        hm.accesses,
        rows_path.display()
    );
    Ok(())
}
