//! Every committed input of every fuzz target through its reader: the
//! corpora (`fuzz/corpus/TARGET/`, minimized after the runs
//! `bench/fuzz.sh` reports) and the regression inputs
//! (`fuzz/regressions/TARGET/NAME`, one per finding, named after what it
//! pins). The targets' functions are the fuzz crate's own source
//! (`fuzz/src/lib.rs`), compiled into this test binary: the replay needs
//! no build of its own (the fuzz crate is a workspace of its own, built by
//! `cargo fuzz` with the nightly toolchain and sanitizers). A panic fails
//! the test naming the file; each input is given a time limit.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

#[path = "../../fuzz/src/lib.rs"]
#[allow(dead_code)]
mod targets;

/// The fuzzers' own limit per input is 10 s (release builds with
/// sanitizers); a debug build of this test is ~20× slower.
const LIMIT: Duration = Duration::from_secs(60);

fn fuzz_dir() -> PathBuf {
    crate::common::root().join("fuzz")
}

fn replay(dir: &Path, run: fn(&[u8])) -> usize {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut files: Vec<_> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    for f in &files {
        let data = std::fs::read(f).unwrap();
        let t = Instant::now();
        let r = std::panic::catch_unwind(|| run(&data));
        assert!(r.is_ok(), "{} panicked", f.display());
        assert!(
            t.elapsed() < LIMIT,
            "{} took {:?}",
            f.display(),
            t.elapsed()
        );
    }
    files.len()
}

#[test]
fn corpora_and_regressions_replay_without_panics() {
    let root = fuzz_dir();
    let mut total = 0;
    for (name, run) in targets::TARGETS {
        let c = replay(&root.join("corpus").join(name), *run);
        let r = replay(&root.join("regressions").join(name), *run);
        // Every target has a committed corpus.
        assert!(c > 0, "no corpus for {name}");
        eprintln!("{name}: {c} corpus inputs, {r} regressions");
        total += c + r;
    }
    assert!(total > 0);
}

/// Every target has its `fuzz_targets/NAME.rs`, is listed in `TARGETS` and
/// is a `[[bin]]` of the fuzz crate's manifest (what `cargo fuzz` builds).
#[test]
fn every_target_is_built_by_cargo_fuzz() {
    let root = fuzz_dir();
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut listed: Vec<String> = targets::TARGETS
        .iter()
        .map(|(n, _)| n.to_string())
        .collect();
    listed.sort();
    assert_eq!(names, listed);
    for n in &names {
        assert!(
            manifest.contains(&format!("name = \"{n}\"")),
            "{n} missing in Cargo.toml"
        );
    }
}
