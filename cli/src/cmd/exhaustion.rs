//! `trawl report exhaustion`: the ranges where metrics satisfy a rule.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_plot as plot;

use crate::args::{RuleArgs, T0Args};
use crate::output;
use crate::output::{Format, OutputOpts};

#[derive(Args)]
pub(crate) struct ExhaustionArgs {
    /// Captures (or directories of captures): ranges per capture.
    pub(crate) captures: Vec<PathBuf>,
    /// Runs of the same workload: only the ranges present in every run
    /// (intersected on the relative time axis).
    #[arg(long, num_args = 1.., value_name = "CAPTURE")]
    pub(crate) runs: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) rule: RuleArgs,
    /// Draw each compared metric over time, its threshold and the ranges
    /// found (shaded) into this PNG or SVG file.
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) t0: T0Args,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn exhaustion(a: ExhaustionArgs) -> Result<()> {
    use trawl_query::ranges;
    let Some((rule, opts)) = a.rule.parse()? else {
        bail!("give the rule with --rule, e.g. --rule 'cpu_user+cpu_sys > 90 and runq > 2'");
    };
    let common = !a.runs.is_empty();
    let dirs: Vec<PathBuf> = if common {
        if !a.captures.is_empty() {
            bail!("give the captures either before --runs or after it, not both");
        }
        a.runs.clone()
    } else if a.captures.is_empty() {
        bail!("name a capture (or several runs with --runs)");
    } else {
        a.captures.clone()
    };
    let s = a.t0.open(&dirs).await?;
    let per = ranges::ranges(&s, &rule, opts).await?;
    let table = matches!(a.out.format, Format::Table) && a.out.output.is_none();
    if table {
        for t in s.times().await? {
            eprintln!("{}: t0 = {}", t.capture, t.how);
        }
    }
    let (batch, bands) = if common {
        if let Some(w) = ranges::span_mismatch(&s).await? {
            eprintln!("warning: {w}");
        }
        ranges::across_runs(&s, &per)?
    } else {
        ranges::per_capture(&s, &per).await?
    };
    if let Some(p) = &a.plot {
        let series = ranges::load(&s, &rule).await?;
        let panels: Vec<plot::Panel> = rule
            .comparisons()
            .into_iter()
            .map(|c| plot::Panel {
                label: format!("{} ({} {})", c.expr, c.op, c.threshold),
                threshold: Some(c.threshold),
                lines: series
                    .iter()
                    .map(|(cap, cs)| {
                        let v = ranges::sample(&c.expr, cs)
                            .into_iter()
                            .map(|(a, b, v)| (a as f64 / 1e9, b as f64 / 1e9, v))
                            .collect();
                        (cap.clone(), v)
                    })
                    .collect(),
            })
            .collect();
        let bands: Vec<plot::Band> = bands
            .iter()
            .map(|r| (r.start as f64 / 1e9, r.end as f64 / 1e9))
            .collect();
        let img = plot::metrics(
            plot::Image::of_path(p)?,
            &format!("{} — t0: {}", rule, a.t0.t0),
            &panels,
            &bands,
        )?;
        output::write_atomic(p, &img)?;
        eprintln!("wrote {}", p.display());
    }
    output::write(&[batch], &a.out)
}
