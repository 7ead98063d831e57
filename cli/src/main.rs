//! `trawl`: turn performance captures into Parquet and answer questions
//! with SQL. This crate is glue: argument parsing, terminal output and exit
//! codes; the work is in trawl-ingest, trawl-symbolize and trawl-query.

mod alloc;
mod cmd;
mod output;
mod symbols;

use trawl_plot as plot;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{bail, Context, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use output::{Format, OutputOpts};
use trawl_query::analyses::{self, HotspotKey};
use trawl_query::choice::Choice;
use trawl_query::functions;
use trawl_query::lbr::Method;
use trawl_query::sample::{self, SampleFilter};
use trawl_query::Session;

use cmd::{
    archive::*, cause::*, cluster::*, convert::*, demo::*, diff::*, edges::*, energy::*,
    exhaustion::*, export::*, flamegraph::*, hotspots::*, ingest::*, io::*, lbr::*, mem_objects::*,
    mem_symbols::*, offcpu::*, page_reuse::*, pages::*, power_model::*, power_samples::*,
    render::*, sql::*, symbolize::*, tables::*, timeline::*, unfreed::*,
};

#[derive(Parser)]
#[command(name = "trawl", version, about = "perf.data and other performance captures → Parquet tables → SQL", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Run `trawl sql` and reports on a Ballista cluster: the address of
    /// a `trawl cluster scheduler`. Its executors read the captures at the
    /// paths given here (a shared file system).
    #[arg(long, global = true, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
}

/// `--cluster`, when given.
static CLUSTER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Opens the captures, on the cluster when `--cluster` was given.
pub(crate) async fn open_session(
    captures: &[PathBuf],
    origin: &trawl_query::time::Origin,
) -> Result<Session> {
    Ok(match CLUSTER.get() {
        Some(url) => {
            Session::open_in(captures, origin, trawl_cluster::client::context(url)).await?
        }
        None => {
            let s = Session::open_at(captures, origin).await?;
            // `annotate` decodes the functions it is asked for.
            s.set_code_source(trawl_enrich::code::standard_source());
            s
        }
    })
}

