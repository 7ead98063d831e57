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
