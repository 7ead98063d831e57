//! The errors of the query layer.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error(transparent)]
    DataFusion(#[from] datafusion::error::DataFusionError),
    #[error("{path}: not a trawl capture (no source.parquet); run `trawl ingest` first")]
    NotACapture { path: PathBuf },
    #[error("{0}")]
    Usage(String),
    #[error("{path}: written by a newer trawl (schema version {found}; this trawl reads up to {supported}); upgrade trawl to read it")]
    NewerSchema {
        path: PathBuf,
        found: i32,
        supported: i32,
    },
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

/// An error and its causes as one line, each message once: DataFusion
/// nests the same error in layers whose messages repeat the inner one. How
/// the CLI prints an error and the Python package raises it.
pub fn message(e: &(dyn std::error::Error + 'static)) -> String {
    let mut msg = String::new();
    let mut cause = Some(e);
    while let Some(c) = cause {
        let m = c.to_string();
        if !msg.contains(&m) {
            if !msg.is_empty() {
                msg.push_str(": ");
            }
            msg.push_str(&m);
        }
        cause = c.source();
    }
    msg
}
