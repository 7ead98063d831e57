//! What a user sees of the `trawl` command itself — exit statuses, Ctrl-C,
//! a closed pipe, colours and the progress bar on a terminal — whichever
//! way it was installed: these tests run against this build's binary, and
//! CI runs them again against the `trawl` that `pip install ./python` put
//! on the PATH (`TRAWL_TEST_BIN`), which must behave the same.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::{fixture, trawl as run, trawl_exe};

/// 0 done (with `--version` and `--help` on stdout), 2 bad arguments (clap's
/// usage on stderr), 1 a command that failed (`trawl: ` and the cause).
#[test]
fn exit_statuses_are_the_programs() {
    let v = run(&["--version"]);
    assert_eq!(v.status.code(), Some(0));
    assert_eq!(
        String::from_utf8_lossy(&v.stdout),
        format!("trawl {}\n", trawl_cli::VERSION)
    );
    let h = run(&["--help"]);
    assert_eq!(h.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&h.stdout).contains("Usage: trawl [OPTIONS] <COMMAND>"));

    let bad = run(&["report", "hotspots", "--no-such-flag"]);
    assert_eq!(bad.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(
        err.contains("unexpected argument '--no-such-flag'"),
        "{err}"
    );
    assert!(bad.stdout.is_empty());

    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-capture");
    let f = run(&["sql", missing.to_str().unwrap(), "SELECT 1"]);
    assert_eq!(f.status.code(), Some(1));
    let err = String::from_utf8_lossy(&f.stderr);
    assert!(err.starts_with("trawl: "), "{err}");
    assert!(f.stdout.is_empty());
}

