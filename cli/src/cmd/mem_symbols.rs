//! `trawl report mem-symbols`: functions and data objects used and never used.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{choice, limited};
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct MemSymbolsArgs {
    /// Capture with a memory log and a maps file.
    pub(crate) captures: Vec<PathBuf>,
    /// Only functions or only data objects.
    #[arg(long, value_parser = choice::<trawl_query::memlog::SymbolKind>())]
    pub(crate) kind: Option<trawl_query::memlog::SymbolKind>,
    /// Only objects whose path contains this.
    #[arg(long)]
    pub(crate) object: Option<String>,
    /// Only symbols never executed / never touched.
    #[arg(long)]
    pub(crate) never: bool,
    /// Show at most N symbols.
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_mem_symbols(a: MemSymbolsArgs) -> Result<()> {
    let s = open(&a.captures).await?;
    let df = trawl_query::memlog::symbols(&s, a.kind, a.object.as_deref(), a.never).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
