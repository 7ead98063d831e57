//! `trawl report mem-objects`: per mapped object, pages and symbols used.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct MemObjectsArgs {
    /// Capture with a memory log and a maps file.
    pub(crate) captures: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_mem_objects(a: MemObjectsArgs) -> Result<()> {
    let s = open(&a.captures).await?;
    let df = trawl_query::memlog::objects(&s).await?;
    output::write(&df.collect().await?, &a.out)
}
