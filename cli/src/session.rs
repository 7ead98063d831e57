//! Opening captures for a command: locally (with a decoder for
//! `annotate`), or on a Ballista cluster when `--cluster` was given.

use std::path::PathBuf;

use anyhow::Result;
use trawl_query::Session;

/// `--cluster`, when given.
pub(crate) static CLUSTER: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// Opens the captures, on the cluster when `--cluster` was given.
pub(crate) async fn open_session(
    captures: &[PathBuf],
    origin: &trawl_query::time::Origin,
) -> Result<Session> {
    Ok(match CLUSTER.get() {
        Some(url) => {
            Session::open_in(captures, origin, trawl_cluster::client::context(url)).await?
        }
        None => {
            let s = Session::open_at(captures, origin).await?;
            // `annotate` decodes the functions it is asked for.
            s.set_code_source(trawl_enrich::instructions::standard_source());
            s
        }
    })
}

/// [`open_session`] with times from each capture's first event.
pub(crate) async fn open(captures: &[PathBuf]) -> Result<Session> {
    open_session(captures, &trawl_query::time::Origin::default()).await
}

/// The runtime async commands run in.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Deep plans (the analyses' joins) recurse deeply when a cluster
        // encodes and decodes them: Ballista's own processes run with
        // 32 MiB stacks. Reserved, not used, unless needed.
        .thread_stack_size(32 << 20)
        .build()?)
}
