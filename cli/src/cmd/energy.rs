//! `trawl report energy`: `energy_by(...)`, and the counters read.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{choice, T0Args};
use crate::output;
use crate::output::OutputOpts;

#[derive(Args)]
pub(crate) struct EnergyArgs {
    /// Captures with perf samples and energy readings of the same run.
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// What the joules are summed by: one or more keys, comma-separated
    /// (`package,function` gives each package's functions).
    #[arg(long, value_parser = choice::<trawl_query::energy::EnergyKey>(), value_delimiter = ',', default_value = "function")]
    pub(crate) by: Vec<trawl_query::energy::EnergyKey>,
    /// The perf event whose samples get the energy (default: the one with
    /// most samples).
    #[arg(long)]
    pub(crate) event: Option<String>,
    /// What a sample weighs in the package, cores, gpu and psys split:
    /// `period`, `samples` or `read:EVENT` (a counter read at the samples,
    /// e.g. read:cycles).
    #[arg(long, default_value = "period")]
    pub(crate) core_indicator: String,
    /// The same for the DRAM split (e.g. read:LLC-load-misses).
    #[arg(long, default_value = "period")]
    pub(crate) dram_indicator: String,
    /// The energy counters to read (`intel-rapl:0:0`,
    /// `power/energy-cores/@cpu-clock`; repeatable). Default: per domain
    /// (and per package, when the readings are of several: each package's
    /// energy goes to the samples on its CPUs), the one the event's
    /// samples read, else the one with most readings.
    #[arg(long)]
    pub(crate) zone: Vec<String>,
    #[command(flatten)]
    pub(crate) t0: T0Args,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_energy(a: EnergyArgs) -> Result<()> {
    use trawl_query::energy::{self, Indicator};
    let s = a.t0.open(&a.captures).await?;
    let core = Indicator::parse(&a.core_indicator)?;
    let dram = Indicator::parse(&a.dram_indicator)?;
    let event = trawl_query::sample::choose_event(&s, a.event.as_deref()).await?;
    let chains = trawl_query::rapl::chosen_chains(&s, &event, &a.zone).await?;
    for c in &chains {
        eprintln!(
            "{}: {}{} from {} ({} intervals){}",
            c.capture,
            c.domain,
            c.package
                .map(|p| format!(" of package {p}"))
                .unwrap_or_default(),
            c.zone,
            c.intervals,
            if c.ignored.is_empty() {
                String::new()
            } else {
                format!("; not read: {}", c.ignored.join(", "))
            }
        );
    }
    let df = energy::report(&s, &a.by, &event, &core, &dram, &a.zone).await?;
    output::write(&df.collect().await?, &a.out)
}
