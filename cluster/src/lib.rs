//! # trawl-cluster
//!
//! trawl's SQL on an Apache DataFusion Ballista cluster: the same queries,
//! reports and table functions as on one machine, over captures or an
//! archive every process reads at the same path (a shared file system).
//!
//! - [`server`]: `trawl cluster scheduler` and `trawl cluster executor`,
//!   Ballista's processes with trawl's codecs;
//! - [`client`]: the context a [`trawl_query::Session`] opens captures in
//!   for `--cluster df://HOST:PORT`;
//! - [`codec`]: how trawl's tables and functions travel in plans.
//!
//! ```no_run
//! # async fn f() -> Result<(), trawl_query::Error> {
//! let origin = trawl_query::time::Origin::default();
//! let s = trawl_query::Session::open_in(
//!     &["archive".into()],
//!     &origin,
//!     trawl_cluster::client::context("df://localhost:50050"),
//! )
//! .await?;
//! let rows = s.sql("SELECT count(*) FROM perf_sample").await?.collect().await?;
//! # Ok(()) }
//! ```
//!
//! Architecture invariant: like trawl-query, this crate reads only Parquet
//! (through DataFusion); it adds transport, not analyses.

pub mod client;
pub mod codec;
pub mod server;
