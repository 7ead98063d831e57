//! One module per command: its clap arguments and a `run` that calls the
//! library and formats the result.

pub mod functions;
