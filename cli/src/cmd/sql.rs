//! `trawl sql`: run SQL over captures.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;

use crate::args::T0Args;
use crate::output;
use crate::output::OutputOpts;

#[derive(Args)]
pub(crate) struct SqlArgs {
    /// Captures (or directories of captures, or their object store URLs:
    /// s3://bucket/archive, gs://..., az://...), then the query unless --file.
    #[arg(required = true, num_args = 1..)]
    pub(crate) args: Vec<String>,
    /// Read the query (or `;`-separated statements) from a file.
    #[arg(long, value_name = "FILE")]
    pub(crate) file: Option<PathBuf>,
    /// The origin of `t_ns` (and of the time-window functions).
    #[command(flatten)]
    pub(crate) t0: T0Args,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn sql(a: SqlArgs) -> Result<()> {
    let mut args = a.args.clone();
    let query = match &a.file {
        Some(f) => {
            std::fs::read_to_string(f).with_context(|| format!("reading {}", f.display()))?
        }
        None => {
            if args.len() < 2 {
                bail!("give one or more captures and then the query (or --file)");
            }
            args.pop().unwrap()
        }
    };
    let dirs: Vec<PathBuf> = args.iter().map(PathBuf::from).collect();
    let s = a.t0.open(&dirs).await?;
    let Some(df) = s.run_script(&query).await? else {
        bail!("no SQL statement given");
    };
    output::write(&output::rows_of(df).await?, &a.out)
}
