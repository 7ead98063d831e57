//! `trawl tables`: the tables of captures, their columns and their
//! documentation.

use crate::*;

pub(crate) async fn tables(captures: Vec<PathBuf>) -> Result<()> {
    let s = crate::open(&captures).await?;
    output::write(&s.columns().await?, &OutputOpts::default())
}
