//! Ingesting an archive: plan, hash, skip what the manifest already
//! holds, ingest the rest several at a time into segments, commit each
//! segment atomically and record it in the manifest.
//!
//! A run holds the archive's lock (one writer at a time) and first removes
//! what killed runs left (`ARCHIVE/.staging`, temporary manifest files,
//! segments the manifest does not name). Inputs are hashed with BLAKE3,
//! read rather than mapped (an input truncated meanwhile is an error, not
//! a SIGBUS); a capture's content hash covers its inputs' file names and
//! hashes, and an input that cannot be read fails its capture only (the
//! run, with `strict`). Captures are ingested on `jobs` threads, each
//! staged under `ARCHIVE/.staging/` (outside the `ARCHIVE/*/` that
//! readers glob) and handed over held, its small tables in memory
//! (`trawl_ingest::writer::HeldCapture`); this thread appends each to the
//! segment being built (`ARCHIVE/.staging/segment=NAME`), which is renamed
//! to `ARCHIVE/segment=NAME` when full and at the end, then recorded in the
//! manifest with its captures. Failures are recorded at most twice a
//! second; a capture of a segment not yet recorded is ingested again by
//! the next run. After the manifest names a capture's new segment, what
//! it no longer names is removed: the directories of captures of an
//! earlier layout (`capture=NAME`) now in a segment, and segments none of
//! whose captures it names.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime};

use arrow::array::{Array, AsArray};
use arrow::datatypes::Int64Type;
use trawl_capture::schema::{self, SCHEMA_VERSION};
use trawl_ingest::readback::{col, read_table};
use trawl_ingest::writer::HeldCapture;

use crate::manifest::{
    files_of, listed_in_directories, read_manifest, read_segment_files, write_manifest, CaptureRow,
    FileRow, Files, InputRow, SegmentFileRow, Status,
};
use crate::plan::{plan, Grouping, Planned};
use crate::segment::{segment_dir, Segment};
use crate::{capture_dir, Error, Result};

/// How to ingest an archive.
#[derive(Clone, Debug, Default)]
pub struct Options {
    pub grouping: Grouping,
    /// Captures ingested at once (0: one per core).
    pub jobs: usize,
    /// Stop at the first failed capture (and fail captures on their first
    /// diagnostic); the captures already done stay.
    pub strict: bool,
    /// Ingest again captures that failed before with the same inputs.
    pub retry_failed: bool,
    /// Hash every input (otherwise an input whose path, size, modification
    /// time and inode are as recorded is not read again).
    pub rehash: bool,
    pub ingest: trawl_ingest::IngestOptions,
}

/// What became of one capture.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    /// Ingested (new, or its inputs changed): samples and diagnostics.
    Ingested {
        samples: u64,
        diagnostics: u64,
    },
    /// Its inputs are in the manifest with this content hash already.
    Unchanged,
    /// Its inputs failed before and were not tried again.
    FailedBefore(String),
    Failed(String),
}

/// Progress, reported as it happens (on the calling thread).
#[derive(Debug)]
pub enum Event<'a> {
    /// The sources are grouped and hashed: `to_ingest` of `captures`
    /// need ingesting, `bytes` of input in them.
    Planned {
        captures: usize,
        to_ingest: usize,
        bytes: u64,
    },
    /// A capture is done (or skipped); `bytes` of its inputs.
    Done {
        name: &'a str,
        outcome: &'a Outcome,
        bytes: u64,
    },
}

#[derive(Debug, Default)]
pub struct Summary {
    pub ingested: usize,
    pub unchanged: usize,
    /// Captures that failed, in this run or before (name, why).
    pub failed: Vec<(String, String)>,
    /// Files under the sources that are not inputs trawl reads.
    pub skipped_files: Vec<(PathBuf, String)>,
    pub input_bytes: u64,
}

/// One capture to make, with its inputs' hashes.
struct Job {
    planned: Planned,
    inputs: Vec<InputRow>,
    bytes: u64,
    hash: String,
    /// Planned inputs found changed and no longer of a format trawl
    /// reads (with why): left out of `planned.inputs`.
    not_inputs: Vec<(PathBuf, String)>,
}

