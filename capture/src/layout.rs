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

/// An archive's manifest as a reader opens it: the captures ingested
/// (status `ok`) with their schema version and segment, and each segment's
/// files with, where `segment_file` gives them, the rows its captures have
/// in each (`live`). Where each capture's rows are (`capture_file`) is read
/// only when asked ([`read_capture_files`], [`Manifest::with_files`]): a
/// scan of every capture of a segment needs none of it.
#[derive(Clone, Debug, Default)]
pub struct Manifest {
    pub captures: std::collections::BTreeMap<String, (i32, Option<String>)>,
    /// Captures in directories of their own (an archive written before
    /// segments): table → file (filled by [`Manifest::with_files`]).
    pub files: std::collections::HashMap<String, std::collections::BTreeMap<String, FileEntry>>,
    pub segments: std::collections::HashMap<String, SegmentEntry>,
}

/// A capture's rows in a segment's file: (capture, first row, rows).
pub type Range = (std::sync::Arc<str>, i64, i64);

/// A segment as the manifest gives it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SegmentEntry {
    /// Per table, its file's size and rows (`segment_file`).
    pub tables: std::collections::BTreeMap<String, (u64, i64)>,
    /// Per table, the rows of the captures the manifest places in the
    /// segment (`segment_file.live_rows`), when `segment_file` counted as
    /// many of them as `capture` places there; None: not known without
    /// the ranges.
    pub live: Option<std::collections::BTreeMap<String, i64>>,
    /// Per table, the rows of each capture the manifest places in the
    /// segment: (capture, first row, rows), in file order
    /// (`capture_file`; filled by [`Manifest::with_files`]). Rows of other
    /// captures (replaced since) are not read.
    pub ranges: std::collections::BTreeMap<String, Vec<Range>>,
}

/// What an archive's `capture_file` says of the captures a manifest
/// places ([`read_capture_files`]).
#[derive(Clone, Debug, Default)]
pub struct CaptureFiles {
    /// Captures in directories of their own: table → file.
    pub files: std::collections::HashMap<String, std::collections::BTreeMap<String, FileEntry>>,
    /// Segment → table → the ranges of its captures, in file order, each
    /// inside the file and after the one before (checked against
    /// `tables`).
    pub ranges: std::collections::HashMap<String, std::collections::BTreeMap<String, Vec<Range>>>,
}

impl Manifest {
    /// The manifest with what `capture_file` says of every capture.
    pub fn with_files(mut self, f: CaptureFiles) -> Manifest {
        self.files = f.files;
        for (seg, tables) in f.ranges {
            self.segments.entry(seg).or_default().ranges = tables;
        }
        self
    }
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
    batches_dict_in(f, dicts, only, |_| None)
}

/// [`batches_dict`] of the row groups `groups` chooses (None: all).
fn batches_dict_in<R: parquet::file::reader::ChunkReader + 'static>(
    f: R,
    dicts: &[&str],
    only: &[&str],
    groups: impl FnOnce(&parquet::file::metadata::ParquetMetaData) -> Option<Vec<usize>>,
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
    let builder = match groups(builder.metadata()) {
        Some(g) => builder.with_row_groups(g),
        None => builder,
    };
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

