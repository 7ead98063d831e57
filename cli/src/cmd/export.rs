//! `trawl export`: the selected samples as a file another viewer opens
//! (pprof, Firefox Profiler, speedscope, folded stacks), or a Perfetto
//! trace of everything a capture holds on one timeline.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{choice, selection, selection_or_none, FilterArgs, MetricArgs, RuleArgs, T0Args};

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Format to write.
    #[arg(long = "to", value_parser = choice::<trawl_export::Format>())]
    pub(crate) format: trawl_export::Format,
    /// File to write (`-`: standard output).
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Sampling interval the Firefox Profiler assumes between samples
    /// (default: the median gap between a thread's samples, else 1ms).
    #[arg(long, value_name = "DURATION")]
    pub(crate) interval: Option<String>,
    /// Perfetto: paired events as slices, START,END,KEY[,KEY...] (the
    /// intervals from a start event to the next end event with the same
    /// key: `block:block_rq_issue,block:block_rq_complete,dev,sector`; a
    /// key `field=end_field` when the end names it otherwise:
    /// `sched:sched_waking,sched:sched_switch,pid=next_pid`); repeatable.
    #[arg(long, value_name = "START,END,KEY")]
    pub(crate) pair: Vec<String>,
    /// Perfetto: the exhaustion ranges of this rule on a track of their own.
    #[command(flatten)]
    pub(crate) rule: RuleArgs,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) metric: MetricArgs,
    #[command(flatten)]
    pub(crate) t0: T0Args,
}

pub(crate) async fn export(a: ExportArgs) -> Result<()> {
    let s = a.t0.open(&a.captures).await?;
    let picked = if a.format == trawl_export::Format::Perfetto {
        // A trace holds traced calls too: a capture without samples exports.
        selection_or_none(&s, &a.filter, &a.metric).await?
    } else {
        selection(&s, &a.filter, &a.metric).await?
    };
    let sel = picked.selection();
    let interval = match &a.interval {
        Some(d) => Some(trawl_query::time::parse_duration_ns(d)?.max(1) as u64),
        None => None,
    };
    let opts = trawl_export::ExportOpts {
        interval_ns: interval,
        pairs: a.pair.clone(),
        rule: a
            .rule
            .rule
            .clone()
            .map(|r| (r, a.rule.min_duration.clone(), a.rule.gap.clone())),
    };
    if a.output.as_os_str() == "-" {
        let mut out = std::io::BufWriter::new(std::io::stdout());
        trawl_export::export(&s, &sel, a.format, &opts, &mut out).await?;
        std::io::Write::flush(&mut out)?;
        return Ok(());
    }
    let bytes = trawl_export::export_file(&s, &sel, a.format, &opts, &a.output).await?;
    eprintln!("wrote {} ({bytes} bytes)", a.output.display());
    Ok(())
}
