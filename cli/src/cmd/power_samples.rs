//! `trawl report power-samples`: the power samples of Ono et al. 2015,
//! sampling-based power measurement.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trawl_plot as plot;
use trawl_query::power_calls::PowerView;

use crate::args::choice;
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

/// The energy counter a power command models.
#[derive(Args)]
pub(crate) struct CounterArgs {
    /// The energy domain modelled.
    #[arg(long, default_value = "cores")]
    pub(crate) domain: String,
    /// The energy counter to read (see `report energy --zone`).
    #[arg(long)]
    pub(crate) zone: Vec<String>,
    /// The package (socket) modelled, when the domain is read per package:
    /// its counter, and the samples on its CPUs (perf_cpu).
    #[arg(long)]
    pub(crate) package: Option<i32>,
}

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
    #[arg(long, value_parser = choice::<PowerView>(), default_value = "summary")]
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
        model: trawl_query::power::Model::given(&a.coef, a.intercept)?,
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
    args.model = Some(model);
    let summary = power_calls::samples(&s, &args).await?.collect().await?;
    let data = match (a.view, &a.plot) {
        (PowerView::Summary, None) => Vec::new(),
        _ => power_calls::data(&s, &args).await?.collect().await?,
    };
    if let Some(path) = &a.plot {
        let img = plot::power_data(plot::Image::of_path(path)?, &summary, &data, a.target)?;
        output::write_atomic(path, &img)?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &a.plot_time {
        let img = plot::energy_per_sample(plot::Image::of_path(path)?, &s, &a.time_event).await?;
        output::write_atomic(path, &img)?;
        eprintln!("wrote {}", path.display());
    }
    match a.view {
        PowerView::Summary => output::write(&summary, &a.out),
        PowerView::Data => output::write(&data, &a.out),
    }
}
