//! `trawl report offcpu`: `offcpu(...)`, where threads waited.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_query::functions;

use crate::args::{limited, FilterArgs};
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct OffcpuArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Per function of the blocking stack (default), whole stack, state
    /// or thread.
    #[arg(long, default_value = "function", value_parser = ["function", "stack", "state", "thread"])]
    pub(crate) by: String,
    /// Only these states (repeatable: S sleeping, D uninterruptible, R
    /// preempted, blocked from switch records); default all but R.
    #[arg(long)]
    pub(crate) state: Vec<String>,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    /// Show at most N rows.
    #[arg(long, short = 'n')]
    pub(crate) limit: Option<usize>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn offcpu(a: OffcpuArgs) -> Result<()> {
    use trawl_query::datafusion::prelude::lit;
    let s = open(&a.captures).await?;
    let f = a.filter.to_filter()?;
    if f.event.is_some() {
        bail!("--event does not apply: off-CPU time comes from the switches");
    }
    let mut args = vec![lit(a.by.as_str())];
    let mut pair = |k: &str, v: trawl_query::datafusion::scalar::ScalarValue| {
        args.push(lit(k));
        args.push(lit(v));
    };
    use trawl_query::datafusion::scalar::ScalarValue as V;
    for x in &a.state {
        pair("state", V::from(x.as_str()));
    }
    f.selection_args(&mut args);
    // `count()` counts the rows of the query: 0 or 1 here.
    let any: usize = s
        .sql("SELECT 1 FROM thread_state WHERE off_cpu LIMIT 1")
        .await?
        .count()
        .await?;
    if any == 0 {
        bail!(
            "no off-CPU intervals: record context switches, e.g. perf record -g -e sched:sched_switch -c 1 \
             --switch-events -e cpu-clock/period=1000000/ ... (without tracepoint access: -e context-switches \
             instead of -e sched:sched_switch)"
        );
    }
    let df = functions::call(&s, "offcpu", &args).await?;
    let batches = limited(df, a.limit).await?;
    output::write(&batches, &a.out)
}
