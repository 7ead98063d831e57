//! `trawl`, the command: turn performance captures into Parquet and answer
//! questions with SQL. This crate is glue: argument parsing, terminal
//! output and exit codes; the work is in trawl-ingest, trawl-symbolize and
//! trawl-query.
//!
//! The program is [`main`], a library function, so that one build serves
//! both ways of installing trawl: the `trawl` binary of this crate calls it,
//! and so does the `trawl` command of the Python package (`pip install
//! ./python`), from the extension module.

mod alloc;
mod args;
mod cmd;
mod output;
mod session;
mod symbols;

use std::ffi::OsString;
use std::io::Write;
use std::sync::OnceLock;

use anyhow::{bail, Result};
use clap::{Parser, Subcommand};

use session::{runtime, CLUSTER};

use cmd::{
    archive::*, cause::*, cluster::*, convert::*, demo::*, diff::*, edges::*, energy::*,
    exhaustion::*, export::*, flamegraph::*, hotspots::*, ingest::*, io::*, latency::*, lbr::*,
    mem_objects::*, mem_symbols::*, offcpu::*, page_reuse::*, pages::*, power_model::*,
    power_samples::*, render::*, sql::*, symbolize::*, tables::*, timeline::*, tracepoints::*,
    unfreed::*,
};

/// This build's version and id: `trawl 0.1.0 (build 1f0c...)`. The id is
/// a hash of the sources the build was compiled from (cli/build.rs): the
/// same tree gives the same id, whichever way it was built.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (build ",
    env!("TRAWL_BUILD_ID"),
    ")"
);
/// The build id alone (see [`VERSION`]).
pub const BUILD_ID: &str = env!("TRAWL_BUILD_ID");

#[derive(Parser)]
#[command(name = "trawl", version = VERSION, about = "perf.data and other performance captures → Parquet tables → SQL", long_about = None)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
    /// Run `trawl sql` and reports on a Ballista cluster: the address of
    /// a `trawl cluster scheduler`. Its executors read the captures at the
    /// paths given here (a shared file system).
    #[arg(long, global = true, value_name = "df://HOST:PORT")]
    cluster: Option<String>,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert capture files into a capture directory of Parquet tables.
    Ingest(IngestArgs),
    /// Many captures as one dataset: ingest runs into an archive.
    #[command(subcommand)]
    Archive(Archive),
    /// (Re)symbolize a capture, e.g. after adding --debug-dir.
    Symbolize(SymbolizeArgs),
    /// Run SQL over the tables of one or more captures.
    Sql(SqlArgs),
    /// List tables, columns, types and their documentation.
    Tables(TablesArgs),
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
    /// Tracepoints and probes: with --event SYSTEM:NAME, its samples in
    /// time order with every field of the event's format as a column
    /// (the capture's own format descriptions); without, the events with
    /// their samples and fields.
    Tracepoints(TracepointsArgs),
    /// How long from a start event to its paired end event (block I/O
    /// issue → completion by dev and sector, wake-up → switch-in, syscall
    /// entry → exit by thread): a log2 histogram of µs as biolatency
    /// prints it, or per function of the start's stack, process, thread
    /// or key.
    Latency(LatencyArgs),
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

#[global_allocator]
static GLOBAL: alloc::Chosen = alloc::Chosen;

/// How this program runs itself again (`trawl demo` runs the tour's
/// commands as child processes): the program and its first arguments.
static SELF_COMMAND: OnceLock<Vec<OsString>> = OnceLock::new();

/// The command that runs this program again, as [`main`] was told.
pub(crate) fn self_command() -> Result<Vec<OsString>> {
    match SELF_COMMAND.get() {
        Some(c) if !c.is_empty() => Ok(c.clone()),
        _ => Ok(vec![std::env::current_exe()?.into()]),
    }
}

/// The `trawl` program: `args` as a process receives them (the program's
/// name first), `self_command` the command that runs it again (the
/// interpreter and `-m trawl` for the Python package's command; empty: this
/// executable).
/// Returns the process's exit status: 0 done, 1 failed, 2 bad arguments
/// (clap's), as the binary exits with it. Standard output is flushed.
pub fn main(args: impl IntoIterator<Item = OsString>, self_command: Vec<OsString>) -> u8 {
    let _ = SELF_COMMAND.set(self_command);
    let status = match Cli::try_parse_from(args) {
        Ok(cli) => exit_status(cli),
        // --help and --version are "errors" that print to stdout and exit 0.
        Err(e) => {
            let _ = e.print();
            e.exit_code().clamp(0, 255) as u8
        }
    };
    let _ = std::io::stdout().flush();
    status
}

fn exit_status(cli: Cli) -> u8 {
    if matches!(cli.cmd, Cmd::Archive(cmd::archive::Archive::Ingest(_))) {
        alloc::use_mimalloc();
    }
    match run(cli) {
        Ok(()) => 0,
        Err(e) => {
            if output::is_broken_pipe(&e) {
                return 0;
            }
            let mut msg = trawl_query::error::message(e.as_ref());
            if let Some(url) = CLUSTER.get().filter(|_| msg.contains("ConnectError")) {
                msg = format!("cannot reach the scheduler at {url}: {msg}");
            }
            eprintln!("trawl: {msg}");
            1
        }
    }
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
        Cmd::Symbolize(a) => symbolize(a),
        Cmd::Sql(a) => runtime()?.block_on(sql(a)),
        Cmd::Functions(a) => cmd::functions::run(a),
        Cmd::Tables(a) => tables(a),
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
        Cmd::Report(Report::Tracepoints(a)) => runtime()?.block_on(tracepoints(a)),
        Cmd::Report(Report::Latency(a)) => runtime()?.block_on(latency(a)),
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
