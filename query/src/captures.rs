//! Which directories a session reads: capture directories, or archives
//! whose subdirectories are captures, each with a unique name.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::Arc;

use crate::error::{Error, Result};

/// One capture directory and the name its rows get in the `capture` column.
#[derive(Clone, Debug)]
pub struct CaptureRef {
    pub name: String,
    /// The segment whose id space its ids are in (`schema::SHARED`): its
    /// own name for a capture directory.
    pub segment: String,
    /// The directory, or the URL of a capture in an object store.
    pub dir: PathBuf,
    /// The schema version its files were written with (None: unknown,
    /// read as the current one).
    pub version: Option<i32>,
    /// Where a capture in an object store is, with its tables' sizes.
    pub remote: Option<Remote>,
    /// The capture's rows in a segment of its archive (None: its own
    /// directory, `dir`).
    pub in_segment: Option<InSegment>,
}

/// Where a capture of an archive's segment has its rows.
#[derive(Clone, Debug)]
pub struct InSegment {
    pub files: Arc<SegmentFiles>,
    /// Its name in the archive (the `capture` column of the segment's
    /// files), which the session may have made unique (`NAME#2`).
    pub stored_name: String,
}

/// A segment of an archive: its directory (`ARCHIVE/segment=NAME`) and
/// files as the manifest lists them. Every capture the manifest places in
/// it is one of the session's.
#[derive(Clone, Debug)]
pub struct SegmentFiles {
    /// Its name in the archive (`segment=NAME`).
    pub name: String,
    /// The directory, or the URL of the segment in an object store.
    pub dir: PathBuf,
    /// `dir` made absolute, without `..` (object store paths do not
    /// resolve them).
    pub abs_dir: PathBuf,
    /// The segment's location in an object store.
    pub at: Option<trawl_capture::cloud::Location>,
    /// The schema version its files were written with.
    pub version: i32,
    /// Per table, the file's size and rows.
    pub tables: BTreeMap<String, (u64, i64)>,
    /// Per table, the rows of its captures when the manifest gives them
    /// without their ranges (`segment_file.live_rows`); None: unknown.
    pub live: Option<BTreeMap<String, i64>>,
    /// Where each capture has its rows, read when a scan needs them.
    pub ranges: Arc<ArchiveRanges>,
    /// Captures the session names otherwise than the file does (a name
    /// two archives of the session share): (the file's, the session's).
    pub renamed: Vec<(String, String)>,
}

impl SegmentFiles {
    /// Each capture's rows in the segment's file of `table`: (its name
    /// in the file, first row, rows), in file order; with `only` (names
    /// as the file has them), at least those of these captures.
    pub fn ranges_of(
        &self,
        table: &str,
        only: Option<&std::collections::BTreeSet<&str>>,
    ) -> std::result::Result<Arc<Vec<Range>>, String> {
        let all = self.ranges.read(only)?;
        Ok(all
            .get(&self.name)
            .and_then(|t| t.get(table))
            .cloned()
            .unwrap_or_default())
    }
}

/// A capture's rows in a segment's file: (its name there, first row, rows).
pub type Range = trawl_capture::layout::Range;

/// Segment → table → its captures' rows.
type RangeMap = std::collections::HashMap<String, BTreeMap<String, Arc<Vec<Range>>>>;

/// Where each capture of an archive's segments has its rows: the
/// manifest's `capture_file`, read the first time a scan needs it (one
/// that reads every row of a segment's files needs none of it), whole or
/// for a few captures (the row groups of others are not read).
#[derive(Debug)]
pub struct ArchiveRanges {
    /// The archive's `capture_file`: its path, or the archive's location.
    source: RangeSource,
    /// The manifest (captures and segments) the ranges are read for.
    manifest: trawl_capture::layout::Manifest,
    /// Every capture's, once read.
    all: std::sync::OnceLock<Arc<RangeMap>>,
    /// The last read for some captures: (their names, ranges).
    some: std::sync::Mutex<Option<(Vec<String>, Arc<RangeMap>)>>,
}

