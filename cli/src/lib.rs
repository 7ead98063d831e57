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
    archive::*, cluster::*, convert::*, demo::*, export::*, ingest::*, render::*, sql::*,
    symbolize::*, tables::*,
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
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
    /// Run `trawl sql` and reports on a Ballista cluster: the address of
    /// a `trawl cluster scheduler`, given before the command (`trawl
    /// --cluster URL sql ...`). Its executors read the captures at the
    /// paths given here (a shared file system).
    #[arg(long, value_name = "df://HOST:PORT")]
    pub(crate) cluster: Option<String>,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
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
    Report(cmd::report::ReportCmd),
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
        Cmd::Report(r) => runtime()?.block_on(cmd::report::report(r)),
        Cmd::Convert(Convert::Lackey(a)) => convert_lackey(a),
        Cmd::Render(Render::Heatmap(a)) => runtime()?.block_on(render_heatmap(a)),
        Cmd::Demo => demo(),
        Cmd::Addr2line(a) => {
            symbols::addr2line(&a.exe, &a.addresses, a.addresses_out, &a.sym.config())
        }
    }
}