/// [`crate::ingest`] into the archive in directory `archive` from local
/// sources.
pub(crate) fn ingest_local(
    srcs: &[PathBuf],
    archive: &Path,
    opts: &Options,
    enrich: &(dyn Fn(&Path) -> Option<String> + Sync),
    seams: &(dyn Fn() -> trawl_ingest::Seams + Sync),
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<Summary> {
    std::fs::create_dir_all(archive).map_err(|e| Error::io(archive, e))?;
    ingest_into(srcs, &Local(archive), opts, enrich, seams, progress)
}

/// Where an ingest's captures go: ingested in a local directory (the
/// archive, or a working copy of its manifest), then published.
pub(crate) trait Target: Sync {
    /// The directory the captures are ingested into and the manifest is
    /// written in.
    fn local(&self) -> &Path;
    /// Whether capture `name` is in the archive (in a directory of its
    /// own).
    fn has(&self, name: &str) -> bool;
    /// Whether segment `name` is in the archive.
    fn has_segment(&self, name: &str) -> bool;
    /// The captures in directories of their own ([`Target::has`] of each,
    /// in one listing).
    fn own_dirs(&self) -> std::collections::HashSet<String>;
    /// Makes segment `name`, committed in [`Target::local`], part of the
    /// archive.
    fn publish_segment(&self, name: &str) -> Result<()>;
    /// Removes what the manifest no longer names: the directories of
    /// captures now in segments, and segments none of whose captures is
    /// in the manifest (run after the manifest is published).
    fn remove_unlisted(&self, captures: &[String], segments: &[String]) -> Result<()>;
    /// Makes the manifest's table `file` (e.g. `capture.parquet`), as
    /// written in [`Target::local`], the archive's.
    fn publish_table(&self, file: &str) -> Result<()>;
    /// Makes the directory `rel` of the archive (`segment=NAME`,
    /// `capture=NAME`) readable in [`Target::local`]: true when it was
    /// downloaded there (the caller removes it after use).
    fn fetch(&self, rel: &str) -> Result<bool>;
    /// Removes the segments a killed run published but never recorded in
    /// the manifest (`listed`).
    fn remove_unrecorded(&self, listed: &BTreeMap<String, Vec<SegmentFileRow>>) -> Result<()>;
    /// The table files of capture `name` as the archive holds them (for
    /// captures of an archive written before its manifest listed them).
    fn existing_files(&self, name: &str) -> Vec<FileRow>;
    /// How the manifest names input `p` (its path; the URL it was
    /// downloaded from).
    fn source_name(&self, p: &Path) -> String {
        p.to_string_lossy().into_owned()
    }
}

/// A local archive: captures are committed in place.
pub(crate) struct Local<'a>(pub(crate) &'a Path);

impl Target for Local<'_> {
    fn local(&self) -> &Path {
        self.0
    }
    fn has(&self, name: &str) -> bool {
        capture_dir(self.0, name).is_dir()
    }
    fn has_segment(&self, name: &str) -> bool {
        segment_dir(self.0, name).is_dir()
    }
    fn own_dirs(&self) -> std::collections::HashSet<String> {
        let Ok(rd) = std::fs::read_dir(self.0) else {
            return Default::default();
        };
        rd.flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| {
                let n = e.file_name().to_string_lossy().into_owned();
                n.strip_prefix("capture=").map(str::to_string)
            })
            .collect()
    }
    fn publish_segment(&self, _: &str) -> Result<()> {
        Ok(())
    }
    fn remove_unlisted(&self, captures: &[String], segments: &[String]) -> Result<()> {
        for c in captures {
            let d = capture_dir(self.0, c);
            if d.is_dir() {
                std::fs::remove_dir_all(&d).map_err(|e| Error::io(&d, e))?;
            }
        }
        for s in segments {
            let d = segment_dir(self.0, s);
            if d.is_dir() {
                std::fs::remove_dir_all(&d).map_err(|e| Error::io(&d, e))?;
            }
        }
        Ok(())
    }
    fn publish_table(&self, _: &str) -> Result<()> {
        Ok(())
    }
    fn fetch(&self, _: &str) -> Result<bool> {
        Ok(false)
    }
    fn remove_unrecorded(&self, listed: &BTreeMap<String, Vec<SegmentFileRow>>) -> Result<()> {
        remove_unrecorded_segments(self.0, listed);
        Ok(())
    }
    fn existing_files(&self, name: &str) -> Vec<FileRow> {
        files_of(name, &capture_dir(self.0, name))
    }
}

