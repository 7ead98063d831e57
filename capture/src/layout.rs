//! Where a capture keeps its files: a directory with one Parquet file per
//! table (`<table>.parquet`); a directory is a capture when it holds the
//! `source` table.

use std::path::{Path, PathBuf};

/// File name of a table inside a capture directory.
pub fn table_file(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.parquet"))
}

/// A directory is a capture when it holds a `source` table.
pub fn is_capture(dir: &Path) -> bool {
    table_file(dir, "source").is_file()
}
