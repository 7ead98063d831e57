//! Which inputs make one capture: by default the raw inputs directly in
//! one directory (a run's perf.data, strace dumps, vmstat log, RAPL
//! readings), or each file on its own (`Grouping::File`).

use std::path::{Path, PathBuf};

use crate::{Error, Result};

#[derive(Clone, Debug, Default)]
pub enum Grouping {
    /// The inputs directly inside one directory are one capture, named by
    /// the directory's path under the source (`a/b` → `a.b`).
    #[default]
    Directory,
    /// Every input file is a capture of its own, named by its path under
    /// the source.
    File,
    /// Inputs are grouped by what the pattern matches in their path under
    /// the source (`/`-separated; a file given as a source: its name): its
    /// first group if it has one, else the whole match, which also names
    /// the capture. Inputs it does not match are skipped.
    Pattern(regex::Regex),
}

/// A capture to make: its name and its input files (sorted).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub name: String,
    pub inputs: Vec<PathBuf>,
}

/// The captures the sources make, and the files that are not inputs
/// trawl reads (with why). Directories are walked in name order without
/// following symbolic links; hidden entries and trawl's own output
/// (capture and archive directories) are left out. A file is an input if
/// its first bytes are of a format trawl reads, or if `known` says it was
/// one (its format is then not read here: whoever finds it changed since
/// reads it again, see [`crate::run`]).
pub fn plan(
    srcs: &[PathBuf],
    grouping: &Grouping,
    known: &(dyn Fn(&Path) -> bool + Sync),
) -> Result<(Vec<Planned>, Vec<(PathBuf, String)>)> {
    let mut out: Vec<Planned> = Vec::new();
    let mut skipped = Vec::new();
    for src in srcs {
        let meta = std::fs::symlink_metadata(src).map_err(|e| Error::io(src, e))?;
        if meta.is_file() {
            match trawl_ingest::input_format(src) {
                Ok(_) if matches!(grouping, Grouping::Pattern(_)) => out.push(Planned {
                    name: file_name(src),
                    inputs: vec![src.clone()],
                }),
                Ok(_) => out.push(Planned {
                    name: name_of(&[file_name(src)]),
                    inputs: vec![src.clone()],
                }),
                Err(e) => skipped.push((src.clone(), e.to_string())),
            }
            continue;
        }
        if !meta.is_dir() {
            skipped.push((src.clone(), "not a file or directory".into()));
            continue;
        }
        let root_name = file_name(&std::path::absolute(src).unwrap_or(src.clone()));
        let walk_as = match grouping {
            Grouping::Pattern(_) => Grouping::File,
            Grouping::Directory => Grouping::Directory,
            Grouping::File => Grouping::File,
        };
        let mut found = Vec::new();
        walk(
            src,
            src,
            &root_name,
            walk_as,
            known,
            &mut found,
            &mut skipped,
        )?;
        if let Grouping::Pattern(_) = grouping {
            for p in &mut found {
                // The path under the source, which the pattern reads.
                let input = &p.inputs[0];
                p.name = input
                    .strip_prefix(src)
                    .map(|r| {
                        r.iter()
                            .map(|c| c.to_string_lossy())
                            .collect::<Vec<_>>()
                            .join("/")
                    })
                    .unwrap_or_else(|_| file_name(input));
            }
        }
        out.extend(found);
    }
    if let Grouping::Pattern(re) = grouping {
        out = group_by(re, out, &mut skipped);
    }
    // Names are unique: a repeated one gets `~2`, `~3`, ...
    let mut seen = std::collections::HashSet::new();
    for p in &mut out {
        let base = p.name.clone();
        let mut k = 2;
        while !seen.insert(p.name.clone()) {
            p.name = format!("{base}~{k}");
            k += 1;
        }
    }
    Ok((out, skipped))
}

