//! `trawl report lbr`: the lbr_* table functions.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_query::lbr::Method;

use crate::args::choice;
use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

#[derive(Args)]
pub(crate) struct LbrArgs {
    /// Captures (or directories of captures) with branch stacks.
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// How a sample's interval is shared with its branch entries: 0
    /// samples only; 1 equally; 2 each entry its function's execution
    /// ratio, the sample the rest; 3 in proportion to the ratios; cycles:
    /// by the entries' cycle counts.
    #[arg(long, default_value = "3")]
    pub(crate) method: String,
    /// Clock rate for --method cycles (default: the lowest rate at which
    /// no sample's entries outlast its interval).
    #[arg(long)]
    pub(crate) ghz: Option<f64>,
    #[arg(long, value_parser = choice::<trawl_query::lbr::View>(), default_value = "functions")]
    pub(crate) view: trawl_query::lbr::View,
    /// Only this perf event.
    #[arg(long)]
    pub(crate) event: Option<String>,
    /// For --view points and sequence: only this sample (perf_sample.sample_id).
    #[arg(long)]
    pub(crate) sample: Option<i64>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_lbr(a: LbrArgs) -> Result<()> {
    use trawl_query::lbr;
    let s = open(&a.captures).await?;
    let mut method = Method::parse(&a.method)?;
    if let Some(g) = a.ghz {
        if !(g.is_finite() && g > 0.0) {
            bail!("--ghz {g}: expected a positive clock rate");
        }
        if method != Method::Cycles {
            bail!("--ghz applies to --method cycles");
        }
    }
    let view = a.view;
    if !lbr::has_branches(&s).await? {
        bail!("no branch stacks in the capture: record with `perf record -b` or `-j any_call,any_ret,u` (LBR)");
    }
    if a.ghz.is_some() {
        method = Method::Cycles;
    }
    let df = lbr::report(&s, view, method, a.ghz, a.event.as_deref(), a.sample).await?;
    output::write(&df.collect().await?, &a.out)
}