/// [`ingest`] into `target`.
pub(crate) fn ingest_into(
    srcs: &[PathBuf],
    target: &dyn Target,
    opts: &Options,
    enrich: &(dyn Fn(&Path) -> Option<String> + Sync),
    seams: &(dyn Fn() -> trawl_ingest::Seams + Sync),
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<Summary> {
    let archive = target.local();
    if trawl_capture::layout::is_capture(archive) {
        return Err(Error::Other(format!(
            "{}: is a capture, not an archive; choose another directory",
            archive.display()
        )));
    }
    let lock = lock_archive(
        archive,
        "another `trawl archive ingest` is writing this archive",
    )?;

    let (old_caps, old_inputs) = read_manifest(archive)?;
    let mut caps: BTreeMap<String, CaptureRow> = old_caps
        .into_iter()
        .map(|c| (c.capture.clone(), c))
        .collect();
    let mut inputs: BTreeMap<String, Vec<InputRow>> = BTreeMap::new();
    for i in old_inputs {
        inputs.entry(i.capture.clone()).or_default().push(i);
    }
    // The files of captures this run places (the rest stay as listed).
    let mut files = Files::default();
    let mut seg_files: BTreeMap<String, Vec<SegmentFileRow>> = BTreeMap::new();
    for f in read_segment_files(archive)? {
        seg_files.entry(f.segment.clone()).or_default().push(f);
    }
    // Segments a killed run committed but never recorded.
    target.remove_unrecorded(&seg_files)?;
    // Captures of an archive written before `capture_file`: their files
    // as they are (once; then the manifest lists them).
    let mut listed = false;
    let unplaced: Vec<&CaptureRow> = caps
        .values()
        .filter(|c| c.status == Status::Ok && c.segment.is_none())
        .collect();
    if !unplaced.is_empty() {
        let known = listed_in_directories(archive)?;
        for c in unplaced {
            if !known.contains(&c.capture) {
                let found = target.existing_files(&c.capture);
                if !found.is_empty() {
                    files.place(&c.capture, found, None);
                    listed = true;
                }
            }
        }
    }

    // Inputs as recorded when hashed, by path.
    let known: std::collections::HashMap<&str, &InputRow> = if opts.rehash {
        Default::default()
    } else {
        inputs
            .values()
            .flatten()
            .filter(|i| i.mtime_ns.is_some() && i.inode.is_some())
            .map(|i| (i.path.as_str(), i))
            .collect()
    };
    // A recorded input's format is read again only if it changed (in
    // `hash_job`): 100,000 captures are 100,000 opens fewer.
    let (planned, skipped_files) = plan(srcs, &opts.grouping, &|p| {
        known.contains_key(target.source_name(p).as_str())
    })?;
    let mut summary = Summary {
        skipped_files,
        ..Default::default()
    };
    let mut todo = Vec::new();
    let mut done_before = Vec::new();
    let mut seg_present: std::collections::HashMap<String, bool> = Default::default();
    // Inputs found unchanged but recorded otherwise (see below).
    let mut refresh: Vec<(String, Vec<InputRow>)> = Vec::new();
    // Hashed on every core, in the plan's order, a few thousand at a time
    // (what is kept of an unchanged capture is its name).
    let mut planned = planned.into_iter();
    loop {
        let chunk: Vec<Planned> = planned.by_ref().take(4096).collect();
        if chunk.is_empty() {
            break;
        }
        let hashed: Vec<(String, Result<Job>)> = {
            use rayon::prelude::*;
            chunk
                .into_par_iter()
                .map(|p| (p.name.clone(), hash_job(p, target, &known)))
                .collect()
        };
        for (name, job) in hashed {
            // An input that cannot be read fails its capture, not the batch
            // (nothing is recorded: it is tried again next time).
            let mut job = match job {
                Ok(j) => j,
                Err(e) if opts.strict => return Err(e),
                Err(e) => {
                    summary.failed.push((name, e.to_string()));
                    continue;
                }
            };
            summary.skipped_files.append(&mut job.not_inputs);
            if job.inputs.is_empty() {
                // Every input it had became something trawl does not read.
                continue;
            }
            summary.input_bytes += job.bytes;
            let before = caps
                .get(&job.planned.name)
                .filter(|c| c.content_hash == job.hash);
            // (A segment's presence looked up once: 100,000 captures share
            // a hundred segments.)
            let mut present = |c: &CaptureRow| match &c.segment {
                Some(s) => *seg_present
                    .entry(s.clone())
                    .or_insert_with(|| seg_files.contains_key(s) && target.has_segment(s)),
                None => target.has(&c.capture),
            };
            match before {
                Some(c) if c.status == Status::Ok && present(c) => {
                    // Inputs that moved, or were hashed by a trawl that
                    // recorded no modification time: recorded as found now,
                    // so that the next run need not read them.
                    if inputs.get(&job.planned.name) != Some(&job.inputs) {
                        refresh.push((job.planned.name.clone(), job.inputs));
                    }
                    // (Only its name kept: 100,000 captures.)
                    done_before.push((job.planned.name, Outcome::Unchanged, job.bytes))
                }
                Some(c) if c.status == Status::Failed && !opts.retry_failed => {
                    let why = c.message.clone().unwrap_or_default();
                    done_before.push((job.planned.name, Outcome::FailedBefore(why), job.bytes))
                }
                _ => todo.push(job),
            }
        }
    }
    drop(known);
    let refreshed = !refresh.is_empty();
    inputs.extend(refresh);
    progress(Event::Planned {
        captures: todo.len() + done_before.len(),
        to_ingest: todo.len(),
        bytes: todo.iter().map(|j| j.bytes).sum(),
    });
    for (name, outcome, bytes) in done_before {
        match &outcome {
            Outcome::FailedBefore(why) => summary.failed.push((name.clone(), why.clone())),
            _ => summary.unchanged += 1,
        }
        progress(Event::Done {
            name: &name,
            outcome: &outcome,
            bytes,
        });
    }

    let jobs = match opts.jobs {
        0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
        n => n,
    }
    .min(todo.len().max(1));
    let next = AtomicUsize::new(0);
    let stop = AtomicBool::new(false);
    let mut ingest_opts = opts.ingest.clone();
    ingest_opts.strict |= opts.strict;
    // Staging directories out of `ARCHIVE/*/`, which readers glob.
    ingest_opts.staging = Some(archive.join(STAGING));
    // Each capture handed over held, its small tables in memory: appended
    // to the segment, then dropped.
    ingest_opts.hold = true;
    // Bounded: a held capture waits in memory for its segment, so a job
    // does not run ahead of the appends by more than one capture.
    let (tx, rx) = mpsc::sync_channel::<(usize, Outcome, CaptureRow, Option<HeldCapture>)>(jobs);
    let mut strict_failure = None;
    // Captures are ingested each into a directory of their own under the
    // staging directory, then appended to the segment being built.
    let staged_root = archive.join(STAGING).join("captures");
    let mut seg: Option<Segment> = None;
    // The captures of `seg`, recorded in the manifest when it is.
    let mut pending: Vec<(String, CaptureRow)> = Vec::new();
    let mut seg_count = 0usize;
    std::thread::scope(|scope| -> Result<()> {
        for _ in 0..jobs {
            let tx = tx.clone();
            let (todo, next, stop, ingest_opts) = (&todo, &next, &stop, &ingest_opts);
            let staged_root = &staged_root;
            scope.spawn(move || loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = todo.get(i) else { break };
                let staged = staged_root.join(format!("{i}"));
                let (outcome, row, dir) = ingest_one(&staged, job, ingest_opts, enrich, seams);
                if tx.send((i, outcome, row, dir)).is_err() {
                    break;
                }
            });
        }
        drop(tx);
        let mut last_write = Instant::now() - Duration::from_secs(1);
        let mut dirty = false;
        for (i, mut outcome, row, dir) in rx {
            let job = &todo[i];
            let name = &job.planned.name;
            let mut row = row;
            if let Some(held) = dir {
                // Appended to the segment being built (a new one first).
                let added = (|| -> Result<()> {
                    if seg.is_none() {
                        seg_count += 1;
                        let seg_name = segment_name(seg_count);
                        let staging = archive.join(STAGING).join(format!("segment={seg_name}"));
                        seg = Some(Segment::new(seg_name, staging)?);
                    }
                    seg.as_mut().expect("made").add(name, held.dir())
                })();
                drop(held);
                match added {
                    Ok(()) => pending.push((name.clone(), row.clone())),
                    Err(e) => {
                        let why = e.to_string();
                        row.status = Status::Failed;
                        row.message = Some(why.clone());
                        outcome = Outcome::Failed(why);
                    }
                }
            }
            inputs.insert(name.clone(), job.inputs.clone());
            if row.status == Status::Failed {
                caps.insert(name.clone(), row);
                files.forget(name);
                dirty = true;
            }
            match &outcome {
                Outcome::Ingested { .. } => summary.ingested += 1,
                Outcome::Failed(why) => {
                    summary.failed.push((name.clone(), why.clone()));
                    if opts.strict && strict_failure.is_none() {
                        stop.store(true, Ordering::Relaxed);
                        strict_failure = Some(format!("{name}: {why}"));
                    }
                }
                _ => {}
            }
            progress(Event::Done {
                name,
                outcome: &outcome,
                bytes: job.bytes,
            });
            // A full segment is committed and recorded; a capture not yet
            // in the manifest is ingested again by the next run.
            if seg.as_ref().is_some_and(Segment::is_full) {
                let s = seg.take().expect("full");
                commit_segment(
                    s,
                    target,
                    &mut pending,
                    &mut caps,
                    &mut files,
                    &mut seg_files,
                )?;
                save(target, &caps, &inputs, &mut files, &seg_files)?;
                last_write = Instant::now();
                dirty = false;
            } else if dirty && last_write.elapsed() >= Duration::from_millis(500) {
                // Failures recorded at most twice a second.
                save(target, &caps, &inputs, &mut files, &seg_files)?;
                last_write = Instant::now();
                dirty = false;
            }
        }
        if let Some(s) = seg.take().filter(|s| !s.is_empty()) {
            commit_segment(
                s,
                target,
                &mut pending,
                &mut caps,
                &mut files,
                &mut seg_files,
            )?;
            dirty = true;
        }
        if dirty || listed || refreshed || !archive.join("capture.parquet").is_file() {
            save(target, &caps, &inputs, &mut files, &seg_files)?;
        }
        Ok(())
    })?;
    // What the manifest no longer names: captures' own directories of
    // captures now in a segment, segments none of whose captures is in it.
    let own = target.own_dirs();
    let in_segments: Vec<String> = caps
        .values()
        .filter(|c| c.segment.is_some() && own.contains(&c.capture))
        .map(|c| c.capture.clone())
        .collect();
    let live: std::collections::BTreeSet<&str> =
        caps.values().filter_map(|c| c.segment.as_deref()).collect();
    let dead: Vec<String> = seg_files
        .keys()
        .filter(|s| !live.contains(s.as_str()))
        .cloned()
        .collect();
    if !in_segments.is_empty() || !dead.is_empty() {
        for s in &dead {
            seg_files.remove(s);
        }
        if !dead.is_empty() {
            save(target, &caps, &inputs, &mut files, &seg_files)?;
        }
        target.remove_unlisted(&in_segments, &dead)?;
    }
    let _ = std::fs::remove_dir(archive.join(STAGING).join("captures"));
    let _ = std::fs::remove_dir(archive.join(STAGING)); // when empty
    drop(lock);
    if let Some(why) = strict_failure {
        return Err(Error::Other(format!("strict: capture {why}")));
    }
    Ok(summary)
}

