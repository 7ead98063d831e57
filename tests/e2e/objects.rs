//! Captures and archives in object storage: a real S3 server on localhost
//! (moto's, `tests/s3/server.py`, which authenticates requests as AWS
//! does), written by `trawl archive ingest -o s3://...` and read by every
//! command and by a cluster whose processes share no directory. Answers
//! must equal the same commands' on the local archive of the same runs
//! (whose sample counts come from perf script); requests are counted in
//! the server's log. Azure Blob Storage through its emulator, Azurite
//! (from npm): two containers of one account, in both URL forms.

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// A running S3 server, killed when dropped.
pub(crate) struct S3 {
    child: Child,
    pub endpoint: String,
    key: String,
    secret: String,
    /// The server's request log (a line per request).
    pub log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Drop for S3 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn json_field(line: &str, key: &str) -> String {
    let at = line
        .find(&format!("\"{key}\": \""))
        .unwrap_or_else(|| panic!("{key} in {line}"));
    let rest = &line[at + key.len() + 5..];
    rest[..rest.find('"').unwrap()].to_string()
}

impl S3 {
    /// Starts the server (moto, from PyPI: `pip install 'moto[server]'`,
    /// which tests/run.sh installs) with a bucket `trawl`.
    pub(crate) fn start() -> S3 {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("requests.log");
        let mut child = Command::new("python3")
            .arg(root().join("tests/s3/server.py"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("python3");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(
            line.starts_with('{'),
            "the S3 server did not start (pip install 'moto[server]'):\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        S3 {
            child,
            endpoint: json_field(&line, "endpoint"),
            key: json_field(&line, "access_key_id"),
            secret: json_field(&line, "secret_access_key"),
            log,
            _dir: dir,
        }
    }

    /// The environment that reaches the server, as AWS's tools read it.
    pub(crate) fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_ALLOW_HTTP", "true".into()),
            ("AWS_ACCESS_KEY_ID", self.key.clone()),
            ("AWS_SECRET_ACCESS_KEY", self.secret.clone()),
            ("AWS_REGION", "us-east-1".into()),
        ]
    }

    /// `trawl ARGS` with the server's environment (and `env` over it).
    pub(crate) fn trawl(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        self.command(args, env).output().expect("run trawl")
    }

