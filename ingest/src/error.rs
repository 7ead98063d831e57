//! Errors of the ingest crate.
//!
//! Bad input is mostly *not* an error: readers keep what they can and record a
//! [`Diagnostic`](crate::diag::record::Diagnostic). An [`Error`] ends the run: unreadable
//! files, an unrecognised format, an output that cannot be written, or the
//! first diagnostic under `--strict`.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: unrecognised input format ({}); known formats: {}", head_text(.head), crate::formats::known())]
    UnknownFormat { path: PathBuf, head: Vec<u8> },
    #[error("{path}@{offset}: {message}")]
    BadInput {
        path: PathBuf,
        offset: u64,
        message: String,
    },
    #[error("{0}")]
    Usage(String),
    #[error("--tz {0:?}: not an IANA time zone name (e.g. Europe/Berlin, UTC)")]
    BadZone(String),
    #[error("strict mode: {0}")]
    Strict(String),
    /// The ingest was cancelled ([`crate::pipeline::IngestOptions::cancel`]).
    #[error("interrupted: the capture was not written")]
    Interrupted,
    /// The first diagnostic under `--strict`, with its position.
    #[error("strict mode: {0}")]
    Diagnostic(Box<crate::diag::record::Diagnostic>),
    #[error("{path}: output already exists and is not a trawl capture; choose another directory")]
    NotACapture { path: PathBuf },
    /// Reading or writing a table's Parquet file (`path`): a full disk is
    /// one of these.
    #[error("{}: {source}", path.display())]
    Parquet {
        path: PathBuf,
        #[source]
        source: parquet::errors::ParquetError,
    },
    #[error("building {table}: {source}")]
    Arrow {
        table: String,
        #[source]
        source: arrow::error::ArrowError,
    },
}

/// The start of an unrecognised input: its first line when it is text,
/// else its first bytes.
fn head_text(head: &[u8]) -> String {
    let line = head.split(|b| *b == b'\n').next().unwrap_or(&[]);
    match std::str::from_utf8(line) {
        Ok(t) if t.chars().all(|c| !c.is_control() || c == '\t' || c == '\r') => {
            let t: String = t.chars().take(120).collect();
            format!("first line {t:?}")
        }
        _ => format!("first bytes {:02x?}", &head[..head.len().min(16)]),
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}
