//! `trawl report callers` / `callees` / `annotate`: `callers(...)` /
//! `callees(...)` / `annotate(...)`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trawl_query::stacks;

use crate::args::{selection, FilterArgs, MetricArgs};
use crate::output;
use crate::output::{Format, OutputOpts};
use crate::session::open;

#[derive(Args)]
pub(crate) struct EdgeArgs {
    /// The function, named as `trawl report hotspots` shows it.
    pub(crate) function: String,
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Only occurrences in modules whose path contains this text.
    #[arg(long)]
    pub(crate) module: Option<String>,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) metric: MetricArgs,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

/// Which view of one function a report is.
pub(crate) enum FunctionView {
    Callers,
    Callees,
    Annotate,
}

pub(crate) async fn edges(a: EdgeArgs, view: FunctionView) -> Result<()> {
    let s = open(&a.captures).await?;
    let picked = selection(&s, &a.filter, &a.metric).await?;
    let f = stacks::FunctionMatch {
        function: a.function.clone(),
        module: a.module.clone(),
    };
    let sel = picked.selection();
    let event = &picked.event;
    let df = match view {
        FunctionView::Callers => stacks::callers(&s, &f, &sel).await?,
        FunctionView::Callees => stacks::callees(&s, &f, &sel).await?,
        FunctionView::Annotate => stacks::annotate(&s, &f, &sel).await?,
    };
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}