fn save(
    target: &dyn Target,
    caps: &BTreeMap<String, CaptureRow>,
    inputs: &BTreeMap<String, Vec<InputRow>>,
    files: &mut Files,
    segments: &BTreeMap<String, Vec<SegmentFileRow>>,
) -> Result<()> {
    // Inputs of the captures recorded (a capture of a segment not yet
    // committed has none yet).
    let ins: Vec<&InputRow> = inputs
        .iter()
        .filter(|(c, _)| caps.contains_key(*c))
        .flat_map(|(_, i)| i.iter())
        .collect();
    let segs: Vec<&SegmentFileRow> = segments.values().flatten().collect();
    write_manifest(target.local(), caps, &ins, files, &segs, &|f| {
        target.publish_table(f)
    })
}

/// A new segment's name: its number in this run after the time, so that
/// names sort in the order segments were made and two runs never make
/// the same.
pub(crate) fn segment_name(n: usize) -> String {
    let t = now_ns() / 1_000_000;
    format!("{t:013}-{n:04}")
}

/// Commits segment `s` (renamed into place and published) and records its
/// captures (`pending`) with their files.
fn commit_segment(
    s: Segment,
    target: &dyn Target,
    pending: &mut Vec<(String, CaptureRow)>,
    caps: &mut BTreeMap<String, CaptureRow>,
    files: &mut Files,
    seg_files: &mut BTreeMap<String, Vec<SegmentFileRow>>,
) -> Result<()> {
    let (name, _) = record_segment(s, target, caps, files, seg_files)?;
    for (capture, mut row) in pending.drain(..) {
        row.segment = Some(name.clone());
        caps.insert(capture, row);
    }
    Ok(())
}

