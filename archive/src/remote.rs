//! Archives in object storage (`s3://bucket/archive`, ...; see
//! `trawl_capture::cloud`), and raw inputs read from there.
//!
//! The archive has the local layout: `segment=NAME/<table>.parquet` and the
//! manifest at the root. A run:
//!
//! - takes the archive's lock, an object (`.trawl-archive.lock`) created
//!   only if absent (a conditional write, which S3, GCS, Azure, MinIO and
//!   R2 honour; the lock is read back in case a store ignores it). It
//!   names the host, boot and process; the run renews it every minute,
//!   each time only if it is still the version it wrote (a run that finds
//!   its lock taken over stops publishing). A lock whose process is gone
//!   (same host, boot and process namespace) or that the store has not
//!   seen renewed for ten minutes is taken over, by a conditional replace
//!   of the version read (of two runs taking over, one wins). Another
//!   live run is refused. The lock names the run's working directory too:
//!   a run that takes over the lock of a run killed on this machine
//!   removes what the killed run left there.
//! - copies the manifest into a local working directory and ingests there,
//!   as into a local archive (same planning, hashing, incremental skips);
//! - uploads each capture once it is committed locally, `source.parquet`
//!   last (a prefix is a capture when it holds `source`; a capture
//!   replaced loses its `source` first), in parts for large tables (an
//!   interrupted part upload leaves no object), then deletes the local
//!   copy;
//! - uploads the manifest (`capture_input.parquet`, `capture_file.parquet`,
//!   then `capture.parquet`) at most twice a second and at the end. Readers
//!   take an archive's captures from `capture.parquet`, and their files
//!   from `capture_file.parquet` (no listing): a capture uploaded
//!   by a run killed before its manifest was, or half uploaded, is not
//!   read, and the next run ingests it again.
//!
//! Sources given as URLs are downloaded (each object under the prefix, or
//! the object the URL names) into the working directory first, streamed
//! to disk; the manifest records their URLs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use trawl_capture::cloud::object_store::ObjectStoreExt;
use trawl_capture::cloud::{self, block_on, Location, Version};

use crate::run::{ingest_into, Target};
use crate::{Error, Event, Options, Result, Summary};

/// The lock object's name.
const LOCK: &str = ".trawl-archive.lock";
/// How often a run rewrites its lock, and when another run takes it over.
const HEARTBEAT: Duration = Duration::from_secs(60);
const STALE: Duration = Duration::from_secs(600);

fn other(e: String) -> Error {
    Error::Other(e)
}

