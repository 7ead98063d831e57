//! `trawl report tracepoints`: `tracepoint(EVENT, ...)`, one row per sample
//! of a tracepoint or probe event with every field of its format; without
//! `--event`, `tracepoint_events()`: the events, their samples and fields.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trawl_query::functions;

use crate::args::{limited, FilterArgs};
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct TracepointsArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// --event SYSTEM:NAME (e.g. sched:sched_wakeup, probe_app:func): its
    /// samples in time order, a column per field of its format. Without
    /// it: the tracepoint events of the captures with their samples and
    /// fields.
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    /// Show at most N rows.
    #[arg(long, short = 'n')]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn tracepoints(a: TracepointsArgs) -> Result<()> {
    use trawl_query::datafusion::prelude::lit;
    let s = open(&a.captures).await?;
    let f = a.filter.to_filter()?;
    let Some(event) = &f.event else {
        let mut args = Vec::new();
        for c in &f.captures {
            args.extend([lit("capture"), lit(c.as_str())]);
        }
        let df = functions::call(&s, "tracepoint_events", &args).await?;
        return output::write(&limited(df, a.limit).await?, &a.out);
    };
    let mut args = vec![lit("event"), lit(event.as_str())];
    f.selection_args(&mut args);
    let df = functions::call(&s, "tracepoint", &args).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
