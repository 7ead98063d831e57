//! # trawl-archive
//!
//! An archive is many captures as one dataset: segments
//! (`segment=NAME/<table>.parquet`, Hive-style partitions, so DuckDB's
//! `read_parquet('ARCHIVE/segment=*/perf_sample.parquet', hive_partitioning
//! = true)` and Polars' `scan_parquet(..., hive_partitioning=True)` read
//! each table as one, `capture` a column of the files), each holding the
//! captures ingested together with their modules, frames, stacks and
//! symbols deduplicated (see [`segment`]), and a manifest at its root:
//! `capture.parquet` (a row per capture: status, content hash, host, start
//! time, trawl and schema version, segment), `capture_input.parquet` (a row
//! per input file with its size and BLAKE3 hash), `capture_file.parquet`
//! (a row per table of each capture: its rows' range in the segment's
//! file, their time range) and `segment_file.parquet` (each segment's files,
//! sizes and rows: an archive in an object store opens from these without a
//! listing). Archives of earlier trawls (`capture=NAME/`, a directory per
//! capture) are read as they are.
//!
//! [`plan`] groups raw inputs into captures; [`ingest`] ingests the
//! captures whose inputs are not yet in the manifest, several at a time,
//! each staged whole and appended to the segment being built; a segment
//! is committed (renamed into place whole) and recorded in the manifest
//! (rewritten atomically) when it is full and at the end. A killed run
//! leaves no partial capture; running again finishes the work.

mod compact;
mod manifest;
mod plan;
mod remote;
mod run;
pub mod segment;

pub use compact::Compacted;
pub use manifest::{read_files, read_manifest, CaptureRow, FileRow, InputRow, Status};
pub use plan::{plan, Grouping, Planned};
pub use run::{Event, Options, Outcome, Summary};

use std::path::{Path, PathBuf};

/// Whether an archive or source names an object store (`s3://...`).
pub use trawl_capture::cloud::is_url;

/// Ingests the captures that `srcs` make (see [`plan`]) into `archive`, a
/// directory or an object store URL (`s3://bucket/archive`, see
/// `remote.rs`). `enrich` runs on each capture's staging directory before
/// it is committed (symbolization) and returns a note for the manifest;
/// `seams` gives each ingest its stack unwinder and module sink; `progress` hears of
/// each capture as it is done.
pub fn ingest(
    srcs: &[PathBuf],
    archive: &Path,
    opts: &Options,
    enrich: &(dyn Fn(&Path) -> Option<String> + Sync),
    seams: &(dyn Fn() -> trawl_ingest::Seams + Sync),
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<Summary> {
    if is_url(archive) || srcs.iter().any(|s| is_url(s)) {
        return remote::ingest(srcs, archive, opts, enrich, seams, progress);
    }
    run::ingest_local(srcs, archive, opts, enrich, seams, progress)
}

/// Compacts an archive, a directory or an object store URL (see
/// `compact.rs`): segments holding fewer than half of
/// [`segment::SEGMENT_ROWS`] rows of their captures, or rows of captures
/// no longer there, and captures in directories of their own, are
/// rewritten into segments of up to [`segment::SEGMENT_ROWS`] rows.
pub fn compact(archive: &Path) -> Result<Compacted> {
    if is_url(archive) {
        return remote::compact(archive);
    }
    compact::compact_local(archive)
}

/// Directory of capture `name` in `archive`.
pub fn capture_dir(archive: &Path, name: &str) -> PathBuf {
    archive.join(format!("capture={name}"))
}

/// The capture name of an archive directory entry (`capture=NAME`).
pub fn capture_name(dir_name: &str) -> Option<&str> {
    dir_name.strip_prefix("capture=")
}

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Ingest(#[from] trawl_ingest::Error),
    #[error("{0}")]
    Other(String),
}

impl Error {
    fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }
}

pub type Result<T> = std::result::Result<T, Error>;
