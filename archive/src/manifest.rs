//! The archive's manifest: `capture.parquet`, `capture_input.parquet` and
//! `capture_file.parquet` at its root (schema:
//! `trawl_capture::schema::ARCHIVE_CAPTURE`, `ARCHIVE_INPUT`,
//! `ARCHIVE_FILE`), each rewritten whole through a temporary file and a
//! rename, `capture` last: a reader never sees a capture row whose inputs
//! or files are missing.

use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int32Builder, Int64Builder, StringBuilder};
use arrow::datatypes::{Int32Type, Int64Type};
use trawl_capture::schema::{ARCHIVE_CAPTURE, ARCHIVE_FILE, ARCHIVE_INPUT, ARCHIVE_SEGMENT_FILE};
use trawl_ingest::columns::batch;
use trawl_ingest::readback::{col, read_batches, read_table};
use trawl_ingest::table_columns;
use trawl_ingest::writer::{replace_table, replace_table_with};

use crate::Result;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Status {
    Ok,
    Failed,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Failed => "failed",
        }
    }
}

/// A row of `capture`.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureRow {
    pub capture: String,
    pub status: Status,
    pub message: Option<String>,
    pub inputs: i32,
    pub input_bytes: i64,
    pub content_hash: String,
    pub diagnostics: Option<i64>,
    pub host: Option<String>,
    pub start_utc_ns: Option<i64>,
    pub ingested_utc_ns: i64,
    pub trawl_version: String,
    pub schema_version: i32,
    /// The segment holding its rows (None: its own directory).
    pub segment: Option<String>,
}

/// A row of `capture_input`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputRow {
    pub capture: String,
    pub path: String,
    pub size_bytes: i64,
    pub blake3: String,
    /// Modification time (ns) and inode when hashed (None: not recorded).
    pub mtime_ns: Option<i64>,
    pub inode: Option<i64>,
}

table_columns! {
    #[derive(Default)]
    struct CaptureCols for ARCHIVE_CAPTURE {
        capture: StringBuilder,
        status: StringBuilder,
        message: StringBuilder,
        inputs: Int32Builder,
        input_bytes: Int64Builder,
        content_hash: StringBuilder,
        diagnostics: Int64Builder,
        host: StringBuilder,
        start_utc_ns: Int64Builder,
        ingested_utc_ns: Int64Builder,
        trawl_version: StringBuilder,
        schema_version: Int32Builder,
        segment: StringBuilder,
    }
}

table_columns! {
    #[derive(Default)]
    struct InputCols for ARCHIVE_INPUT {
        capture: StringBuilder,
        path: StringBuilder,
        size_bytes: Int64Builder,
        blake3: StringBuilder,
        mtime_ns: Int64Builder,
        inode: Int64Builder,
    }
}

/// A row of `capture_file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileRow {
    pub capture: Arc<str>,
    pub table_name: Arc<str>,
    pub size_bytes: i64,
    pub rows: Option<i64>,
    /// The segment whose file holds the rows, and where they start.
    pub segment: Option<(Arc<str>, i64)>,
    pub time_ns: Option<(i64, i64)>,
}

table_columns! {
    #[derive(Default)]
    struct FileCols for ARCHIVE_FILE {
        capture: StringBuilder,
        table_name: StringBuilder,
        size_bytes: Int64Builder,
        rows: Int64Builder,
        segment: StringBuilder,
        first_row: Int64Builder,
        min_time_ns: Int64Builder,
        max_time_ns: Int64Builder,
    }
}

/// A row of `segment_file`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SegmentFileRow {
    pub segment: String,
    pub table_name: String,
    pub size_bytes: i64,
    pub rows: i64,
}

table_columns! {
    #[derive(Default)]
    struct SegmentFileCols for ARCHIVE_SEGMENT_FILE {
        segment: StringBuilder,
        table_name: StringBuilder,
        size_bytes: Int64Builder,
        rows: Int64Builder,
        live_rows: Int64Builder,
        live_captures: Int64Builder,
    }
}