    pub(crate) fn command(&self, args: &[&str], env: &[(&str, &str)]) -> Command {
        let mut c = Command::new(trawl_exe());
        c.args(args);
        for (k, v) in self.env() {
            c.env(k, v);
        }
        for (k, v) in env {
            c.env(k, v);
        }
        c.env("XDG_CACHE_HOME", self._dir.path().join("cache"));
        // A run killed by a test leaves its work directory: in the
        // test's, not the machine's, temporary directory.
        c.env("TMPDIR", own_tmp(self._dir.path()));
        c
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let o = self.trawl(args, &[]);
        assert!(
            o.status.success(),
            "trawl {args:?} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned() + &String::from_utf8_lossy(&o.stderr)
    }

    pub(crate) fn sql(&self, url: &str, q: &str) -> Vec<Vec<String>> {
        let o = self.trawl(&["sql", url, q, "--format", "csv"], &[]);
        assert!(
            o.status.success(),
            "trawl sql {url} {q:?} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        csv_rows(&String::from_utf8_lossy(&o.stdout))
    }

    /// Runs the Python `code` with `c`, a boto3 client of the server,
    /// and `args` as `sys.argv[1:]`.
    fn boto3(&self, code: &str, args: &[&str]) -> String {
        let script = format!(
            "import boto3, os, sys\nc = boto3.client('s3', endpoint_url={:?}, region_name='us-east-1', \
             aws_access_key_id={:?}, aws_secret_access_key={:?})\n{code}",
            self.endpoint, self.key, self.secret
        );
        let o = Command::new("python3")
            .args(["-c", &script])
            .args(args)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// The server's own listing of the keys under `prefix`: (key, size).
    pub(crate) fn list(&self, prefix: &str) -> Vec<(String, u64)> {
        let out = self.boto3(
            "for page in c.get_paginator('list_objects_v2').paginate(Bucket='trawl', Prefix=sys.argv[1]):\n    \
             for o in page.get('Contents', []):\n        print(o['Key'] + '\\t' + str(o['Size']))\n",
            &[prefix],
        );
        let mut v: Vec<(String, u64)> = out
            .lines()
            .map(|l| {
                let (k, n) = l.rsplit_once('\t').unwrap();
                (k.to_string(), n.parse().unwrap())
            })
            .collect();
        v.sort();
        v
    }

    /// Standard output of `trawl ARGS`, which must succeed.
    pub(crate) fn stdout(&self, args: &[&str]) -> String {
        let o = self.trawl(args, &[]);
        assert!(
            o.status.success(),
            "trawl {args:?} failed:\n{}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Puts `body` at `key` of the bucket.
    pub(crate) fn put(&self, key: &str, body: &str) {
        let _ = self.boto3(
            "c.put_object(Bucket='trawl', Key=sys.argv[1], Body=sys.argv[2])",
            &[key, body],
        );
    }

    /// Deletes object `key` of the bucket.
    pub(crate) fn delete(&self, key: &str) {
        let _ = self.boto3("c.delete_object(Bucket='trawl', Key=sys.argv[1])", &[key]);
    }

    /// Uploads the files under `dir` to `prefix/<path under dir>`.
    pub(crate) fn put_tree(&self, dir: &Path, prefix: &str) {
        let _ = self.boto3(
            "for d, _, fs in os.walk(sys.argv[1]):\n    for f in fs:\n        p = os.path.join(d, f)\n        \
             c.upload_file(p, 'trawl', sys.argv[2] + '/' + os.path.relpath(p, sys.argv[1]))\n",
            &[dir.to_str().unwrap(), prefix],
        );
    }

    /// The request lines the server logged since `from` lines.
    pub(crate) fn requests(&self, from: usize) -> Vec<String> {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains("HTTP/1.1\""))
            .skip(from)
            .map(|l| l.split('"').nth(1).unwrap_or("").to_string())
            .collect()
    }
}

/// `dir/tmp`, made.
fn own_tmp(dir: &Path) -> PathBuf {
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    tmp
}

/// `trawl archive ingest SRC -o URL EXTRA...` against `s3`.
fn ingest_to(s3: &S3, src: &Path, url: &str, extra: &[&str]) -> Output {
    let bin = fixture_bin();
    let mut args = ingest_args(src, url, &bin);
    args.extend_from_slice(extra);
    s3.trawl(&args, &[])
}

/// The arguments of `trawl archive ingest SRC -o URL` with the fixtures'
/// debug files from `bin`.
fn ingest_args<'a>(src: &'a Path, url: &'a str, bin: &'a Path) -> Vec<&'a str> {
    vec![
        "archive",
        "ingest",
        src.to_str().unwrap(),
        "-o",
        url,
        "--debug-dir",
        bin.to_str().unwrap(),
    ]
}

fn stderr_ok(o: Output) -> String {
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "failed: {err}");
    err
}

fn by_capture(rows: Vec<Vec<String>>) -> std::collections::BTreeMap<String, usize> {
    rows.into_iter()
        .map(|r| (r[0].clone(), r[1].parse().unwrap()))
        .collect()
}

use crate::archive::runs_samples;

const COUNTS: &str = "SELECT capture, count(*) FROM perf_sample GROUP BY capture ORDER BY capture";

#[test]
fn an_archive_in_s3_reads_as_the_local_one() {
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let local = t.path().join("arch");
    let o = crate::archive::archive_ingest(&src, &local, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let url = "s3://trawl/nightly";
    let err = stderr_ok(ingest_to(&s3, &src, url, &[]));
    assert!(
        err.contains("3 captures ingested, 0 unchanged, 0 failed"),
        "{err}"
    );
    // Sample counts: perf script's.
    assert_eq!(by_capture(s3.sql(url, COUNTS)), runs_samples());
    // The file list the ingest wrote beside the captures it uploaded ...
    files_are_what_the_bucket_holds(&s3, url, "nightly");
    // Every answer as the local archive's: a report, the manifest, a
    // derived table.
    let local = local.to_str().unwrap();
    for args in [
        vec!["report", "hotspots", "ARCH", "--format", "csv"],
        vec![
            "sql",
            "ARCH",
            "SELECT capture, status, inputs, input_bytes, content_hash FROM capture ORDER BY capture",
            "--format",
            "csv",
        ],
        vec![
            "sql",
            "ARCH",
            "SELECT capture, count(*), sum(length(path)) FROM capture_input GROUP BY capture ORDER BY capture",
            "--format",
            "csv",
        ],
        vec!["report", "io", "ARCH", "--format", "csv"],
        // (Segments are named when they are made: not the same names.)
        vec!["sql", "ARCH", "SELECT * EXCLUDE (segment) FROM time_base ORDER BY capture, source_id", "--format", "csv"],
    ] {
        fn with<'a>(args: &[&'a str], a: &'a str) -> Vec<&'a str> {
            args.iter().map(|x| if *x == "ARCH" { a } else { *x }).collect()
        }
        let want = trawl_ok(&with(&args, local));
        let got = s3.stdout(&with(&args, url));
        assert_eq!(got, want, "{args:?}: s3 vs local");
    }
    // Incremental: nothing to do the second time.
    let err = stderr_ok(ingest_to(&s3, &src, url, &[]));
    assert!(err.contains("0 captures ingested, 3 unchanged"), "{err}");

    // A filter on `capture` reads only that capture's rows of its
    // segment's object (a row selection, and the filter).
    let q = "SELECT count(*) FROM perf_sample WHERE capture = 'run1'";
    let plan = s3.ok(&["sql", url, &format!("EXPLAIN {q}")]);
    assert!(plan.contains("/perf_sample.parquet"), "{plan}");
    assert!(plan.contains("capture@0 IN (SET) ([run1])"), "{plan}");
    // Opening is three reads of the manifest (captures, their files, the
    // segments' files): no listing; then the segment's footer and data.
    let requests_of = |q: &str| {
        let before = s3.requests(0).len();
        let n = s3.sql(url, q);
        assert_eq!(n[0][0], runs_samples()["run1"].to_string());
        s3.requests(before)
    };
    let reqs = requests_of(q);
    let lists = reqs.iter().filter(|r| r.contains("list-type=2")).count();
    assert_eq!(lists, 0, "{reqs:#?}");
    assert!(
        reqs.iter()
            .any(|r| r.contains("nightly/capture_file.parquet")),
        "{reqs:#?}"
    );
    assert!(
        !reqs
            .iter()
            .any(|r| r.contains("capture=") || r.contains("capture%3D")),
        "{reqs:#?}"
    );
    assert!(reqs.len() <= 7, "{reqs:#?}");
}

/// The manifest's file list is what the bucket holds, by the server's own
/// listing (every key of every capture, with its size).
#[track_caller]
fn files_are_what_the_bucket_holds(s3: &S3, url: &str, prefix: &str) {
    let mut files: Vec<(String, u64)> = s3
        .sql(
            url,
            "SELECT segment, table_name, size_bytes FROM segment_file",
        )
        .into_iter()
        .map(|r| {
            (
                format!("{prefix}/segment={}/{}.parquet", r[0], r[1]),
                r[2].parse().unwrap(),
            )
        })
        .collect();
    files.sort();
    let held: Vec<(String, u64)> = s3.list(&format!("{prefix}/segment=")).into_iter().collect();
    assert!(held.len() >= 9, "{held:?}");
    assert_eq!(files, held, "capture_file vs the bucket");
}

#[test]
fn object_store_errors_name_the_url_and_never_hang() {
    let s3 = S3::start();
    let t0 = Instant::now();
    // Nothing there.
    let o = s3.trawl(&["sql", "s3://trawl/none", "SELECT 1"], &[]);
    assert_refused(&o, "s3://trawl/none");
    assert_refused(&o, "not a trawl capture");
    // No such bucket.
    let o = s3.trawl(&["sql", "s3://no-such-bucket/a", "SELECT 1"], &[]);
    assert_refused(&o, "s3://no-such-bucket/a");
    // Bad credentials: the server refuses the signature.
    let o = s3.trawl(
        &["sql", "s3://trawl/a", "SELECT 1"],
        &[("AWS_SECRET_ACCESS_KEY", "wrong")],
    );
    assert_refused(&o, "s3://trawl/a");
    assert_refused(&o, "access denied");
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let o = s3.trawl(
        &[
            "archive",
            "ingest",
            src.to_str().unwrap(),
            "-o",
            "s3://trawl/x",
            "--no-symbolize",
        ],
        &[("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")],
    );
    assert_refused(&o, "s3://trawl/x");
    assert_refused(&o, "access denied");
    // A server that is not there: an error within the retries' bound.
    let t1 = Instant::now();
    let o = s3.trawl(
        &["sql", "s3://trawl/a", "SELECT 1"],
        &[("AWS_ENDPOINT_URL", "http://127.0.0.1:9")],
    );
    assert_refused(&o, "s3://trawl/a");
    assert!(t1.elapsed() < Duration::from_secs(90), "{:?}", t1.elapsed());
    // Another writer's lock (this process: alive, on this host).
    let here = format!(
        "host={}\nboot={}\npidns={}\n",
        std::fs::read_to_string("/proc/sys/kernel/hostname")
            .unwrap()
            .trim(),
        std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
            .unwrap()
            .trim(),
        std::fs::read_link("/proc/self/ns/pid").unwrap().display()
    );
    s3.put(
        "locked/.trawl-archive.lock",
        &format!("{here}pid={}\nstarted=1\n", std::process::id()),
    );
    let o = ingest_to(&s3, &src, "s3://trawl/locked", &["--no-symbolize"]);
    assert_refused(&o, "another `trawl archive ingest` is writing this archive");
    // A lock left by a process that is gone is taken over.
    s3.put(
        "stale/.trawl-archive.lock",
        &format!("{here}pid=999999999\nstarted=1\n"),
    );
    let err = stderr_ok(ingest_to(
        &s3,
        &src,
        "s3://trawl/stale",
        &["--no-symbolize"],
    ));
    assert!(err.contains("3 captures ingested"), "{err}");
    // A table the manifest names, gone from the bucket: the scan's error
    // names the object's URL, not only its key.
    let key = s3
        .list("stale/segment=")
        .into_iter()
        .map(|(k, _)| k)
        .find(|k| k.ends_with("/perf_sample.parquet"))
        .unwrap();
    s3.delete(&key);
    // (A query that reads the object: `count(*)` is the manifest's.)
    let o = s3.trawl(
        &[
            "sql",
            "s3://trawl/stale",
            "SELECT sum(period) FROM perf_sample",
        ],
        &[],
    );
    assert_refused(&o, &format!("s3://trawl/{key}"));
    assert!(
        t0.elapsed() < Duration::from_secs(300),
        "{:?}",
        t0.elapsed()
    );
}

/// The documented bounds of a store that cannot be reached (docs/guide/
/// archive.md): a server that accepts connections and never answers fails
/// each request after 120 s, and as the retries stop a minute after the
/// first try, the command fails after one; a server whose connections
/// cannot be made (its accept queue full: the kernel drops the handshake)
/// fails each connection after 5 s, 4 retries within that minute. Both
/// refused naming the URL, neither a hang.
#[test]
fn a_store_that_never_answers_times_out_as_documented() {
    use std::net::{TcpListener, TcpStream};
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_at = silent.local_addr().unwrap();
    std::thread::spawn(move || {
        // Held open, never read or answered.
        let mut held = Vec::new();
        for c in silent.incoming().flatten() {
            held.push(c);
        }
    });
    // Never accepted, and filled until a connection can no longer be made.
    let full = TcpListener::bind("127.0.0.1:0").unwrap();
    let full_at = full.local_addr().unwrap();
    let mut filling = Vec::new();
    while let Ok(c) = TcpStream::connect_timeout(&full_at, Duration::from_millis(200)) {
        filling.push(c);
        assert!(filling.len() < 100_000, "the accept queue never filled");
    }
    let run = |at: std::net::SocketAddr| {
        let cmd = |at: std::net::SocketAddr| {
            let mut c = Command::new(trawl_exe());
            c.args(["sql", "s3://trawl/a", "SELECT 1"])
                .env("AWS_ENDPOINT_URL", format!("http://{at}"))
                .env("AWS_ALLOW_HTTP", "true")
                .env("AWS_ACCESS_KEY_ID", "AKIAIOSFODNN7EXAMPLE")
                .env("AWS_SECRET_ACCESS_KEY", "x")
                .env("AWS_REGION", "us-east-1");
            c
        };
        std::thread::spawn(move || {
            let t = Instant::now();
            let o = cmd(at).output().unwrap();
            (o, t.elapsed())
        })
    };
    let (silent_run, full_run) = (run(silent_at), run(full_at));
    let (o, took) = silent_run.join().unwrap();
    assert_refused(&o, "s3://trawl/a");
    assert!(
        took >= Duration::from_secs(120) && took < Duration::from_secs(200),
        "a server that never answers: refused after {took:?}"
    );
    let (o, took) = full_run.join().unwrap();
    assert_refused(&o, "s3://trawl/a");
    assert!(
        took >= Duration::from_secs(5) && took < Duration::from_secs(90),
        "connections that cannot be made: refused after {took:?}"
    );
    drop(filling);
}

#[test]
fn an_upload_killed_at_any_moment_leaves_whole_captures() {
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let want = runs_samples();
    // How many requests a whole run makes (into another prefix, `-j 1` as
    // the runs killed below).
    let r0 = s3.requests(0).len();
    stderr_ok(ingest_to(
        &s3,
        &src,
        "s3://trawl/timing",
        &["--no-symbolize", "-j", "1"],
    ));
    let full = s3.requests(r0).len();
    let url = "s3://trawl/killed";
    let (mut interrupted, mut partial) = (0, 0);
    for k in 1..8 {
        let before = s3.requests(0).len();
        let mut child = s3
            .command(
                &[
                    "archive",
                    "ingest",
                    src.to_str().unwrap(),
                    "-o",
                    url,
                    "--no-symbolize",
                    "-j",
                    "1",
                ],
                &[],
            )
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // Killed once the server has answered k/8 of a whole run's
        // requests (its log, polled), or when it has ended.
        let at = full * k / 8;
        let t0 = Instant::now();
        while s3.requests(before).len() < at
            && child.try_wait().unwrap().is_none()
            && t0.elapsed() < Duration::from_secs(120)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        let killed = child.try_wait().unwrap().is_none();
        let _ = child.kill();
        let _ = child.wait();
        interrupted += killed as usize;
        // Whatever a reader sees is whole captures (or nothing yet).
        let o = s3.trawl(&["sql", url, COUNTS, "--format", "csv"], &[]);
        let seen = if o.status.success() {
            let seen = by_capture(csv_rows(&String::from_utf8_lossy(&o.stdout)));
            for (c, n) in &seen {
                assert_eq!(*n, want[c], "capture {c} after a kill at {k}/8");
            }
            seen.len()
        } else {
            assert_refused(&o, "not a trawl capture");
            0
        };
        // A partial state: objects of captures in the bucket, not all of
        // them visible to a reader.
        let uploaded = s3.list("killed/segment=").len();
        partial += (killed && uploaded > 0 && seen < want.len()) as usize;
    }
    assert!(
        interrupted > 0,
        "no kill interrupted a run ({full} requests)"
    );
    assert!(
        partial > 0,
        "no kill left a partial upload ({full} requests)"
    );
    // The next run takes over the lock and finishes.
    let err = stderr_ok(ingest_to(&s3, &src, url, &["--no-symbolize"]));
    assert!(err.contains("0 failed"), "{err}");
    assert_eq!(by_capture(s3.sql(url, COUNTS)), want);
    // Each run that took over a killed run's lock removed the working
    // directory the killed run left (and the last run its own).
    let left: Vec<_> = std::fs::read_dir(own_tmp(s3._dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_cluster_reads_an_archive_in_s3_without_a_shared_directory() {
    // The client sends URLs; each executor (in a directory of its own)
    // reads the objects with its own credentials.
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let url = "s3://trawl/nightly";
    stderr_ok(ingest_to(&s3, &src, url, &[]));
    std::fs::remove_dir_all(&src).unwrap();
    let c = crate::cluster::start_with(t.path(), s3.env());
    for args in [
        vec!["sql", url, COUNTS, "--format", "csv"],
        vec!["report", "hotspots", url, "--format", "csv"],
        vec![
            "sql",
            url,
            "SELECT capture, status FROM capture ORDER BY capture",
            "--format",
            "csv",
        ],
    ] {
        let (local, cluster) = crate::cluster::both(&c, &args);
        assert_eq!(local, cluster, "{args:?}");
    }
    assert_eq!(
        by_capture(csv_rows(
            &crate::cluster::both(&c, &["sql", url, COUNTS, "--format", "csv"]).1
        )),
        runs_samples()
    );
    c.assert_each_executor_ran_tasks();
}

#[test]
fn inputs_in_s3_are_ingested_into_archives_anywhere() {
    // Raw inputs in a bucket: into an archive in the bucket, and into a
    // local one; the manifest names the inputs by their URLs.
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    s3.put_tree(&src, "raw/nightly");
    let local = t.path().join("arch");
    for out in ["s3://trawl/fromraw", local.to_str().unwrap()] {
        let err = stderr_ok(ingest_to(
            &s3,
            Path::new("s3://trawl/raw/nightly"),
            out,
            &[],
        ));
        assert!(
            err.contains("3 captures ingested, 0 unchanged, 0 failed"),
            "{out}: {err}"
        );
        assert!(
            err.contains("README"),
            "the file that is no input is skipped: {err}"
        );
        assert_eq!(by_capture(s3.sql(out, COUNTS)), runs_samples(), "{out}");
        let paths = s3.sql(out, "SELECT path FROM capture_input ORDER BY path");
        assert_eq!(
            paths.iter().map(|r| r[0].as_str()).collect::<Vec<_>>(),
            [
                "s3://trawl/raw/nightly/recurse.data",
                "s3://trawl/raw/nightly/run1/hot-fp.data",
                "s3://trawl/raw/nightly/run1/io.strace",
                "s3://trawl/raw/nightly/run2/threads.data",
            ],
            "{out}"
        );
        // Unchanged inputs are not ingested again.
        let err = stderr_ok(ingest_to(
            &s3,
            Path::new("s3://trawl/raw/nightly"),
            out,
            &[],
        ));
        assert!(
            err.contains("0 captures ingested, 3 unchanged"),
            "{out}: {err}"
        );
    }
}

#[test]
fn names_that_keys_encode_read_back_as_named() {
    // Two sources with a run1 each: the second is `run1~2`, which object
    // stores keep as `capture=run1%7E2`.
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    for (d, f) in [("x", "hot-fp.data"), ("y", "threads.data")] {
        std::fs::create_dir_all(t.path().join(d).join("run1")).unwrap();
        std::fs::copy(fixture(f), t.path().join(d).join("run1").join(f)).unwrap();
    }
    let (x, y) = (t.path().join("x"), t.path().join("y"));
    let args = [
        "archive",
        "ingest",
        x.to_str().unwrap(),
        y.to_str().unwrap(),
        "-o",
        "s3://trawl/tilde",
        "--no-symbolize",
    ];
    let err = stderr_ok(s3.trawl(&args, &[]));
    assert!(
        err.contains("2 captures ingested, 0 unchanged, 0 failed"),
        "{err}"
    );
    let want: std::collections::BTreeMap<String, usize> = [
        (
            "run1".to_string(),
            perf_script_samples(&fixture("hot-fp.data")),
        ),
        (
            "run1~2".to_string(),
            perf_script_samples(&fixture("threads.data")),
        ),
    ]
    .into();
    assert_eq!(by_capture(s3.sql("s3://trawl/tilde", COUNTS)), want);
    let err = stderr_ok(s3.trawl(&args, &[]));
    assert!(err.contains("0 captures ingested, 2 unchanged"), "{err}");
}

#[test]
fn credentials_and_endpoint_from_an_aws_profile() {
    // No AWS_* keys or endpoint in the environment: the profile of the
    // shared files (~/.aws/credentials, ~/.aws/config) gives them, as the
    // AWS CLI reads them; a profile with a wrong key is refused.
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    stderr_ok(ingest_to(&s3, &src, "s3://trawl/prof", &["--no-symbolize"]));
    let env: std::collections::HashMap<_, _> = s3.env().into_iter().collect();
    let creds = t.path().join("credentials");
    let config = t.path().join("config");
    std::fs::write(
        &creds,
        format!(
            "[default]\naws_access_key_id = AKIAIOSFODNN7EXAMPLE\naws_secret_access_key = nope\n\n\
             [lab]\naws_access_key_id = {}\naws_secret_access_key = {}\n",
            env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
        ),
    )
    .unwrap();
    std::fs::write(
        &config,
        format!(
            "[default]\nregion = us-east-1\nendpoint_url = {0}\n\n[profile lab]\nregion = us-east-1\nendpoint_url = {0}\n",
            env["AWS_ENDPOINT_URL"]
        ),
    )
    .unwrap();
    let run = |profile: Option<&str>| {
        let mut c = s3.command(&["sql", "s3://trawl/prof", COUNTS, "--format", "csv"], &[]);
        for k in [
            "AWS_ACCESS_KEY_ID",
            "AWS_SECRET_ACCESS_KEY",
            "AWS_ENDPOINT_URL",
            "AWS_REGION",
        ] {
            c.env_remove(k);
        }
        c.env("AWS_SHARED_CREDENTIALS_FILE", &creds)
            .env("AWS_CONFIG_FILE", &config);
        if let Some(p) = profile {
            c.env("AWS_PROFILE", p);
        }
        c.output().unwrap()
    };
    let o = run(Some("lab"));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        by_capture(csv_rows(&String::from_utf8_lossy(&o.stdout))),
        runs_samples()
    );
    let o = run(None);
    assert_refused(&o, "access denied");
}

/// Azure Blob Storage's emulator, Azurite (from npm; tests/run.sh installs
/// it under target/npm), with the containers `trawl` and `other` of its
/// account `devstoreaccount1`; killed when dropped.
struct Azurite {
    child: Child,
    blob: String,
    _dir: tempfile::TempDir,
}

impl Drop for Azurite {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The emulator account's key, which Azurite documents and every Azure
/// tool knows.
const AZURITE_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

impl Azurite {
    fn start() -> Azurite {
        let bin = root().join("target/npm/node_modules/.bin/azurite-blob");
        assert!(
            bin.exists(),
            "Azurite is missing: npm install --prefix target/npm azurite@3.35.0 (tests/run.sh does)"
        );
        let dir = tempfile::tempdir().unwrap();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(bin)
            .args(["--blobHost", "127.0.0.1", "--blobPort", &port.to_string()])
            // In memory; the Python SDK's newer API version accepted;
            // nothing sent to Microsoft.
            .args([
                "--inMemoryPersistence",
                "--skipApiVersionCheck",
                "--disableTelemetry",
            ])
            .current_dir(dir.path())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node");
        let az = Azurite {
            child,
            blob: format!("http://127.0.0.1:{port}"),
            _dir: dir,
        };
        let t = Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "Azurite did not start"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        az.blobs(
            "for n in ('trawl', 'other'):\n    s.create_container(n)\n",
            &[],
        );
        az
    }

    /// Runs the Python `code` with `s`, a client of the account
    /// (azure-storage-blob), and `args` as `sys.argv[1:]`.
    fn blobs(&self, code: &str, args: &[&str]) {
        let script = format!(
            "import sys\nfrom azure.storage.blob import BlobServiceClient\n\
             s = BlobServiceClient.from_connection_string('DefaultEndpointsProtocol=http;\
             AccountName=devstoreaccount1;AccountKey={AZURITE_KEY};\
             BlobEndpoint={}/devstoreaccount1;')\n{code}",
            self.blob
        );
        let o = Command::new("python3")
            .args(["-c", &script])
            .args(args)
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "azure-storage-blob (pip install azure-storage-blob): {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// `trawl ARGS` reaching the emulator, as Azure's tools are told to.
    fn trawl(&self, args: &[&str]) -> Output {
        Command::new(trawl_exe())
            .args(args)
            .env("AZURE_STORAGE_USE_EMULATOR", "true")
            .env("AZURITE_BLOB_STORAGE_URL", &self.blob)
            .env("XDG_CACHE_HOME", self._dir.path().join("cache"))
            .env("TMPDIR", own_tmp(self._dir.path()))
            .output()
            .expect("run trawl")
    }
}

#[test]
fn archives_in_two_containers_of_one_azure_account() {
    let az = Azurite::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let bin = fixture_bin();
    // `az://CONTAINER/...` and the `abfss://CONTAINER@ACCOUNT...` form of
    // Azure's own tools, in two containers of the same account.
    let one = "az://trawl/nightly";
    let two = "abfss://other@devstoreaccount1.dfs.core.windows.net/x";
    for url in [one, two] {
        let ingest = |what: &str| {
            let err = stderr_ok(az.trawl(&ingest_args(&src, url, &bin)));
            assert!(err.contains(what), "{err}");
        };
        ingest("3 captures ingested");
        ingest("0 captures ingested, 3 unchanged");
        let o = az.trawl(&["sql", url, COUNTS, "--format", "csv"]);
        let out = String::from_utf8_lossy(&o.stdout).into_owned();
        stderr_ok(o);
        assert_eq!(by_capture(csv_rows(&out)), runs_samples(), "{url}");
    }
    // Both in one session: each container's objects from its own store
    // (a store per host would read the second archive's keys in the
    // first container).
    let o = az.trawl(&[
        "sql",
        one,
        two,
        "SELECT count(DISTINCT capture), count(*) FROM perf_sample",
        "--format",
        "csv",
    ]);
    let out = String::from_utf8_lossy(&o.stdout).into_owned();
    stderr_ok(o);
    let total: usize = runs_samples().values().sum();
    assert_eq!(
        csv_rows(&out),
        vec![vec!["6".to_string(), (2 * total).to_string()]]
    );
    // A table gone: the error names its URL.
    let o = az.trawl(&[
        "sql",
        two,
        "SELECT min(segment) FROM capture",
        "--format",
        "csv",
    ]);
    let seg = String::from_utf8_lossy(&o.stdout)
        .lines()
        .nth(1)
        .unwrap()
        .to_string();
    let key = format!("segment={seg}/perf_sample.parquet");
    az.blobs(
        "s.get_container_client('other').delete_blob(sys.argv[1])",
        &[&format!("x/{key}")],
    );
    let o = az.trawl(&["sql", two, "SELECT sum(period) FROM perf_sample"]);
    assert_refused(&o, &format!("{two}/{key}"));
}

/// `trawl archive compact` of an archive in S3 (three segments, one with
/// a replaced capture's rows): one segment after, every capture's samples
/// as perf script counts them and the same hotspots as the local archive;
/// killed once the server has answered k/8 of a whole compaction's
/// requests, a reader still finds every capture whole, and a later
/// compaction finishes with one segment and nothing else left.
#[test]
fn compaction_in_s3_survives_kills() {
    let s3 = S3::start();
    let t = tempfile::tempdir().unwrap();
    let src = crate::archive::runs(t.path());
    let local = t.path().join("arch");
    let ingest = || {
        let o = crate::archive::archive_ingest(&src, &local, &["--no-symbolize"]);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    };
    ingest();
    std::fs::copy(fixture("procs.data"), src.join("run2/threads.data")).unwrap();
    ingest();
    std::fs::create_dir_all(src.join("run3")).unwrap();
    std::fs::copy(fixture("hot-fp.data"), src.join("run3/hot-fp.data")).unwrap();
    ingest();
    std::fs::remove_file(local.join(".trawl-archive.lock")).unwrap();
    let mut want = runs_samples();
    want.insert("run2".into(), perf_script_samples(&fixture("procs.data")));
    want.insert("run3".into(), perf_script_samples(&fixture("hot-fp.data")));
    let hot = report_csv("hotspots", &local, &["--no-inline"]);
    let segments = |prefix: &str| {
        let mut s: Vec<String> = s3
            .list(&format!("{prefix}/segment="))
            .into_iter()
            .map(|(k, _)| k.split('/').nth(1).unwrap().to_string())
            .collect();
        s.dedup();
        s
    };
    s3.put_tree(&local, "full");
    assert_eq!(segments("full").len(), 3);
    let r0 = s3.requests(0).len();
    s3.ok(&["archive", "compact", "s3://trawl/full"]);
    let full = s3.requests(r0).len();
    assert_eq!(by_capture(s3.sql("s3://trawl/full", COUNTS)), want);
    assert_eq!(segments("full").len(), 1);
    assert_eq!(
        s3.stdout(&[
            "report",
            "hotspots",
            "s3://trawl/full",
            "--no-inline",
            "--format",
            "csv"
        ]),
        hot
    );
    let mut interrupted = 0;
    for k in 1..8 {
        let prefix = format!("k{k}");
        let url = format!("s3://trawl/{prefix}");
        s3.put_tree(&local, &prefix);
        let before = s3.requests(0).len();
        let mut child = s3
            .command(&["archive", "compact", &url], &[])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let t0 = Instant::now();
        while s3.requests(before).len() < full * k / 8
            && child.try_wait().unwrap().is_none()
            && t0.elapsed() < Duration::from_secs(120)
        {
            std::thread::sleep(Duration::from_millis(2));
        }
        interrupted += child.try_wait().unwrap().is_none() as usize;
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(
            by_capture(s3.sql(&url, COUNTS)),
            want,
            "killed at {k}/8 of {full} requests"
        );
        s3.ok(&["archive", "compact", &url]);
        assert_eq!(
            by_capture(s3.sql(&url, COUNTS)),
            want,
            "after a kill at {k}/8"
        );
        assert_eq!(segments(&prefix).len(), 1, "after a kill at {k}/8");
    }
    assert!(
        interrupted > 0,
        "no kill interrupted a compaction ({full} requests)"
    );
}
