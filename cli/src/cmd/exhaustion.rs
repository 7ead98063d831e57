//! `trawl report exhaustion`: the ranges where metrics satisfy a rule.

use crate::*;

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
    let mut bands: Vec<ranges::Range> = per.values().flatten().copied().collect();
    let batch = if common {
        let spans = ranges::spans(&s).await?;
        if let (Some(lo), Some(hi)) = (
            spans.iter().map(|x| x.1).min(),
            spans.iter().map(|x| x.1).max(),
        ) {
            if lo > 0 && (hi - lo) * 10 > lo {
                let list: Vec<String> = spans
                    .iter()
                    .map(|(c, t)| format!("{c} {:.1} s", *t as f64 / 1e9))
                    .collect();
                eprintln!(
                    "warning: the runs' metrics span different lengths ({}): ranges are compared on each run's own axis from its t0; pick the origin with --t0 (e.g. exec:PROGRAM) so the runs line up",
                    list.join(", ")
                );
            }
        }
        let runs: Vec<(String, Vec<ranges::Range>)> = s
            .captures()
            .iter()
            .map(|c| {
                (
                    c.name.clone(),
                    per.get(&c.name).cloned().unwrap_or_default(),
                )
            })
            .collect();
        let all: Vec<Vec<ranges::Range>> = runs.iter().map(|r| r.1.clone()).collect();
        let common = ranges::merge(ranges::intersect(&all), Default::default());
        bands = common.clone();
        ranges::common_batch(&runs, &common)?
    } else {
        let mut rows: Vec<(String, Vec<ranges::Range>, Option<i64>)> = Vec::new();
        for c in s.captures() {
            rows.push((
                c.name.clone(),
                per.get(&c.name).cloned().unwrap_or_default(),
                ranges::origin_of(&s, &c.name).await?,
            ));
        }
        ranges::batch(&rows)?
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
        plot::metrics(p, &format!("{} — t0: {}", rule, a.t0.t0), &panels, &bands)?;
        eprintln!("wrote {}", p.display());
    }
    output::write(&[batch], &a.out)
}
