//! One module per command: its clap arguments and the function that calls
//! the library and formats the result. The option groups several commands
//! share are in `args.rs` (`FilterArgs`, `MetricArgs`, `T0Args`,
//! `RuleArgs`), output in `output.rs`, opening captures in `session.rs`;
//! the command line and its dispatch (`run`) are in `lib.rs`. Each module
//! imports what it uses by name.

pub(crate) mod archive;
pub(crate) mod cause;
pub(crate) mod cluster;
pub(crate) mod convert;
pub(crate) mod demo;
pub(crate) mod exhaustion;
pub(crate) mod export;
pub(crate) mod flamegraph;
pub mod functions;
pub(crate) mod ingest;
pub(crate) mod power_samples;
pub(crate) mod render;
pub(crate) mod report;
pub(crate) mod sql;
pub(crate) mod symbolize;
pub(crate) mod tables;
pub(crate) mod timeline;
