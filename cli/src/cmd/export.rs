//! `trawl export`: the selected samples as a file another viewer opens
//! (pprof, Firefox Profiler, speedscope, folded stacks).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{choice, selection, selection_or_none, FilterArgs, MetricArgs, T0Args};
use crate::output;

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
    let bytes = trawl_export::export(&s, &sel, a.format, interval).await?;
    if a.output.as_os_str() == "-" {
        use std::io::Write;
        std::io::stdout().write_all(&bytes)?;
        return Ok(());
    }
    output::write_atomic(&a.output, &bytes)?;
    eprintln!("wrote {} ({} bytes)", a.output.display(), bytes.len());
    Ok(())
}