/// Reads a manifest from its `capture` and `segment_file` tables (files or
/// bytes; the second missing in archives of earlier trawls). None when a
/// table present cannot be read.
pub fn read_manifest<R: parquet::file::reader::ChunkReader + 'static>(
    capture: R,
    segment_file: Option<R>,
) -> Option<Manifest> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::{Int32Type, Int64Type};
    let mut m = Manifest::default();
    // Captures placed in each segment.
    let mut placed: std::collections::HashMap<String, i64> = Default::default();
    // The captures, in the manifest's (name) order: built into a map at
    // once, not inserted one by one.
    let mut rows: Vec<(String, (i32, Option<String>))> = Vec::new();
    for b in batches_dict(
        capture,
        &["segment"],
        &["capture", "schema_version", "status", "segment"],
    )? {
        let names = b.column_by_name("capture")?.as_string_opt::<i32>()?;
        let versions = b
            .column_by_name("schema_version")?
            .as_primitive_opt::<Int32Type>()?;
        let status = b
            .column_by_name("status")
            .and_then(|c| c.as_string_opt::<i32>());
        let seg = b.column_by_name("segment").and_then(dict);
        // Each segment name of this batch's dictionary, made once.
        let seg_names: Vec<String> = seg.as_ref().map_or(Vec::new(), |(v, _)| {
            (0..v.len()).map(|k| v.value(k).to_string()).collect()
        });
        let mut counts = vec![0i64; seg_names.len()];
        for i in 0..b.num_rows() {
            let ok = status.is_none_or(|s| s.is_valid(i) && s.value(i) == "ok");
            if ok && names.is_valid(i) && versions.is_valid(i) {
                let k = seg
                    .as_ref()
                    .filter(|(_, k)| k.is_valid(i))
                    .map(|(_, k)| k.value(i) as usize)
                    .filter(|&k| k < seg_names.len());
                if let Some(k) = k {
                    counts[k] += 1;
                }
                let s = k.map(|k| seg_names[k].clone());
                rows.push((names.value(i).to_string(), (versions.value(i), s)));
            }
        }
        for (name, n) in seg_names.into_iter().zip(counts) {
            if n > 0 {
                *placed.entry(name).or_default() += n;
            }
        }
    }
    // (A name met twice: its last row, as an insertion would keep.)
    m.captures = rows.into_iter().collect();
    if let Some(f) = segment_file {
        // Segment → (live captures as written, live rows per table), for
        // the segments whose every row says it.
        let mut live: std::collections::HashMap<
            String,
            Option<(i64, std::collections::BTreeMap<String, i64>)>,
        > = Default::default();
        for b in batches(f)? {
            let seg = b.column_by_name("segment")?.as_string_opt::<i32>()?;
            let tables = b.column_by_name("table_name")?.as_string_opt::<i32>()?;
            let sizes = b
                .column_by_name("size_bytes")?
                .as_primitive_opt::<Int64Type>()?;
            let rows = b.column_by_name("rows")?.as_primitive_opt::<Int64Type>()?;
            let i64s = |n: &str| {
                b.column_by_name(n)
                    .and_then(|c| c.as_primitive_opt::<Int64Type>())
            };
            let (live_rows, live_caps) = (i64s("live_rows"), i64s("live_captures"));
            for i in 0..b.num_rows() {
                let (seg, table) = (seg.value(i), tables.value(i));
                let (size, rows) = (sizes.value(i).max(0) as u64, rows.value(i));
                m.segments
                    .entry(seg.to_string())
                    .or_default()
                    .tables
                    .insert(table.to_string(), (size, rows));
                let at = |a: Option<&arrow::array::Int64Array>| {
                    a.filter(|a| a.is_valid(i)).map(|a| a.value(i))
                };
                let row = at(live_rows)
                    .zip(at(live_caps))
                    .filter(|&(l, _)| (0..=rows).contains(&l));
                let e = live
                    .entry(seg.to_string())
                    .or_insert_with(|| row.map(|(_, c)| (c, Default::default())));
                match (e.as_mut(), row) {
                    (Some((c, t)), Some((l, n))) if *c == n => {
                        t.insert(table.to_string(), l);
                    }
                    _ => *e = None,
                }
            }
        }
        // `live_rows` holds for the captures placed in the segment when
        // it counted as many: the captures of a segment only ever leave
        // it (its files are written once), so of two manifests' sets for
        // it one holds the other, and equal counts are equal sets. (A
        // reader may meet a `capture` older than `segment_file`: a run
        // killed between the two.)
        for (seg, l) in live {
            let Some((n, rows)) = l else { continue };
            if placed.get(&seg).copied().unwrap_or(0) == n {
                if let Some(e) = m.segments.get_mut(&seg) {
                    e.live = Some(rows);
                }
            }
        }
    }
    Some(m)
}

