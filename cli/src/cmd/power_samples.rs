//! `trawl report power-samples`: the power samples of Ono et al. 2015,
//! sampling-based power measurement.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use clap::{Args, ValueEnum};
use trawl_plot as plot;

use crate::cmd::power_model::CounterArgs;
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;
use trawl_query::datafusion::arrow::array::RecordBatch;

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
    /// the time-based runs (Ono et al. 2015, Fig. 6/8).
    #[arg(long, value_name = "FILE")]
    pub(crate) plot: Option<PathBuf>,
    /// Each sample's energy over time (PNG or SVG), one panel per sampled
    /// event, the time-based event first: the RAPL increase since the
    /// previous sample of the event on its CPU (`sample_rapl()`;
    /// Ono et al. 2015, Fig. 5 and 7).
    #[arg(long, value_name = "FILE")]
    pub(crate) plot_time: Option<PathBuf>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

#[derive(Clone, Copy, ValueEnum)]
pub(crate) enum PowerView {
    Summary,
    Data,
}

pub(crate) async fn report_power_samples(a: PowerSamplesArgs) -> Result<()> {
    use trawl_query::power_calls::{self, SamplesArgs};
    let s = open(&a.captures).await?;
    let mut args = SamplesArgs {
        counter: trawl_query::power::ModelInput {
            events: a.events.clone(),
            domain: a.counter.domain.clone(),
            zones: a.counter.zone.clone(),
            event: None,
            window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
            package: a.counter.package,
        },
        time_event: a.time_event.clone(),
        target_j: a.target,
        group: a.group,
        coef: a.coef.clone(),
        intercept_w: a.intercept,
    };
    // The model once (fitted unless given), then passed to both calls.
    let events = power_calls::samples_events(&s, &args).await?;
    let (model, fit) = power_calls::samples_model(&s, &args, &events).await?;
    if let Some(f) = fit {
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
    args.counter.events = events;
    args.coef = model
        .coef
        .iter()
        .map(|(e, c)| format!("{e}={c:?}"))
        .collect();
    args.intercept_w = model.intercept_w;
    let summary = power_calls::samples(&s, &args).await?.collect().await?;
    let data = match (a.view, &a.plot) {
        (PowerView::Summary, None) => Vec::new(),
        _ => power_calls::data(&s, &args).await?.collect().await?,
    };
    if let Some(path) = &a.plot {
        plot_power_data(&summary, &data, path, a.target)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.plot_time {
        plot_energy_over_time(&s, &a.time_event, path).await?;
        eprintln!("wrote {}", path.display());
    }
    match a.view {
        PowerView::Summary => output::write(&summary, &a.out),
        PowerView::Data => output::write(&data, &a.out),
    }
}

/// Histograms of the best subset's data (most within ±10 %, then the
/// smallest mean error) and of each time-based grouping.
pub(crate) fn plot_power_data(
    summary: &[RecordBatch],
    data: &[RecordBatch],
    path: &Path,
    target: f64,
) -> Result<()> {
    use trawl_query::datafusion::arrow::array::{Array, AsArray};
    use trawl_query::datafusion::arrow::compute::concat_batches;
    use trawl_query::datafusion::arrow::datatypes::Float64Type;
    let one = |b: &[RecordBatch]| -> Result<RecordBatch> {
        let schema = b.first().context("no rows")?.schema();
        Ok(concat_batches(&schema, b)?)
    };
    let (summary, data) = (&one(summary)?, &one(data)?);
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
    let img = plot::histograms(
        plot::Image::of_path(path)?,
        "energy per power datum (J)",
        &hist,
        target,
    )?;
    crate::output::write_atomic(path, &img)
}

/// `sample_rapl()` of the first capture as Ono et al. 2015, Fig. 5/7: one
/// panel per sampled event (`time_event` first), joules over time (ms
/// since the first sample drawn).
async fn plot_energy_over_time(
    s: &trawl_query::Session,
    time_event: &str,
    path: &Path,
) -> Result<()> {
    use trawl_query::datafusion::arrow::array::{Array, AsArray};
    use trawl_query::datafusion::arrow::datatypes::{Float64Type, Int64Type};
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let rows = trawl_query::functions::call(s, "sample_rapl", &[])
        .await?
        .filter(
            trawl_query::datafusion::prelude::col("capture")
                .eq(trawl_query::datafusion::prelude::lit(cap.as_str())),
        )?
        .select_columns(&["event", "t_ns", "joules"])?
        .collect()
        .await?;
    let mut by: std::collections::BTreeMap<String, Vec<(i64, f64)>> = Default::default();
    for b in &rows {
        let ev = trawl_query::string_values(b.column(0));
        let t = b.column(1).as_primitive::<Int64Type>();
        let j = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if let (Some(e), false, false) = (&ev[i], t.is_null(i), j.is_null(i)) {
                by.entry(e.clone())
                    .or_default()
                    .push((t.value(i), j.value(i)));
            }
        }
    }
    if by.is_empty() {
        bail!("no sample read a RAPL counter (power/energy-*): nothing to plot");
    }
    let t0 = by
        .values()
        .flat_map(|v| v.iter().map(|p| p.0))
        .min()
        .unwrap_or(0);
    let mut names: Vec<String> = by.keys().cloned().collect();
    names.sort_by_key(|n| (n != time_event, n.clone()));
    let panels: Vec<(String, Vec<(f64, f64)>)> = names
        .into_iter()
        .map(|n| {
            let pts = by[&n]
                .iter()
                .map(|&(t, j)| ((t - t0) as f64 / 1e6, j))
                .collect();
            (n, pts)
        })
        .collect();
    let img = plot::energy_over_time(
        plot::Image::of_path(path)?,
        &format!("{cap}: energy per sample over time"),
        &panels,
    )?;
    crate::output::write_atomic(path, &img)
}
