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
    use trawl_query::datafusion::scalar::ScalarValue as V;
    let s = open(&a.captures).await?;
    let f = a.filter.to_filter()?;
    let mut args = Vec::new();
    let mut pair = |k: &str, v: V| {
        args.push(lit(k));
        args.push(lit(v));
    };
    for c in &f.captures {
        pair("capture", V::from(c.as_str()));
    }
    let Some(event) = &f.event else {
        let df = functions::call(&s, "tracepoint_events", &args).await?;
        return output::write(&limited(df, a.limit).await?, &a.out);
    };
    pair("event", V::from(event.as_str()));
    for &p in &f.pids {
        pair("pid", V::Int32(Some(p)));
    }
    for &t in &f.tids {
        pair("tid", V::Int32(Some(t)));
    }
    for c in &f.comms {
        pair("comm", V::from(c.as_str()));
    }
    if let Some(t) = f.time_from_ns {
        pair("from_ns", V::Int64(Some(t)));
    }
    if let Some(t) = f.time_to_ns {
        pair("to_ns", V::Int64(Some(t)));
    }
    let df = functions::call(&s, "tracepoint", &args).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