/// Commits segment `s` into `target` (renamed into place and published)
/// and records its files: each of its captures' rows (placed in `files`;
/// `caps` still says where they were) and the segment's. Returns its name
/// and captures.
pub(crate) fn record_segment(
    s: Segment,
    target: &dyn Target,
    caps: &BTreeMap<String, CaptureRow>,
    files: &mut Files,
    seg_files: &mut BTreeMap<String, Vec<SegmentFileRow>>,
) -> Result<(String, Vec<String>)> {
    let name = s.name.clone();
    let ranges = s.captures.clone();
    let written = s.finish(target.local())?;
    target.publish_segment(&name)?;
    let size_of = |t: &str| {
        written
            .iter()
            .find(|f| f.table == t)
            .map_or(0, |f| f.size_bytes)
    };
    let mut captures = Vec::with_capacity(ranges.len());
    for (capture, rs) in ranges {
        let fs = rs
            .iter()
            .map(|r| FileRow {
                capture: capture.as_str().into(),
                table_name: r.table.into(),
                size_bytes: size_of(r.table),
                rows: Some(r.rows),
                segment: Some((name.as_str().into(), r.first_row)),
                time_ns: r.time_ns,
            })
            .collect();
        files.place(&capture, fs, caps.get(&capture));
        captures.push(capture);
    }
    seg_files.insert(
        name.clone(),
        written
            .into_iter()
            .map(|f| SegmentFileRow {
                segment: name.clone(),
                table_name: f.table.to_string(),
                size_bytes: f.size_bytes,
                rows: f.rows,
            })
            .collect(),
    );
    Ok((name, captures))
}

