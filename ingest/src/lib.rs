//! # trawl-ingest
//!
//! Capture files → typed records → Arrow batches → Parquet tables.
//!
//! Principal types: [`ingest`] (detect formats and convert inputs into a
//! capture directory), [`schema`] (every table and column, documented),
//! [`CaptureWriter`] (atomic capture output), [`Diagnostics`] (what a lenient
//! reader skipped, and where).
//!
//! ```no_run
//! use std::path::PathBuf;
//! let summary = trawl_ingest::ingest(
//!     &[PathBuf::from("perf.data")],
//!     &PathBuf::from("capture"),
//!     &trawl_ingest::IngestOptions::default(),
//!     |_staging| Ok(()),
//! )?;
//! println!("{} samples", summary.inputs[0].samples);
//! # Ok::<(), trawl_ingest::Error>(())
//! ```
//!
//! Architecture invariant: parsers (`*/records.rs`, `*/reader.rs`) never see
//! Arrow; converters (`*/convert.rs`) never see bytes; nothing here
//! symbolizes.

// First: its `table_columns!` is used by the modules below.
#[macro_use]
pub mod columns;

pub mod compressed;
pub mod detect;
pub mod diag;
pub mod dict_codes;
pub mod energy;
mod error;
mod fields;
pub mod formats;
pub mod int_pages;
pub mod intern;
mod mapped;
pub mod memlog;
pub mod metrics;
pub mod perf;
pub mod pipeline;
pub mod progress;
pub mod readback;
pub use trawl_capture::schema;
pub mod stacks;
pub mod strace;
pub mod syscall_args;
pub mod syscall_table;
pub mod unwind;
pub mod writer;

pub use arrow;
pub use diag::{Diagnostic, Diagnostics, Position, Severity};
pub use error::{Error, Result};
pub use parquet;
pub use writer::CaptureWriter;

pub use detect::{input_format, open_text};
pub use formats::MAX_WHOLE_INPUT;
pub use formats::{detect, Format, HEAD_BYTES};
pub use pipeline::{ingest, ingest_with, IngestOptions, IngestSummary, InputSummary, Seams};
pub use progress::Progress;
