//! `trawl tables`: the tables of captures, their columns and their
//! documentation.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::output;
use crate::output::OutputOpts;
use crate::session::{open, runtime};

#[derive(Args)]
pub(crate) struct TablesArgs {
    /// Captures (optional with --markdown).
    captures: Vec<PathBuf>,
    /// Print docs/tables.md (the documentation of every table).
    #[arg(long)]
    markdown: bool,
}

pub(crate) fn tables(a: TablesArgs) -> Result<()> {
    if a.markdown {
        print!("{}", trawl_ingest::schema::render_markdown());
        return Ok(());
    }
    if a.captures.is_empty() {
        bail!("name a capture, or use --markdown");
    }
    runtime()?.block_on(async {
        let s = open(&a.captures).await?;
        output::write(&s.columns().await?, &OutputOpts::default())
    })
}