#[derive(Debug)]
enum RangeSource {
    Local(PathBuf),
    Remote(trawl_capture::cloud::Location),
}

impl ArchiveRanges {
    fn new(source: RangeSource, manifest: trawl_capture::layout::Manifest) -> ArchiveRanges {
        let r = ArchiveRanges {
            source,
            manifest,
            all: Default::default(),
            some: Default::default(),
        };
        // A manifest read with its files (an archive listing some
        // captures in directories of their own) has them already.
        if r.manifest.segments.values().any(|s| !s.ranges.is_empty()) {
            let map: RangeMap = r
                .manifest
                .segments
                .iter()
                .map(|(seg, e)| {
                    let t = e
                        .ranges
                        .iter()
                        .map(|(t, v)| (t.clone(), Arc::new(v.clone())))
                        .collect();
                    (seg.clone(), t)
                })
                .collect();
            let _ = r.all.set(Arc::new(map));
        }
        r
    }

    /// The manifest's captures: name → (schema version, segment).
    pub fn captures(&self) -> &BTreeMap<String, (i32, Option<String>)> {
        &self.manifest.captures
    }

    /// The ranges of every capture, or with `only` at least of those.
    fn read(
        &self,
        only: Option<&std::collections::BTreeSet<&str>>,
    ) -> std::result::Result<Arc<RangeMap>, String> {
        if let Some(a) = self.all.get() {
            return Ok(a.clone());
        }
        let Some(only) = only else {
            let a = self.load(None)?;
            return Ok(self.all.get_or_init(|| a).clone());
        };
        let key: Vec<String> = only.iter().map(|s| s.to_string()).collect();
        let mut some = self.some.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((k, r)) = &*some {
            if *k == key {
                return Ok(r.clone());
            }
        }
        let r = self.load(Some(only))?;
        *some = Some((key, r.clone()));
        Ok(r)
    }

    fn load(
        &self,
        only: Option<&std::collections::BTreeSet<&str>>,
    ) -> std::result::Result<Arc<RangeMap>, String> {
        use trawl_capture::layout::read_capture_files;
        let (m, what) = (&self.manifest, "capture_file.parquet");
        let read = match &self.source {
            RangeSource::Local(path) => {
                let f =
                    std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
                read_capture_files(&m.captures, &m.segments, f, only)
                    .ok_or_else(|| format!("{}: not a readable manifest table", path.display()))?
            }
            RangeSource::Remote(at) => {
                let bytes = trawl_capture::cloud::block_on(at.read(what))?
                    .ok_or_else(|| format!("{}/{what}: missing", at.url()))?;
                read_capture_files(&m.captures, &m.segments, bytes, only)
                    .ok_or_else(|| format!("{}/{what}: not a readable manifest table", at.url()))?
            }
        };
        Ok(Arc::new(
            read.ranges
                .into_iter()
                .map(|(seg, t)| {
                    let t = t.into_iter().map(|(t, v)| (t, Arc::new(v))).collect();
                    (seg, t)
                })
                .collect(),
        ))
    }
}

/// The distinct segments of `captures`, each with the session's name for
/// it, in the order first met.
pub fn segments(captures: &[CaptureRef]) -> Vec<(String, Arc<SegmentFiles>)> {
    let mut seen: std::collections::HashSet<*const SegmentFiles> = Default::default();
    let mut out = Vec::new();
    let mut last: *const SegmentFiles = std::ptr::null();
    for c in captures {
        let Some(s) = &c.in_segment else { continue };
        let p = Arc::as_ptr(&s.files);
        // Captures of a segment are mostly adjacent: one hash per run.
        if p == last {
            continue;
        }
        last = p;
        if seen.insert(p) {
            out.push((c.segment.clone(), s.files.clone()));
        }
    }
    out
}

