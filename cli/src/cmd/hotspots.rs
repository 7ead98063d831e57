//! `trawl report hotspots`: `hotspots(...)`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trawl_query::stacks::{self, HotspotKey};

use crate::args::{choice, selection, FilterArgs, MetricArgs};
use crate::output;
use crate::output::{Format, OutputOpts};
use crate::session::open;

#[derive(Args)]
pub(crate) struct HotspotArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    #[arg(long, default_value = "function", value_parser = choice::<HotspotKey>())]
    pub(crate) by: HotspotKey,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) metric: MetricArgs,
    /// Show at most N rows.
    #[arg(long, short = 'n')]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn hotspots(a: HotspotArgs) -> Result<()> {
    let s = open(&a.captures).await?;
    let picked = selection(&s, &a.filter, &a.metric).await?;
    let key = a.by;
    let sel = picked.selection();
    let event = &picked.event;
    let mut df = stacks::hotspots(&s, key, &sel).await?;
    if let Some(n) = a.limit {
        df = df.limit(0, Some(n))?;
    }
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}
