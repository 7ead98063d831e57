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
//! - [`perfetto`]: Perfetto's protobuf trace (samples, calls, thread
//!   states, events, counters), written as it is made.
//!
//! Folded stacks (`root;...;leaf weight`) come from the flame-graph tree
//! (`trawl_query::flame`). Nothing here reads a capture file or a table:
//! each writer takes the profile (and the trace's parts) and writes bytes;
//! [`export_file`] writes a file atomically.

mod dispatch;
pub mod firefox;
pub mod perfetto;
pub mod pprof;
pub mod speedscope;
mod units;

pub use dispatch::{export, export_file, ExportOpts, Format, SPILL_SAMPLES, WRITER};