/// A capture in an object store: its location and the size of each
/// table's object (from one listing of the archive or capture, not a
/// request per file).
#[derive(Clone, Debug)]
pub struct Remote {
    pub at: trawl_capture::cloud::Location,
    pub sizes: BTreeMap<String, u64>,
    /// The URL of the archive whose manifest named it.
    pub archive: Option<String>,
}

/// A capture found, before it is named.
struct Found {
    dir: PathBuf,
    /// Its name before it is made unique.
    base: String,
    version: Option<i32>,
    remote: Option<Remote>,
    /// Its segment (named in its archive) and rows there.
    in_segment: Option<(String, InSegment)>,
}

/// The names of the captures on each side of a comparison, in a session
/// opened on `[base, new]`: those `base` names, then the rest. Both sides
/// must have captures.
pub fn sides(s: &crate::Session, base: &std::path::Path) -> Result<(Vec<String>, Vec<String>)> {
    let n_base = find_captures(&[base.to_path_buf()])?.len();
    let names: Vec<String> = s.captures().iter().map(|c| c.name.clone()).collect();
    let (b, n) = names.split_at(n_base.min(names.len()));
    if b.is_empty() || n.is_empty() {
        return Err(Error::Usage("diff needs captures on both sides".into()));
    }
    Ok((b.to_vec(), n.to_vec()))
}

/// Expands the user's arguments: capture directories, or directories whose
/// subdirectories are captures (an archive); either may be an object
/// store URL (`s3://bucket/archive`, see [`trawl_capture::cloud`]).
pub fn find_captures(args: &[PathBuf]) -> Result<Vec<CaptureRef>> {
    let mut found: Vec<Found> = Vec::new();
    for a in args {
        if trawl_capture::cloud::is_url(a) {
            let url = a.to_string_lossy().into_owned();
            found.extend(trawl_capture::cloud::block_on(remote_captures(&url))?);
        } else {
            found.extend(local_captures(a)?);
        }
    }
    // Names: the directory names, made unique; segments are named by
    // their archives, made unique among the captures' and segments' names.
    if let Some(refs) = named_as_found(&mut found) {
        return Ok(refs);
    }
    let mut refs: Vec<CaptureRef> = Vec::new();
    let mut names: std::collections::HashSet<String> = Default::default();
    let mut seg_names: HashMap<*const SegmentFiles, String> = HashMap::new();
    let unique = |base: &str, names: &mut std::collections::HashSet<String>| {
        let mut name = base.to_string();
        let mut k = 2;
        while names.contains(&name) {
            name = format!("{base}#{k}");
            k += 1;
        }
        names.insert(name.clone());
        name
    };
    let mut renamed: HashMap<*const SegmentFiles, Vec<(String, String)>> = HashMap::new();
    for f in found {
        let name = unique(&f.base, &mut names);
        let segment = match &f.in_segment {
            Some((seg, s)) => {
                if s.stored_name != name {
                    renamed
                        .entry(Arc::as_ptr(&s.files))
                        .or_default()
                        .push((s.stored_name.clone(), name.clone()));
                }
                seg_names
                    .entry(Arc::as_ptr(&s.files))
                    .or_insert_with(|| unique(seg, &mut names))
                    .clone()
            }
            None => name.clone(),
        };
        refs.push(CaptureRef {
            segment,
            name,
            dir: f.dir,
            version: f.version,
            remote: f.remote,
            in_segment: f.in_segment.map(|s| s.1),
        });
    }
    // Segments some of whose captures the session renames: a copy each
    // that says so.
    if !renamed.is_empty() {
        let mut copies: HashMap<*const SegmentFiles, Arc<SegmentFiles>> = HashMap::new();
        for r in &mut refs {
            let Some(s) = &mut r.in_segment else { continue };
            let p = Arc::as_ptr(&s.files);
            let Some(names) = renamed.get(&p) else {
                continue;
            };
            s.files = copies
                .entry(p)
                .or_insert_with(|| {
                    let mut c = (*s.files).clone();
                    c.renamed = names.clone();
                    Arc::new(c)
                })
                .clone();
        }
    }
    Ok(refs)
}