/// Removes the segment directories of `archive` its manifest does not
/// list (a run killed between committing a segment and recording it).
pub(crate) fn remove_unrecorded_segments(
    archive: &Path,
    listed: &BTreeMap<String, Vec<SegmentFileRow>>,
) {
    let Ok(rd) = std::fs::read_dir(archive) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if let Some(s) = n.strip_prefix("segment=") {
            if !listed.contains_key(s) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// Takes `archive`'s lock (one writer at a time; it goes with the
/// process), refused with `busy`, and removes what killed runs left.
pub(crate) fn lock_archive(archive: &Path, busy: &str) -> Result<std::fs::File> {
    let lock_path = archive.join(".trawl-archive.lock");
    let lock = std::fs::File::create(&lock_path).map_err(|e| Error::io(&lock_path, e))?;
    if lock.try_lock().is_err() {
        return Err(Error::Other(format!("{}: {busy}", archive.display())));
    }
    remove_leftovers(archive);
    Ok(lock)
}

/// Where captures are written before they are renamed into place.
pub(crate) const STAGING: &str = ".staging";

/// Removes what killed runs left in the archive's root: staging
/// directories of captures and temporary manifest files (the caller holds
/// the archive's lock, so none is being written).
pub(crate) fn remove_leftovers(archive: &Path) {
    let _ = std::fs::remove_dir_all(archive.join(STAGING));
    let Ok(rd) = std::fs::read_dir(archive) else {
        return;
    };
    for e in rd.flatten() {
        let n = e.file_name().to_string_lossy().into_owned();
        if n.starts_with('.') && (n.contains(".trawl-tmp-") || n.ends_with(".old")) {
            let p = e.path();
            let _ = if p.is_dir() {
                std::fs::remove_dir_all(&p)
            } else {
                std::fs::remove_file(&p)
            };
        }
    }
}

/// Hashes a planned capture's inputs: each file's BLAKE3, and the
/// capture's content hash over the inputs' file names and hashes (so a
/// moved source tree is not ingested again).
fn hash_job(
    mut planned: Planned,
    target: &dyn Target,
    known: &std::collections::HashMap<&str, &InputRow>,
) -> Result<Job> {
    use std::os::unix::fs::MetadataExt;
    let mut all = blake3::Hasher::new();
    let mut rows = Vec::new();
    let mut bytes = 0;
    let mut not_inputs = Vec::new();
    let stat = |m: &std::fs::Metadata| {
        let mtime = m
            .mtime()
            .saturating_mul(1_000_000_000)
            .saturating_add(m.mtime_nsec());
        (m.len(), mtime, m.ino() as i64)
    };
    let mut kept = Vec::with_capacity(planned.inputs.len());
    for p in std::mem::take(&mut planned.inputs) {
        let name = target.source_name(&p);
        // Unchanged since it was hashed: the recorded hash.
        let recorded = known.get(name.as_str());
        let before = recorded.and_then(|r| {
            let (size, mtime, ino) = stat(&std::fs::metadata(&p).ok()?);
            (r.size_bytes == size as i64 && r.mtime_ns == Some(mtime) && r.inode == Some(ino))
                .then(|| (size, mtime, ino, r.blake3.clone()))
        });
        // Planned because it was an input, unread (see `plan`): changed,
        // it is one only if its format still is one trawl reads.
        if recorded.is_some() && before.is_none() {
            if let Err(e) = trawl_ingest::input_format(&p) {
                not_inputs.push((p, e.to_string()));
                continue;
            }
        }
        kept.push(p);
        let p = kept.last().expect("just pushed");
        let (size, mtime, ino, hash) = match before {
            Some(b) => b,
            None => {
                // Read, not mapped: an input truncated while it is hashed
                // is an error, not a SIGBUS.
                let f = std::fs::File::open(p).map_err(|e| Error::io(p, e))?;
                let (size, mtime, ino) = stat(&f.metadata().map_err(|e| Error::io(p, e))?);
                let mut h = blake3::Hasher::new();
                h.update_reader(f).map_err(|e| Error::io(p, e))?;
                (size, mtime, ino, h.finalize().to_hex().to_string())
            }
        };
        bytes += size;
        let file = p
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        all.update(file.as_bytes());
        all.update(&[0]);
        all.update(hash.as_bytes());
        // An input downloaded from an object store (named by its URL) is
        // a new file each run: no time or inode worth recording.
        let local = name == p.to_string_lossy();
        rows.push(InputRow {
            capture: planned.name.clone(),
            path: name,
            size_bytes: size as i64,
            blake3: hash,
            mtime_ns: local.then_some(mtime),
            inode: local.then_some(ino),
        });
    }
    planned.inputs = kept;
    Ok(Job {
        hash: all.finalize().to_hex().to_string(),
        planned,
        inputs: rows,
        bytes,
        not_inputs,
    })
}

fn now_ns() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as i64)
}

