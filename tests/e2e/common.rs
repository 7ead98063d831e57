use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::OnceLock;

pub fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The `trawl` under test: this build's binary, or the command named by
/// `TRAWL_TEST_BIN` (CI sets it to the `trawl` that `pip install ./python`
/// put on the PATH, and runs every test again against it).
///
/// An installed command must be the build of this tree (not an older
/// install earlier on the PATH or in a user's site-packages): its
/// `--version` names the build id of the sources this test binary was
/// compiled from, checked once per run.
pub fn trawl_exe() -> PathBuf {
    static CHECKED: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    CHECKED
        .get_or_init(|| match std::env::var_os("TRAWL_TEST_BIN") {
            Some(p) if !p.is_empty() => {
                let p = PathBuf::from(p);
                let o = Command::new(&p)
                    .arg("--version")
                    .output()
                    .unwrap_or_else(|e| panic!("TRAWL_TEST_BIN {}: {e}", p.display()));
                assert_eq!(
                    String::from_utf8_lossy(&o.stdout),
                    format!("trawl {}\n", trawl_cli::VERSION),
                    "TRAWL_TEST_BIN {} is not the build of this tree",
                    p.display()
                );
                p
            }
            _ => PathBuf::from(env!("CARGO_BIN_EXE_trawl")),
        })
        .clone()
}

pub fn fixture(name: &str) -> PathBuf {
    root().join("fixtures/perf").join(name)
}

pub fn fixture_bin() -> PathBuf {
    root().join("fixtures/perf/bin")
}

/// Runs trawl with a symbol store of its own, empty: each command learns
/// the binaries it reads from their files, as on a machine that never ran
/// trawl (what a store shares between runs is tested on its own, in
/// symbol_store.rs).
pub fn trawl(args: &[&str]) -> Output {
    let cache = tempfile::tempdir().unwrap();
    Command::new(trawl_exe())
        .env("XDG_CACHE_HOME", cache.path())
        .args(args)
        .output()
        .expect("run trawl")
}

/// Runs trawl with `HOME` set (perf's build-id cache is `$HOME/.debug`;
/// the symbol store is the one under `$HOME/.cache`).
pub fn trawl_with_home(home: &Path, args: &[&str]) -> Output {
    Command::new(trawl_exe())
        .env("HOME", home)
        .env_remove("XDG_CACHE_HOME")
        .args(args)
        .output()
        .expect("run trawl")
}

/// Runs trawl and returns stdout; panics with stderr when it fails.
pub fn trawl_ok(args: &[&str]) -> String {
    let o = trawl(args);
    assert!(
        o.status.success(),
        "trawl {args:?} failed:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `trawl ingest FILE -o CAP EXTRA...`, which must succeed.
pub fn ingest_file(file: &Path, cap: &Path, extra: &[&str]) {
    let mut args = vec![
        "ingest",
        file.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trawl_ok(&args);
}

/// Ingests a fixture into a fresh temporary capture.
pub fn ingest(fixture_name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let bin = fixture_bin();
    let jit = fixture("jit");
    ingest_file(
        &fixture(fixture_name),
        &cap,
        &[
            "--debug-dir",
            bin.to_str().unwrap(),
            "--debug-dir",
            jit.to_str().unwrap(),
        ],
    );
    (dir, cap)
}

/// A HOME for perf whose build-id cache holds the fixture binaries, so
/// perf report finds them wherever the checkout is.
pub fn perf_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        let home = tempfile::tempdir().unwrap();
        for e in std::fs::read_dir(fixture_bin()).unwrap() {
            let p = e.unwrap().path();
            let o = Command::new("perf")
                .env("HOME", home.path())
                .args(["buildid-cache", "-a"])
                .arg(&p)
                .output()
                .expect("perf must be installed (apt-get install linux-perf)");
            assert!(o.status.success(), "perf buildid-cache failed: {o:?}");
        }
        // The vdso image perf record stored: perf looks for it as
        // ~/.debug/[vdso]/BID/vdso, linked from .build-id/.
        let vdso = fixture_bin().join("kernel-vdso.so");
        let bid = trawl_symbolize::build_id_of(&vdso).unwrap();
        let dir = home.path().join(".debug/[vdso]").join(&bid);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::copy(&vdso, dir.join("vdso")).unwrap();
        let link = home.path().join(".debug/.build-id").join(&bid[..2]);
        std::fs::create_dir_all(&link).unwrap();
        let _ = std::fs::remove_file(link.join(&bid[2..]));
        std::os::unix::fs::symlink(format!("../../[vdso]/{bid}"), link.join(&bid[2..])).unwrap();
        home
    })
    .path()
}

/// perf's standard output; perf must succeed (a reference that failed
/// gives no expected value).
#[track_caller]
pub fn perf(args: &[&str]) -> String {
    let o = Command::new("perf")
        .env("HOME", perf_home())
        .args(args)
        .output()
        .expect("perf must be installed (apt-get install linux-perf)");
    assert!(
        o.status.success(),
        "perf {} failed ({}):\n{}",
        args.join(" "),
        o.status,
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Number of samples `perf script` prints.
pub fn perf_script_samples(file: &Path) -> usize {
    count_time_lines(&perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "time",
    ]))
}