/// The files of `archive`'s segments its manifest lists.
pub fn read_segment_files(archive: &Path) -> Result<Vec<SegmentFileRow>> {
    let def = &ARCHIVE_SEGMENT_FILE;
    let mut out = Vec::new();
    if !archive.join("segment_file.parquet").is_file() {
        return Ok(out);
    }
    for b in read_table(archive, def)? {
        let seg = col(&b, def, "segment")?.as_string::<i32>().clone();
        let table = col(&b, def, "table_name")?.as_string::<i32>().clone();
        let size = col(&b, def, "size_bytes")?
            .as_primitive::<Int64Type>()
            .clone();
        let rows = col(&b, def, "rows")?.as_primitive::<Int64Type>().clone();
        for i in 0..b.num_rows() {
            out.push(SegmentFileRow {
                segment: seg.value(i).to_string(),
                table_name: table.value(i).to_string(),
                size_bytes: size.value(i),
                rows: rows.value(i),
            });
        }
    }
    Ok(out)
}

/// A column a manifest written before it was added lacks (None).
fn optional<'a>(
    b: &'a arrow::array::RecordBatch,
    name: &str,
) -> Option<&'a arrow::array::ArrayRef> {
    b.column_by_name(name)
}

/// The table files of `archive`'s captures its manifest lists (empty when
/// it has none: an archive of an earlier trawl).
pub fn read_files(archive: &Path) -> Result<Vec<FileRow>> {
    let mut out = Vec::new();
    each_file(archive, |f| out.push(f))?;
    Ok(out)
}

/// The table files of each of `archive`'s captures as `caps` places it:
/// of its segment (or its own directory), without the rows of a segment it
/// moved from that a run killed while writing the manifest left in
/// `capture_file` (see [`write_manifest`]). Read a batch at a time: the
/// manifest of 100,000 captures has a million of them, held once.
pub(crate) fn read_current_files(
    archive: &Path,
    caps: &std::collections::BTreeMap<String, CaptureRow>,
) -> Result<std::collections::BTreeMap<String, Vec<FileRow>>> {
    let mut out: std::collections::BTreeMap<String, Vec<FileRow>> = Default::default();
    let mut run: Vec<FileRow> = Vec::new();
    each_file(archive, |f| {
        if run.first().is_some_and(|r| r.capture != f.capture) {
            keep_current(caps, &mut run, &mut out);
        }
        run.push(f);
    })?;
    keep_current(caps, &mut run, &mut out);
    out.retain(|_, v| !v.is_empty());
    Ok(out)
}

/// Moves the files of one capture (`run`, adjacent rows) into `out`,
/// those of the segment `caps` places it in only.
fn keep_current(
    caps: &std::collections::BTreeMap<String, CaptureRow>,
    run: &mut Vec<FileRow>,
    out: &mut std::collections::BTreeMap<String, Vec<FileRow>>,
) {
    let Some(first) = run.first() else { return };
    let seg = caps.get(&*first.capture).map(|c| c.segment.as_deref());
    let keep = |f: &FileRow| seg.is_none_or(|s| s == f.segment.as_ref().map(|s| &*s.0));
    let n = run.iter().filter(|f| keep(f)).count();
    let name = first.capture.to_string();
    let v = out.entry(name).or_default();
    v.reserve_exact(n);
    v.extend(run.drain(..).filter(|f| keep(f)));
}

