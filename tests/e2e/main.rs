//! End-to-end tests: real captures through the `trawl` binary, checked
//! against independent tools (perf report, perf script) on the same files.
//!
//! perf must be installed (`.ci/run` installs linux-perf); these tests fail
//! rather than skip without it.

mod annotate;
mod archive;
mod bad_input;
mod cluster;
mod common;
mod corpus;
mod debuginfod;
mod diff;
mod energy;
mod energy_sim;
mod export;
mod figure;
mod front;
mod fuzz_replay;
mod guide;
mod layering;
mod lbr;
mod lines;
mod memlog;
mod metrics;
mod monitoring;
mod objects;
mod offcpu;
mod perf_fixtures;
mod perfetto;
mod phases;
mod pow;
mod slt;
mod sql;
mod strace;
mod symbol_store;
mod symbols;
mod tracepoints;
mod writer;