/// Ctrl-C (SIGINT) ends a running ingest at once, by the signal (as a
/// shell sees it: status 130), and leaves no capture behind.
#[test]
fn ctrl_c_ends_the_command_and_leaves_no_capture() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let cache = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(trawl_exe());
    // As a terminal starts it: SIGINT's default action, even when these
    // tests run as a script's background job, which ignores SIGINT (and
    // a program keeps what it inherits).
    // SAFETY: signal() is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut child = cmd
        .env("XDG_CACHE_HOME", cache.path())
        .args(["ingest", "-", "-o", cap.to_str().unwrap(), "--no-symbolize"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A strace line, then nothing: the ingest waits for more.
    let mut stdin = child.stdin.take().unwrap();
    stdin
        .write_all(b"7 1795330737.600000 getpid() = 7 <0.000001>\n")
        .unwrap();
    // Running once its staging directory (named by its pid) exists.
    let staging = dir.path().join(format!(".cap.trawl-tmp-{}", child.id()));
    let t = Instant::now();
    while !staging.exists() {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "the ingest never started"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = child.id().to_string();
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "SIGINT did not end the ingest"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.signal(), Some(2), "{status:?}");
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    assert!(!err.contains("Traceback"), "{err}");
    assert!(!cap.exists(), "a capture was left behind");
}

/// A reader that stops early (`trawl sql ... | head -1`) ends trawl quietly:
/// status 0, nothing on stderr.
#[test]
fn a_closed_pipe_ends_the_command_quietly() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    crate::common::ingest_file(&fixture("hot-fp.data"), &cap, &["--no-symbolize"]);
    let cache = tempfile::tempdir().unwrap();
    let mut child = Command::new(trawl_exe())
        .env("XDG_CACHE_HOME", cache.path())
        .args([
            "sql",
            cap.to_str().unwrap(),
            "SELECT value FROM generate_series(1, 3000000)",
            "--format",
            "csv",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut first = [0u8; 64];
    let n = out.read(&mut first).unwrap();
    assert!(String::from_utf8_lossy(&first[..n]).starts_with("value\n"));
    drop(out);
    let o = child.wait_with_output().unwrap();
    assert_eq!(o.status.code(), Some(0), "{o:?}");
    assert_eq!(String::from_utf8_lossy(&o.stderr), "");
}

/// Runs `trawl ARGS` on a terminal (a pseudo-terminal from util-linux's
/// `script`): everything the terminal showed.
fn on_a_terminal(args: &[&str], cache: &std::path::Path) -> String {
    let mut cmd = format!("'{}'", trawl_exe().display());
    for a in args {
        cmd.push_str(&format!(" '{a}'"));
    }
    let o = Command::new("script")
        .args(["-q", "-e", "-c", &cmd, "/dev/null"])
        .env("XDG_CACHE_HOME", cache)
        .env("TERM", "xterm-256color")
        .env_remove("NO_COLOR")
        .stdin(Stdio::null())
        .output()
        .expect("script (util-linux)");
    assert!(o.status.success(), "{o:?}");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// On a terminal, help is in colour and an ingest draws its progress bar;
/// into a pipe, neither.
#[test]
fn colours_and_the_progress_bar_on_a_terminal_only() {
    let cache = tempfile::tempdir().unwrap();
    let help = on_a_terminal(&["--help"], cache.path());
    assert!(
        help.contains("\x1b[1m"),
        "no colour on a terminal: {help:?}"
    );
    let piped = run(&["--help"]);
    assert!(!String::from_utf8_lossy(&piped.stdout).contains('\x1b'));

    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let data = fixture("mem-syscalls.data");
    let shown = on_a_terminal(
        &[
            "ingest",
            data.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--no-symbolize",
        ],
        cache.path(),
    );
    // indicatif's bar (its template ends "ETA {eta} {msg}"), drawn and
    // then cleared.
    assert!(
        shown.contains(" ETA "),
        "no progress bar on a terminal: {shown:?}"
    );
    let cap2 = dir.path().join("cap2");
    let o = run(&[
        "ingest",
        data.to_str().unwrap(),
        "-o",
        cap2.to_str().unwrap(),
        "--no-symbolize",
    ]);
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(!err.contains('\x1b') && !err.contains(" ETA "), "{err}");
}

/// A selection that matches nothing says so on standard error with what
/// the capture holds instead; CSV keeps its header; an inverted time
/// range is refused. Expected: `perf script` on hot-fp.data (its one
/// process's pid and command, its sample count, its first and last times).
#[test]
fn an_empty_answer_says_what_matched_nothing() {
    let (_t, cap) = crate::common::ingest("hot-fp.data");
    let cap = cap.to_str().unwrap();
    let script = crate::common::perf(&[
        "script",
        "-i",
        fixture("hot-fp.data").to_str().unwrap(),
        "-F",
        "pid,comm,time",
    ]);
    let rows: Vec<Vec<&str>> = script
        .lines()
        .map(|l| l.split_whitespace().collect())
        .filter(|r: &Vec<&str>| r.len() == 3)
        .collect();
    let (comm, pid) = (rows[0][0], rows[0][1]);
    assert!(rows.iter().all(|r| r[0] == comm && r[1] == pid));
    let (first, last) = (
        rows[0][2].trim_end_matches(':'),
        rows.last().unwrap()[2].trim_end_matches(':'),
    );
    let said = |args: &[&str]| {
        let o = run(args);
        assert_eq!(o.status.code(), Some(0), "{args:?}");
        (
            String::from_utf8_lossy(&o.stdout).into_owned(),
            String::from_utf8_lossy(&o.stderr).into_owned(),
        )
    };
    let (_, err) = said(&["report", "hotspots", cap, "--pid", "99999"]);
    assert!(
        err.contains(&format!(
            "no samples of --pid 99999; processes with most samples: {pid} ({comm}, {})",
            rows.len()
        )),
        "{err}"
    );
    // callers/callees name the selection, not the function, as the cause.
    let o = run(&["report", "callers", "main", cap, "--pid", "99999"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("no samples of --pid 99999"), "{err}");
    let (_, err) = said(&["report", "hotspots", cap, "--comm", "hit"]);
    assert!(
        err.contains("no samples of --comm hit; the closest commands: hot"),
        "{err}"
    );
    let (out, err) = said(&[
        "report", "hotspots", cap, "--time", "0.1..0.2", "--format", "csv",
    ]);
    assert!(
        err.contains(&format!(
            "no samples in --time 0.100000..0.200000: the samples run from {first} to {last} s"
        )),
        "{err}"
    );
    assert_eq!(
        out,
        "function,module,self_samples,self_period,self_pct,total_samples,total_period,total_pct\n"
    );
    let (out, _) = said(&["sql", cap, "SELECT * FROM diagnostic", "--format", "csv"]);
    assert!(out.starts_with("capture,"), "{out}");
    let o = run(&["report", "hotspots", cap, "--time", "5..1"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("the end must come after the start"));
    let o = run(&["sql", cap, "SELECT count(*) FROM perf_samples"]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("did you mean perf_sample?"), "{err}");
}

/// One clock for users: `--time A..B` is on the capture clock (as perf
/// script prints times), `--time +A..+B` counts from the origin (as
/// `report timeline` prints times), and both select the same samples.
/// Expected: the samples perf script prints in the range, counted here
/// from its nanosecond times (the origin is the first sample).
#[test]
fn both_ways_of_writing_times_select_the_same_samples() {
    let (_t, cap) = crate::common::ingest("hot-fp.data");
    let cap = cap.to_str().unwrap();
    let script = crate::common::perf(&[
        "script",
        "-i",
        fixture("hot-fp.data").to_str().unwrap(),
        "-F",
        "time",
        "--ns",
    ]);
    let times: Vec<i64> = script
        .lines()
        .filter_map(|l| {
            let (s, ns) = l.trim().trim_end_matches(':').split_once('.')?;
            Some(s.parse::<i64>().ok()? * 1_000_000_000 + ns.parse::<i64>().ok()?)
        })
        .collect();
    assert!(times.len() > 100, "{script}");
    let first = times[0];
    let (a, b) = (first + 50_000_000, first + 150_000_000);
    let want = times.iter().filter(|&&t| a <= t && t < b).count() as i64;
    assert!(want > 0 && want < times.len() as i64, "{want}");
    let samples = |time: &str| -> i64 {
        let out = crate::common::trawl_ok(&[
            "report", "hotspots", cap, "--time", time, "--format", "csv",
        ]);
        out.lines()
            .skip(1)
            .map(|l| l.split(',').nth(2).unwrap().parse::<i64>().unwrap())
            .sum()
    };
    assert_eq!(samples("+0.05..+0.15"), want, "since the origin");
    let secs = |t: i64| format!("{}.{:09}", t / 1_000_000_000, t % 1_000_000_000);
    assert_eq!(
        samples(&format!("{}..{}", secs(a), secs(b))),
        want,
        "on the capture clock"
    );
    let o = run(&["report", "hotspots", cap, "--time", "+1..2"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("both since the origin (+A..+B)"));
}

/// `--event cpu-clock` names the capture's `cpu-clock:u` (perf's names
/// carry modifiers: `cpu-clock:ppp` is its default on a virtual machine).
/// Expected: perf script's sample count of clock-u.data.
#[test]
fn an_event_is_named_without_its_modifiers() {
    let (_t, cap) = crate::common::ingest("clock-u.data");
    let out = crate::common::trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--event",
        "cpu-clock",
        "--weight",
        "samples",
        "--format",
        "csv",
    ]);
    let total: usize = crate::common::csv_maps(&out)
        .iter()
        .map(|r| r["self_samples"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(
        total,
        crate::common::perf_script_samples(&fixture("clock-u.data"))
    );
}