/// Calls `each` with every row of `archive`'s `capture_file`, read a
/// batch at a time.
fn each_file(archive: &Path, mut each: impl FnMut(FileRow)) -> Result<()> {
    let def = &ARCHIVE_FILE;
    // Table and segment names, shared by the rows naming them: the few
    // met are compared before any is hashed.
    let mut names: Vec<Arc<str>> = Vec::new();
    let mut more: std::collections::HashMap<String, Arc<str>> = Default::default();
    let mut intern = |s: &str| -> Arc<str> {
        if let Some(a) = names.iter().find(|a| ***a == *s) {
            return a.clone();
        }
        if names.len() < 64 {
            let a: Arc<str> = s.into();
            names.push(a.clone());
            return a;
        }
        more.entry(s.to_string())
            .or_insert_with(|| s.into())
            .clone()
    };
    if !archive.join("capture_file.parquet").is_file() {
        return Ok(());
    }
    for b in read_batches(archive, def)? {
        let b = b?;
        let name = col(&b, def, "capture")?.as_string::<i32>().clone();
        let table = col(&b, def, "table_name")?.as_string::<i32>().clone();
        let size = col(&b, def, "size_bytes")?
            .as_primitive::<Int64Type>()
            .clone();
        let rows = col(&b, def, "rows")?.as_primitive::<Int64Type>().clone();
        let seg = optional(&b, "segment")
            .and_then(|a| a.as_string_opt::<i32>())
            .cloned();
        let i64s = |n: &str| {
            optional(&b, n)
                .and_then(|a| a.as_primitive_opt::<Int64Type>())
                .cloned()
        };
        let (first, lo, hi) = (i64s("first_row"), i64s("min_time_ns"), i64s("max_time_ns"));
        let at = |a: &Option<arrow::array::Int64Array>, i: usize| {
            a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i))
        };
        // Names shared by the rows that repeat them (a capture's rows are
        // adjacent; tables and segments are few).
        let mut last: Option<Arc<str>> = None;
        for i in 0..b.num_rows() {
            let segment = seg
                .as_ref()
                .filter(|s| s.is_valid(i))
                .map(|s| (intern(s.value(i)), at(&first, i).unwrap_or(0)));
            let capture = match &last {
                Some(l) if **l == *name.value(i) => l.clone(),
                _ => {
                    let c: Arc<str> = name.value(i).into();
                    last = Some(c.clone());
                    c
                }
            };
            each(FileRow {
                capture,
                table_name: intern(table.value(i)),
                size_bytes: size.value(i),
                rows: rows.is_valid(i).then(|| rows.value(i)),
                segment,
                time_ns: at(&lo, i).zip(at(&hi, i)),
            });
        }
    }
    Ok(())
}

/// The table files of the capture in `dir`, with their sizes and rows (a
/// footer read per file).
pub(crate) fn files_of(name: &str, dir: &Path) -> Vec<FileRow> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<FileRow> = rd
        .flatten()
        .filter_map(|e| {
            let file = e.file_name().to_string_lossy().into_owned();
            let table = file.strip_suffix(".parquet")?.to_string();
            let size = e.metadata().ok()?.len() as i64;
            let rows = std::fs::File::open(e.path())
                .ok()
                .and_then(|f| parquet::file::reader::SerializedFileReader::new(f).ok())
                .map(|r| {
                    use parquet::file::reader::FileReader;
                    r.metadata().file_metadata().num_rows()
                });
            Some(FileRow {
                capture: name.into(),
                table_name: table.into(),
                size_bytes: size,
                rows,
                segment: None,
                time_ns: None,
            })
        })
        .collect();
    out.sort_by(|a, b| a.table_name.cmp(&b.table_name));
    out
}

