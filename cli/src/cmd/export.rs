//! `trawl export`: the selected samples as a file another viewer opens
//! (pprof, Firefox Profiler, speedscope, folded stacks).

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::{Args, ValueEnum};
use trawl_query::sample;

use crate::args::{selection, FilterArgs, MetricArgs};
use crate::output;
use crate::session::open;

/// The formats `trawl export` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub(crate) enum ExportFormat {
    /// pprof's profile.proto, gzip-compressed (`go tool pprof FILE`).
    Pprof,
    /// The Firefox Profiler's processed format (JSON; profiler.firefox.com,
    /// "Load a profile from file").
    Firefox,
    /// speedscope's file format (JSON; speedscope.app or `speedscope FILE`).
    Speedscope,
    /// Folded stacks, `root;...;leaf weight` per line (flamegraph.pl,
    /// inferno, speedscope).
    Folded,
}

#[derive(Args)]
pub(crate) struct ExportArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Format to write.
    #[arg(long = "to", value_enum)]
    pub(crate) format: ExportFormat,
    /// File to write.
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
}

pub(crate) async fn export(a: ExportArgs) -> Result<()> {
    let s = open(&a.captures).await?;
    let (filter, event, weight, opts) = selection(&s, &a.filter, &a.metric).await?;
    let sel = sample::Selection {
        filter: &filter,
        event: &event,
        weight: &weight,
        opts,
    };
    let version = concat!("trawl ", env!("CARGO_PKG_VERSION"));
    let bytes = match a.format {
        ExportFormat::Folded => {
            let tree = trawl_query::flame::frame_tree(&s, &sel).await?;
            tree.folded_text().into_bytes()
        }
        f => {
            let per_sample = f != ExportFormat::Pprof;
            let p = trawl_query::profile::stack_profile(
                &s,
                &sel,
                trawl_query::profile::ProfileOpts { per_sample },
            )
            .await?;
            if p.samples.is_empty() {
                bail!("no samples selected");
            }
            match f {
                ExportFormat::Pprof => trawl_export::pprof::write(&p)?,
                ExportFormat::Speedscope => trawl_export::speedscope::write(&p, version)?,
                _ => {
                    let interval = match &a.interval {
                        Some(d) => trawl_query::time::parse_duration_ns(d)?.max(1) as u64,
                        None => trawl_export::median_gap(&p).unwrap_or(1_000_000),
                    };
                    trawl_export::firefox::write(p, version, interval)?
                }
            }
        }
    };
    output::write_atomic(&a.output, &bytes)?;
    eprintln!("wrote {} ({} bytes)", a.output.display(), bytes.len());
    Ok(())
}