/// The captures `found` named as found, when that makes every name unique
/// (the common case: one archive or directory, whose names are in order):
/// no name is hashed. None (`found` untouched) otherwise.
fn named_as_found(found: &mut Vec<Found>) -> Option<Vec<CaptureRef>> {
    if !found.windows(2).all(|w| w[0].base < w[1].base) {
        return None;
    }
    // Segment names, distinct and unlike every capture's.
    let mut segs: Vec<(&str, *const SegmentFiles)> = found
        .iter()
        .filter_map(|f| f.in_segment.as_ref())
        .map(|(seg, s)| (seg.as_str(), Arc::as_ptr(&s.files)))
        .collect();
    segs.sort_unstable();
    segs.dedup();
    let clash = segs.windows(2).any(|w| w[0].0 == w[1].0)
        || segs
            .iter()
            .any(|(n, _)| found.binary_search_by(|f| f.base.as_str().cmp(n)).is_ok());
    if clash {
        return None;
    }
    Some(
        std::mem::take(found)
            .into_iter()
            .map(|f| {
                let (segment, in_segment) = match f.in_segment {
                    Some((seg, s)) => (seg, Some(s)),
                    None => (f.base.clone(), None),
                };
                CaptureRef {
                    segment,
                    name: f.base,
                    dir: f.dir,
                    version: f.version,
                    remote: f.remote,
                    in_segment,
                }
            })
            .collect(),
    )
}

/// An archive's captures are Hive partitions: `capture=NAME` is NAME.
fn base_name(dir_name: &str) -> String {
    match dir_name.strip_prefix("capture=") {
        Some(n) if !n.is_empty() => n.to_string(),
        _ => dir_name.to_string(),
    }
}

/// Captures of newer layouts are refused, not misread.
fn check_version(dir: &std::path::Path, found: Option<i32>) -> Result<()> {
    let supported = trawl_capture::schema::SCHEMA_VERSION;
    match found.filter(|&v| v > supported) {
        Some(found) => Err(Error::NewerSchema {
            path: dir.to_path_buf(),
            found,
            supported,
        }),
        None => Ok(()),
    }
}

/// The captures of an archive's segments, as its manifest (`ranges`)
/// lists them; `seg_at` gives a segment's directory (or URL) and object
/// store location.
fn segment_captures(
    ranges: &Arc<ArchiveRanges>,
    seg_at: impl Fn(&str) -> (PathBuf, Option<trawl_capture::cloud::Location>),
) -> Result<Vec<Found>> {
    let m = &ranges.manifest;
    let mut segs: HashMap<&str, Arc<SegmentFiles>> = HashMap::new();
    let mut out = Vec::with_capacity(m.captures.len());
    for (name, (version, seg)) in &m.captures {
        let Some(seg) = seg else { continue };
        let files = match segs.get(seg.as_str()) {
            Some(f) => f.clone(),
            None => {
                let (dir, at) = seg_at(seg);
                let abs_dir = match at {
                    Some(_) => dir.clone(),
                    None => std::fs::canonicalize(&dir)
                        .or_else(|_| std::path::absolute(&dir))
                        .unwrap_or_else(|_| dir.clone()),
                };
                let e = m.segments.get(seg);
                let f = Arc::new(SegmentFiles {
                    name: seg.clone(),
                    abs_dir,
                    dir,
                    at,
                    version: *version,
                    tables: e.map(|e| e.tables.clone()).unwrap_or_default(),
                    live: e.and_then(|e| e.live.clone()),
                    ranges: ranges.clone(),
                    renamed: Vec::new(),
                });
                check_version(&f.dir, Some(*version))?;
                segs.insert(seg, f.clone());
                f
            }
        };
        out.push(Found {
            dir: files.dir.clone(),
            base: name.clone(),
            version: Some(*version),
            remote: None,
            in_segment: Some((
                seg.clone(),
                InSegment {
                    files,
                    stored_name: name.clone(),
                },
            )),
        });
    }
    Ok(out)
}

