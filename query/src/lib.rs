//! # trawl-query
//!
//! DataFusion over the Parquet tables of one or more captures, plus named
//! analyses written as SQL (`analyses/<area>/<name>.sql`).
//!
//! Principal types: [`Session`] (each table of all its captures as one
//! table with a leading `capture` column, derived tables computed when
//! first read), [`functions`] (analyses as SQL table functions; every one
//! is listed by [`specs`]), one module per area of analyses ([`stacks`],
//! [`memlog`], [`energy`], [`lbr`], ...; their SQL in `analyses/<area>/`).
//!
//! ```no_run
//! # async fn f() -> Result<(), trawl_query::Error> {
//! let s = trawl_query::Session::open(&["capture".into()]).await?;
//! let batches = s.sql("SELECT count(*) FROM perf_sample").await?.collect().await?;
//! # Ok(()) }
//! ```
//!
//! Architecture invariant: this crate reads only Parquet (the capture
//! tables); it never parses capture files and never symbolizes.
//!
//! The map: [`session`] (the context and what its sessions share),
//! [`registry`] (what a session registers when it opens: tables, views,
//! analyses), [`tables`] (stored and derived tables), [`functions`] (SQL
//! analyses as table functions), [`sample`] (sample selection and
//! weights), one module per area of analyses, [`rows`] (values out of
//! batches).

pub mod annotate;
pub mod assert_true;
pub mod captures;
mod catalog;
pub mod cause;
pub mod choice;
pub mod clock;
pub mod cloud;
pub mod dict_count;
pub mod energy;
pub mod error;
pub mod flame;
pub mod functions;
pub mod io;
pub mod lbr;
pub mod memlog;
pub mod power;
pub mod power_calls;
pub mod profile;
pub mod ranges;
pub mod rapl;
pub mod regions;
pub mod registry;
pub mod report;
pub mod rows;
pub mod sample;
pub mod session;
pub mod spill;
pub mod stack_cost;
pub mod stacks;
pub mod tables;
pub mod time;
pub mod timeline;
pub mod trace;
pub mod tracepoint;
mod view;

pub use captures::{find_captures, CaptureRef, Remote};
pub use datafusion;
pub use error::{Error, Result};
pub use registry::{aggregate_udfs, scalar_udfs, specs};
pub use rows::{batch_of, float_values, split_statements, string_ids, string_values};
pub use session::{session_config, Session, Shared};