/// [`crate::ingest`] when the archive or a source is a URL.
pub(crate) fn ingest(
    srcs: &[PathBuf],
    archive: &Path,
    opts: &Options,
    enrich: &(dyn Fn(&Path) -> Option<String> + Sync),
    seams: &(dyn Fn() -> trawl_ingest::Seams + Sync),
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<Summary> {
    let work = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    // The archive's lock first: a run killed from here on leaves its
    // working directory to the run that takes the lock over.
    let mut target = if cloud::is_url(archive) {
        let at = cloud::open(&archive.to_string_lossy()).map_err(other)?;
        Some(Remote::open(at, work.path())?)
    } else {
        None
    };
    // Sources in object stores, downloaded.
    let mut local_srcs = Vec::with_capacity(srcs.len());
    let mut fetched = Vec::new();
    for (k, s) in srcs.iter().enumerate() {
        if !cloud::is_url(s) {
            local_srcs.push(s.clone());
            continue;
        }
        let at = cloud::open(&s.to_string_lossy()).map_err(other)?;
        // Named as the prefix is: captures are named by their path under
        // a source.
        let last = at.prefix.as_ref().rsplit('/').next().unwrap_or("");
        let last = if last.is_empty() || last.starts_with('.') {
            "root"
        } else {
            last
        };
        let dir = work.path().join(format!("src{k}")).join(last);
        block_on(download(&at, &dir))?;
        fetched.push((dir.clone(), at.url()));
        local_srcs.push(dir);
    }
    let mut summary = if let Some(target) = &mut target {
        let named = Named(&*target, &fetched);
        let r = ingest_into(&local_srcs, &named, opts, enrich, seams, progress);
        target.release();
        r?
    } else {
        std::fs::create_dir_all(archive).map_err(|e| Error::io(archive, e))?;
        let local = crate::run::Local(archive);
        let named = Named(&local, &fetched);
        ingest_into(&local_srcs, &named, opts, enrich, seams, progress)?
    };
    // Paths of downloaded sources as their URLs.
    for (p, _) in &mut summary.skipped_files {
        for (dir, url) in &fetched {
            if let Ok(rel) = p.strip_prefix(dir) {
                *p = PathBuf::from(format!("{url}/{}", rel.display()));
            }
        }
    }
    Ok(summary)
}

/// [`crate::compact`] of an archive in an object store: through a local
/// working directory, as ingest, under the archive's lock. The segments
/// and capture directories it merges are downloaded one at a time; each
/// new segment is uploaded, then the manifest naming it, and what it
/// replaces is deleted last.
pub(crate) fn compact(archive: &Path) -> Result<crate::Compacted> {
    let work = tempfile::Builder::new()
        .prefix(WORK_PREFIX)
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    let at = cloud::open(&archive.to_string_lossy()).map_err(other)?;
    let mut target = Remote::open(at, work.path())?;
    if !target.work.join("capture.parquet").is_file() {
        target.release();
        return Err(other(format!(
            "{}: not an archive (no capture.parquet)",
            archive.display()
        )));
    }
    let r = crate::compact::compact_into(&target);
    target.release();
    r
}

/// A target whose inputs downloaded into a directory (first) are named by
/// the URL they came from (second) in the manifest.
struct Named<'a>(&'a dyn Target, &'a [(PathBuf, String)]);

impl Target for Named<'_> {
    fn local(&self) -> &Path {
        self.0.local()
    }
    fn has(&self, name: &str) -> bool {
        self.0.has(name)
    }
    fn has_segment(&self, name: &str) -> bool {
        self.0.has_segment(name)
    }
    fn own_dirs(&self) -> std::collections::HashSet<String> {
        self.0.own_dirs()
    }
    fn publish_segment(&self, name: &str) -> Result<()> {
        self.0.publish_segment(name)
    }
    fn remove_unlisted(&self, captures: &[String], segments: &[String]) -> Result<()> {
        self.0.remove_unlisted(captures, segments)
    }
    fn publish_table(&self, file: &str) -> Result<()> {
        self.0.publish_table(file)
    }
    fn fetch(&self, rel: &str) -> Result<bool> {
        self.0.fetch(rel)
    }
    fn remove_unrecorded(
        &self,
        listed: &std::collections::BTreeMap<String, Vec<crate::manifest::SegmentFileRow>>,
    ) -> Result<()> {
        self.0.remove_unrecorded(listed)
    }
    fn existing_files(&self, name: &str) -> Vec<crate::manifest::FileRow> {
        self.0.existing_files(name)
    }
    fn source_name(&self, p: &Path) -> String {
        for (dir, url) in self.1 {
            if let Ok(rel) = p.strip_prefix(dir) {
                return format!("{url}/{}", rel.display());
            }
        }
        self.0.source_name(p)
    }
}

/// Downloads every object under `at` (or the object `at` names) into
/// `dir`, keeping their relative keys as paths (keys that would leave
/// `dir` are skipped).
async fn download(at: &Location, dir: &Path) -> Result<()> {
    let mut objects: Vec<(String, cloud::object_store::path::Path)> = Vec::new();
    let strip = match at.prefix.as_ref() {
        "" => String::new(),
        p => format!("{p}/"),
    };
    for o in at.list().await.map_err(other)? {
        if let Some(rel) = o.location.as_ref().strip_prefix(&strip) {
            objects.push((rel.to_string(), o.location));
        }
    }
    if objects.is_empty() {
        if let Some(o) = at.head().await.map_err(other)? {
            let name = o.location.filename().unwrap_or("input").to_string();
            objects.push((name, o.location));
        }
    }
    if objects.is_empty() {
        return Err(other(format!("{}: no objects", at.url())));
    }
    for (rel, key) in objects {
        let parts: Vec<String> = rel.split('/').map(cloud::decoded).collect();
        let safe = parts
            .iter()
            .all(|p| !p.is_empty() && p != "." && p != ".." && !p.contains('/'));
        if !safe {
            continue;
        }
        let path = parts.iter().fold(dir.to_path_buf(), |p, part| p.join(part));
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        at.download(&key, &path).await.map_err(other)?;
    }
    Ok(())
}

