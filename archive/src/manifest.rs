//! The archive's manifest: `capture.parquet`, `capture_input.parquet` and
//! `capture_file.parquet` at its root (schema:
//! `trawl_capture::schema::ARCHIVE_CAPTURE`, `ARCHIVE_INPUT`,
//! `ARCHIVE_FILE`), each rewritten whole through a temporary file and a
//! rename, `capture` last: a reader never sees a capture row whose inputs
//! or files are missing.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use arrow::array::{Array, AsArray, Int32Builder, Int64Builder, StringBuilder};
use arrow::datatypes::{Int32Type, Int64Type};
use trawl_capture::schema::{ARCHIVE_CAPTURE, ARCHIVE_FILE, ARCHIVE_INPUT, ARCHIVE_SEGMENT_FILE};
use trawl_ingest::columns::batch;
use trawl_ingest::readback::{col, read_batches, read_table};
use trawl_ingest::table_columns;
use trawl_ingest::writer::{replace_table, replace_table_with, TableWriter};

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
        // A batch at a time: 100,000 captures.
        for b in read_batches(archive, def)? {
            let b = b?;
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
        for b in read_batches(archive, def)? {
            let b = b?;
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

/// `capture_file` as a run changes it. The file as last written is read
/// again, a batch at a time, whenever the manifest is written; only the
/// rows of captures placed since are held (an archive of 100,000 captures
/// has a million rows, a run that adds 100 captures a thousand).
#[derive(Debug, Default)]
pub(crate) struct Files {
    /// Rows of the captures placed since the manifest was last written,
    /// replacing the file's rows of them.
    placed: BTreeMap<String, Vec<FileRow>>,
    /// Captures of `placed` that moved, with where the file's rows of them
    /// are (a segment; `None`: their own directory): kept until `capture`
    /// names the new place (see [`write_manifest`]).
    moved: std::collections::HashMap<String, Option<String>>,
}

impl Files {
    /// Places `capture`'s rows: `before` is its row in the manifest as last
    /// written (whose files stay listed until the manifest moves it).
    pub(crate) fn place(&mut self, capture: &str, rows: Vec<FileRow>, before: Option<&CaptureRow>) {
        if let Some(c) = before.filter(|c| c.status == Status::Ok) {
            self.moved
                .entry(capture.to_string())
                .or_insert_with(|| c.segment.clone());
        }
        self.placed.insert(capture.to_string(), rows);
    }

    /// Drops what was placed of `capture` (it failed): the file's rows of it
    /// go when the manifest no longer has it `ok`.
    pub(crate) fn forget(&mut self, capture: &str) {
        self.placed.remove(capture);
        self.moved.remove(capture);
    }
}

/// The captures whose files `archive`'s `capture_file` lists in their own
/// directories (no segment): those of an archive of an earlier trawl that
/// are already listed.
pub(crate) fn listed_in_directories(archive: &Path) -> Result<std::collections::HashSet<String>> {
    let mut out = std::collections::HashSet::new();
    if !archive.join("capture_file.parquet").is_file() {
        return Ok(out);
    }
    let def = &ARCHIVE_FILE;
    for b in read_batches(archive, def)? {
        let b = b?;
        let name = col(&b, def, "capture")?.as_string::<i32>();
        let seg = optional(&b, "segment").and_then(|a| a.as_string_opt::<i32>());
        for i in 0..b.num_rows() {
            if seg.is_none_or(|s| s.is_null(i)) && !out.contains(name.value(i)) {
                out.insert(name.value(i).to_string());
            }
        }
    }
    Ok(out)
}

/// Rewrites the manifest of `archive` (inputs and files first, then
/// captures).
///
/// Each table is replaced atomically and then handed to `publish` (which
/// uploads it for an archive in an object store), `capture` last, so that
/// a reader never finds a capture whose inputs or files are missing.
/// `capture_file` keeps the file's rows of each `ok` capture in the
/// segment `caps` places it in, and takes the rows `files` placed since.
/// The rows of captures that moved stay until `capture` names their new
/// segment, then the file is written again without them, so that a run
/// killed between the two finds each capture's rows where its `capture`
/// row says (readers take a capture's files of its own segment).
pub(crate) fn write_manifest(
    archive: &Path,
    caps: &BTreeMap<String, CaptureRow>,
    inputs: &[&InputRow],
    files: &mut Files,
    segments: &[&SegmentFileRow],
    publish: &dyn Fn(&str) -> Result<()>,
) -> Result<()> {
    // Tables of a row per capture (100,000) are written 16 K rows at a
    // time.
    const AT_ONCE: usize = 16 * 1024;
    replace_table_with(archive, &ARCHIVE_INPUT, |w| {
        let mut c = InputCols::default();
        for (n, r) in inputs.iter().enumerate() {
            c.capture.append_value(&r.capture);
            c.path.append_value(&r.path);
            c.size_bytes.append_value(r.size_bytes);
            c.blake3.append_value(&r.blake3);
            c.mtime_ns.append_option(r.mtime_ns);
            c.inode.append_option(r.inode);
            if (n + 1) % AT_ONCE == 0 {
                w.write_rows(&mut c)?;
            }
        }
        w.write_rows(&mut c)
    })?;
    publish("capture_input.parquet")?;
    let live_rows = rewrite_files(archive, caps, Some(&*files))?;
    publish("capture_file.parquet")?;
    let mut live_caps: std::collections::HashMap<&str, i64> = Default::default();
    for c in caps.values() {
        if let (Status::Ok, Some(s)) = (c.status, &c.segment) {
            *live_caps.entry(s).or_default() += 1;
        }
    }
    let mut c = SegmentFileCols::default();
    for r in segments {
        c.segment.append_value(&r.segment);
        c.table_name.append_value(&r.table_name);
        c.size_bytes.append_value(r.size_bytes);
        c.rows.append_value(r.rows);
        // (Every row of a table of the segment's ids is read.)
        let shared = trawl_capture::schema::table(&r.table_name).is_some_and(|t| t.is_shared());
        c.live_rows.append_value(match shared {
            true => r.rows,
            false => live_rows
                .get(r.segment.as_str())
                .and_then(|t| t.iter().find(|(n, _)| *n == r.table_name))
                .map_or(0, |(_, n)| *n),
        });
        c.live_captures
            .append_value(live_caps.get(r.segment.as_str()).copied().unwrap_or(0));
    }
    replace_table(archive, &ARCHIVE_SEGMENT_FILE, &[batch(&mut c)?])?;
    publish("segment_file.parquet")?;
    replace_table_with(archive, &ARCHIVE_CAPTURE, |w| {
        let mut c = CaptureCols::default();
        for (n, r) in caps.values().enumerate() {
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
            if (n + 1) % AT_ONCE == 0 {
                w.write_rows(&mut c)?;
            }
        }
        w.write_rows(&mut c)
    })?;
    publish("capture.parquet")?;
    if !files.moved.is_empty() {
        rewrite_files(archive, caps, None)?;
        publish("capture_file.parquet")?;
    }
    // The file holds them now.
    *files = Files::default();
    Ok(())
}

/// `capture_file` rows on their way to the file, written 64 K at a time.
#[derive(Default)]
struct FileOut {
    c: FileCols,
    n: usize,
}

impl FileOut {
    /// Appends a row: (capture, table, size, rows), segment, first row,
    /// time range.
    fn push(
        &mut self,
        w: &mut TableWriter,
        (capture, table, size, rows): (&str, &str, i64, Option<i64>),
        segment: Option<&str>,
        first_row: Option<i64>,
        lo: Option<i64>,
        hi: Option<i64>,
    ) -> trawl_ingest::Result<()> {
        let c = &mut self.c;
        c.capture.append_value(capture);
        c.table_name.append_value(table);
        c.size_bytes.append_value(size);
        c.rows.append_option(rows);
        c.segment.append_option(segment);
        c.first_row.append_option(first_row);
        c.min_time_ns.append_option(lo);
        c.max_time_ns.append_option(hi);
        self.n += 1;
        if self.n == 64 * 1024 {
            w.write_rows(c)?;
            self.n = 0;
        }
        Ok(())
    }
}

/// Per segment, per table: the rows of the `ok` captures placed there.
type LiveRows = std::collections::HashMap<String, Vec<(String, i64)>>;

/// Writes `capture_file` again from the file as it is, a batch at a time,
/// in capture order: the rows of each `ok` capture in the place `caps`
/// gives it, with the rows `placed` holds instead of the file's for the
/// captures it names (and the file's rows of those that moved, see
/// [`Files`]). Returns the rows of each segment's tables that the captures
/// placed there own (`segment_file.live_rows`).
fn rewrite_files(
    archive: &Path,
    caps: &BTreeMap<String, CaptureRow>,
    placed: Option<&Files>,
) -> Result<LiveRows> {
    let def = &ARCHIVE_FILE;
    let empty = Files::default();
    let files = placed.unwrap_or(&empty);
    let mut live = LiveRows::default();
    let mut count = |seg: &str, table: &str, n: i64| {
        let t = match live.get_mut(seg) {
            Some(t) => t,
            None => live.entry(seg.to_string()).or_default(),
        };
        match t.iter_mut().find(|(name, _)| name == table) {
            Some((_, v)) => *v += n,
            None => t.push((table.to_string(), n)),
        }
    };
    let old = match archive.join("capture_file.parquet").is_file() {
        true => Some(read_batches(archive, def)?),
        false => None,
    };
    replace_table_with(archive, def, |w| {
        let mut out = FileOut::default();
        let mut placed = files.placed.iter().peekable();
        // The placed rows of the captures that sort before `name` (all:
        // None).
        let mut flush = |out: &mut FileOut,
                         w: &mut TableWriter,
                         name: Option<&str>,
                         count: &mut dyn FnMut(&str, &str, i64)|
         -> trawl_ingest::Result<()> {
            while let Some((capture, _)) = placed.peek() {
                if name.is_some_and(|n| capture.as_str() >= n) {
                    break;
                }
                let (capture, rows) = placed.next().expect("peeked");
                let at = caps.get(capture).filter(|c| c.status == Status::Ok);
                for r in rows {
                    let seg = r.segment.as_ref().map(|s| &*s.0);
                    if at.is_none_or(|c| c.segment.as_deref() != seg) {
                        continue;
                    }
                    if let (Some(seg), Some(n)) = (seg, r.rows) {
                        count(seg, &r.table_name, n);
                    }
                    let first = r.segment.as_ref().map(|s| s.1);
                    let (lo, hi) = (r.time_ns.map(|t| t.0), r.time_ns.map(|t| t.1));
                    let row = (&*r.capture, &*r.table_name, r.size_bytes, r.rows);
                    out.push(w, row, seg, first, lo, hi)?;
                }
            }
            Ok(())
        };
        for b in old.into_iter().flatten() {
            let b = b?;
            let name = col(&b, def, "capture")?.as_string::<i32>();
            let table = col(&b, def, "table_name")?.as_string::<i32>();
            let size = col(&b, def, "size_bytes")?.as_primitive::<Int64Type>();
            let rows = col(&b, def, "rows")?.as_primitive::<Int64Type>();
            let seg = optional(&b, "segment").and_then(|a| a.as_string_opt::<i32>());
            let i64s = |n: &str| optional(&b, n).and_then(|a| a.as_primitive_opt::<Int64Type>());
            let (first, lo, hi) = (i64s("first_row"), i64s("min_time_ns"), i64s("max_time_ns"));
            let at = |a: Option<&arrow::array::Int64Array>, i: usize| {
                a.filter(|a| a.is_valid(i)).map(|a| a.value(i))
            };
            // Where the rows of the capture met last are kept (a capture's
            // rows are adjacent), and whether they count as live.
            let mut last: Option<(&str, Option<Option<&str>>, bool)> = None;
            for i in 0..b.num_rows() {
                let capture = name.value(i);
                let (keep, counted) = match last {
                    Some((l, keep, counted)) if l == capture => (keep, counted),
                    _ => {
                        flush(&mut out, w, Some(capture), &mut count)?;
                        let (keep, counted) = if files.placed.contains_key(capture) {
                            (files.moved.get(capture).map(|s| s.as_deref()), false)
                        } else {
                            let at = caps.get(capture).filter(|c| c.status == Status::Ok);
                            (at.map(|c| c.segment.as_deref()), true)
                        };
                        last = Some((capture, keep, counted));
                        (keep, counted)
                    }
                };
                let s = seg.filter(|s| s.is_valid(i)).map(|s| s.value(i));
                if keep != Some(s) {
                    continue;
                }
                let n = rows.is_valid(i).then(|| rows.value(i));
                if let (true, Some(s), Some(n)) = (counted, s, n) {
                    count(s, table.value(i), n);
                }
                let row = (capture, table.value(i), size.value(i), n);
                let first = at(first, i).or(s.map(|_| 0));
                out.push(w, row, s, first, at(lo, i), at(hi, i))?;
            }
        }
        flush(&mut out, w, None, &mut count)?;
        w.write_rows(&mut out.c)
    })?;
    Ok(live)
}
