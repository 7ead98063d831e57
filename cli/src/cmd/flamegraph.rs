//! `trawl report flamegraph`: the selected stacks drawn by inferno.

use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use trawl_plot as plot;

use crate::args::{selection, FilterArgs, MetricArgs, T0Args};
use crate::output;
use crate::session::open;

#[derive(Args)]
pub(crate) struct FlameArgs {
    /// Captures (or directories of captures).
    #[arg(required_unless_present = "diff")]
    pub(crate) captures: Vec<PathBuf>,
    /// A differential flame graph of BASE → NEW instead (inferno's
    /// differential mode): NEW's stacks, red where they grew, blue where
    /// they shrank, BASE scaled to NEW's total.
    #[arg(long, num_args = 2, value_names = ["BASE", "NEW"], conflicts_with_all = ["captures", "folded"])]
    pub(crate) diff: Option<Vec<PathBuf>>,
    /// SVG file to write.
    #[arg(short, long)]
    pub(crate) output: PathBuf,
    /// Title of the graph (default: the capture and event).
    #[arg(long)]
    pub(crate) title: Option<String>,
    /// Also write the folded stacks (`root;...;leaf weight`) to this file.
    #[arg(long, value_name = "FILE")]
    pub(crate) folded: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) filter: FilterArgs,
    #[command(flatten)]
    pub(crate) metric: MetricArgs,
    #[command(flatten)]
    pub(crate) t0: T0Args,
}

pub(crate) async fn flamegraph(a: FlameArgs) -> Result<()> {
    if let Some(d) = &a.diff {
        return diff_flamegraph(&a, &d[0], &d[1]).await;
    }
    let s = a.t0.open(&a.captures).await?;
    let picked = selection(&s, &a.filter, &a.metric).await?;
    let sel = picked.selection();
    let (event, weight) = (&picked.event, &picked.weight);
    let tree = trawl_query::flame::frame_tree(&s, &sel).await?;
    if tree.total() <= 0 {
        bail!("no samples with stacks to draw");
    }
    if let Some(p) = &a.folded {
        output::write_atomic(p, tree.folded_text().as_bytes())?;
    }
    let title = a
        .title
        .clone()
        .unwrap_or_else(|| plot::flame_title(&s, &event));
    let (svg, frames) = plot::flame_svg(&tree, &title, &plot::count_name(&weight))?;
    output::write_atomic(&a.output, &svg)?;
    eprintln!(
        "wrote {} ({frames} frames wide enough to draw)",
        a.output.display(),
    );
    Ok(())
}

async fn diff_flamegraph(a: &FlameArgs, base: &Path, new: &Path) -> Result<()> {
    let s = open(&[base.to_path_buf(), new.to_path_buf()]).await?;
    let (base_caps, new_caps) = trawl_query::captures::sides(&s, base)?;
    let picked = selection(&s, &a.filter, &a.metric).await?;
    let (event, weight) = (&picked.event, &picked.weight);
    let tree = |caps: &[String]| {
        let mut side = picked.clone();
        side.filter.captures = caps.to_vec();
        let s = &s;
        async move { trawl_query::flame::frame_tree(s, &side.selection()).await }
    };
    let (b, n) = (tree(&base_caps).await?, tree(&new_caps).await?);
    let title = a.title.clone().unwrap_or_else(|| {
        format!(
            "{} → {} — {event}",
            base_caps.join(", "),
            new_caps.join(", ")
        )
    });
    let (svg, stacks) = plot::diff_flame_svg(&b, &n, &title, &plot::count_name(&weight))?;
    output::write_atomic(&a.output, &svg)?;
    eprintln!("wrote {} ({stacks} stacks)", a.output.display());
    Ok(())
}
