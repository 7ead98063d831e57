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
/// (status `ok`) with their schema version and segment, the files of
/// captures in directories of their own, and each segment's files with
/// where its captures' rows are.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub captures: std::collections::BTreeMap<String, (i32, Option<String>)>,
    /// Captures in directories of their own (an archive written before
    /// segments): table → file.
    pub files: std::collections::HashMap<String, std::collections::BTreeMap<String, FileEntry>>,
    pub segments: std::collections::HashMap<String, SegmentEntry>,
}

/// A segment as the manifest gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentEntry {
    /// Per table, its file's size and rows (`segment_file`).
    pub tables: std::collections::BTreeMap<String, (u64, i64)>,
    /// Per table, the rows of each capture the manifest places in the
    /// segment: (capture, first row, rows), in file order
    /// (`capture_file`). Rows of other captures (replaced since) are not
    /// read.
    pub ranges: std::collections::BTreeMap<String, Vec<(std::sync::Arc<str>, i64, i64)>>,
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

/// The batches of `f` with the string columns `dicts` read as
/// dictionaries (keys into the distinct values).
fn batches_dict<R: parquet::file::reader::ChunkReader + 'static>(
    f: R,
    dicts: &[&str],
    only: &[&str],
) -> Option<Vec<arrow::array::RecordBatch>> {
    use arrow::datatypes::{DataType, Field, Schema};
    use parquet::arrow::arrow_reader::{ArrowReaderMetadata, ArrowReaderOptions};
    let meta = ArrowReaderMetadata::load(&f, Default::default()).ok()?;
    let fields: Vec<Field> = meta
        .schema()
        .fields()
        .iter()
        .map(|x| {
            if dicts.contains(&x.name().as_str()) && x.data_type() == &DataType::Utf8 {
                x.as_ref().clone().with_data_type(DataType::Dictionary(
                    Box::new(DataType::Int32),
                    Box::new(DataType::Utf8),
                ))
            } else {
                x.as_ref().clone()
            }
        })
        .collect();
    let schema = std::sync::Arc::new(Schema::new_with_metadata(
        fields,
        meta.schema().metadata().clone(),
    ));
    let opts = ArrowReaderOptions::new().with_schema(schema);
    let meta = ArrowReaderMetadata::try_new(meta.metadata().clone(), opts).ok()?;
    let builder =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::new_with_metadata(f, meta);
    // Only the columns read (those a manifest of an earlier trawl lacks
    // are simply not there).
    let mask =
        parquet::arrow::ProjectionMask::columns(builder.parquet_schema(), only.iter().copied());
    let reader = builder
        .with_projection(mask)
        .with_batch_size(64 * 1024)
        .build()
        .ok()?;
    reader.collect::<Result<Vec<_>, _>>().ok()
}

