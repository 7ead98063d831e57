//! `trawl tables`: the tables of captures, their columns and their
//! documentation.

use std::path::PathBuf;

use anyhow::Result;

use crate::output;
use crate::output::OutputOpts;
use crate::session::open;

pub(crate) async fn tables(captures: Vec<PathBuf>) -> Result<()> {
    let s = open(&captures).await?;
    output::write(&s.columns().await?, &OutputOpts::default())
}
