//! The analyses as data: every `tests/sql/*.slt` file is a list of SQL
//! queries over fixture captures with their expected rows (and where each
//! expected value comes from), run through `trawl sql`.

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

fn run_file(path: &Path) -> usize {
    let text = std::fs::read_to_string(path).unwrap();
    let mut caps: HashMap<String, (tempfile::TempDir, PathBuf)> = HashMap::new();
    let mut current: Option<PathBuf> = None;
    let mut n = 0;
    for (at, b) in parse(&text) {
        let here = format!("{}:{at}", path.display());
        match b {
            Block::Capture(f) => {
                let e = caps.entry(f.clone()).or_insert_with(|| ingest(&f));
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
                assert!(!o.status.success() && err.contains(&want), "{here}: {err}");
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
