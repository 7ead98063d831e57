//! `trawl archive compact`: an archive's small segments merged into large
//! ones, the rows of captures replaced since left behind, and the captures
//! of an earlier layout (`capture=NAME/`, a directory each) moved into
//! segments, so that what a question costs stays proportional to the rows
//! it reads (as Delta Lake's and Iceberg's `OPTIMIZE` rewrite small files).
//!
//! Safe to kill at any moment: each new segment is built in the staging
//! directory, renamed into place whole, then recorded in the manifest
//! (its captures now read from it; the segment or directory they came from
//! still holds the rest until they move too); only once the manifest names
//! none of a segment's or directory's captures is it removed. An archive in
//! an object store is compacted the same way through a local working
//! directory, under its lock: the segments merged are downloaded one at a
//! time, each new segment uploaded before the manifest naming it.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;

use crate::manifest::{
    read_current_files, read_manifest, read_segment_files, write_manifest, Files, SegmentFileRow,
    Status,
};
use crate::run::Target;
use crate::segment::{Segment, SEGMENT_ROWS};
use crate::{Error, Result};

/// What a compaction did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Compacted {
    /// Captures moved into new segments.
    pub captures: usize,
    /// Segments merged (and removed), and capture directories moved.
    pub segments_merged: usize,
    pub directories: usize,
    /// Segments written.
    pub segments_written: usize,
}

/// One thing to move into the new segments.
enum Source {
    /// A segment, with its captures the manifest places there.
    Segment(String, Vec<(String, HashMap<String, (i64, i64)>)>),
    /// A capture in a directory of its own.
    Directory(String),
}

/// [`crate::compact`] of the archive in directory `archive`.
pub(crate) fn compact_local(archive: &Path) -> Result<Compacted> {
    if !archive.join("capture.parquet").is_file() {
        return Err(Error::Other(format!(
            "{}: not an archive (no capture.parquet)",
            archive.display()
        )));
    }
    let lock = crate::run::lock_archive(
        archive,
        "another `trawl archive` run is writing this archive",
    )?;
    let r = compact_into(&crate::run::Local(archive));
    drop(lock);
    r
}

