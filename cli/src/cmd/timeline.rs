//! `trawl report timeline`: `timeline(...)`, pivoted for plots.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_plot as plot;
use trawl_query::functions;

use crate::args::{choice, RuleArgs, T0Args, ThreadArgs};
use crate::output;
use crate::output::{Format, OutputOpts};

#[derive(Args)]
pub(crate) struct TimelineArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Window width: 10ms, 1s, 500us, ...
    #[arg(long, default_value = "100ms")]
    pub(crate) window: String,
    #[arg(long, value_parser = choice::<trawl_query::timeline::TimelineKey>(), default_value = "function")]
    pub(crate) by: trawl_query::timeline::TimelineKey,
    /// Keys shown by name (by total over the capture); the rest is [other].
    #[arg(long, default_value_t = 10)]
    pub(crate) top: usize,
    /// The perf event (default: the one with most samples).
    #[arg(long)]
    pub(crate) event: Option<String>,
    #[command(flatten)]
    pub(crate) only: ThreadArgs,
    /// Draw the shares stacked over time into this PNG or SVG file (the
    /// first capture).
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,
    /// Shade the ranges where this rule holds in the plot.
    #[command(flatten)]
    pub(crate) rule: RuleArgs,
    /// Count branch stack entries as samples too, timed by this method (0,
    /// 1, 2, 3 or cycles; see `trawl report lbr`).
    #[arg(long, value_name = "METHOD")]
    pub(crate) lbr: Option<String>,
    /// Instead of samples: per window and thread, the time it ran and the
    /// time off the CPU per state (S sleeping, D disk, R preempted), from
    /// the context switches (`thread_timeline(...)`).
    #[arg(long, conflicts_with_all = ["plot", "lbr", "event"])]
    pub(crate) threads: bool,
    #[command(flatten)]
    pub(crate) t0: T0Args,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn timeline(a: TimelineArgs) -> Result<()> {
    let s = a.t0.open(&a.captures).await?;
    let window = trawl_query::time::parse_duration_ns(&a.window)?;
    if a.threads {
        use trawl_query::datafusion::prelude::lit;
        let only = a.only.to_filter(&s).await?;
        if !only.comms.is_empty() || only.time_from_ns.is_some() || only.time_to_ns.is_some() {
            bail!("--threads takes --pid, --tid and --capture, not --comm or --time");
        }
        let mut args = vec![lit(window)];
        for p in &only.pids {
            args.extend([lit("pid"), lit(*p)]);
        }
        for t in &only.tids {
            args.extend([lit("tid"), lit(*t)]);
        }
        for c in &only.captures {
            args.extend([lit("capture"), lit(c.as_str())]);
        }
        let df = functions::call(&s, "thread_timeline", &args).await?;
        let batches = df.collect().await?;
        if batches.iter().all(|b| b.num_rows() == 0) {
            bail!(
                "no thread states: record context switches (sched:sched_switch, --switch-events)"
            );
        }
        return output::write(&batches, &a.out);
    }
    let ask = plot::TimelineAsk {
        window: &a.window,
        by: a.by,
        top: a.top,
        event: a.event.as_deref(),
        lbr: a.lbr.as_deref(),
        t0: &a.t0.t0,
        only: a.only.to_filter(&s).await?,
    };
    let rows = plot::timeline_rows(&s, &ask).await?;
    if let Some(p) = &a.plot {
        let img =
            plot::timeline_plot(&s, plot::Image::of_path(p)?, &ask, &rows, a.rule.parse()?).await?;
        output::write_atomic(p, &img)?;
        eprintln!("wrote {}", p.display());
    }
    let (batches, event) = (rows.batches, rows.event);
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        eprintln!("event: {event}");
    }
    output::write(&batches, &a.out)
}
