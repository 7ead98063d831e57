//! `trawl report power-model`: document 004's power model fit.

use crate::*;

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
pub(crate) struct PowerModelArgs {
    /// A capture with energy readings and counters of the same run.
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// The events whose rates explain the power (comma-separated; default:
    /// every counter read at the samples, power events excepted).
    #[arg(long, value_delimiter = ',')]
    pub(crate) events: Vec<String>,
    #[command(flatten)]
    pub(crate) counter: CounterArgs,
    /// The samples whose counter reads give the rates (default: the
    /// leader of the group that read the domain's counter).
    #[arg(long)]
    pub(crate) event: Option<String>,
    /// Target energy per sample P (J) for R_i = P / c_i.
    #[arg(long, default_value_t = 1.0)]
    pub(crate) target: f64,
    /// Consecutive counter intervals are merged until they span this
    /// (RAPL counters step about every millisecond: 1 ms intervals carry
    /// one step whatever their length); `0` fits the raw intervals.
    #[arg(long, default_value = "10ms")]
    pub(crate) window: String,
    /// Print the intervals fitted on instead (t_ns, seconds, joules,
    /// watts, rate_1 … rate_k).
    #[arg(long)]
    pub(crate) intervals: bool,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_power_model(a: PowerModelArgs) -> Result<()> {
    use trawl_query::power;
    if !(a.target.is_finite() && a.target > 0.0) {
        bail!(
            "--target {}: expected a positive energy in joules",
            a.target
        );
    }
    let s = Session::open(&a.captures).await?;
    let events = if a.events.is_empty() {
        trawl_query::power::read_events(&s).await?
    } else {
        a.events.clone()
    };
    if events.is_empty() {
        bail!("no counters read at the samples: name the events with --events (sampled events count by their periods)");
    }
    let input = power::ModelInput {
        events: events.clone(),
        domain: a.counter.domain.clone(),
        zones: a.counter.zone.clone(),
        event: a.event.clone(),
        window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
        package: a.counter.package,
    };
    let (src, intervals) = power::model_intervals(&s, &input).await?;
    eprintln!(
        "{}: {}{} from {} ({} intervals); rates from {} at the {} samples{}",
        src.chain.capture,
        src.chain.domain,
        a.counter
            .package
            .map(|p| format!(" of package {p}"))
            .unwrap_or_default(),
        src.chain.zone,
        src.chain.intervals,
        src.how
            .iter()
            .map(|(e, h)| format!("{e} ({h})"))
            .collect::<Vec<_>>()
            .join(", "),
        src.event,
        a.counter
            .package
            .map(|_| " on its CPUs".to_string())
            .unwrap_or_default()
    );
    if a.intervals {
        return output::write(&[intervals], &a.out);
    }
    let fit = power::fit(&intervals, events.len())?;
    let table = power::fit_table(&intervals, &events, &fit, a.target)?;
    output::write(&[table], &a.out)
}
