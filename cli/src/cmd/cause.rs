//! `trawl report cause`: what used a resource inside exhaustion ranges.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;
use trawl_query::lbr::Method;

use crate::args::{RuleArgs, T0Args};
use crate::output;
use crate::output::{Format, OutputOpts};

#[derive(Args)]
pub(crate) struct CauseArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// cpu (perf samples in the range), memory (allocated and not freed
    /// at the range's start) or io (bytes transferred from --lead before
    /// the range to its end).
    #[arg(long)]
    pub(crate) resource: String,
    /// The range (instead of --rule): START..END in seconds on the capture
    /// clock, as `perf script` prints times, or +START..+END in seconds
    /// since the origin (`--t0`), as `report timeline` prints them.
    #[arg(long, value_name = "START..END")]
    pub(crate) range: Option<String>,
    #[command(flatten)]
    pub(crate) rule: RuleArgs,
    /// Path prefix of the application's files (default: the directory of
    /// the traced executable).
    #[arg(long)]
    pub(crate) app: Option<String>,
    /// For io: also count this many seconds before each range.
    #[arg(long, default_value_t = 0.0)]
    pub(crate) lead: f64,
    /// For cpu: the perf event (default: the one with most samples).
    #[arg(long)]
    pub(crate) event: Option<String>,
    /// For memory: look at the range's `start` (Morita et al.), or at the
    /// moment in the range when the traced processes held the most (`max`).
    #[arg(long, default_value = "start", value_parser = ["start", "max"])]
    pub(crate) at: String,
    /// For cpu: count branch stack entries as samples too, timed by this
    /// method (0, 1, 2, 3 or cycles; see `trawl report lbr`).
    #[arg(long, value_name = "METHOD")]
    pub(crate) lbr: Option<String>,
    #[command(flatten)]
    pub(crate) t0: T0Args,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn cause(a: CauseArgs) -> Result<()> {
    use trawl_query::ranges::Range;
    let resource = trawl_query::cause::Resource::parse(&a.resource)?;
    let s = a.t0.open(&a.captures).await?;
    let per: std::collections::BTreeMap<String, Vec<Range>> = match (&a.range, a.rule.parse()?) {
        (Some(r), None) => {
            let given = trawl_query::time::parse_seconds_range_of("--range", r)?;
            // cpu: perf samples; memory and io: traced calls.
            let rows = match resource {
                trawl_query::cause::Resource::Cpu => trawl_query::time::RowsOf::Samples,
                _ => trawl_query::time::RowsOf::Calls,
            };
            let mut per = std::collections::BTreeMap::new();
            for c in s.captures() {
                let (from, to) =
                    trawl_query::time::since_origin(&s, given, &c.name, rows, "--range").await?;
                let r = Range {
                    start: from.unwrap_or(0),
                    end: to.unwrap_or(i64::MAX / 2),
                };
                if r.end <= r.start {
                    bail!(
                        "--range {:?}: the end must come after the start",
                        a.range.as_deref().unwrap_or("")
                    );
                }
                per.insert(c.name.clone(), vec![r]);
            }
            per
        }
        (None, Some((rule, opts))) => trawl_query::ranges::ranges(&s, &rule, opts).await?,
        _ => bail!("give either --range START..END or --rule RULE"),
    };
    if per.values().all(Vec::is_empty) {
        bail!("the rule holds nowhere: no ranges to look into");
    }
    if !(a.lead.is_finite() && a.lead >= 0.0) {
        bail!("--lead {}: expected seconds >= 0", a.lead);
    }
    let (app, app_line) = trawl_query::regions::app_of(&s, a.app.as_deref()).await?;
    let per: std::collections::BTreeMap<String, Vec<Range>> =
        per.into_iter().filter(|(_, v)| !v.is_empty()).collect();
    let df = trawl_query::cause::cause(
        &s,
        resource,
        &per,
        app.as_deref(),
        (a.lead * 1e9).round() as i64,
        a.event.as_deref(),
        if a.at == "max" {
            trawl_query::cause::MemoryAt::Max
        } else {
            trawl_query::cause::MemoryAt::Start
        },
        a.lbr.as_deref().map(Method::parse).transpose()?,
    )
    .await?;
    let batches = df.collect().await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        for t in s.times().await? {
            eprintln!("{}: t0 = {}", t.capture, t.how);
        }
        eprintln!("{app_line}");
    }
    output::write(&batches, &a.out)
}
