//! `--cluster`: trawl's SQL and reports on an Apache DataFusion Ballista
//! cluster, a real scheduler and two executors, each a `trawl cluster`
//! process on localhost, reading the captures at the same paths. Every
//! answer must equal the same command's on one machine (whose values the
//! other tests check against perf, strace and independent readings), and
//! both executors must have run tasks.

use std::fs::File;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

/// The processes of a cluster, killed when dropped.
pub(crate) struct Cluster {
    procs: Vec<Child>,
    pub(crate) url: String,
    /// The environment of its processes and of the client.
    env: Vec<(&'static str, String)>,
    scheduler_log: PathBuf,
    executor_logs: Vec<PathBuf>,
}

impl Cluster {
    /// The work ran on the executors: each one's log shows tasks.
    pub(crate) fn assert_each_executor_ran_tasks(&self) {
        for log in &self.executor_logs {
            let text = std::fs::read_to_string(log).unwrap();
            assert!(
                text.contains("Execute task"),
                "{}: no task ran there:\n{text}",
                log.display()
            );
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        for p in &mut self.procs {
            let _ = p.kill();
            let _ = p.wait();
        }
    }
}

/// `n` ports free at the time of asking.
fn free_ports(n: usize) -> Vec<u16> {
    let socks: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    socks
        .iter()
        .map(|s| s.local_addr().unwrap().port())
        .collect()
}

fn spawn(args: &[&str], log: &Path, env: &[(&'static str, String)]) -> Child {
    // Each process in a directory of its own: nothing relative is shared.
    let cwd = log.with_extension("cwd");
    std::fs::create_dir_all(&cwd).unwrap();
    Command::new(crate::common::trawl_exe())
        .args(args)
        .current_dir(&cwd)
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("RUST_LOG", "info")
        .stdin(Stdio::null())
        .stdout(File::create(log.with_extension("out")).unwrap())
        .stderr(File::create(log).unwrap())
        .spawn()
        .expect("start trawl cluster")
}

/// A scheduler and two executors, once both executors have registered.
/// The ports are free when asked for, but another test may take one
/// before a process binds it: a process that ends while starting is
/// retried with new ports (three times), its logs kept in the message.
fn start(dir: &Path) -> Cluster {
    start_with(dir, Vec::new())
}

/// [`start`], the processes with `env` (and the client, in [`both`]).
pub(crate) fn start_with(dir: &Path, env: Vec<(&'static str, String)>) -> Cluster {
    let mut failures = Vec::new();
    for attempt in 0..3 {
        let d = dir.join(format!("start{attempt}"));
        std::fs::create_dir_all(&d).unwrap();
        match try_start(&d, env.clone()) {
            Ok(c) => return c,
            Err(e) => failures.push(e),
        }
    }
    panic!("the cluster did not start:\n{}", failures.join("\n\n"));
}

fn try_start(dir: &Path, env: Vec<(&'static str, String)>) -> Result<Cluster, String> {
    let p = free_ports(5);
    let sched = format!("127.0.0.1:{}", p[0]);
    let mut c = Cluster {
        procs: Vec::new(),
        url: format!("df://localhost:{}", p[0]),
        scheduler_log: dir.join("scheduler.log"),
        executor_logs: vec![dir.join("executor1.log"), dir.join("executor2.log")],
        env,
    };
    c.procs.push(spawn(
        &["cluster", "scheduler", "--bind", &sched],
        &c.scheduler_log,
        &c.env,
    ));
    // Executors connect once, at start: only when the scheduler accepts
    // connections (a command started through Python's console script
    // takes a while to bind, and an executor racing it fails).
    let t0 = Instant::now();
    while std::net::TcpStream::connect(&sched).is_err() {
        if let Some(status) = c.procs[0].try_wait().unwrap() {
            let log = std::fs::read_to_string(&c.scheduler_log).unwrap_or_default();
            return Err(format!("the scheduler ended ({status}):\n{log}"));
        }
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "the scheduler never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    for (i, log) in c.executor_logs.clone().iter().enumerate() {
        let (flight, grpc) = (p[1 + 2 * i].to_string(), p[2 + 2 * i].to_string());
        let sched = format!("localhost:{}", p[0]);
        // Shuffle files in the test's directory: a killed executor leaves
        // its work directory behind.
        let work = dir.join(format!("work{i}"));
        std::fs::create_dir_all(&work).unwrap();
        c.procs.push(spawn(
            &[
                "cluster",
                "executor",
                "--scheduler",
                &sched,
                "--port",
                &flight,
                "--grpc-port",
                &grpc,
                "-j",
                "2",
                "--work-dir",
                work.to_str().unwrap(),
            ],
            log,
            &c.env,
        ));
    }
    let t0 = Instant::now();
    loop {
        let log = std::fs::read_to_string(&c.scheduler_log).unwrap_or_default();
        if log.matches("Received register executor request").count() == 2 {
            break;
        }
        for p in &mut c.procs {
            if let Some(status) = p.try_wait().unwrap() {
                let execs: Vec<String> = c
                    .executor_logs
                    .iter()
                    .map(|l| std::fs::read_to_string(l).unwrap_or_default())
                    .collect();
                return Err(format!(
                    "a cluster process ended ({status}):\n{log}\nexecutors:\n{}",
                    execs.join("\n")
                ));
            }
        }
        assert!(
            t0.elapsed() < Duration::from_secs(90),
            "executors did not register:\n{log}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(c)
}

/// stdout of `trawl ARGS` on one machine, and with `--cluster`; both must
/// succeed (within a limit: a query must not hang on the cluster).
pub(crate) fn both(c: &Cluster, args: &[&str]) -> (String, String) {
    let local = if c.env.is_empty() {
        trawl_ok(args)
    } else {
        let o = Command::new(crate::common::trawl_exe())
            .args(args)
            .envs(c.env.iter().map(|(k, v)| (k, v)))
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        String::from_utf8(o.stdout).unwrap()
    };
    // Output to files: a pipe nobody reads while waiting would fill.
    let out = c.scheduler_log.with_file_name("query.out");
    let err = c.scheduler_log.with_file_name("query.err");
    let mut child = Command::new(crate::common::trawl_exe())
        .arg("--cluster")
        .arg(&c.url)
        .args(args)
        .envs(c.env.iter().map(|(k, v)| (k, v)))
        .stdout(File::create(&out).unwrap())
        .stderr(File::create(&err).unwrap())
        .spawn()
        .unwrap();
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if t0.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!(
                "--cluster {args:?} did not finish in 120 s; scheduler log:\n{}",
                std::fs::read_to_string(&c.scheduler_log).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let status = child.wait().unwrap();
    assert!(
        status.success(),
        "--cluster {args:?} failed:\n{}",
        std::fs::read_to_string(&err).unwrap()
    );
    (local, std::fs::read_to_string(&out).unwrap())
}

/// Captures of every kind the cluster is asked about: an archive of runs
/// (perf, strace), a run with monitoring logs, a memory log, RAPL energy.
pub(crate) fn captures(dir: &Path) -> Vec<PathBuf> {
    let src = crate::archive::runs(dir);
    let arch = dir.join("arch");
    let o = crate::archive::archive_ingest(&src, &arch, &[]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let phases = dir.join("phases");
    crate::phases::ingest_run(1, &phases);
    let memlog = crate::memlog::ingest_pages(&dir.join("m"), &[]);
    let energy = crate::energy::fig2_capture(dir);
    vec![arch, phases, memlog, energy]
}

#[test]
fn cluster_answers_equal_local_answers() {
    let dir = tempfile::tempdir().unwrap();
    let caps = captures(dir.path());
    let [arch, phases, memlog, energy] = [0, 1, 2, 3].map(|i| caps[i].to_str().unwrap());
    let c = start(dir.path());
    let svg_local = dir.path().join("local.svg");
    let svg_cluster = dir.path().join("cluster.svg");
    let cpu_rule = "cpu_user+cpu_sys > 90 and runq > 2";
    let tp = dir.path().join("tp");
    ingest_file(&fixture("tp-z.data"), &tp, &["--no-symbolize"]);
    let tp = tp.to_str().unwrap();
    let cases: Vec<Vec<&str>> = vec![
        // Tracepoint fields, read on the executors (tracepoint_field), and
        // paired events (computed in the client).
        vec![
            "sql",
            tp,
            "SELECT time_ns, name_string, n, k FROM tracepoint('probe_tp:checksum') ORDER BY time_ns",
        ],
        vec!["report", "tracepoints", tp],
        vec![
            "report", "latency", tp, "--start", "block:block_rq_issue", "--end",
            "block:block_rq_complete", "--key", "dev", "--key", "sector",
        ],
        // Capture tables and the archive's manifest.
        vec![
            "sql",
            arch,
            "SELECT capture, count(*) AS n, sum(period) AS p FROM perf_sample GROUP BY capture ORDER BY capture",
        ],
        vec!["sql", arch, "SELECT capture, status, inputs, input_bytes, content_hash FROM capture ORDER BY capture"],
        // A derived table computed by trawl (its rows travel in the plan).
        vec!["sql", arch, "SELECT * FROM time_base ORDER BY capture, source_id"],
        // Analyses as table functions and as reports.
        vec![
            "sql",
            arch,
            "SELECT * FROM hotspots('function') ORDER BY self_weight DESC, total_weight DESC, function, module",
        ],
        vec!["report", "hotspots", arch],
        vec!["report", "hotspots", arch, "--by", "line", "--no-inline"],
        vec!["report", "callers", "main", arch],
        vec!["report", "callees", "main", arch],
        vec!["report", "timeline", arch, "--window", "10ms"],
        vec!["report", "unfreed", arch],
        vec!["report", "io", arch],
        vec![
            "report",
            "exhaustion",
            phases,
            "--rule",
            cpu_rule,
            "--t0",
            "exec:phases",
        ],
        vec![
            "report",
            "cause",
            phases,
            "--resource",
            "cpu",
            "--rule",
            cpu_rule,
            "--t0",
            "exec:phases",
        ],
        vec![
            "report",
            "cause",
            phases,
            "--resource",
            "memory",
            "--rule",
            "memused_pct > 5",
            "--at",
            "max",
            "--t0",
            "exec:phases",
        ],
        vec!["report", "pages", memlog],
        vec!["report", "page-reuse", memlog],
        vec!["report", "mem-symbols", memlog],
        vec![
            "report",
            "energy",
            energy,
            "--by",
            "function",
            "--core-indicator",
            "read:cycles",
            "--dram-indicator",
            "read:LLC-load-misses",
        ],
        // Several captures and archives in one query.
        vec![
            "sql",
            arch,
            phases,
            memlog,
            energy,
            "SELECT capture, count(*) AS n FROM perf_sample GROUP BY capture ORDER BY capture",
        ],
    ];
    for args in &cases {
        let (local, cluster) = both(&c, args);
        assert!(
            local.lines().count() > 1,
            "{args:?}: a case must have an answer:\n{local}"
        );
        assert_eq!(local, cluster, "{args:?}");
    }
    // A flame graph drawn from the cluster's rows is the same picture.
    trawl_ok(&[
        "report",
        "flamegraph",
        arch,
        "-o",
        svg_local.to_str().unwrap(),
    ]);
    let o = trawl(&[
        "--cluster",
        &c.url,
        "report",
        "flamegraph",
        arch,
        "-o",
        svg_cluster.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(
        std::fs::read(&svg_local).unwrap(),
        std::fs::read(&svg_cluster).unwrap()
    );
    // A filter on `capture` still reads only that capture's rows of its
    // segment's file: the plan the scheduler distributes (as EXPLAIN
    // prints it) carries the filter on `capture` next to the scan (the
    // row selection the manifest gives is the scan's own, which a plan
    // sent to a cluster loses).
    let names = trawl_ok(&[
        "sql",
        arch,
        "SELECT capture FROM capture ORDER BY 1",
        "--format",
        "csv",
    ]);
    let names: Vec<&str> = names.lines().skip(1).collect();
    assert!(names.len() >= 2, "{names:?}");
    let q = format!(
        "EXPLAIN SELECT count(*) FROM perf_sample WHERE capture = '{}'",
        names[0]
    );
    let (_, plan) = both(&c, &["sql", arch, &q]);
    assert!(plan.contains("distributed_plan"), "{plan}");
    let dist = &plan[plan.find("distributed_plan").unwrap()..];
    assert!(dist.contains("/perf_sample.parquet"), "{plan}");
    assert!(
        dist.contains(&format!("FilterExec: capture@0 IN (SET) ([{}])", names[0])),
        "{plan}"
    );
    // The work ran on the executors: each ran tasks.
    c.assert_each_executor_ran_tasks();
}

/// What cannot run on a cluster is refused by the client, naming it,
/// before anything is sent; --cluster applies to queries only; a cluster
/// that is not there is an error, not a wait.
#[test]
fn cluster_refusals_and_errors() {
    let (_d, cap) = ingest("hot-fp.data");
    let cap = cap.to_str().unwrap();
    let out = tempfile::tempdir().unwrap();
    let copy = format!(
        "COPY (SELECT count(*) FROM perf_sample) TO '{}/n.csv'",
        out.path().display()
    );
    // No process listens on port 1.
    let url = "df://127.0.0.1:1";
    let o = trawl(&["--cluster", url, "sql", cap, &copy]);
    assert_refused(&o, "COPY would write");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("not run on a cluster: COPY"), "{err}");
    assert!(!out.path().join("n.csv").exists());

    let o = trawl(&["--cluster", url, "ingest", cap, "-o", "x"]);
    assert_refused(&o, "--cluster applies to");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--cluster applies to"), "{err}");

    let o = trawl(&["--cluster", "df://h:x", "sql", cap, "SELECT 1"]);
    assert_refused(&o, "expected df://HOST:PORT");
    assert!(String::from_utf8_lossy(&o.stderr).contains("expected df://HOST:PORT"));

    let t0 = Instant::now();
    let o = trawl(&[
        "--cluster",
        url,
        "sql",
        cap,
        "SELECT count(*) FROM perf_sample",
    ]);
    assert_refused(&o, "cannot reach the scheduler");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("cannot reach the scheduler at df://127.0.0.1:1"),
        "{err}"
    );
    assert!(t0.elapsed() < Duration::from_secs(60));
}