/// [`open_session`] with times from each capture's first event.
pub(crate) async fn open(captures: &[PathBuf]) -> Result<Session> {
    open_session(captures, &trawl_query::time::Origin::default()).await
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert capture files into a capture directory of Parquet tables.
    Ingest(IngestArgs),
    /// Many captures as one dataset: ingest runs into an archive.
    #[command(subcommand)]
    Archive(Archive),
    /// (Re)symbolize a capture, e.g. after adding --debug-dir.
    Symbolize {
        capture: PathBuf,
        /// Also keep the machine code of every sampled function in the
        /// capture (`instruction`), so that `report annotate` works where
        /// the binaries are not (otherwise it decodes the function it
        /// shows, from the binary, when first asked).
        #[arg(long)]
        code: bool,
        /// Also write `perf_sample_symbolized.parquet` (every sample with
        /// its leaf's names), for readers without trawl.
        #[arg(long)]
        flat: bool,
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
    /// Write the selected samples' stacks as a file another profiler's
    /// viewer opens: pprof, Firefox Profiler, speedscope, folded stacks.
    Export(ExportArgs),
    /// Symbolize addresses of one ELF file, printing what `addr2line -f -i
    /// -C` prints (function, then file:line, per inline level, innermost
    /// first); debug files are found as for captures.
    Addr2line(Addr2lineArgs),
    /// A tour on the bundled fixtures: a perf capture, a strace dump,
    /// monitoring metrics, a memory log and energy readings, each ingested
    /// and asked its headline question.
    Demo,
    /// The processes of a Ballista cluster that runs trawl's SQL.
    #[command(subcommand)]
    Cluster(Cluster),
}

#[derive(Subcommand)]
enum Report {
    /// Pages of a memory log (lackey, binary) touched at least once, with
    /// accesses per kind, bytes touched and lifetime (first and last
    /// instruction ordinal).
    Pages(PagesArgs),
    /// Pages of a memory log whose lifetimes do not overlap could share
    /// one physical page: the fewest pages needed (most pages live at
    /// once), the saving, the sharing plan or the pairs (Mibu et al.).
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
    /// FUNCTION's instructions with the samples taken on each, their share
    /// of the function and their source lines (metrics per instruction;
    /// perf annotate).
    Annotate(EdgeArgs),
    /// A flame graph (SVG) of the selected samples' stacks; with --diff
    /// BASE, a differential one (red: grew, blue: shrank).
    Flamegraph(FlameArgs),
    /// What changed between two runs: per function (module, srcline) the
    /// exclusive and inclusive shares of each run's total, the change,
    /// and keys found in one run only.
    Diff(DiffArgs),
    /// Where threads waited: time off the CPU (sched_switch samples with
    /// stacks, --switch-events) per function of the stack they blocked
    /// in, per stack, state (sleeping, disk, preempted) or thread.
    Offcpu(OffcpuArgs),
    /// Memory still allocated (mmap/brk/mremap regions not freed) at a
    /// time, from strace dumps: per process, application function, actual
    /// function and application source line (Morita et al.).
    Unfreed(UnfreedArgs),
    /// Bytes read and written (return values of read/write-like calls) in
    /// a time window, from strace dumps: per process, application
    /// function, actual function, application source line and file.
    Io(IoArgs),
    /// Time ranges where monitoring metrics satisfy a rule (resource
    /// exhaustion), relative to --t0; with --runs, the ranges every run
    /// has (Morita et al., stage A).
    Exhaustion(ExhaustionArgs),
    /// What used CPU, memory or I/O inside exhaustion ranges: per range,
    /// process, application function, actual function and application
    /// source line (Morita et al., stage B).
    Cause(CauseArgs),
    /// Samples per time window and function (or module, process): the
    /// top N and the rest as [other], with shares; --plot draws them
    /// stacked.
    Timeline(TimelineArgs),
    /// Branch stacks (LBR, `perf record -b` / `-j any_call,any_ret`) as
    /// extra samples (Ono et al. 2014): time per function under a
    /// method, the resolution gained, the points, the transitions caller →
    /// callee, or each sample's call/return sequence.
    Lbr(LbrArgs),
    /// RAPL energy per function (or process, source line, CPU): each
    /// interval's package, cores and DRAM energy split across the samples
    /// taken in it by a per-core indicator (Ono et al. 2015, Fig. 2).
    Energy(EnergyArgs),
    /// Power model (Ono et al. 2015, §3.2–3.3): watts = a + Σ c_i · rate_i
    /// fitted by least squares over the intervals of a domain's energy
    /// counter (rates from counters read at the samples, or sampled
    /// periods); coefficients, R², and the sampling interval R_i = P / c_i
    /// that makes each sample of event i worth P joules.
    PowerModel(PowerModelArgs),
    /// Energy-based samples (Ono et al. 2015, §3.5): the samples of several
    /// events merged in time order and cut into runs whose modelled
    /// energy reaches a target P; each run is a power datum, its measured
    /// energy the RAPL counter over it. Mean, spread and share within
    /// ±5 %/±10 % of P for every subset of the events, next to runs of N
    /// consecutive time-based samples.
    PowerSamples(PowerSamplesArgs),
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
        open_session(captures, &origin).await
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
    fn parse(&self) -> Result<(sample::Weight, sample::StackOpts)> {
        Ok((
            sample::Weight::parse(&self.weight)?,
            sample::StackOpts {
                inline: !self.no_inline,
            },
        ))
    }
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
    /// Only these captures, by name as `trawl tables` lists them (the
    /// directory name; repeatable).
    #[arg(long = "capture", value_name = "NAME")]
    capture: Vec<String>,
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
            captures: self.capture.clone(),
        })
    }
}

/// A flag taking one of the library's named values ([`Choice`]), each
/// listed with its meaning in `--help`.
fn choice<T: Choice + Clone>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(
        T::ALL
            .iter()
            .map(|v| PossibleValue::new(v.name()).help(v.doc())),
    )
    .map(|s| T::parse(&s).expect("a listed value"))
}

#[global_allocator]
static GLOBAL: alloc::Chosen = alloc::Chosen;