/// A dictionary column of strings: its values and keys.
fn dict(
    a: &arrow::array::ArrayRef,
) -> Option<(arrow::array::StringArray, arrow::array::Int32Array)> {
    use arrow::array::AsArray;
    use arrow::datatypes::Int32Type;
    let d = a.as_dictionary_opt::<Int32Type>()?;
    let values = d.values().as_string_opt::<i32>()?.clone();
    Some((values, d.keys().clone()))
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
    for b in batches_dict(
        capture,
        &[],
        &["capture", "schema_version", "status", "segment"],
    )? {
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
        // Each capture's name (shared by its ranges) and segment.
        let placed: std::collections::HashMap<&str, (std::sync::Arc<str>, Option<&str>)> = m
            .captures
            .iter()
            .map(|(n, (_, s))| (n.as_str(), (std::sync::Arc::from(n.as_str()), s.as_deref())))
            .collect();
        type Ranges = Vec<(std::sync::Arc<str>, i64, i64)>;
        // (segment, table) → ranges; the few distinct tables and segments
        // are read as dictionaries, looked up once per batch.
        let mut ranges: std::collections::HashMap<(String, String), Ranges> = Default::default();
        let only = [
            "capture",
            "table_name",
            "size_bytes",
            "rows",
            "segment",
            "first_row",
        ];
        for b in batches_dict(f, &["table_name", "segment"], &only)? {
            let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
            let (tables, table_keys) = dict(b.column_by_name("table_name")?)?;
            let sizes = b
                .column_by_name("size_bytes")?
                .as_primitive_opt::<Int64Type>()?;
            let rows = b
                .column_by_name("rows")
                .and_then(|c| c.as_primitive_opt::<Int64Type>());
            let seg = b.column_by_name("segment").and_then(dict);
            let first = b
                .column_by_name("first_row")
                .and_then(|c| c.as_primitive_opt::<Int64Type>());
            // Per (segment value, table value) of this batch's
            // dictionaries: the ranges, moved into `ranges` after.
            let n_tables = tables.len();
            let mut slots: Vec<Ranges> =
                vec![Vec::new(); n_tables * seg.as_ref().map_or(1, |(v, _)| v.len().max(1))];
            // The last capture looked up (a capture's rows are adjacent).
            let mut last: Option<(&str, Option<&(std::sync::Arc<str>, Option<&str>)>)> = None;
            for i in 0..b.num_rows() {
                if !(names.is_valid(i) && table_keys.is_valid(i) && sizes.is_valid(i)) {
                    continue;
                }
                let name = names.value(i);
                let cap = match last {
                    Some((n, c)) if n == name => c,
                    _ => {
                        let c = placed.get(name);
                        last = Some((name, c));
                        c
                    }
                };
                let table_at = table_keys.value(i) as usize;
                let seg_at = seg
                    .as_ref()
                    .filter(|(_, k)| k.is_valid(i))
                    .map(|(_, k)| k.value(i) as usize);
                let row_seg = seg_at.and_then(|k| seg.as_ref().map(|(v, _)| v.value(k)));
                let rows_i = rows.filter(|r| r.is_valid(i)).map(|r| r.value(i));
                let first_i = first.filter(|f| f.is_valid(i)).map_or(0, |f| f.value(i));
                match cap {
                    // Rows of the segment the capture is in.
                    Some((arc, Some(s))) if row_seg == Some(*s) => {
                        slots[seg_at.unwrap_or(0) * n_tables + table_at].push((
                            arc.clone(),
                            first_i,
                            rows_i.unwrap_or(0),
                        ));
                    }
                    // Rows of a segment a capture moved from, which a
                    // writer keeps until `capture` names the new one.
                    Some((_, Some(_))) => {}
                    Some((_, None)) if row_seg.is_some() => {}
                    _ => {
                        m.files.entry(name.to_string()).or_default().insert(
                            tables.value(table_at).to_string(),
                            FileEntry {
                                size: sizes.value(i).max(0) as u64,
                                rows: rows_i,
                                segment: row_seg.map(|s| (s.to_string(), first_i)),
                            },
                        );
                    }
                }
            }
            for (k, r) in slots.into_iter().enumerate() {
                if r.is_empty() {
                    continue;
                }
                let (s, t) = (k / n_tables, k % n_tables);
                let key = (
                    seg.as_ref()
                        .map_or(String::new(), |(v, _)| v.value(s).to_string()),
                    tables.value(t).to_string(),
                );
                ranges.entry(key).or_default().extend(r);
            }
        }
        for ((seg, table), mut r) in ranges {
            r.sort_by_key(|x| x.1);
            m.segments.entry(seg).or_default().ranges.insert(table, r);
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
                    .tables
                    .insert(
                        tables.value(i).to_string(),
                        (sizes.value(i).max(0) as u64, rows.value(i)),
                    );
            }
        }
    }
    // Ranges a reader can select: inside their segment's file (as
    // `segment_file` counts its rows), not overlapping the one before (a
    // damaged or hostile manifest's others are dropped, not read).
    for e in m.segments.values_mut() {
        let tables = &e.tables;
        for (table, r) in e.ranges.iter_mut() {
            let file_rows = tables.get(table).map_or(0, |t| t.1);
            let mut end = 0i64;
            r.retain(|&(_, first, rows)| {
                let ok = first >= end
                    && rows >= 0
                    && first.checked_add(rows).is_some_and(|z| z <= file_rows);
                if ok {
                    end = first + rows;
                }
                ok
            });
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