/// The manifest of `archive` (empty when it has none yet).
pub fn read_manifest(archive: &Path) -> Result<(Vec<CaptureRow>, Vec<InputRow>)> {
    let mut caps = Vec::new();
    let mut inputs = Vec::new();
    let def = &ARCHIVE_CAPTURE;
    if archive.join("capture.parquet").is_file() {
        for b in read_table(archive, def)? {
            let s = |n| -> Result<_> { Ok(col(&b, def, n)?.as_string::<i32>().clone()) };
            let (name, status, msg, hash, host, ver) = (
                s("capture")?,
                s("status")?,
                s("message")?,
                s("content_hash")?,
                s("host")?,
                s("trawl_version")?,
            );
            let i64s =
                |n| -> Result<_> { Ok(col(&b, def, n)?.as_primitive::<Int64Type>().clone()) };
            let (bytes, diags, start, at) = (
                i64s("input_bytes")?,
                i64s("diagnostics")?,
                i64s("start_utc_ns")?,
                i64s("ingested_utc_ns")?,
            );
            let n_in = col(&b, def, "inputs")?.as_primitive::<Int32Type>().clone();
            let sv = col(&b, def, "schema_version")?
                .as_primitive::<Int32Type>()
                .clone();
            let opt_s =
                |a: &arrow::array::StringArray, i| a.is_valid(i).then(|| a.value(i).to_string());
            let opt_i = |a: &arrow::array::Int64Array, i| a.is_valid(i).then(|| a.value(i));
            let seg = optional(&b, "segment")
                .and_then(|a| a.as_string_opt::<i32>())
                .cloned();
            for i in 0..b.num_rows() {
                caps.push(CaptureRow {
                    capture: name.value(i).to_string(),
                    status: if status.value(i) == "ok" {
                        Status::Ok
                    } else {
                        Status::Failed
                    },
                    message: opt_s(&msg, i),
                    inputs: n_in.value(i),
                    input_bytes: bytes.value(i),
                    content_hash: hash.value(i).to_string(),
                    diagnostics: opt_i(&diags, i),
                    host: opt_s(&host, i),
                    start_utc_ns: opt_i(&start, i),
                    ingested_utc_ns: at.value(i),
                    trawl_version: ver.value(i).to_string(),
                    schema_version: sv.value(i),
                    segment: seg
                        .as_ref()
                        .filter(|s| s.is_valid(i))
                        .map(|s| s.value(i).to_string()),
                });
            }
        }
    }
    let def = &ARCHIVE_INPUT;
    if archive.join("capture_input.parquet").is_file() {
        for b in read_table(archive, def)? {
            let name = col(&b, def, "capture")?.as_string::<i32>();
            let path = col(&b, def, "path")?.as_string::<i32>();
            let size = col(&b, def, "size_bytes")?.as_primitive::<Int64Type>();
            let hash = col(&b, def, "blake3")?.as_string::<i32>();
            let i64s = |n: &str| {
                optional(&b, n)
                    .and_then(|a| a.as_primitive_opt::<Int64Type>())
                    .cloned()
            };
            let (mtime, inode) = (i64s("mtime_ns"), i64s("inode"));
            let at = |a: &Option<arrow::array::Int64Array>, i: usize| {
                a.as_ref().filter(|a| a.is_valid(i)).map(|a| a.value(i))
            };
            for i in 0..b.num_rows() {
                inputs.push(InputRow {
                    capture: name.value(i).to_string(),
                    path: path.value(i).to_string(),
                    size_bytes: size.value(i),
                    blake3: hash.value(i).to_string(),
                    mtime_ns: at(&mtime, i),
                    inode: at(&inode, i),
                });
            }
        }
    }
    Ok((caps, inputs))
}

