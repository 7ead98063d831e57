//! `trawl convert lackey`: a lackey log to the binary memory-access log.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, Subcommand};

use crate::cmd::ingest::MemArgs;

#[derive(Subcommand)]
pub(crate) enum Convert {
    /// A valgrind lackey log (text, gzip or zstd; `-` reads standard
    /// input) into trawl's binary memory log: fixed-size records in zstd
    /// blocks, filters applied while reading (docs/guide/memory.md); `trawl
    /// ingest` reads it as it reads the text, much faster.
    Lackey(ConvertLackeyArgs),
}

#[derive(Args)]
pub(crate) struct ConvertLackeyArgs {
    /// The lackey log, or `-` for standard input.
    pub(crate) input: PathBuf,
    /// Binary memory log to write.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Fail at the first diagnostic.
    #[arg(long)]
    pub(crate) strict: bool,
    #[command(flatten)]
    pub(crate) mem: MemArgs,
}

pub(crate) fn convert_lackey(a: ConvertLackeyArgs) -> Result<()> {
    let name = a.input.to_string_lossy().into_owned();
    let (format, mut input, _) = trawl_ingest::open_text(&a.input)?;
    if format.name() != "lackey" {
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
