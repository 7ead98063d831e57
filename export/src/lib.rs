//! trawl's profiles ([`trawl_query::profile::StackProfile`]: the selected
//! samples with their stacks) as the files other viewers open:
//!
//! - [`pprof`]: pprof's `profile.proto`, gzip-compressed (`go tool pprof`,
//!   pprof's web UI, Grafana Pyroscope, Parca);
//! - [`firefox`]: the Firefox Profiler's processed profile format, through
//!   the crate samply writes it with;
//! - [`speedscope`]: speedscope's JSON file format (sampled profiles).
//!
//! Folded stacks (`root;...;leaf weight`) come from the flame-graph tree
//! (`trawl_query::flame`). Nothing here reads a file or a table: each
//! writer takes the profile and returns bytes.

mod dispatch;
pub mod firefox;
pub mod perfetto;
pub mod pprof;
pub mod speedscope;
mod units;

pub use dispatch::{export, ExportOpts, Format, WRITER};
