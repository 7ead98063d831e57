//! The analyses as data: every `tests/sql/*.slt` file is a list of SQL
//! queries over fixture captures with their expected rows (and where each
//! expected value comes from), run through `trawl sql`. See
//! tests/sql/stack_analyses.slt for the format.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::common::*;

enum Block {
    Capture(String),
    Query { sql: String, rows: Vec<String> },
    Error { want: String, sql: String },
}

fn parse(text: &str) -> Vec<(usize, Block)> {
    let mut out = Vec::new();
    let lines: Vec<&str> = text.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i].trim_end();
        let at = i + 1;
        i += 1;
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        if let Some(f) = l.strip_prefix("capture ") {
            out.push((at, Block::Capture(f.trim().to_string())));
        } else if l == "query" {
            let mut sql = String::new();
            while i < lines.len() && lines[i].trim_end() != "----" {
                sql.push_str(lines[i]);
                sql.push('\n');
                i += 1;
            }
            i += 1;
            let mut rows = Vec::new();
            while i < lines.len() && !lines[i].trim().is_empty() {
                rows.push(lines[i].trim_end().to_string());
                i += 1;
            }
            out.push((at, Block::Query { sql, rows }));
        } else if let Some(want) = l.strip_prefix("error ") {
            let mut sql = String::new();
            while i < lines.len() && !lines[i].trim().is_empty() {
                sql.push_str(lines[i]);
                sql.push('\n');
                i += 1;
            }
            out.push((
                at,
                Block::Error {
                    want: want.to_string(),
                    sql,
                },
            ));
        } else {
            panic!("line {at}: unknown block {l:?}");
        }
    }
    out
}

/// `capture hot-fp.data` ingests a perf fixture (fixtures/perf);
/// `capture AREA/FILE...` ingests fixtures/AREA/FILE (and any further
/// files, e.g. a memory log and its maps) with fixtures/AREA/bin as the
/// debug directory.
fn capture(spec: &str) -> (tempfile::TempDir, PathBuf) {
    let files: Vec<&str> = spec.split_whitespace().collect();
    let Some(area) = files[0].split_once('/').map(|(a, _)| a) else {
        return ingest(spec);
    };
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let fx = root().join("fixtures");
    let mut args: Vec<String> = vec!["ingest".into()];
    args.extend(
        files
            .iter()
            .map(|f| fx.join(f).to_string_lossy().into_owned()),
    );
    args.extend([
        "--debug-dir".into(),
        fx.join(area).join("bin").to_string_lossy().into_owned(),
        "-o".into(),
        cap.to_string_lossy().into_owned(),
    ]);
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    trawl_ok(&refs);
    (dir, cap)
}

fn run_file(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut caps: HashMap<String, (tempfile::TempDir, PathBuf)> = HashMap::new();
    let mut current: Option<PathBuf> = None;
    let mut n = 0;
    for (at, b) in parse(&text) {
        let here = format!("{}:{at}", path.display());
        match b {
            Block::Capture(f) => {
                let e = caps.entry(f.clone()).or_insert_with(|| capture(&f));
                current = Some(e.1.clone());
            }
            Block::Query { sql, rows } => {
                let cap = current
                    .as_ref()
                    .unwrap_or_else(|| panic!("{here}: no capture"));
                let out = trawl_ok(&["sql", cap.to_str().unwrap(), &sql, "--format", "csv"]);
                let got: Vec<&str> = out.lines().skip(1).collect();
                assert_eq!(got, rows, "{here}: {sql}");
                n += 1;
            }
            Block::Error { want, sql } => {
                let cap = current
                    .as_ref()
                    .unwrap_or_else(|| panic!("{here}: no capture"));
                let o = trawl(&["sql", cap.to_str().unwrap(), &sql]);
                let err = String::from_utf8_lossy(&o.stderr);
                assert!(
                    is_refusal(&o) && err.contains(&want),
                    "{here}: not a refusal saying {want:?} ({}):\n{err}",
                    o.status
                );
                n += 1;
            }
        }
    }
    n
}

#[test]
fn sql_files_give_their_expected_rows() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/sql");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "slt"))
        .collect();
    files.sort();
    assert!(!files.is_empty());
    for f in files {
        assert!(run_file(&f) > 0, "{}: no queries", f.display());
    }
}