/// The manifest `m` of the local archive `dir`, its ranges read from
/// its `capture_file` when needed.
fn local_ranges(dir: &std::path::Path, m: trawl_capture::layout::Manifest) -> Arc<ArchiveRanges> {
    let path = trawl_capture::layout::table_file(dir, "capture_file");
    Arc::new(ArchiveRanges::new(RangeSource::Local(path), m))
}

/// The capture `a`, or the captures of the archive or directory of
/// captures `a`.
fn local_captures(a: &std::path::Path) -> Result<Vec<Found>> {
    let mut dirs = Vec::new();
    // Schema versions an archive's manifest states (no footer to read).
    let mut known: std::collections::HashMap<PathBuf, i32> = Default::default();
    let mut in_segments = Vec::new();
    if let Some((archive, seg)) = trawl_capture::layout::segment_archive(a) {
        // A segment of an archive: the captures the manifest places there.
        let m = trawl_capture::layout::local_manifest(&archive).ok_or_else(|| {
            Error::Usage(format!(
                "{}: a segment of the archive {}, whose manifest cannot be read",
                a.display(),
                archive.display()
            ))
        })?;
        let m = local_ranges(&archive, m);
        let mut out = segment_captures(&m, |s| (archive.join(format!("segment={s}")), None))?;
        out.retain(|f| f.in_segment.as_ref().is_some_and(|s| s.0 == seg));
        if out.is_empty() {
            return Err(Error::Usage(format!(
                "{}: a segment the manifest of {} does not list (left by an interrupted run, \
                 or replaced); open the archive",
                a.display(),
                archive.display()
            )));
        }
        out.sort_by(|x, y| x.base.cmp(&y.base));
        return Ok(out);
    }
    if trawl_capture::layout::is_capture(a) {
        dirs.push(a.to_path_buf());
    } else {
        let manifest = trawl_capture::layout::local_manifest(a).map(|m| local_ranges(a, m));
        if let Some(m) = &manifest {
            in_segments = segment_captures(m, |s| (a.join(format!("segment={s}")), None))?;
            for (name, (version, seg)) in m.captures() {
                if seg.is_none() {
                    known.insert(a.join(format!("capture={name}")), *version);
                }
            }
        }
        // A capture's own directory left beside its segment (removed once
        // the manifest names the segment) is not read.
        let segmented = |p: &std::path::Path| {
            let name = p.file_name().map(|n| n.to_string_lossy());
            let name = name.as_deref().and_then(|n| n.strip_prefix("capture="));
            manifest.as_ref().is_some_and(|m| {
                name.and_then(|n| m.captures().get(n))
                    .is_some_and(|c| c.1.is_some())
            })
        };
        let mut subs: Vec<PathBuf> = std::fs::read_dir(a)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| {
                        // Segments are read through the manifest.
                        let n = e.file_name().to_string_lossy().into_owned();
                        !n.starts_with('.') && !n.starts_with("segment=")
                    })
                    .map(|e| e.path())
                    .filter(|p| !segmented(p) && trawl_capture::layout::is_capture(p))
                    .collect()
            })
            .unwrap_or_default();
        if subs.is_empty() && in_segments.is_empty() {
            return Err(Error::NotACapture {
                path: a.to_path_buf(),
            });
        }
        subs.sort();
        dirs.extend(subs);
    }
    let mut out = Vec::with_capacity(dirs.len() + in_segments.len());
    for dir in dirs {
        let version = match known.get(&dir) {
            Some(&v) => Some(v),
            None => trawl_capture::layout::schema_version(&dir).map_err(Error::Usage)?,
        };
        check_version(&dir, version)?;
        let base = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.to_string_lossy().into_owned());
        out.push(Found {
            base: base_name(&base),
            dir,
            version,
            remote: None,
            in_segment: None,
        });
    }
    // In name order (the manifest's already is) with the captures in
    // directories.
    if out.is_empty() {
        return Ok(in_segments);
    }
    out.extend(in_segments);
    out.sort_by(|x, y| x.base.cmp(&y.base));
    Ok(out)
}

