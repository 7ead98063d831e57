//! `trawl report latency`: `latency(start, end, key, ...)`, how long from
//! a start event to its paired end event.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_query::functions;

use crate::args::{limited, FilterArgs};
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct LatencyArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// The start event, SYSTEM:NAME (e.g. block:block_rq_issue).
    #[arg(long)]
    pub(crate) start: String,
    /// The end event (e.g. block:block_rq_complete).
    #[arg(long)]
    pub(crate) end: String,
    /// The fields that pair a start with its end (repeatable, e.g. --key
    /// dev --key sector; common_pid: the thread, common_cpu: the CPU).
    #[arg(long, required = true)]
    pub(crate) key: Vec<String>,
    /// The end event's fields, when named otherwise (e.g. --key pid
    /// --end-key next_pid for sched_waking → sched_switch).
    #[arg(long)]
    pub(crate) end_key: Vec<String>,
    /// A log2 histogram of µs (default, as biolatency prints it), or per
    /// function of the start's stack, process, thread or key.
    #[arg(long, default_value = "histogram", value_parser = ["histogram", "function", "process", "thread", "key"])]
    pub(crate) by: String,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    /// Show at most N rows.
    #[arg(long, short = 'n')]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn latency(a: LatencyArgs) -> Result<()> {
    use trawl_query::datafusion::prelude::lit;
    use trawl_query::datafusion::scalar::ScalarValue as V;
    let s = open(&a.captures).await?;
    let f = a.filter.to_filter()?;
    if f.event.is_some() {
        bail!("--event does not apply: give --start and --end");
    }
    let mut args = vec![lit(a.start.as_str()), lit(a.end.as_str())];
    let mut pair = |k: &str, v: V| {
        args.push(lit(k));
        args.push(lit(v));
    };
    for k in &a.key {
        pair("key", V::from(k.as_str()));
    }
    for k in &a.end_key {
        pair("end_key", V::from(k.as_str()));
    }
    pair("by", V::from(a.by.as_str()));
    f.selection_args(&mut args);
    let df = functions::call(&s, "latency", &args).await?;
    output::write(&limited(df, a.limit).await?, &a.out)
}