/// An archive in an object store, ingested through a local working
/// directory.
struct Remote {
    at: Location,
    work: PathBuf,
    /// Captures present (a `source.parquet`) when the run started, with
    /// their tables' sizes.
    present: std::collections::HashMap<String, Vec<crate::manifest::FileRow>>,
    /// Segments with objects when the run started.
    segments: std::collections::HashSet<String>,
    /// This run's lock, as written, and the version of it the store holds.
    lock: String,
    version: std::sync::Arc<std::sync::Mutex<Option<Version>>>,
    /// Set when another run took the lock over: nothing more is published.
    lost: std::sync::Arc<AtomicBool>,
    stop: std::sync::Arc<AtomicBool>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
    released: AtomicBool,
}

impl Remote {
    /// Takes the archive's lock, copies its manifest into `work` and lists
    /// its captures.
    fn open(at: Location, run_dir: &Path) -> Result<Remote> {
        let work = run_dir.join("archive");
        std::fs::create_dir_all(&work).map_err(|e| Error::io(&work, e))?;
        let lock = lock_text(run_dir);
        let version = take_lock(&at, &lock)?;
        let mut r = Remote {
            at,
            work,
            present: Default::default(),
            segments: Default::default(),
            lock,
            version: std::sync::Arc::new(std::sync::Mutex::new(Some(version))),
            lost: Default::default(),
            stop: Default::default(),
            heartbeat: None,
            released: AtomicBool::new(false),
        };
        if let Err(e) = r.prepare() {
            r.release();
            return Err(e);
        }
        let (at, lock) = (r.at.clone(), r.lock.clone());
        let (version, lost, stop) = (r.version.clone(), r.lost.clone(), r.stop.clone());
        r.heartbeat = Some(std::thread::spawn(move || {
            let mut last = SystemTime::now();
            while !stop.load(Ordering::Relaxed) && !lost.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed().unwrap_or_default() < HEARTBEAT {
                    continue;
                }
                last = SystemTime::now();
                let mut v = version.lock().expect("lock version");
                let Some(current) = v.clone() else { break };
                // Renewed only if it is still the version this run wrote.
                match block_on(at.replace(LOCK, stamp(&lock).into_bytes(), &current)) {
                    Ok(Some(new)) => *v = Some(new),
                    Ok(None) => {
                        lost.store(true, Ordering::Relaxed);
                        *v = None;
                    }
                    Err(_) => {} // tried again at the next beat
                }
            }
        }));
        Ok(r)
    }

    fn prepare(&mut self) -> Result<()> {
        for t in ["capture_input", "capture_file", "segment_file", "capture"] {
            let name = format!("{t}.parquet");
            if let Some(b) = block_on(self.at.read(&name)).map_err(other)? {
                let path = self.work.join(&name);
                std::fs::write(&path, &b).map_err(|e| Error::io(&path, e))?;
            }
        }
        let mut tables: std::collections::HashMap<String, Vec<crate::manifest::FileRow>> =
            Default::default();
        let strip = match self.at.prefix.as_ref() {
            "" => String::new(),
            p => format!("{p}/"),
        };
        for o in block_on(self.at.list()).map_err(other)? {
            let Some(rel) = o.location.as_ref().strip_prefix(&strip) else {
                continue;
            };
            let Some((dir, file)) = rel.split_once('/') else {
                continue;
            };
            if let Some(s) = cloud::decoded(dir).strip_prefix("segment=") {
                self.segments.insert(s.to_string());
                continue;
            }
            let (Some(name), Some(table)) = (
                crate::capture_name(&cloud::decoded(dir)).map(str::to_string),
                file.strip_suffix(".parquet").filter(|t| !t.contains('/')),
            ) else {
                continue;
            };
            tables
                .entry(name.clone())
                .or_default()
                .push(crate::manifest::FileRow {
                    capture: name.as_str().into(),
                    table_name: cloud::decoded(table).into(),
                    size_bytes: o.size as i64,
                    rows: None,
                    segment: None,
                    time_ns: None,
                });
        }
        self.present = tables
            .into_iter()
            .filter(|(_, t)| t.iter().any(|f| &*f.table_name == "source"))
            .collect();
        Ok(())
    }

    /// Fails once another run has taken the lock over.
    fn check_lock(&self) -> Result<()> {
        if self.lost.load(Ordering::Relaxed) {
            return Err(other(format!(
                "{}: another run took over this run's lock ({}/{LOCK}); stopped publishing",
                self.at.url(),
                self.at.url()
            )));
        }
        Ok(())
    }

    /// Stops renewing the lock and removes it if it is still this run's.
    fn release(&mut self) {
        if self.released.swap(true, Ordering::Relaxed) {
            return;
        }
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
        let ours = block_on(self.at.read(LOCK))
            .ok()
            .flatten()
            .is_some_and(|b| same_run(&String::from_utf8_lossy(&b), &self.lock));
        if ours && !self.lost.load(Ordering::Relaxed) {
            let _ = block_on(self.at.delete(LOCK));
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.release();
    }
}