/// The capture at `url`, or the captures under it. An archive's captures
/// are those its manifest (`capture.parquet`) names as ingested (a capture
/// being uploaded, or left half uploaded by a killed run, is not one yet),
/// found from its `capture.parquet` and `segment_file.parquet`: two reads,
/// no listing (`capture_file.parquet` is read when a scan needs it).
/// Otherwise (a capture, a prefix of captures, an archive of an earlier
/// trawl) one listing of the prefix gives every table's object and size.
async fn remote_captures(url: &str) -> Result<Vec<Found>> {
    let at = trawl_capture::cloud::open(url).map_err(Error::Usage)?;
    if let Some(found) = from_manifest(&at).await? {
        return Ok(found);
    }
    let objects = at.list().await.map_err(Error::Usage)?;
    // Tables by directory relative to the prefix ("" for the prefix).
    let mut dirs: BTreeMap<String, BTreeMap<String, u64>> = BTreeMap::new();
    let strip = if at.prefix.as_ref().is_empty() {
        String::new()
    } else {
        format!("{}/", at.prefix)
    };
    for o in &objects {
        let Some(rel) = o.location.as_ref().strip_prefix(&strip) else {
            continue;
        };
        let (dir, file) = rel.rsplit_once('/').unwrap_or(("", rel));
        if dir.contains('/') || dir.starts_with('.') || dir.starts_with("segment=") {
            continue;
        }
        if let Some(table) = file.strip_suffix(".parquet") {
            dirs.entry(dir.to_string())
                .or_default()
                .insert(table.to_string(), o.size);
        }
    }
    let url = at.url();
    // The location of a directory the listing found (its key as listed).
    let child = |rel: &str| match rel {
        "" => at.clone(),
        _ => at.at_key(trawl_capture::cloud::object_store::path::Path::from_iter(
            at.prefix.parts().chain(rel.split('/').map(|p| {
                trawl_capture::cloud::object_store::path::PathPart::from(
                    trawl_capture::cloud::decoded(p),
                )
            })),
        )),
    };
    let one = |rel: &str, base: String, sizes, version, archive| Found {
        dir: PathBuf::from(child(rel).url()),
        base,
        version,
        remote: Some(Remote {
            at: child(rel),
            sizes,
            archive,
        }),
        in_segment: None,
    };
    let top = dirs.remove("").unwrap_or_default();
    if top.contains_key("source") {
        let version = remote_version(&at).await?;
        check_version(std::path::Path::new(&url), version)?;
        let last = url.rsplit('/').next().unwrap_or(&url);
        let last = trawl_capture::cloud::decoded(last);
        return Ok(vec![one("", base_name(&last), top, version, None)]);
    }
    let manifest = match top.contains_key("capture") {
        true => Some(
            at.read("capture.parquet")
                .await
                .map_err(Error::Usage)?
                .and_then(trawl_capture::layout::manifest_versions)
                .ok_or_else(|| {
                    Error::Usage(format!("{url}/capture.parquet: not a readable manifest"))
                })?,
        ),
        false => None,
    };
    let mut out = Vec::new();
    for (dir, sizes) in dirs {
        if !sizes.contains_key("source") {
            continue;
        }
        let base = base_name(&trawl_capture::cloud::decoded(&dir));
        let version = match &manifest {
            Some(m) => match m.get(&base) {
                Some(&v) => Some(v),
                None => continue,
            },
            None => remote_version(&child(&dir)).await?,
        };
        let archive = manifest.as_ref().map(|_| url.clone());
        let f = one(&dir, base, sizes, version, archive);
        check_version(&f.dir, version)?;
        out.push(f);
    }
    if out.is_empty() {
        return Err(Error::NotACapture {
            path: PathBuf::from(url),
        });
    }
    Ok(out)
}

