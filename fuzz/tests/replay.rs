//! Every committed input of every fuzz target through its reader, on the
//! stable toolchain: the corpora (`corpus/TARGET/`, minimized after the
//! runs `bench/fuzz.sh` reports) and the regression inputs
//! (`regressions/TARGET/NAME`, one per finding, named after what it pins).
//! A panic fails the test naming the file; each input is given a time
//! limit.

use std::path::Path;
use std::time::{Duration, Instant};

/// A debug build is ~20× slower than the fuzzers' release builds, whose
/// limit is 10 s per input.
const LIMIT: Duration = Duration::from_secs(60);

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
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut total = 0;
    for (name, run) in trawl_fuzz::TARGETS {
        let c = replay(&root.join("corpus").join(name), *run);
        let r = replay(&root.join("regressions").join(name), *run);
        // Every target has a committed corpus.
        assert!(c > 0, "no corpus for {name}");
        eprintln!("{name}: {c} corpus inputs, {r} regressions");
        total += c + r;
    }
    assert!(total > 0);
}

/// Every target has its `fuzz_targets/NAME.rs` and is listed here.
#[test]
fn every_target_is_built_by_cargo_fuzz() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let manifest = std::fs::read_to_string(root.join("Cargo.toml")).unwrap();
    let mut names: Vec<String> = std::fs::read_dir(root.join("fuzz_targets"))
        .unwrap()
        .flatten()
        .map(|e| e.path().file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut listed: Vec<String> = trawl_fuzz::TARGETS
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
