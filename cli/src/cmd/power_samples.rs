//! `trawl report power-samples`: document 004's power samples.

use crate::*;

#[derive(Args)]
pub(crate) struct PowerSamplesArgs {
    /// Captures (one, or several inputs of the same run ingested together).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// The sampled events merged (comma-separated; default: every sampled
    /// event except the time event).
    #[arg(long, value_delimiter = ',')]
    pub(crate) events: Vec<String>,
    /// The time-based event compared.
    #[arg(long, default_value = "cpu-clock")]
    pub(crate) time_event: String,
    /// Target energy per datum P (J).
    #[arg(long, default_value_t = 1.0)]
    pub(crate) target: f64,
    /// Also group the time-based samples this many at a time (besides the
    /// count whose mean comes closest to P).
    #[arg(long)]
    pub(crate) group: Option<usize>,
    /// Joules per event of the model (EVENT=J, repeatable); default:
    /// fitted on the capture (`report power-model`).
    #[arg(long, value_name = "EVENT=J")]
    pub(crate) coef: Vec<String>,
    /// The model's constant power (W), with --coef.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) intercept: f64,
    #[command(flatten)]
    pub(crate) counter: CounterArgs,
    /// Window of the fit when the model is fitted (see `report power-model`).
    #[arg(long, default_value = "10ms")]
    pub(crate) window: String,
    /// `summary` (per subset) or `data` (every power datum).
    #[arg(long, value_enum, default_value = "summary")]
    pub(crate) view: PowerView,
    /// Histograms of the data's energy (PNG or SVG): the best subset and
    /// the time-based runs (document 004 Fig. 6/8).
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum PowerView {
    Summary,
    Data,
}

pub(crate) async fn report_power_samples(a: PowerSamplesArgs) -> Result<()> {
    use trawl_query::power;
    if !(a.target.is_finite() && a.target > 0.0) {
        bail!(
            "--target {}: expected a positive energy in joules",
            a.target
        );
    }
    if a.group == Some(0) {
        bail!("--group 0: expected a positive number of samples");
    }
    let s = Session::open(&a.captures).await?;
    let events = if a.events.is_empty() {
        power::sampled_events(&s, &a.time_event).await?
    } else {
        a.events.clone()
    };
    if events.is_empty() {
        bail!(
            "no sampled events besides {}: name them with --events",
            a.time_event
        );
    }
    if events.len() > 8 {
        bail!("{} events: at most 8 (every subset is tried)", events.len());
    }
    let mut model = power::Model {
        intercept_w: a.intercept,
        ..Default::default()
    };
    for c in &a.coef {
        let (e, v) = c
            .rsplit_once('=')
            .with_context(|| format!("--coef {c:?}: expected EVENT=JOULES"))?;
        let v: f64 = v
            .parse()
            .ok()
            .filter(|v: &f64| v.is_finite())
            .with_context(|| format!("--coef {c:?}: {v:?} is not a number"))?;
        model.coef.insert(e.to_string(), v);
    }
    if model.coef.is_empty() {
        let input = power::ModelInput {
            events: events.clone(),
            domain: a.counter.domain.clone(),
            zones: a.counter.zone.clone(),
            event: None,
            window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
            package: a.counter.package,
        };
        let (_, intervals) = power::model_intervals(&s, &input)
            .await
            .context("fitting the power model (or give it with --coef and --intercept)")?;
        let f = power::fit(&intervals, events.len())?;
        model.intercept_w = f.intercept;
        for (e, c) in events.iter().zip(&f.coef) {
            model.coef.insert(e.clone(), *c);
        }
        eprintln!(
            "model fitted on {} intervals (R² {:.4}): {:.4} W{}",
            f.n,
            f.r2,
            f.intercept,
            events
                .iter()
                .zip(&f.coef)
                .map(|(e, c)| format!(" + {c:.4e} J × {e}"))
                .collect::<String>()
        );
    }
    let input = power::PowerSamplesInput {
        events,
        time_event: a.time_event.clone(),
        target_j: a.target,
        group: a.group,
        model,
        domain: a.counter.domain.clone(),
        zones: a.counter.zone.clone(),
        package: a.counter.package,
    };
    let (summary, data) = power::power_samples(&s, &input).await?;
    if let Some(path) = &a.plot {
        plot_power_data(&summary, &data, path, a.target)?;
        eprintln!("wrote {}", path.display());
    }
    match a.view {
        PowerView::Summary => output::write(&[summary], &a.out),
        PowerView::Data => {
            use trawl_query::datafusion::prelude::col;
            let df = s.ctx.read_batch(data)?.sort(vec![
                col("n_events").sort(false, true),
                col("events").sort(true, true),
                col("datum").sort(true, true),
            ])?;
            output::write(&df.collect().await?, &a.out)
        }
    }
}

/// Histograms of the best subset's data (most within ±10 %, then the
/// smallest mean error) and of each time-based grouping.
pub(crate) fn plot_power_data(
    summary: &trawl_query::datafusion::arrow::array::RecordBatch,
    data: &trawl_query::datafusion::arrow::array::RecordBatch,
    path: &Path,
    target: f64,
) -> Result<()> {
    use trawl_query::datafusion::arrow::array::{Array, AsArray};
    use trawl_query::datafusion::arrow::datatypes::Float64Type;
    let method = trawl_query::string_values(summary.column(0));
    let events = trawl_query::string_values(summary.column(1));
    let w10 = summary.column(7).as_primitive::<Float64Type>();
    let err = summary.column(8).as_primitive::<Float64Type>();
    let mut best: Option<(usize, f64, f64)> = None;
    let mut panels: Vec<String> = Vec::new();
    for i in 0..summary.num_rows() {
        if w10.is_null(i) {
            continue;
        }
        if method[i].as_deref() == Some("time") {
            panels.push(events[i].clone().unwrap_or_default());
        } else if best.is_none_or(|(_, w, e)| (w10.value(i), -err.value(i).abs()) > (w, -e.abs())) {
            best = Some((i, w10.value(i), err.value(i)));
        }
    }
    if let Some((i, _, _)) = best {
        panels.insert(0, events[i].clone().unwrap_or_default());
    }
    let mut hist = Vec::new();
    for p in panels {
        let v = trawl_query::power::datum_values(data, &p);
        hist.push((p, v));
    }
    plot::histograms(path, "energy per power datum (J)", &hist, target)
}