/// The captures of the archive at `at` as its manifest lists them with
/// their files; None when there is no such manifest.
async fn from_manifest(at: &trawl_capture::cloud::Location) -> Result<Option<Vec<Found>>> {
    let url = at.url();
    let Some(caps) = at.read("capture.parquet").await.map_err(Error::Usage)? else {
        return Ok(None);
    };
    let segments = at
        .read("segment_file.parquet")
        .await
        .map_err(Error::Usage)?;
    let bad = || {
        Error::Usage(format!(
            "{url}: capture.parquet, capture_file.parquet or segment_file.parquet is not a readable manifest"
        ))
    };
    let mut m = trawl_capture::layout::read_manifest(caps, segments).ok_or_else(bad)?;
    // Captures in directories of their own are found from the files
    // `capture_file` lists (no listing); those of segments need it only
    // when a scan does.
    if m.captures.values().any(|c| c.1.is_none()) {
        let Some(files) = at
            .read("capture_file.parquet")
            .await
            .map_err(Error::Usage)?
        else {
            return Ok(None);
        };
        let f = trawl_capture::layout::read_capture_files(&m.captures, &m.segments, files, None)
            .ok_or_else(bad)?;
        m = m.with_files(f);
    }
    // A capture without its files listed: an archive written in part by
    // an earlier trawl, read by listing it.
    if m.captures.iter().any(|(c, (_, seg))| {
        seg.is_none() && !m.files.get(c).is_some_and(|t| t.contains_key("source"))
    }) {
        return Ok(None);
    }
    if m.captures.is_empty() {
        return Err(Error::NotACapture {
            path: PathBuf::from(url),
        });
    }
    let m = Arc::new(ArchiveRanges::new(RangeSource::Remote(at.clone()), m));
    let mut out = segment_captures(&m, |s| {
        let seg = at.child(&format!("segment={s}"));
        (PathBuf::from(seg.url()), Some(seg))
    })?;
    for f in &mut out {
        let seg = f.in_segment.as_ref().and_then(|s| s.1.files.at.clone());
        f.remote = seg.map(|at| Remote {
            at,
            sizes: BTreeMap::new(),
            archive: Some(url.clone()),
        });
    }
    for (name, (version, seg)) in m.captures() {
        if seg.is_some() {
            continue;
        }
        let capture = at.child(&format!("capture={name}"));
        let dir = PathBuf::from(capture.url());
        check_version(&dir, Some(*version))?;
        let sizes = m
            .manifest
            .files
            .get(name)
            .map(|t| t.iter().map(|(k, e)| (k.clone(), e.size)).collect())
            .unwrap_or_default();
        out.push(Found {
            dir,
            base: name.clone(),
            version: Some(*version),
            remote: Some(Remote {
                at: capture,
                sizes,
                archive: Some(url.clone()),
            }),
            in_segment: None,
        });
    }
    out.sort_by(|x, y| x.base.cmp(&y.base));
    Ok(Some(out))
}

/// The schema version of the capture at `at` (one small object read).
async fn remote_version(at: &trawl_capture::cloud::Location) -> Result<Option<i32>> {
    let bytes = at.read("source.parquet").await.map_err(Error::Usage)?;
    let bytes = bytes.ok_or_else(|| Error::NotACapture {
        path: PathBuf::from(at.url()),
    })?;
    trawl_capture::layout::schema_version_of(bytes)
        .map_err(|e| Error::Usage(format!("{}/source.parquet: {e}", at.url())))
}