impl Target for Remote {
    fn local(&self) -> &Path {
        &self.work
    }

    fn has(&self, name: &str) -> bool {
        self.present.contains_key(name)
    }

    fn has_segment(&self, name: &str) -> bool {
        self.segments.contains(name)
    }

    fn own_dirs(&self) -> std::collections::HashSet<String> {
        self.present.keys().cloned().collect()
    }

    fn publish_segment(&self, name: &str) -> Result<()> {
        self.check_lock()?;
        let dir = crate::segment::segment_dir(&self.work, name);
        let rel = format!("segment={name}");
        let files: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| Error::io(&dir, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        // A new name: nothing to replace; readers know it only once the
        // manifest that names it is uploaded.
        block_on(async {
            for f in &files {
                self.at
                    .upload(&format!("{rel}/{f}"), &dir.join(f))
                    .await
                    .map_err(other)?;
            }
            Ok::<_, Error>(())
        })?;
        std::fs::remove_dir_all(&dir).map_err(|e| Error::io(&dir, e))
    }

    fn remove_unlisted(&self, captures: &[String], segments: &[String]) -> Result<()> {
        self.check_lock()?;
        let rels = captures
            .iter()
            .map(|c| format!("capture={c}"))
            .chain(segments.iter().map(|s| format!("segment={s}")));
        block_on(async {
            for rel in rels {
                for o in self.at.child(&rel).list().await.map_err(other)? {
                    self.at
                        .store
                        .delete(&o.location)
                        .await
                        .map_err(|e| other(cloud::describe(&self.at.url_of(&o.location), &e)))?;
                }
            }
            Ok::<_, Error>(())
        })
    }

    fn existing_files(&self, name: &str) -> Vec<crate::manifest::FileRow> {
        self.present.get(name).cloned().unwrap_or_default()
    }

    fn publish_table(&self, file: &str) -> Result<()> {
        self.check_lock()?;
        // In the order the manifest's tables are written: `capture` last.
        let path = self.work.join(file);
        block_on(self.at.upload(file, &path)).map_err(other)
    }

    fn fetch(&self, rel: &str) -> Result<bool> {
        let dir = self.work.join(rel);
        let _ = std::fs::remove_dir_all(&dir);
        block_on(download(&self.at.child(rel), &dir))?;
        Ok(true)
    }

    fn remove_unrecorded(
        &self,
        listed: &std::collections::BTreeMap<String, Vec<crate::manifest::SegmentFileRow>>,
    ) -> Result<()> {
        let gone: Vec<String> = self
            .segments
            .iter()
            .filter(|s| !listed.contains_key(*s))
            .cloned()
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        self.remove_unlisted(&[], &gone)
    }
}

/// This run's lock: host, boot, process namespace and process, start,
/// and the name of its working directory `run_dir`.
fn lock_text(run_dir: &Path) -> String {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|h| h.trim().to_string())
            .unwrap_or_default()
    };
    let pidns = std::fs::read_link("/proc/self/ns/pid")
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    format!(
        "host={}\nboot={}\npidns={pidns}\npid={}\nstarted={}\nwork={}\n",
        read("/proc/sys/kernel/hostname"),
        read("/proc/sys/kernel/random/boot_id"),
        std::process::id(),
        now_s(),
        run_dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default()
    )
}

/// The prefix of a run's working directory's name, in the temporary
/// directory.
const WORK_PREFIX: &str = "trawl-archive-";

/// Removes the working directory a killed run named in its lock `held`:
/// only a directory of that name directly in this process's temporary
/// directory (the lock is the bucket's: its text is not trusted to name a
/// path).
fn remove_killed_work(held: &str) {
    let Some(name) = field(held, "work") else {
        return;
    };
    let plain = name.len() > WORK_PREFIX.len()
        && name.starts_with(WORK_PREFIX)
        && name[WORK_PREFIX.len()..]
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !plain {
        return;
    }
    let dir = std::env::temp_dir().join(name);
    if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
        let _ = std::fs::remove_dir_all(&dir);
    }
}

