//! `trawl symbolize` and `trawl addr2line`: the symbolization options.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;

#[derive(Args)]
pub(crate) struct SymbolizeArgs {
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
}

/// `trawl symbolize`: the capture enriched again in a staged copy,
/// committed whole.
pub(crate) fn symbolize(a: SymbolizeArgs) -> Result<()> {
    let capture = &a.capture;
    if let Some((archive, _)) = trawl_ingest::writer::segment_archive(capture) {
        bail!(
            "{}: a segment of the archive {}, which holds many captures' rows; \
             symbolize the runs' captures and `trawl archive ingest` them again",
            capture.display(),
            archive.display()
        );
    }
    if !trawl_ingest::writer::is_capture(capture) {
        bail!("{}: not a trawl capture", capture.display());
    }
    let w = trawl_ingest::CaptureWriter::restage(capture)?;
    let staging = w.staging_dir();
    let cfg = a.sym.config_with_store(None);
    let e = trawl_enrich::enrich(staging, &cfg, a.flat);
    for l in e.report.iter().chain(&e.warnings) {
        eprintln!("{l}");
    }
    if !e.problems.is_empty() {
        bail!("{}", e.problems.join("; "));
    }
    if a.code {
        let n = trawl_enrich::decode_functions(staging, &cfg)?;
        eprintln!("decoded {n} instructions (instruction)");
    }
    w.commit()?;
    Ok(())
}

#[derive(Args, Clone, Default)]
pub(crate) struct SymArgs {
    /// Directory with binaries or debug files (searched by build-id, path
    /// and name); repeatable.
    #[arg(long = "debug-dir", value_name = "DIR")]
    pub(crate) debug_dirs: Vec<PathBuf>,
    /// Look up recorded paths below DIR: a copy of the recording machine's
    /// file system (captures from another machine), resolved as its own
    /// `/` (symbolic links and `..` stay inside it). With --symfs or
    /// --remap-path nothing outside the roots given (these and --debug-dir)
    /// is opened: not the recorded paths, ~/.debug, /usr/lib/debug, nor
    /// the running kernel's symbols and vdso.
    #[arg(long, visible_alias = "sysroot", value_name = "DIR")]
    pub(crate) symfs: Option<PathBuf>,
    /// Look up recorded paths starting with FROM under TO instead, e.g.
    /// `--remap-path /opt/app=./build` (TO resolved as its own `/`);
    /// repeatable, tried before anything else; confines lookups as --symfs.
    #[arg(long = "remap-path", value_name = "FROM=TO", value_parser = parse_remap)]
    pub(crate) remap: Vec<(String, PathBuf)>,
    /// Kernel symbols in /proc/kallsyms format.
    #[arg(long, value_name = "FILE")]
    pub(crate) kallsyms: Option<PathBuf>,
    /// Fetch the executables and debug files not found here by build-id
    /// from this debuginfod server (repeatable; default: the servers of
    /// $DEBUGINFOD_URLS). Files are checked against the build-id and kept
    /// in the debuginfod client cache ($DEBUGINFOD_CACHE_PATH, else
    /// ~/.cache/debuginfod_client), shared with gdb and perf.
    #[arg(long = "debuginfod", value_name = "URL")]
    pub(crate) debuginfod: Vec<String>,
    /// Never ask a debuginfod server, even with $DEBUGINFOD_URLS set.
    #[arg(long, conflicts_with = "debuginfod")]
    pub(crate) no_debuginfod: bool,
    /// The symbol store: what was learnt about each binary (symbols, the
    /// source lines of the functions sampled, kernel symbols), kept by
    /// build-id and shared by every capture, so a binary is read once.
    /// Default: $XDG_CACHE_HOME/trawl/symbols (~/.cache/trawl/symbols); an
    /// archive's own ARCHIVE/.symbols when it has one.
    #[arg(long = "symbol-store", value_name = "DIR")]
    pub(crate) symbol_store: Option<PathBuf>,
    /// Use no symbol store: read every binary's files again, keep nothing.
    #[arg(long, conflicts_with = "symbol_store")]
    pub(crate) no_symbol_store: bool,
}

#[derive(Args)]
pub(crate) struct Addr2lineArgs {
    /// The executable or shared library.
    #[arg(short = 'e', long = "exe")]
    pub(crate) exe: PathBuf,
    /// Virtual addresses in hex (as addr2line takes them); read from
    /// standard input, one per line, when none are given.
    pub(crate) addresses: Vec<String>,
    /// Print each address before its frames (addr2line -a).
    #[arg(short = 'a', long)]
    pub(crate) addresses_out: bool,
    #[command(flatten)]
    pub(crate) sym: SymArgs,
}

pub(crate) fn parse_remap(s: &str) -> std::result::Result<(String, PathBuf), String> {
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
    pub(crate) fn store_choice(&self) -> trawl_enrich::symbol_store::Choice {
        use trawl_enrich::symbol_store::Choice;
        match (&self.symbol_store, self.no_symbol_store) {
            (_, true) => Choice::Off,
            (Some(d), _) => Choice::Dir(d.clone()),
            (None, false) => Choice::Default,
        }
    }

    /// [`SymArgs::config`] with the symbol store chosen (`archive`: the
    /// archive being ingested, whose own store is the default).
    pub(crate) fn config_with_store(&self, archive: Option<&Path>) -> trawl_symbolize::Config {
        let mut c = self.config();
        if let Err(e) = trawl_enrich::symbol_store::attach(&mut c, &self.store_choice(), archive) {
            eprintln!("warning: {e}; symbolizing without it");
        }
        c
    }

    pub(crate) fn config(&self) -> trawl_symbolize::Config {
        let mut c = trawl_symbolize::Config::standard();
        c.debug_dirs = self.debug_dirs.clone();
        c.symfs = self.symfs.clone();
        c.remap = self.remap.clone();
        c.kallsyms = self.kallsyms.clone();
        c.debuginfod = if self.no_debuginfod {
            None
        } else if self.debuginfod.is_empty() {
            trawl_symbolize::debuginfod::Debuginfod::from_env()
        } else {
            trawl_symbolize::debuginfod::Debuginfod::new(self.debuginfod.clone())
        };
        c
    }
}