/// Ingests `job` as the capture `dir` (staged under the staging
/// directory and held: the segment builder appends it); returns it when
/// the ingest succeeded.
fn ingest_one(
    dir: &Path,
    job: &Job,
    opts: &trawl_ingest::IngestOptions,
    enrich: &(dyn Fn(&Path) -> Option<String> + Sync),
    seams: &(dyn Fn() -> trawl_ingest::Seams + Sync),
) -> (Outcome, CaptureRow, Option<HeldCapture>) {
    let mut note = None;
    let result = trawl_ingest::ingest_with(&job.planned.inputs, dir, opts, seams(), |staging| {
        note = enrich(staging);
        Ok(())
    });
    let mut row = CaptureRow {
        capture: job.planned.name.clone(),
        status: Status::Ok,
        message: None,
        inputs: job.inputs.len() as i32,
        input_bytes: job.bytes as i64,
        content_hash: job.hash.clone(),
        diagnostics: None,
        host: None,
        start_utc_ns: None,
        ingested_utc_ns: now_ns(),
        trawl_version: env!("CARGO_PKG_VERSION").to_string(),
        schema_version: SCHEMA_VERSION,
        segment: None,
    };
    let result = result.map_err(Error::from).and_then(|mut s| {
        let held = s
            .held
            .take()
            .ok_or_else(|| Error::Other(format!("{}: the capture was not held", dir.display())))?;
        let (host, start) = host_and_start(held.dir());
        Ok((s, held, host, start))
    });
    match result {
        Ok((s, held, host, start)) => {
            let diagnostics: u64 = s.inputs.iter().map(|i| i.diagnostics.len() as u64).sum();
            row.diagnostics = Some(diagnostics as i64);
            row.message = note.filter(|n| !n.is_empty());
            (row.host, row.start_utc_ns) = (host, start);
            let samples = s.inputs.iter().map(|i| i.samples).sum();
            (
                Outcome::Ingested {
                    samples,
                    diagnostics,
                },
                row,
                Some(held),
            )
        }
        Err(e) => {
            let why = e.to_string();
            row.status = Status::Failed;
            row.message = Some(why.clone());
            (Outcome::Failed(why), row, None)
        }
    }
}