/// Rewrites the manifest of `archive` (inputs and files first, then
/// captures).
///
/// Each table is replaced atomically and then handed to `publish` (which
/// uploads it for an archive in an object store), `capture` last, so that
/// a reader never finds a capture whose inputs or files are missing.
/// `displaced` are the files of captures that moved to another segment
/// since the manifest was last written: `capture_file` keeps them until
/// `capture` names the new segment, then is written again without them, so
/// that a run killed between the two finds each capture's rows where its
/// `capture` row says (readers take a capture's files of its own segment).
pub(crate) fn write_manifest(
    archive: &Path,
    caps: &[&CaptureRow],
    inputs: &[&InputRow],
    files: &[&FileRow],
    displaced: &[FileRow],
    segments: &[&SegmentFileRow],
    publish: &dyn Fn(&str) -> Result<()>,
) -> Result<()> {
    // Written 64 K rows at a time (a million rows for 100,000 captures).
    let write_files = |rows: &mut dyn Iterator<Item = &FileRow>| -> Result<()> {
        replace_table_with(archive, &ARCHIVE_FILE, |w| {
            let mut c = FileCols::default();
            for (n, r) in rows.enumerate() {
                c.capture.append_value(&r.capture);
                c.table_name.append_value(&r.table_name);
                c.size_bytes.append_value(r.size_bytes);
                c.rows.append_option(r.rows);
                c.segment.append_option(r.segment.as_ref().map(|s| &*s.0));
                c.first_row.append_option(r.segment.as_ref().map(|s| s.1));
                c.min_time_ns.append_option(r.time_ns.map(|t| t.0));
                c.max_time_ns.append_option(r.time_ns.map(|t| t.1));
                if (n + 1) % (64 * 1024) == 0 {
                    w.write_rows(&mut c)?;
                }
            }
            w.write_rows(&mut c)
        })?;
        publish("capture_file.parquet")
    };
    let mut c = InputCols::default();
    for r in inputs {
        c.capture.append_value(&r.capture);
        c.path.append_value(&r.path);
        c.size_bytes.append_value(r.size_bytes);
        c.blake3.append_value(&r.blake3);
        c.mtime_ns.append_option(r.mtime_ns);
        c.inode.append_option(r.inode);
    }
    replace_table(archive, &ARCHIVE_INPUT, &[batch(&mut c)?])?;
    publish("capture_input.parquet")?;
    write_files(&mut files.iter().copied().chain(displaced))?;
    let (live_caps, live_rows) = live(caps, files);
    let mut c = SegmentFileCols::default();
    for r in segments {
        c.segment.append_value(&r.segment);
        c.table_name.append_value(&r.table_name);
        c.size_bytes.append_value(r.size_bytes);
        c.rows.append_value(r.rows);
        let seg = r.segment.as_str();
        // (Every row of a table of the segment's ids is read.)
        let shared = trawl_capture::schema::table(&r.table_name).is_some_and(|t| t.is_shared());
        c.live_rows.append_value(match shared {
            true => r.rows,
            false => live_rows
                .get(&(seg, r.table_name.as_str()))
                .copied()
                .unwrap_or(0),
        });
        c.live_captures
            .append_value(live_caps.get(seg).copied().unwrap_or(0));
    }
    replace_table(archive, &ARCHIVE_SEGMENT_FILE, &[batch(&mut c)?])?;
    publish("segment_file.parquet")?;
    let mut c = CaptureCols::default();
    for r in caps {
        c.capture.append_value(&r.capture);
        c.status.append_value(r.status.as_str());
        c.message.append_option(r.message.as_deref());
        c.inputs.append_value(r.inputs);
        c.input_bytes.append_value(r.input_bytes);
        c.content_hash.append_value(&r.content_hash);
        c.diagnostics.append_option(r.diagnostics);
        c.host.append_option(r.host.as_deref());
        c.start_utc_ns.append_option(r.start_utc_ns);
        c.ingested_utc_ns.append_value(r.ingested_utc_ns);
        c.trawl_version.append_value(&r.trawl_version);
        c.schema_version.append_value(r.schema_version);
        c.segment.append_option(r.segment.as_deref());
    }
    replace_table(archive, &ARCHIVE_CAPTURE, &[batch(&mut c)?])?;
    publish("capture.parquet")?;
    if !displaced.is_empty() {
        write_files(&mut files.iter().copied())?;
    }
    Ok(())
}

/// Per segment, the captures `caps` places there (status `ok`), and per
/// (segment, table) their rows in `files`: what a reader reads of each
/// segment's files (`segment_file.live_captures`, `live_rows`).
#[allow(clippy::type_complexity)]
fn live<'a>(
    caps: &[&'a CaptureRow],
    files: &[&'a FileRow],
) -> (
    std::collections::HashMap<&'a str, i64>,
    std::collections::HashMap<(&'a str, &'a str), i64>,
) {
    let mut placed: std::collections::HashMap<&str, &str> = Default::default();
    let mut n: std::collections::HashMap<&str, i64> = Default::default();
    for c in caps {
        if let (Status::Ok, Some(s)) = (c.status, &c.segment) {
            placed.insert(&c.capture, s);
            *n.entry(s).or_default() += 1;
        }
    }
    let mut rows: std::collections::HashMap<(&str, &str), i64> = Default::default();
    // A capture's files are adjacent: looked up once per run.
    let mut last: Option<(&str, Option<&str>)> = None;
    for f in files {
        let Some((seg, _)) = &f.segment else { continue };
        let at = match last {
            Some((c, s)) if c == &*f.capture => s,
            _ => {
                let s = placed.get(&*f.capture).copied();
                last = Some((&f.capture, s));
                s
            }
        };
        if at == Some(&**seg) {
            *rows.entry((&**seg, &*f.table_name)).or_default() += f.rows.unwrap_or(0);
        }
    }
    (n, rows)
}
