//! `trawl report diff`: `diff(...)` between two sets of captures.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use trawl_query::stacks;
use trawl_query::Session;

use crate::args::{selection, FilterArgs, MetricArgs};
use crate::output;
use crate::output::{Format, OutputOpts};
use crate::session::open;

#[derive(Args)]
pub(crate) struct DiffArgs {
    /// The base capture (or a directory of captures: an archive).
    pub(crate) base: PathBuf,
    /// The new capture (or a directory of captures).
    pub(crate) new: PathBuf,
    /// Compare per function (default), module or srcline.
    #[arg(long, default_value = "function", value_parser = ["function", "module", "srcline"])]
    pub(crate) by: String,
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

/// Opens BASE and NEW in one session; the names of each side's captures.
pub(crate) async fn open_sides(
    base: &Path,
    new: &Path,
) -> Result<(Session, Vec<String>, Vec<String>)> {
    let n_base = trawl_query::find_captures(&[base.to_path_buf()])?.len();
    let s = open(&[base.to_path_buf(), new.to_path_buf()]).await?;
    let names: Vec<String> = s.captures().iter().map(|c| c.name.clone()).collect();
    let (b, n) = names.split_at(n_base.min(names.len()));
    if b.is_empty() || n.is_empty() {
        bail!("diff needs captures on both sides");
    }
    Ok((s, b.to_vec(), n.to_vec()))
}

pub(crate) async fn diff(a: DiffArgs) -> Result<()> {
    let (s, base, new) = open_sides(&a.base, &a.new).await?;
    let picked = selection(&s, &a.filter, &a.metric).await?;
    let sel = picked.selection();
    let (event, weight) = (&picked.event, &picked.weight);
    let mut df = stacks::diff(&s, &a.by, &base, &new, &sel).await?;
    if let Some(n) = a.limit {
        df = df.limit(0, Some(n))?;
    }
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!(
            "event: {event}, weight: {}; base: {}; new: {}",
            weight.arg(),
            base.join(", "),
            new.join(", ")
        );
    }
    output::write(&batches, &a.out)
}
