//! `trawl report io`: `io_bytes(...)`.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use crate::args::{app_prefix, say_app};
use crate::output;
use crate::output::{Format, OutputOpts};
use crate::session::open;

#[derive(Args)]
pub(crate) struct IoArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// Start of the window: `+SECONDS` after the first traced call, or a
    /// time in ns as in `syscall.time_ns` (default: the start).
    #[arg(long)]
    pub(crate) from: Option<String>,
    /// End of the window (exclusive), same forms (default: the end).
    #[arg(long)]
    pub(crate) to: Option<String>,
    /// Also count this many seconds before --from (the lead time of Morita
    /// et al.: I/O issued just before an exhaustion range feeds it).
    #[arg(long, default_value_t = 0.0)]
    pub(crate) lead: f64,
    /// Path prefix of the application's files (default: the directory of
    /// the traced executable).
    #[arg(long)]
    pub(crate) app: Option<String>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn io_report(a: IoArgs) -> Result<()> {
    use trawl_query::regions::At;
    let s = open(&a.captures).await?;
    let from = a.from.as_deref().map(At::parse).transpose()?;
    let to = a.to.as_deref().map(At::parse).transpose()?;
    if !(a.lead.is_finite() && a.lead >= 0.0) {
        bail!("--lead {}: expected seconds >= 0", a.lead);
    }
    let app = app_prefix(&s, &a.app).await?;
    let lead_ns = (a.lead * 1e9).round() as i64;
    let batches = trawl_query::io::io(&s, from, to, lead_ns, app.as_deref())
        .await?
        .collect()
        .await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        say_app(app.as_deref());
    }
    output::write(&batches, &a.out)
}
