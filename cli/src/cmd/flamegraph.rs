//! `trawl report flamegraph`: the selected stacks drawn by inferno.

use crate::*;

#[derive(Args)]
pub(crate) struct FlameArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
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
}

pub(crate) async fn flamegraph(a: FlameArgs) -> Result<()> {
    let s = crate::open(&a.captures).await?;
    let (filter, event, weight, opts) = selection(&s, &a.filter, &a.metric).await?;
    let sel = analyses::Selection {
        filter: &filter,
        event: &event,
        weight: &weight,
        opts,
    };
    let tree = trawl_query::flame::frame_tree(&s, &sel).await?;
    if tree.total() <= 0 {
        bail!("no samples with stacks to draw");
    }
    if let Some(p) = &a.folded {
        let all: Vec<String> = tree
            .folded(0)
            .iter()
            .map(|(st, w)| format!("{st} {w}"))
            .collect();
        output::write_atomic(p, (all.join("\n") + "\n").as_bytes())?;
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
