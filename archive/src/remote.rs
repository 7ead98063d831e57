//! Archives in object storage (`s3://bucket/archive`, ...; see
//! `trawl_capture::store`), and raw inputs read from there.
//!
//! The archive has the local layout: `capture=NAME/<table>.parquet` and the
//! manifest at the root. A run:
//!
//! - takes the archive's lock, an object (`.trawl-archive.lock`) created
//!   only if absent (a conditional write: two runs cannot both create it).
//!   It names the host and process and is rewritten every minute; a lock
//!   whose process is gone (same host) or that was not rewritten for ten
//!   minutes is taken over. Another live run is refused.
//! - copies the manifest into a local working directory and ingests there,
//!   as into a local archive (same planning, hashing, incremental skips);
//! - uploads each capture once it is committed locally, `source.parquet`
//!   last (a prefix is a capture when it holds `source`), in parts for
//!   large tables (an interrupted part upload leaves no object), then
//!   deletes the local copy;
//! - uploads the manifest (`capture_input.parquet`, then
//!   `capture.parquet`) at most twice a second and at the end. Readers
//!   take an archive's captures from `capture.parquet`: a capture uploaded
//!   by a run killed before its manifest was, or half uploaded, is not
//!   read, and the next run ingests it again.
//!
//! Sources given as URLs are downloaded (each object under the prefix)
//! into the working directory first; the manifest records their URLs.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use trawl_capture::store::object_store::ObjectStoreExt;
use trawl_capture::store::{self, block_on, Location};
use trawl_ingest::unwind::StackUnwinder;

use crate::run::{ingest_into, Target};
use crate::{capture_dir, Error, Event, Options, Result, Summary};

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
    unwinder: &(dyn Fn() -> Option<Box<dyn StackUnwinder>> + Sync),
    progress: &mut dyn FnMut(Event<'_>),
) -> Result<Summary> {
    let work = tempfile::Builder::new()
        .prefix("trawl-archive-")
        .tempdir()
        .map_err(|e| Error::io(std::env::temp_dir(), e))?;
    // Sources in object stores, downloaded.
    let mut local_srcs = Vec::with_capacity(srcs.len());
    let mut fetched = Vec::new();
    for (k, s) in srcs.iter().enumerate() {
        if !store::is_url(s) {
            local_srcs.push(s.clone());
            continue;
        }
        let at = store::open(&s.to_string_lossy()).map_err(other)?;
        let dir = work.path().join(format!("src{k}"));
        block_on(download(&at, &dir))?;
        fetched.push((dir.clone(), at.url()));
        local_srcs.push(dir);
    }
    let mut summary = if store::is_url(archive) {
        let at = store::open(&archive.to_string_lossy()).map_err(other)?;
        let target = Remote::open(at, work.path().join("archive"))?;
        let r = ingest_into(&local_srcs, &target, opts, enrich, unwinder, progress);
        target.release();
        r?
    } else {
        std::fs::create_dir_all(archive).map_err(|e| Error::io(archive, e))?;
        ingest_into(
            &local_srcs,
            &crate::run::Local(archive),
            opts,
            enrich,
            unwinder,
            progress,
        )?
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

/// Downloads every object under `at` into `dir`, keeping their relative
/// keys as paths (keys that would leave `dir` are skipped).
async fn download(at: &Location, dir: &Path) -> Result<()> {
    let objects = at.list().await.map_err(other)?;
    if objects.is_empty() {
        return Err(other(format!("{}: no objects", at.url())));
    }
    let strip = match at.prefix.as_ref() {
        "" => String::new(),
        p => format!("{p}/"),
    };
    for o in objects {
        let key = o.location.as_ref();
        // A prefix naming one object is that object.
        let rel = key
            .strip_prefix(&strip)
            .unwrap_or_else(|| key.rsplit('/').next().unwrap_or(key));
        let safe = !rel.is_empty()
            && rel
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        if !safe {
            continue;
        }
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        }
        let url = at.url_of(&o.location);
        let got = match at.store.get(&o.location).await {
            Ok(g) => g.bytes().await,
            Err(e) => Err(e),
        };
        let bytes = got.map_err(|e| other(store::describe(&url, &e)))?;
        std::fs::write(&path, &bytes).map_err(|e| Error::io(&path, e))?;
    }
    Ok(())
}

/// An archive in an object store, ingested through a local working
/// directory.
struct Remote {
    at: Location,
    work: PathBuf,
    /// Captures present (a `source.parquet`) when the run started.
    present: std::collections::HashSet<String>,
    /// This run's lock, as written.
    lock: String,
    stop: std::sync::Arc<AtomicBool>,
    heartbeat: Option<std::thread::JoinHandle<()>>,
}

impl Remote {
    /// Takes the archive's lock, copies its manifest into `work` and lists
    /// its captures.
    fn open(at: Location, work: PathBuf) -> Result<Remote> {
        std::fs::create_dir_all(&work).map_err(|e| Error::io(&work, e))?;
        let lock = lock_text();
        take_lock(&at, &lock)?;
        let mut r = Remote {
            at,
            work,
            present: Default::default(),
            lock,
            stop: Default::default(),
            heartbeat: None,
        };
        let prepared = r.prepare();
        if let Err(e) = prepared {
            r.release();
            return Err(e);
        }
        let (at, lock, stop) = (r.at.clone(), r.lock.clone(), r.stop.clone());
        r.heartbeat = Some(std::thread::spawn(move || {
            let mut last = SystemTime::now();
            while !stop.load(Ordering::Relaxed) {
                std::thread::sleep(Duration::from_millis(200));
                if last.elapsed().unwrap_or_default() >= HEARTBEAT {
                    let _ = block_on(at.write(LOCK, stamp(&lock).into_bytes()));
                    last = SystemTime::now();
                }
            }
        }));
        Ok(r)
    }

    fn prepare(&mut self) -> Result<()> {
        for t in ["capture_input", "capture"] {
            let name = format!("{t}.parquet");
            if let Some(b) = block_on(self.at.read(&name)).map_err(other)? {
                let path = self.work.join(&name);
                std::fs::write(&path, &b).map_err(|e| Error::io(&path, e))?;
            }
        }
        for o in block_on(self.at.list()).map_err(other)? {
            let key = o.location.as_ref();
            if let Some(name) = key
                .strip_suffix("/source.parquet")
                .and_then(|d| d.rsplit('/').next())
                .and_then(crate::capture_name)
            {
                self.present.insert(name.to_string());
            }
        }
        Ok(())
    }

    /// Stops the heartbeat and removes the lock (if it is still this
    /// run's).
    fn release(&self) {
        self.stop.store(true, Ordering::Relaxed);
        let ours = block_on(self.at.read(LOCK))
            .ok()
            .flatten()
            .is_some_and(|b| same_run(&String::from_utf8_lossy(&b), &self.lock));
        if ours {
            let _ = block_on(self.at.delete(LOCK));
        }
    }
}

impl Drop for Remote {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.heartbeat.take() {
            let _ = h.join();
        }
    }
}