/// [`compact`] of the archive whose manifest is in `target`'s directory,
/// its lock held.
pub(crate) fn compact_into(target: &dyn Target) -> Result<Compacted> {
    let archive = target.local();
    let (caps, inputs) = read_manifest(archive)?;
    let mut caps: BTreeMap<String, crate::manifest::CaptureRow> =
        caps.into_iter().map(|c| (c.capture.clone(), c)).collect();
    // Where each capture's rows are, to plan what moves.
    let listed = read_current_files(archive, &caps)?;
    // The files of the captures moved.
    let mut files = Files::default();
    let mut seg_files: BTreeMap<String, Vec<SegmentFileRow>> = BTreeMap::new();
    for f in read_segment_files(archive)? {
        seg_files.entry(f.segment.clone()).or_default().push(f);
    }
    target.remove_unrecorded(&seg_files)?;

    // What moves: small segments, segments with rows of captures gone,
    // captures in directories.
    let per_capture_rows = |rows: &[SegmentFileRow]| -> i64 {
        rows.iter()
            .filter(|f| trawl_capture::schema::table(&f.table_name).is_some_and(|d| !d.is_shared()))
            .map(|f| f.rows)
            .sum()
    };
    let mut sources: Vec<(i64, Source)> = Vec::new();
    for (seg, rows) in &seg_files {
        let mut live: Vec<(String, HashMap<String, (i64, i64)>)> = Vec::new();
        let mut live_rows = 0;
        for c in caps
            .values()
            .filter(|c| c.status == Status::Ok && c.segment.as_deref() == Some(seg.as_str()))
        {
            let mut t = HashMap::new();
            for f in listed.get(&c.capture).into_iter().flatten() {
                if let (Some((s, first)), Some(n)) = (&f.segment, f.rows) {
                    if **s == **seg {
                        t.insert(f.table_name.to_string(), (*first, n));
                        live_rows += n;
                    }
                }
            }
            live.push((c.capture.clone(), t));
        }
        let total = per_capture_rows(rows);
        if total < SEGMENT_ROWS / 2 || live_rows < total {
            sources.push((live_rows, Source::Segment(seg.clone(), live)));
        }
    }
    for c in caps
        .values()
        .filter(|c| c.status == Status::Ok && c.segment.is_none())
    {
        if target.has(&c.capture) {
            let n = listed
                .get(&c.capture)
                .map_or(0, |f| f.iter().filter_map(|f| f.rows).sum());
            sources.push((n, Source::Directory(c.capture.clone())));
        }
    }
    let mut done = Compacted::default();
    let only_one_clean = sources.len() == 1
        && matches!(&sources[0].1, Source::Segment(s, _) if {
            let total = per_capture_rows(&seg_files[s]);
            sources[0].0 == total
        });
    if sources.is_empty() || only_one_clean {
        return Ok(done);
    }

    let save = |caps: &BTreeMap<String, crate::manifest::CaptureRow>,
                files: &mut Files,
                seg_files: &BTreeMap<String, Vec<SegmentFileRow>>|
     -> Result<()> {
        let segs: Vec<&SegmentFileRow> = seg_files.values().flatten().collect();
        write_manifest(
            archive,
            caps,
            &inputs.iter().collect::<Vec<_>>(),
            files,
            &segs,
            &|f| target.publish_table(f),
        )
    };
    let staging = archive.join(crate::run::STAGING);
    let mut n = 0usize;
    let mut seg: Option<Segment> = None;
    let mut moved_from: Vec<String> = Vec::new();
    let mut moved_dirs: Vec<String> = Vec::new();
    let commit = |s: Segment,
                  caps: &mut BTreeMap<String, crate::manifest::CaptureRow>,
                  files: &mut Files,
                  seg_files: &mut BTreeMap<String, Vec<SegmentFileRow>>|
     -> Result<usize> {
        let (name, captures) = crate::run::record_segment(s, target, caps, files, seg_files)?;
        for capture in &captures {
            if let Some(c) = caps.get_mut(capture) {
                c.segment = Some(name.clone());
            }
        }
        save(caps, files, seg_files)?;
        Ok(captures.len())
    };
    for (rows, src) in sources {
        if seg
            .as_ref()
            .is_some_and(|s| s.capture_rows() + rows > SEGMENT_ROWS && !s.is_empty())
        {
            let s = seg.take().expect("some");
            done.captures += commit(s, &mut caps, &mut files, &mut seg_files)?;
            done.segments_written += 1;
        }
        if seg.is_none() {
            n += 1;
            let name = crate::run::segment_name(n);
            seg = Some(Segment::new(
                name.clone(),
                staging.join(format!("segment={name}")),
            )?);
        }
        let s = seg.as_mut().expect("made");
        match src {
            // Nothing of it is read any more.
            Source::Segment(name, live) if live.is_empty() => moved_from.push(name),
            Source::Segment(name, live) => {
                let rel = format!("segment={name}");
                with_fetched(target, &rel, |dir| s.add_segment(dir, &live))?;
                moved_from.push(name);
            }
            Source::Directory(name) => {
                let rel = format!("capture={name}");
                with_fetched(target, &rel, |dir| s.add(&name, dir))?;
                moved_dirs.push(name);
            }
        }
    }
    if let Some(s) = seg.take().filter(|s| !s.is_empty()) {
        done.captures += commit(s, &mut caps, &mut files, &mut seg_files)?;
        done.segments_written += 1;
    }
    // The manifest names none of their captures now: removed.
    for s in &moved_from {
        seg_files.remove(s);
    }
    save(&caps, &mut files, &seg_files)?;
    target.remove_unlisted(&moved_dirs, &moved_from)?;
    let _ = std::fs::remove_dir(&staging);
    done.segments_merged = moved_from.len();
    done.directories = moved_dirs.len();
    Ok(done)
}

/// Runs `f` on the archive's directory `rel` (`segment=NAME`,
/// `capture=NAME`) as `target` makes it readable locally, and removes it
/// after when it was downloaded for this.
fn with_fetched(target: &dyn Target, rel: &str, f: impl FnOnce(&Path) -> Result<()>) -> Result<()> {
    let dir = target.local().join(rel);
    let fetched = target.fetch(rel)?;
    let r = f(&dir);
    if fetched {
        let _ = std::fs::remove_dir_all(&dir);
    }
    r
}
