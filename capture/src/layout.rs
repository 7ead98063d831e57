//! Where a capture keeps its files: a directory with one Parquet file per
//! table (`<table>.parquet`); a directory is a capture when it holds the
//! `source` table.

use std::path::{Path, PathBuf};

/// File name of a table inside a capture directory.
pub fn table_file(dir: &Path, table: &str) -> PathBuf {
    dir.join(format!("{table}.parquet"))
}

/// A directory is a capture when it holds a `source` table and is not a
/// segment of an archive ([`segment_archive`]), whose tables hold many
/// captures' rows.
pub fn is_capture(dir: &Path) -> bool {
    table_file(dir, "source").is_file() && segment_archive(dir).is_none()
}

/// The archive and segment name of `dir` when it is a segment of an
/// archive: a directory `segment=NAME` beside the archive's manifest.
pub fn segment_archive(dir: &Path) -> Option<(PathBuf, String)> {
    let abs = dir
        .canonicalize()
        .or_else(|_| std::path::absolute(dir))
        .ok()?;
    let name = abs
        .file_name()?
        .to_str()?
        .strip_prefix("segment=")?
        .to_string();
    let archive = abs.parent()?;
    table_file(archive, "capture")
        .is_file()
        .then(|| (archive.to_path_buf(), name))
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

/// Where a capture's rows of one table are, as an archive's manifest
/// (`capture_file`) lists them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileEntry {
    /// Size of the file holding them (a segment's file: the segment's).
    pub size: u64,
    /// The capture's rows (None: not recorded).
    pub rows: Option<i64>,
    /// The segment whose file holds them, and the position of the first.
    pub segment: Option<(String, i64)>,
}

/// An archive's manifest as a reader needs it: the captures ingested
/// (status `ok`) with their schema version and segment, where their rows
/// are, and each segment's files (table → size, rows).
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub captures: std::collections::BTreeMap<String, (i32, Option<String>)>,
    pub files: std::collections::HashMap<String, std::collections::BTreeMap<String, FileEntry>>,
    pub segments: std::collections::HashMap<String, std::collections::BTreeMap<String, (u64, i64)>>,
}

fn batches<R: parquet::file::reader::ChunkReader + 'static>(
    f: R,
) -> Option<Vec<arrow::array::RecordBatch>> {
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .ok()?
        .build()
        .ok()?;
    reader.collect::<Result<Vec<_>, _>>().ok()
}

/// Reads a manifest from its `capture`, `capture_file` and `segment_file`
/// tables (files or bytes; the last two may be missing in archives of
/// earlier trawls). None when a table present cannot be read.
pub fn read_manifest<R: parquet::file::reader::ChunkReader + 'static>(
    capture: R,
    capture_file: Option<R>,
    segment_file: Option<R>,
) -> Option<Manifest> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int32Type, Int64Type};
    let mut m = Manifest::default();
    for b in batches(capture)? {
        let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
        let versions = b
            .column_by_name("schema_version")?
            .as_primitive_opt::<Int32Type>()?;
        let status = b
            .column_by_name("status")
            .and_then(|c| c.as_string_opt::<i32>());
        let seg = b
            .column_by_name("segment")
            .and_then(|c| c.as_string_opt::<i32>());
        for i in 0..b.num_rows() {
            let ok = status.is_none_or(|s| s.is_valid(i) && s.value(i) == "ok");
            if ok && names.is_valid(i) && versions.is_valid(i) {
                let s = seg
                    .filter(|s| s.is_valid(i))
                    .map(|s| s.value(i).to_string());
                m.captures
                    .insert(names.value(i).to_string(), (versions.value(i), s));
            }
        }
    }
    if let Some(f) = capture_file {
        for b in batches(f)? {
            let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
            let tables = b.column_by_name("table_name")?.as_string_opt::<i32>()?;
            let sizes = b
                .column_by_name("size_bytes")?
                .as_primitive_opt::<Int64Type>()?;
            let rows = b
                .column_by_name("rows")
                .and_then(|c| c.as_primitive_opt::<Int64Type>());
            let seg = b
                .column_by_name("segment")
                .and_then(|c| c.as_string_opt::<i32>());
            let first = b
                .column_by_name("first_row")
                .and_then(|c| c.as_primitive_opt::<Int64Type>());
            for i in 0..b.num_rows() {
                if !(names.is_valid(i) && tables.is_valid(i) && sizes.is_valid(i)) {
                    continue;
                }
                let segment = seg.filter(|s| s.is_valid(i)).map(|s| {
                    let at = first.filter(|f| f.is_valid(i)).map_or(0, |f| f.value(i));
                    (s.value(i).to_string(), at)
                });
                m.files
                    .entry(names.value(i).to_string())
                    .or_default()
                    .insert(
                        tables.value(i).to_string(),
                        FileEntry {
                            size: sizes.value(i).max(0) as u64,
                            rows: rows.filter(|r| r.is_valid(i)).map(|r| r.value(i)),
                            segment,
                        },
                    );
            }
        }
    }
    if let Some(f) = segment_file {
        for b in batches(f)? {
            let seg = b.column_by_name("segment")?.as_string_opt::<i32>()?;
            let tables = b.column_by_name("table_name")?.as_string_opt::<i32>()?;
            let sizes = b
                .column_by_name("size_bytes")?
                .as_primitive_opt::<Int64Type>()?;
            let rows = b.column_by_name("rows")?.as_primitive_opt::<Int64Type>()?;
            for i in 0..b.num_rows() {
                m.segments
                    .entry(seg.value(i).to_string())
                    .or_default()
                    .insert(
                        tables.value(i).to_string(),
                        (sizes.value(i).max(0) as u64, rows.value(i)),
                    );
            }
        }
    }
    Some(m)
}

/// The manifest of the archive in directory `dir` (None: no readable
/// `capture.parquet`).
pub fn local_manifest(dir: &Path) -> Option<Manifest> {
    let open = |t: &str| std::fs::File::open(table_file(dir, t)).ok();
    read_manifest(open("capture")?, open("capture_file"), open("segment_file"))
}
