//! `trawl report unfreed`: `unfreed(...)`.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use crate::args::{app_prefix, say_app};
use crate::output;
use crate::output::{Format, OutputOpts};
use crate::session::open;

#[derive(Args)]
pub(crate) struct UnfreedArgs {
    /// Captures (or directories of captures).
    #[arg(required = true)]
    pub(crate) captures: Vec<PathBuf>,
    /// `end` (default: what each process still held when it exited or the
    /// trace ended), `+SECONDS` after the first traced call, or a time in
    /// ns as in `syscall.time_ns`.
    #[arg(long, default_value = "end")]
    pub(crate) at: String,
    /// Path prefix of the application's files: its function is the first
    /// frame from the leaf in a module under it (default: the directory
    /// of the traced executable).
    #[arg(long)]
    pub(crate) app: Option<String>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn unfreed(a: UnfreedArgs) -> Result<()> {
    use trawl_query::regions;
    let s = open(&a.captures).await?;
    let at = regions::At::parse(&a.at)?;
    let app = app_prefix(&s, &a.app).await?;
    let batches = regions::unfreed(&s, at, app.as_deref())
        .await?
        .collect()
        .await?;
    if matches!(a.out.format, Format::Table) && a.out.output.is_none() {
        say_app(app.as_deref());
    }
    output::write(&batches, &a.out)
}
