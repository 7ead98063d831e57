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

/// The schema version a capture was written with (`trawl.schema_version`
/// in its `source` table's schema metadata; `None` for captures written
/// before versions were recorded, which have version 1's layout). Reads
/// one Parquet footer.
pub fn schema_version(dir: &Path) -> Result<Option<i32>, String> {
    let path = table_file(dir, "source");
    let f = std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    schema_version_of(f).map_err(|e| format!("{}: {e}", path.display()))
}

/// [`schema_version`] of a `source` table's bytes (or file).
pub fn schema_version_of<R: parquet::file::reader::ChunkReader + 'static>(
    source: R,
) -> Result<Option<i32>, String> {
    let meta = parquet::arrow::arrow_reader::ArrowReaderMetadata::load(&source, Default::default())
        .map_err(|e| e.to_string())?;
    match meta.schema().metadata().get("trawl.schema_version") {
        None => Ok(None),
        Some(v) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("schema version {v:?} is not a number")),
    }
}

/// The schema version of each capture of an archive, from its manifest
/// (`capture.parquet` at the root: one file read instead of a footer per
/// capture). `None` when `dir` has no readable manifest.
pub fn archive_versions(dir: &Path) -> Option<std::collections::HashMap<String, i32>> {
    let f = std::fs::File::open(table_file(dir, "capture")).ok()?;
    manifest_versions(f)
}

/// [`archive_versions`] of a manifest's `capture` table (bytes or file):
/// the captures whose status is `ok`, with their schema versions.
pub fn manifest_versions<R: parquet::file::reader::ChunkReader + 'static>(
    f: R,
) -> Option<std::collections::HashMap<String, i32>> {
    use arrow::array::{Array, AsArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .ok()?
        .build()
        .ok()?;
    let mut out = std::collections::HashMap::new();
    for b in reader {
        let b = b.ok()?;
        let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
        let versions = b
            .column_by_name("schema_version")?
            .as_primitive_opt::<arrow::datatypes::Int32Type>()?;
        let status = b
            .column_by_name("status")
            .and_then(|c| c.as_string_opt::<i32>());
        for i in 0..b.num_rows() {
            let ok = status.is_none_or(|s| s.is_valid(i) && s.value(i) == "ok");
            if ok && names.is_valid(i) && versions.is_valid(i) {
                out.insert(names.value(i).to_string(), versions.value(i));
            }
        }
    }
    Some(out)
}

/// The table files of each capture a manifest's `capture_file` table
/// (bytes or file) lists: capture → table → size. `None` when it cannot be
/// read.
pub fn manifest_files<R: parquet::file::reader::ChunkReader + 'static>(
    f: R,
) -> Option<std::collections::HashMap<String, std::collections::BTreeMap<String, u64>>> {
    use arrow::array::{Array, AsArray};
    use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .ok()?
        .build()
        .ok()?;
    let mut out: std::collections::HashMap<String, std::collections::BTreeMap<String, u64>> =
        Default::default();
    for b in reader {
        let b = b.ok()?;
        let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
        let tables = b.column_by_name("table_name")?.as_string_opt::<i32>()?;
        let sizes = b
            .column_by_name("size_bytes")?
            .as_primitive_opt::<arrow::datatypes::Int64Type>()?;
        for i in 0..b.num_rows() {
            if names.is_valid(i) && tables.is_valid(i) && sizes.is_valid(i) {
                out.entry(names.value(i).to_string())
                    .or_default()
                    .insert(tables.value(i).to_string(), sizes.value(i).max(0) as u64);
            }
        }
    }
    Some(out)
}