/// Number of samples `perf script` prints of a file it reads to the end
/// but then fails on, saying `says` (perf 6.1 exits 255 after skipping a
/// record type it does not know: "Found 1 unknown events").
pub fn perf_script_samples_failing(file: &Path, says: &str) -> usize {
    let o = Command::new("perf")
        .env("HOME", perf_home())
        .args(["script", "-i", file.to_str().unwrap(), "-F", "time"])
        .output()
        .expect("perf must be installed (apt-get install linux-perf)");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        !o.status.success() && err.contains(says),
        "perf script {}: {} without {says:?}:\n{err}",
        file.display(),
        o.status
    );
    count_time_lines(&String::from_utf8_lossy(&o.stdout))
}

fn count_time_lines(out: &str) -> usize {
    out.lines().filter(|l| l.trim_end().ends_with(':')).count()
}

/// Parses CSV output of trawl into rows of fields (no quoting beyond what
/// arrow writes for our names).
pub fn csv_rows(s: &str) -> Vec<Vec<String>> {
    let mut rows = Vec::new();
    for line in s.lines().skip(1) {
        let mut fields = Vec::new();
        let mut cur = String::new();
        let mut q = false;
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '"' if q && chars.peek() == Some(&'"') => {
                    cur.push('"');
                    chars.next();
                }
                '"' => q = !q,
                ',' if !q => fields.push(std::mem::take(&mut cur)),
                _ => cur.push(c),
            }
        }
        fields.push(cur);
        rows.push(fields);
    }
    rows
}

/// Parses CSV output into rows keyed by the header's column names.
pub fn csv_maps(s: &str) -> Vec<std::collections::HashMap<String, String>> {
    let header: Vec<String> = csv_rows(&format!("\n{}", s.lines().next().unwrap_or("")))
        .into_iter()
        .next()
        .unwrap_or_default();
    csv_rows(s)
        .into_iter()
        .map(|r| header.iter().cloned().zip(r).collect())
        .collect()
}

/// The rows of a SQL query on a capture, as strings.
pub fn sql_rows(cap: &Path, q: &str) -> Vec<Vec<String>> {
    csv_rows(&trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        q,
        "--format",
        "csv",
    ]))
}

/// `trawl report KIND CAP EXTRA... --format csv`, which must succeed.
pub fn report_csv(kind: &str, cap: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", kind, cap.to_str().unwrap()];
    args.extend_from_slice(extra);
    args.extend(["--format", "csv"]);
    trawl_ok(&args)
}

pub fn sql_scalar(cap: &Path, q: &str) -> String {
    let out = trawl_ok(&["sql", cap.to_str().unwrap(), q, "--format", "csv"]);
    out.lines().nth(1).unwrap_or("").to_string()
}

/// A hex string (a build-id) → its bytes.
pub fn hex_to_bytes(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

/// The address of a text symbol of `bin`, as `nm` prints it.
pub fn symbol_address(bin: &Path, name: &str) -> u64 {
    let out = Command::new("nm").arg(bin).output().expect("nm");
    let text = String::from_utf8_lossy(&out.stdout);
    let l = text
        .lines()
        .find(|l| l.ends_with(&format!(" T {name}")))
        .unwrap_or_else(|| panic!("{name} not in {}", bin.display()));
    u64::from_str_radix(l.split(' ').next().unwrap(), 16).unwrap()
}

/// A time of day as text (`2026-11-22T10:29:16.24Z`, perf's
/// `2026-11-22 10:29:16.240000000`) in one form: `T` → space, no `Z`,
/// nine fraction digits.
pub fn utc_text(s: &str) -> String {
    let s = s.trim().trim_end_matches('Z').replacen('T', " ", 1);
    let (whole, frac) = s.split_once('.').unwrap_or((&s, ""));
    format!("{whole}.{frac:0<9}")
}

/// Every file below `d` (recursively).
pub fn walk(d: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(d) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// trawl refused the command as it refuses a user's mistake (see
/// `assert_refused`).
pub fn is_refusal(o: &Output) -> bool {
    matches!(o.status.code(), Some(1) | Some(2))
        && !String::from_utf8_lossy(&o.stderr).contains("panicked")
}

/// Asserts that trawl refused the command as it refuses a user's mistake:
/// exit status 1 (its error exit, `trawl: MESSAGE`) or 2 (a usage error of
/// the argument parser) — not a panic (101) or a signal, which a bare
/// `!status.success()` also accepts — with standard error saying `says`.
#[track_caller]
pub fn assert_refused(o: &Output, says: &str) {
    let err = String::from_utf8_lossy(&o.stderr);
    if std::env::var_os("TRAWL_SHOW_REFUSALS").is_some() {
        let at = std::panic::Location::caller();
        eprintln!(
            "REFUSAL {}:{} {:?} {:?}",
            at.file(),
            at.line(),
            o.status.code(),
            err.trim()
        );
    }
    assert!(is_refusal(o), "not a refusal ({}):\n{err}", o.status);
    assert!(err.contains(says), "stderr does not say {says:?}:\n{err}");
}
