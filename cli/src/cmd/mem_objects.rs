//! `trawl report mem-objects`: per mapped object, pages and symbols used.

use crate::*;

#[derive(Args)]
pub(crate) struct MemObjectsArgs {
    /// Capture with a memory log and a maps file.
    pub(crate) captures: Vec<PathBuf>,
    #[command(flatten)]
    pub(crate) out: OutputOpts,
}

pub(crate) async fn report_mem_objects(a: MemObjectsArgs) -> Result<()> {
    let s = crate::open(&a.captures).await?;
    let df = trawl_query::memlog::objects(&s).await?;
    output::write(&df.collect().await?, &a.out)
}