/// Reads `capture_file` (file or bytes) for the captures `placed` (a
/// manifest's `captures`) and, with `only`, only for those of them: the
/// row groups whose `capture` statistics hold none of `only` are not
/// read (the manifest is written in capture order, in small row groups).
/// `segments` (the manifest's) check the ranges: inside their segment's
/// file, not overlapping the one before; those of a damaged or hostile
/// manifest are dropped, not read. Rows of a segment a capture moved from,
/// which a writer keeps until `capture` names the new one, are not taken.
/// None when it cannot be read.
pub fn read_capture_files<R: parquet::file::reader::ChunkReader + 'static>(
    placed: &std::collections::BTreeMap<String, (i32, Option<String>)>,
    segments: &std::collections::HashMap<String, SegmentEntry>,
    capture_file: R,
    only: Option<&std::collections::BTreeSet<&str>>,
) -> Option<CaptureFiles> {
    use arrow::array::{Array, AsArray};
    use arrow::datatypes::Int64Type;
    let mut out = CaptureFiles::default();
    type Ranges = Vec<Range>;
    // (segment, table) → ranges; the few distinct tables and segments are
    // read as dictionaries, looked up once per batch.
    let mut ranges: std::collections::HashMap<(String, String), Ranges> = Default::default();
    let cols = [
        "capture",
        "table_name",
        "size_bytes",
        "rows",
        "segment",
        "first_row",
    ];
    // Row groups that may hold rows of `only`.
    let groups = |meta: &parquet::file::metadata::ParquetMetaData| -> Option<Vec<usize>> {
        let only = only?;
        let at = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .position(|c| c.name() == "capture")?;
        Some(
            (0..meta.num_row_groups())
                .filter(|&g| {
                    let st = meta.row_group(g).column(at).statistics();
                    let lo = st.and_then(|s| s.min_bytes_opt());
                    let hi = st.and_then(|s| s.max_bytes_opt());
                    match (lo, hi) {
                        (Some(lo), Some(hi)) => {
                            let (lo, hi) =
                                (String::from_utf8_lossy(lo), String::from_utf8_lossy(hi));
                            // (A truncated max is rounded up: still above.)
                            only.range::<str, _>((
                                std::ops::Bound::Included(&*lo),
                                std::ops::Bound::Unbounded,
                            ))
                            .next()
                            .is_some_and(|n| *n <= &*hi)
                        }
                        _ => true,
                    }
                })
                .collect(),
        )
    };
    // Each placed capture's name (shared by its ranges) and segment,
    // made when first met.
    let mut names: std::collections::HashMap<&str, std::sync::Arc<str>> = Default::default();
    for b in batches_dict_in(capture_file, &["table_name", "segment"], &cols, groups)? {
        let caps = b.column_by_name("capture")?.as_string_opt::<i32>()?;
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
        // Per (segment value, table value) of this batch's dictionaries:
        // the ranges, moved into `ranges` after.
        let n_tables = tables.len();
        let mut slots: Vec<Ranges> =
            vec![Vec::new(); n_tables * seg.as_ref().map_or(1, |(v, _)| v.len().max(1))];
        // The last capture looked up (a capture's rows are adjacent):
        // its name, placement and whether it is read.
        type Placed<'a> = Option<(&'a String, &'a (i32, Option<String>))>;
        let mut last: Option<(&str, Placed, bool)> = None;
        for i in 0..b.num_rows() {
            if !(caps.is_valid(i) && table_keys.is_valid(i) && sizes.is_valid(i)) {
                continue;
            }
            let name = caps.value(i);
            let (cap, wanted) = match last {
                Some((n, c, w)) if n == name => (c, w),
                _ => {
                    let c = placed.get_key_value(name);
                    let w = only.is_none_or(|o| o.contains(name));
                    last = Some((name, c, w));
                    (c, w)
                }
            };
            if !wanted {
                continue;
            }
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
                Some((n, (_, Some(s)))) if row_seg == Some(s.as_str()) => {
                    let arc = names
                        .entry(n.as_str())
                        .or_insert_with(|| std::sync::Arc::from(n.as_str()))
                        .clone();
                    slots[seg_at.unwrap_or(0) * n_tables + table_at].push((
                        arc,
                        first_i,
                        rows_i.unwrap_or(0),
                    ));
                }
                // Rows of a segment a capture moved from, which a writer
                // keeps until `capture` names the new one.
                Some((_, (_, Some(_)))) => {}
                Some((_, (_, None))) if row_seg.is_some() => {}
                _ => {
                    out.files.entry(name.to_string()).or_default().insert(
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
        // Ranges a reader can select: inside their segment's file (as
        // `segment_file` counts its rows), not overlapping the one before.
        let file_rows = segments
            .get(&seg)
            .and_then(|e| e.tables.get(&table))
            .map_or(0, |t| t.1);
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
        out.ranges.entry(seg).or_default().insert(table, r);
    }
    Some(out)
}

/// The manifest of the archive in directory `dir` (None: no readable
/// `capture.parquet`), without `capture_file` (see [`Manifest`]).
pub fn local_manifest(dir: &Path) -> Option<Manifest> {
    let open = |t: &str| std::fs::File::open(table_file(dir, t)).ok();
    read_manifest(open("capture")?, open("segment_file"))
}