impl Target for Remote {
    fn local(&self) -> &Path {
        &self.work
    }

    fn has(&self, name: &str) -> bool {
        self.present.contains(name)
    }

    fn publish(&self, name: &str) -> Result<()> {
        let dir = capture_dir(&self.work, name);
        let rel = format!("capture={name}");
        let mut files: Vec<String> = std::fs::read_dir(&dir)
            .map_err(|e| Error::io(&dir, e))?
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".parquet"))
            .collect();
        // `source` last: until it is there, the prefix is not a capture.
        files.sort_by_key(|n| (n == "source.parquet", n.clone()));
        block_on(async {
            // What an earlier version of the capture had and this one has
            // not, and its `source`, go first.
            let old = self.at.child(&rel).list().await.map_err(other)?;
            for o in old {
                let file = o.location.as_ref().rsplit('/').next().unwrap_or("");
                if file == "source.parquet" || !files.iter().any(|f| f == file) {
                    self.at
                        .store
                        .delete(&o.location)
                        .await
                        .map_err(|e| other(store::describe(&self.at.url_of(&o.location), &e)))?;
                }
            }
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

    fn publish_manifest(&self) -> Result<()> {
        // Inputs first: a reader never sees a capture row whose inputs are
        // missing.
        for name in ["capture_input.parquet", "capture.parquet"] {
            let path = self.work.join(name);
            block_on(self.at.upload(name, &path)).map_err(other)?;
        }
        Ok(())
    }
}

/// This run's lock: host, process, start.
fn lock_text() -> String {
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    format!(
        "host={host}\npid={}\nstarted={}\n",
        std::process::id(),
        now_s()
    )
}

/// The lock's text with the time it was last rewritten.
fn stamp(lock: &str) -> String {
    format!("{lock}heartbeat={}\n", now_s())
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
    ["host", "pid", "started"]
        .iter()
        .all(|k| field(text, k) == field(lock, k))
}

/// Creates the lock object; takes over a stale one; refuses a live one.
fn take_lock(at: &Location, lock: &str) -> Result<()> {
    for _ in 0..3 {
        if block_on(at.create(LOCK, stamp(lock).into_bytes())).map_err(other)? {
            return Ok(());
        }
        let Some(held) = block_on(at.read(LOCK)).map_err(other)? else {
            continue; // released meanwhile
        };
        let held = String::from_utf8_lossy(&held).into_owned();
        let last = field(&held, "heartbeat")
            .or_else(|| field(&held, "started"))
            .and_then(|t| t.parse::<u64>().ok())
            .unwrap_or(0);
        let here = field(&held, "host") == field(lock, "host");
        let gone =
            here && field(&held, "pid").is_some_and(|p| !Path::new(&format!("/proc/{p}")).exists());
        if gone || now_s().saturating_sub(last) > STALE.as_secs() {
            block_on(at.delete(LOCK)).map_err(other)?;
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
