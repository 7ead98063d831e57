//! Which directories a session reads: capture directories, or archives
//! whose subdirectories are captures, each with a unique name.

use std::path::PathBuf;

use crate::error::{Error, Result};

/// One capture directory and the name its rows get in the `capture` column.
#[derive(Clone, Debug)]
pub struct CaptureRef {
    pub name: String,
    pub dir: PathBuf,
    /// The schema version its files were written with (None: unknown,
    /// read as the current one).
    pub version: Option<i32>,
}

/// Expands the user's arguments: capture directories, or directories whose
/// subdirectories are captures (an archive).
pub fn find_captures(args: &[PathBuf]) -> Result<Vec<CaptureRef>> {
    let mut out = Vec::new();
    // Schema versions an archive's manifest states (no footer to read).
    let mut known: std::collections::HashMap<PathBuf, i32> = Default::default();
    for a in args {
        if trawl_capture::layout::is_capture(a) {
            out.push(a.clone());
            continue;
        }
        if let Some(v) = trawl_capture::layout::archive_versions(a) {
            for (name, version) in v {
                known.insert(a.join(format!("capture={name}")), version);
            }
        }
        let mut subs: Vec<PathBuf> = std::fs::read_dir(a)
            .map(|rd| {
                rd.flatten()
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .map(|e| e.path())
                    .filter(|p| trawl_capture::layout::is_capture(p))
                    .collect()
            })
            .unwrap_or_default();
        if subs.is_empty() {
            return Err(Error::NotACapture { path: a.clone() });
        }
        subs.sort();
        out.extend(subs);
    }
    // Captures of a newer layout are refused, not misread.
    let mut versions = Vec::with_capacity(out.len());
    for dir in &out {
        let found = match known.get(dir) {
            Some(&v) => Some(v),
            None => trawl_capture::layout::schema_version(dir).map_err(Error::Usage)?,
        };
        versions.push(found);
        let supported = trawl_capture::schema::SCHEMA_VERSION;
        if let Some(found) = found.filter(|&v| v > supported) {
            return Err(Error::NewerSchema {
                path: dir.clone(),
                found,
                supported,
            });
        }
    }
    // Names: the directory names, made unique.
    let mut refs: Vec<CaptureRef> = Vec::new();
    for (dir, version) in out.into_iter().zip(versions) {
        let base = dir
            .canonicalize()
            .ok()
            .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
            .unwrap_or_else(|| dir.to_string_lossy().into_owned());
        // An archive's captures are Hive partitions: `capture=NAME` is NAME.
        let base = match base.strip_prefix("capture=") {
            Some(n) if !n.is_empty() => n.to_string(),
            _ => base,
        };
        let mut name = base.clone();
        let mut k = 2;
        while refs.iter().any(|r| r.name == name) {
            name = format!("{base}#{k}");
            k += 1;
        }
        refs.push(CaptureRef { name, dir, version });
    }
    Ok(refs)
}
