//! The user guide (`docs/guide/*.md`) and README cannot go stale: every
//! ```` ```console ```` block is run and its output compared with what the
//! page shows.
//!
//! A block holds commands (`$ ...`, run with `sh -c` so pipes work; a
//! line ending in `\` continues) each followed by its standard output.
//! Each page runs in a fresh directory holding a `fixtures` link to the
//! checkout's fixtures and `trawl` first on PATH, its blocks in order (so
//! a page ingests what it later queries). Trailing spaces are ignored.
//! `TRAWL_UPDATE_DOCS=1 cargo test --test e2e guide` rewrites the outputs
//! in place instead of comparing them.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

/// A console block: where its lines are in the page, and its commands
/// with the output shown.
struct Block {
    start: usize,
    end: usize,
    steps: Vec<(String, Vec<String>)>,
}

fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if lines[i].trim_end() == "```console" {
            let start = i + 1;
            let mut j = start;
            while j < lines.len() && lines[j].trim_end() != "```" {
                j += 1;
            }
            let mut steps: Vec<(String, Vec<String>)> = Vec::new();
            let mut k = start;
            while k < j {
                let l = lines[k];
                if let Some(cmd) = l.strip_prefix("$ ") {
                    let mut cmd = cmd.to_string();
                    while cmd.ends_with('\\') && k + 1 < j {
                        k += 1;
                        cmd.pop();
                        cmd.push('\n');
                        cmd.push_str(lines[k]);
                    }
                    steps.push((cmd, Vec::new()));
                } else if let Some(last) = steps.last_mut() {
                    last.1.push(l.trim_end().to_string());
                }
                k += 1;
            }
            out.push(Block {
                start,
                end: j,
                steps,
            });
            i = j + 1;
        } else {
            i += 1;
        }
    }
    out
}

/// The pages: README and every page of the guide.
fn pages() -> Vec<PathBuf> {
    let mut v = vec![root().join("README.md")];
    let mut g: Vec<PathBuf> = std::fs::read_dir(root().join("docs/guide"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "md"))
        .collect();
    g.sort();
    v.extend(g);
    v
}

/// Runs `cmd` as a new user would: in `dir`, with `dir/.cache` as the
/// symbol store (one per page, not the one of the tests around it).
fn run(dir: &Path, bin: &Path, cmd: &str) -> Vec<String> {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let o = Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .current_dir(dir)
        .env("PATH", path)
        .env("COLUMNS", "200")
        .env("XDG_CACHE_HOME", dir.join(".cache"))
        .env_remove("DEBUGINFOD_URLS")
        .output()
        .unwrap();
    assert!(
        o.status.success(),
        "`{cmd}` failed in {}:\n{}",
        dir.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .map(|l| l.trim_end().to_string())
        .collect()
}

#[test]
fn guide_examples_are_what_trawl_prints() {
    let update = std::env::var_os("TRAWL_UPDATE_DOCS").is_some();
    let bin = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(crate::common::trawl_exe(), bin.path().join("trawl")).unwrap();
    let mut checked = 0;
    let mut stale = Vec::new();
    for page in pages() {
        let text = std::fs::read_to_string(&page).unwrap();
        let bs = blocks(&text);
        if bs.is_empty() {
            continue;
        }
        let dir = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(root().join("fixtures"), dir.path().join("fixtures")).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        // Rewritten from the last block up, so earlier line numbers hold.
        let mut rewrites = Vec::new();
        for b in &bs {
            let mut new_body = Vec::new();
            for (cmd, shown) in &b.steps {
                // Continued lines are one command line.
                let got = run(dir.path(), bin.path(), &cmd.replace('\n', " "));
                checked += 1;
                if &got != shown {
                    stale.push(format!(
                        "{}: `{cmd}`\n--- shown\n{}\n--- printed\n{}",
                        page.strip_prefix(root()).unwrap_or(&page).display(),
                        shown.join("\n"),
                        got.join("\n")
                    ));
                }
                // The command as written: continuation lines end in `\`.
                let parts: Vec<&str> = cmd.split('\n').collect();
                for (k, c) in parts.iter().enumerate() {
                    let cont = if k + 1 < parts.len() { "\\" } else { "" };
                    let lead = if k == 0 { "$ " } else { "" };
                    new_body.push(format!("{lead}{c}{cont}"));
                }
                new_body.extend(got);
            }
            rewrites.push((b.start, b.end, new_body));
        }
        if update {
            for (s, e, body) in rewrites.into_iter().rev() {
                lines.splice(s..e, body);
            }
            std::fs::write(&page, lines.join("\n") + "\n").unwrap();
        }
    }
    assert!(checked > 0, "no console blocks found");
    if !update {
        assert!(
            stale.is_empty(),
            "{} example(s) differ from what trawl prints (TRAWL_UPDATE_DOCS=1 rewrites them):\n\n{}",
            stale.len(),
            stale.join("\n\n")
        );
    }
}

#[test]
fn demo_tours_every_kind_of_input() {
    // `trawl demo` runs the README's tour: each kind of input ingested and
    // its headline report printed.
    let out = trawl_ok(&["demo"]);
    for want in [
        "$ trawl report hotspots hot",
        "spin_a",
        "$ trawl report unfreed app",
        "cpu_phase",
        "$ trawl report exhaustion metrics",
        "$ trawl report page-reuse pages",
        "$ trawl report energy energy --by function",
        "p3_B",
        "$ trawl sql hot",
    ] {
        assert!(out.contains(want), "demo output lacks {want:?}:\n{out}");
    }
}
