//! `trawl report page-reuse`: the pages one physical page could hold.

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use crate::args::limited;
use crate::cmd::ingest::parse_bytes;
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct PageReuseArgs {
    /// Capture with a memory log.
    pub(crate) captures: Vec<PathBuf>,
    /// Page size: a multiple of the one the capture was ingested with.
    #[arg(long, value_name = "BYTES", value_parser = parse_bytes)]
    pub(crate) page_size: Option<u64>,
    /// `summary`: pages, the fewest pages needed, saving, pairs; `plan`:
    /// which pages can share one physical page, in order of use; `pairs`:
    /// the pairs (a, b) where a is never touched after b's first touch.
    #[arg(long, value_enum, default_value = "summary")]
    pub(crate) show: ReuseShow,
    /// Show at most N rows (plan, pairs).
    #[arg(long)]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
pub(crate) enum ReuseShow {
    Summary,
    Plan,
    Pairs,
}

pub(crate) async fn report_page_reuse(a: PageReuseArgs) -> Result<()> {
    use trawl_query::memlog;
    let s = open(&a.captures).await?;
    let df = match a.show {
        ReuseShow::Pairs => memlog::reuse_pairs(&s, a.page_size).await?,
        ReuseShow::Summary => memlog::reuse(&s, a.page_size, false).await?,
        ReuseShow::Plan => memlog::reuse(&s, a.page_size, true).await?,
    };
    output::write(&limited(df, a.limit).await?, &a.out)
}