/// The recording host (perf's `hostname` header) and the first sample's
/// time in UTC, when the capture's clock can be placed on UTC.
fn host_and_start(dir: &Path) -> (Option<String>, Option<i64>) {
    let mut host = None;
    let mut first: Option<(i32, i64)> = None;
    if let Ok(batches) = read_table(dir, &schema::CAPTURE_META) {
        for b in &batches {
            let (Ok(s), Ok(k), Ok(v)) = (
                col(b, &schema::CAPTURE_META, "source_id"),
                col(b, &schema::CAPTURE_META, "key"),
                col(b, &schema::CAPTURE_META, "value"),
            ) else {
                continue;
            };
            let s = s.as_primitive::<arrow::datatypes::Int32Type>();
            let (k, v) = (k.as_string::<i32>(), v.as_string::<i32>());
            for i in 0..b.num_rows() {
                match k.value(i) {
                    "hostname" if host.is_none() => host = Some(v.value(i).to_string()),
                    "sample_time_first_ns" => {
                        if let Ok(t) = v.value(i).parse::<i64>() {
                            if first.is_none_or(|(_, f)| t < f) {
                                first = Some((s.value(i), t));
                            }
                        }
                    }
                    _ => {}
                }
            }
        }
    }
    let start = first.and_then(|(sid, t)| {
        let batches = read_table(dir, &schema::SOURCE).ok()?;
        batches.iter().find_map(|b| {
            let ids = col(b, &schema::SOURCE, "source_id").ok()?;
            let ids = ids.as_primitive::<arrow::datatypes::Int32Type>();
            let off = col(b, &schema::SOURCE, "utc_offset_ns").ok()?;
            let off = off.as_primitive::<Int64Type>();
            (0..b.num_rows())
                .find(|&i| ids.value(i) == sid && off.is_valid(i))
                .map(|i| t + off.value(i))
        })
    });
    (host, start)
}