fn main() -> ExitCode {
    let cli = Cli::parse();
    if matches!(cli.cmd, Cmd::Archive(cmd::archive::Archive::Ingest(_))) {
        alloc::use_mimalloc();
    }
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return ExitCode::SUCCESS;
            }
            let mut msg = error_message(&e);
            if let Some(url) = CLUSTER.get().filter(|_| msg.contains("ConnectError")) {
                msg = format!("cannot reach the scheduler at {url}: {msg}");
            }
            eprintln!("trawl: {msg}");
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
        // Deep plans (the analyses' joins) recurse deeply when a cluster
        // encodes and decodes them: Ballista's own processes run with
        // 32 MiB stacks. Reserved, not used, unless needed.
        .thread_stack_size(32 << 20)
        .build()?)
}

fn run(cli: Cli) -> Result<()> {
    if let Some(url) = cli.cluster {
        if !matches!(cli.cmd, Cmd::Sql(_) | Cmd::Report(_)) {
            bail!("--cluster applies to `trawl sql` and `trawl report`");
        }
        trawl_cluster::client::scheduler_url(&url)?;
        CLUSTER.set(url).expect("set once");
    }
    match cli.cmd {
        Cmd::Cluster(c) => cluster(c),
        Cmd::Ingest(a) => ingest(&a),
        Cmd::Archive(a) => archive(a),
        Cmd::Symbolize {
            capture,
            code,
            flat,
            sym,
        } => {
            if !trawl_ingest::writer::is_capture(&capture) {
                bail!("{}: not a trawl capture", capture.display());
            }
            // Rewritten in a staged copy, committed whole.
            let w = trawl_ingest::CaptureWriter::restage(&capture)?;
            let staging = w.staging_dir();
            let cfg = sym.config_with_store(None);
            let e = trawl_enrich::enrich(staging, &cfg, flat);
            for l in e.report.iter().chain(&e.warnings) {
                eprintln!("{l}");
            }
            if !e.problems.is_empty() {
                bail!("{}", e.problems.join("; "));
            }
            if code {
                let n = trawl_enrich::decode_functions(staging, &cfg)?;
                eprintln!("decoded {n} instructions (instruction)");
            }
            w.commit()?;
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
        Cmd::Export(a) => runtime()?.block_on(export(a)),
        Cmd::Report(Report::Hotspots(a)) => runtime()?.block_on(hotspots(a)),
        Cmd::Report(Report::Callers(a)) => {
            runtime()?.block_on(edges(a, cmd::edges::FunctionView::Callers))
        }
        Cmd::Report(Report::Callees(a)) => {
            runtime()?.block_on(edges(a, cmd::edges::FunctionView::Callees))
        }
        Cmd::Report(Report::Annotate(a)) => {
            runtime()?.block_on(edges(a, cmd::edges::FunctionView::Annotate))
        }
        Cmd::Report(Report::Flamegraph(a)) => runtime()?.block_on(flamegraph(a)),
        Cmd::Report(Report::Diff(a)) => runtime()?.block_on(diff(a)),
        Cmd::Report(Report::Offcpu(a)) => runtime()?.block_on(offcpu(a)),
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
        Cmd::Demo => demo(),
        Cmd::Addr2line(a) => {
            symbols::addr2line(&a.exe, &a.addresses, a.addresses_out, &a.sym.config())
        }
    }
}

/// The samples a stack report reads: the event (checked, or the one with
/// most samples), the weight (checked), the filter and inline option.
async fn selection(
    s: &Session,
    filter: &FilterArgs,
    metric: &MetricArgs,
) -> Result<(SampleFilter, String, sample::Weight, sample::StackOpts)> {
    let (weight, opts) = metric.parse()?;
    let f = filter.to_filter()?;
    let event = sample::choose_event(s, f.event.as_deref()).await?;
    sample::check_weight(s, &weight).await?;
    Ok((f, event, weight, opts))
}

/// `--app`, or the traced executable's directory.
async fn app_prefix(s: &Session, app: &Option<String>) -> Result<String> {
    Ok(match app {
        Some(p) => p.clone(),
        None => trawl_query::memory::default_app(s).await?.ok_or_else(|| {
            anyhow::anyhow!("no call stacks (strace -k, perf -g) to find the application in; pass --app PATH_PREFIX")
        })?,
    })
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