/// `inputs` (one each, named by their paths under their sources) grouped
/// by what `re` matches in those paths.
fn group_by(
    re: &regex::Regex,
    inputs: Vec<Planned>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Vec<Planned> {
    let mut groups: std::collections::BTreeMap<String, Vec<PathBuf>> = Default::default();
    for p in inputs {
        let key = re.captures(&p.name).and_then(|c| {
            c.get(1)
                .or_else(|| c.get(0))
                .map(|m| m.as_str().to_string())
        });
        match key.filter(|k| !k.is_empty()) {
            Some(k) => groups.entry(k).or_default().extend(p.inputs),
            None => skipped.extend(p.inputs.into_iter().map(|i| {
                (
                    i,
                    format!(
                        "its path {:?} does not match --group-by {}",
                        p.name,
                        re.as_str()
                    ),
                )
            })),
        }
    }
    groups
        .into_iter()
        .map(|(key, mut inputs)| {
            inputs.sort();
            Planned {
                name: name_of(&[key.replace('/', ".")]),
                inputs,
            }
        })
        .collect()
}

fn walk(
    root: &Path,
    dir: &Path,
    root_name: &str,
    grouping: Grouping,
    known: &(dyn Fn(&Path) -> bool + Sync),
    out: &mut Vec<Planned>,
    skipped: &mut Vec<(PathBuf, String)>,
) -> Result<()> {
    // Entries with their types as the directory listing gives them (no
    // stat per entry: an archive's source tree has a directory per run).
    let mut entries: Vec<(PathBuf, Option<std::fs::FileType>)> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .map(|e| (e.path(), e.file_type().ok()))
        .collect();
    // trawl's output (a capture, an archive), not raw inputs.
    let named = |n: &str| {
        entries
            .iter()
            .any(|(p, t)| p.file_name().is_some_and(|f| f == n) && t.is_some_and(|t| t.is_file()))
    };
    if named("source.parquet") || named("capture.parquet") {
        return Ok(());
    }
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    let rel: Vec<String> = dir
        .strip_prefix(root)
        .map(|r| r.iter().map(|c| c.to_string_lossy().into_owned()).collect())
        .unwrap_or_default();
    let typed: Vec<(PathBuf, std::fs::FileType)> = entries
        .into_iter()
        .filter_map(|(p, t)| match t {
            Some(t) => Some((p, t)),
            None => std::fs::symlink_metadata(&p)
                .ok()
                .map(|m| (p, m.file_type())),
        })
        .collect();
    // Subdirectories walked on every core (a source tree of 100,000 runs
    // is 100,000 directories, each input's first bytes read), their
    // captures kept in name order.
    type Walked = (Vec<Planned>, Vec<(PathBuf, String)>);
    let mut subs: std::collections::VecDeque<Result<Walked>> = {
        use rayon::prelude::*;
        typed
            .par_iter()
            .filter(|(_, t)| t.is_dir())
            .map(|(p, _)| {
                let (mut o, mut s) = (Vec::new(), Vec::new());
                walk(root, p, root_name, grouping.clone(), known, &mut o, &mut s)?;
                Ok((o, s))
            })
            .collect::<Vec<_>>()
            .into()
    };
    let mut inputs = Vec::new();
    for (p, m) in typed {
        if m.is_dir() {
            let (o, s) = subs.pop_front().expect("one walk per directory")?;
            out.extend(o);
            skipped.extend(s);
        } else if m.is_file() && known(&p) {
            inputs.push(p);
        } else if m.is_file() {
            match trawl_ingest::input_format(&p) {
                Ok(_) => inputs.push(p),
                Err(e) => skipped.push((p, e.to_string())),
            }
        } else {
            skipped.push((
                p,
                "not a regular file (symbolic links are not followed)".into(),
            ));
        }
    }
    let dir_parts = if rel.is_empty() {
        vec![root_name.to_string()]
    } else {
        rel
    };
    match grouping {
        Grouping::Directory if !inputs.is_empty() => out.push(Planned {
            name: name_of(&dir_parts),
            inputs,
        }),
        Grouping::Directory => {}
        Grouping::File | Grouping::Pattern(_) => {
            for p in inputs {
                let mut parts = dir_parts.clone();
                parts.push(file_name(&p));
                out.push(Planned {
                    name: name_of(&parts),
                    inputs: vec![p],
                });
            }
        }
    }
    Ok(())
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "input".into())
}

/// A capture name from path components: joined with `.`, every character
/// outside `[A-Za-z0-9._-]` replaced by `_` (names are directory names
/// and Hive partition values, and must not need escaping).
fn name_of(parts: &[String]) -> String {
    let s: String = parts
        .join(".")
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    let s = s.trim_start_matches('.').to_string();
    if s.is_empty() {
        "capture".into()
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A flat directory of two runs' files, named by run, and one file no
    /// run names: grouped by the pattern's group, the stray file skipped.
    #[test]
    fn inputs_grouped_by_a_pattern() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("flat");
        std::fs::create_dir_all(src.join("sub")).unwrap();
        let strace = "1 1700000000.000000 getpid() = 1 <0.000001>\n";
        for f in [
            "r1-a.strace",
            "r1-b.strace",
            "r2-a.strace",
            "sub/r2-c.strace",
            "x.strace",
        ] {
            std::fs::write(src.join(f), strace).unwrap();
        }
        let re = regex::Regex::new(r"(r[0-9]+)-").unwrap();
        let (planned, skipped) = plan(std::slice::from_ref(&src), &Grouping::Pattern(re), &|_| {
            false
        })
        .unwrap();
        let got: Vec<(String, Vec<String>)> = planned
            .iter()
            .map(|p| {
                let files = p
                    .inputs
                    .iter()
                    .map(|i| i.strip_prefix(&src).unwrap().display().to_string())
                    .collect();
                (p.name.clone(), files)
            })
            .collect();
        assert_eq!(
            got,
            [
                (
                    "r1".to_string(),
                    vec!["r1-a.strace".to_string(), "r1-b.strace".to_string()]
                ),
                (
                    "r2".to_string(),
                    vec!["r2-a.strace".to_string(), "sub/r2-c.strace".to_string()]
                ),
            ]
        );
        assert_eq!(skipped.len(), 1);
        assert!(skipped[0].0.ends_with("x.strace"), "{skipped:?}");
        assert!(
            skipped[0].1.contains("does not match --group-by"),
            "{skipped:?}"
        );
    }

    #[test]
    fn names_are_safe_partition_values() {
        assert_eq!(
            name_of(&["nightly".into(), "run 1".into()]),
            "nightly.run_1"
        );
        assert_eq!(name_of(&["a=b/c".into()]), "a_b_c");
        assert_eq!(name_of(&["..".into()]), "capture");
    }
}
