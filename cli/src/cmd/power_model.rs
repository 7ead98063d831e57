//! `trawl report power-model`: the power model fit of Ono et al. 2015,
//! sampling-based power measurement.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::output;
use crate::output::OutputOpts;
use crate::session::open;
use trawl_query::datafusion::arrow::array::RecordBatch;

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
    /// Print the intervals fitted on instead, one row per interval and
    /// event (`power_intervals(...)`: t_ns, seconds, joules, watts, term,
    /// event, rate_per_s).
    #[arg(long)]
    pub(crate) intervals: bool,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_power_model(a: PowerModelArgs) -> Result<()> {
    use trawl_query::power_calls;
    let s = open(&a.captures).await?;
    let input = trawl_query::power::ModelInput {
        events: a.events.clone(),
        domain: a.counter.domain.clone(),
        zones: a.counter.zone.clone(),
        event: a.event.clone(),
        window_ns: trawl_query::time::parse_duration_ns(&a.window)?,
        package: a.counter.package,
    };
    if a.intervals {
        let rows = power_calls::intervals(&s, &input).await?.collect().await?;
        return output::write(&rows, &a.out);
    }
    let rows = power_calls::model(&s, &input, a.target)
        .await?
        .collect()
        .await?;
    eprintln!("{}", model_note(&rows, a.counter.package));
    // The terms; where the model came from is the note above.
    let shown = rows
        .iter()
        .map(|b| b.project(&(0..8).collect::<Vec<_>>()))
        .collect::<Result<Vec<_>, _>>()?;
    output::write(&shown, &a.out)
}

/// "capture: domain from zone; rates from E1 (read), ... at the E samples".
fn model_note(rows: &[RecordBatch], package: Option<i32>) -> String {
    let col = |name: &str| -> Vec<Option<String>> {
        rows.iter()
            .flat_map(|b| {
                trawl_query::string_values(b.column_by_name(name).expect("power_model column"))
            })
            .collect()
    };
    let (term, from) = (col("term"), col("rates_from"));
    let first = |name: &str| col(name).into_iter().flatten().next().unwrap_or_default();
    let how: Vec<String> = term
        .iter()
        .zip(&from)
        .filter_map(|(t, f)| Some(format!("{} ({})", t.as_ref()?, f.as_ref()?)))
        .collect();
    format!(
        "{}: {}{} from {}; rates from {} at the {} samples{}",
        first("capture"),
        first("domain"),
        package
            .map(|p| format!(" of package {p}"))
            .unwrap_or_default(),
        first("zone"),
        how.join(", "),
        first("event"),
        package.map(|_| " on its CPUs").unwrap_or_default()
    )
}
