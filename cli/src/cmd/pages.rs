//! `trawl report pages`: `pages(page_size)`, sorted.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{choice, limited};
use crate::cmd::ingest::parse_bytes;
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct PagesArgs {
    /// Capture with a memory log.
    pub(crate) captures: Vec<PathBuf>,
    /// Page size: a multiple of the one the capture was ingested with.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) page_size: Option<u64>,
    #[arg(long, value_parser = choice::<trawl_query::memlog::PageSort>(), default_value = "address")]
    pub(crate) sort: trawl_query::memlog::PageSort,
    /// Show at most N pages.
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_pages(a: PagesArgs) -> Result<()> {
    use trawl_query::memlog;
    let s = open(&a.captures).await?;
    let df = memlog::pages(&s, a.page_size, a.sort).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