/// The lock's text with the time it was last renewed (for people; the
/// store's own time of the write decides staleness).
fn stamp(lock: &str) -> String {
    format!("{lock}renewed={}\n", now_s())
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn field<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    text.lines()
        .filter_map(|l| l.split_once('='))
        .filter(|(k, _)| *k == key)
        .map(|(_, v)| v)
        .last()
}

/// Whether `text` is the lock `lock` wrote.
fn same_run(text: &str, lock: &str) -> bool {
    ["host", "boot", "pidns", "pid", "started"]
        .iter()
        .all(|k| field(text, k) == field(lock, k))
}

/// Whether the process that holds `held` is gone: it ran on this host,
/// this boot, in this process namespace, and no such process exists.
fn holder_gone(held: &str, lock: &str) -> bool {
    let here = ["host", "boot", "pidns"]
        .iter()
        .all(|k| field(held, k).is_some() && field(held, k) == field(lock, k));
    here && field(held, "pid")
        .is_some_and(|p| p.parse::<u32>().is_ok() && !Path::new(&format!("/proc/{p}")).exists())
}

/// Creates the lock object; takes over a stale one; refuses a live one.
/// Returns the version of the lock this run wrote.
fn take_lock(at: &Location, lock: &str) -> Result<Version> {
    for _ in 0..5 {
        if let Some(v) = block_on(at.create(LOCK, stamp(lock).into_bytes())).map_err(other)? {
            // A store that ignores conditional writes lets two runs both
            // create it: the later write wins, and the other run sees it.
            let back = block_on(at.read(LOCK)).map_err(other)?;
            if back.is_some_and(|b| same_run(&String::from_utf8_lossy(&b), lock)) {
                return Ok(v);
            }
            continue;
        }
        let Some((held, version, written)) = block_on(at.read_versioned(LOCK)).map_err(other)?
        else {
            continue; // released meanwhile
        };
        let held = String::from_utf8_lossy(&held).into_owned();
        let age = SystemTime::now()
            .duration_since(written)
            .unwrap_or_default();
        let killed_here = holder_gone(&held, lock);
        if killed_here || age > STALE {
            // Replaced only if it is still the lock read: of two runs
            // taking it over, one wins.
            if let Some(v) =
                block_on(at.replace(LOCK, stamp(lock).into_bytes(), &version)).map_err(other)?
            {
                if killed_here {
                    remove_killed_work(&held);
                }
                return Ok(v);
            }
            continue;
        }
        return Err(other(format!(
            "{}: another `trawl archive ingest` is writing this archive (host {}, process {}); \
             if it was killed on another machine, its lock ({}/{LOCK}) is taken over {} minutes after it was last renewed",
            at.url(),
            field(&held, "host").unwrap_or("?"),
            field(&held, "pid").unwrap_or("?"),
            at.url(),
            STALE.as_secs() / 60
        )));
    }
    Err(other(format!(
        "{}: could not take the archive's lock",
        at.url()
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_killed_runs_directory_is_removed_and_nothing_else() {
        let dir = tempfile::Builder::new()
            .prefix(WORK_PREFIX)
            .tempdir()
            .unwrap()
            .keep();
        std::fs::write(dir.join("x.parquet"), b"x").unwrap();
        // Names a lock in a bucket could carry that are not a working
        // directory's: nothing is removed.
        let victim = tempfile::tempdir().unwrap();
        let v = victim.path().to_str().unwrap();
        let name = dir.file_name().unwrap().to_str().unwrap().to_string();
        for hostile in [
            format!("work={v}"),
            format!(
                "work={WORK_PREFIX}/../{}",
                victim.path().file_name().unwrap().to_str().unwrap()
            ),
            format!("work={WORK_PREFIX}"),
            format!("work={name}/x.parquet"),
            "work=..".to_string(),
            "pid=1".to_string(),
        ] {
            remove_killed_work(&hostile);
            assert!(
                victim.path().exists() && dir.join("x.parquet").exists(),
                "{hostile}"
            );
        }
        remove_killed_work(&format!("host=h\npid=1\nwork={name}\n"));
        assert!(!dir.exists());
        assert!(victim.path().exists());
    }
}
