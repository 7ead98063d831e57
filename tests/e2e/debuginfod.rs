//! `--debuginfod URL` / `DEBUGINFOD_URLS`: a capture whose binaries are not
//! on this machine (looked up only under an empty `--symfs`) is symbolized
//! through a real `debuginfod` server (Debian's `debuginfod` package)
//! started on localhost over a directory holding the fixture program, libc
//! and libc's separate debug file (libc6-dbg). Expected names: the same
//! capture ingested with the files on disk (which the perf_fixtures tests
//! check against perf report). Also: a server answering with a file of
//! another build-id is refused and nothing is cached; a server that never
//! answers costs the timeout, not the run; unset, nothing is asked.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::common::*;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn build_id(f: &Path) -> String {
    trawl_symbolize::build_id_of(f).unwrap()
}

/// GET url, the HTTP status (curl).
fn status(url: &str) -> String {
    let o = Command::new("curl")
        .args(["-s", "-o", "/dev/null", "-w", "%{http_code}", url])
        .output()
        .expect("curl");
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// debuginfod over `dir`, once it serves every path of `ready`.
fn debuginfod(dir: &Path, ready: &[String]) -> (Server, String) {
    let port = free_port();
    let child = Command::new("debuginfod")
        .args(["-F", dir.to_str().unwrap(), "-p", &port.to_string(), "-d"])
        .arg(dir.join("index.sqlite"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("debuginfod must be installed (apt-get install debuginfod)");
    let server = Server(child);
    let url = format!("http://127.0.0.1:{port}");
    let t = Instant::now();
    for path in ready {
        while status(&format!("{url}{path}")) != "200" {
            assert!(
                t.elapsed() < Duration::from_secs(60),
                "debuginfod never served {path}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    (server, url)
}

fn hotspot_names(cap: &Path) -> Vec<String> {
    let mut v: Vec<String> = csv_maps(&report_csv("hotspots", cap, &["--no-inline"]))
        .into_iter()
        .filter(|r| !r["module"].contains("kernel"))
        .map(|r| {
            format!(
                "{} {} {}",
                r["function"], r["self_samples"], r["total_samples"]
            )
        })
        .collect();
    v.sort();
    v
}

/// trawl with `env`, its own empty symbol store (a store shared with other
/// tests would answer for the build-ids the server is meant to provide).
fn trawl_env(env: &[(&str, &Path)], args: &[&str]) -> std::process::Output {
    let store = tempfile::tempdir().unwrap();
    let mut c = Command::new(crate::common::trawl_exe());
    c.args(args)
        .env_remove("DEBUGINFOD_URLS")
        .env("XDG_CACHE_HOME", store.path());
    for (k, v) in env {
        c.env(k, v);
    }
    c.output().unwrap()
}

#[test]
fn binaries_and_debug_files_come_from_a_debuginfod_server() {
    let t = tempfile::tempdir().unwrap();
    let srv = t.path().join("srv");
    std::fs::create_dir(&srv).unwrap();
    let hot = fixture_bin().join("hot");
    std::fs::copy(&hot, srv.join("hot")).unwrap();
    // libc and the dynamic linker with their debug files (libc6-dbg).
    let mut libc_bid = String::new();
    let hot_bid = build_id(&hot);
    let mut ready = vec![format!("/buildid/{hot_bid}/executable")];
    for lib in ["libc.so.6", "ld-linux-x86-64.so.2"] {
        let f = PathBuf::from("/usr/lib/x86_64-linux-gnu").join(lib);
        let bid = build_id(&f);
        let dbg = PathBuf::from(format!(
            "/usr/lib/debug/.build-id/{}/{}.debug",
            &bid[..2],
            &bid[2..]
        ));
        assert!(dbg.exists(), "libc6-dbg must be installed");
        std::fs::copy(&f, srv.join(lib)).unwrap();
        std::fs::copy(&dbg, srv.join(format!("{lib}.debug"))).unwrap();
        ready.push(format!("/buildid/{bid}/executable"));
        ready.push(format!("/buildid/{bid}/debuginfo"));
        if lib == "libc.so.6" {
            libc_bid = bid;
        }
    }
    let (_server, url) = debuginfod(&srv, &ready);

    // The reference: the files on disk.
    let (_r, reference) = ingest("hot-fp.data");
    let want = hotspot_names(&reference);

    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cache = t.path().join("cache");
    let data = fixture("hot-fp.data");
    let run = |cap: &Path, env: &[(&str, &Path)], extra: &[&str]| {
        let mut args = vec![
            "ingest",
            data.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--symfs",
            empty.to_str().unwrap(),
        ];
        args.extend_from_slice(extra);
        let mut env = env.to_vec();
        env.push(("DEBUGINFOD_CACHE_PATH", &cache));
        let o = trawl_env(&env, &args);
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        String::from_utf8_lossy(&o.stderr).into_owned()
    };

    // Not configured: nothing outside the empty root, nothing resolves.
    let none = t.path().join("none");
    run(&none, &[], &[]);
    assert!(
        !cache.exists(),
        "no server configured, yet the cache was made"
    );
    assert!(
        sql_scalar(
            &none,
            "SELECT count(*) FROM symbol WHERE function = 'spin_a'"
        ) == "0"
    );

    // --debuginfod URL: the program and libc (+ its debug file) arrive.
    let cap = t.path().join("cap");
    run(&cap, &[], &["--debuginfod", &url]);
    assert_eq!(
        hotspot_names(&cap),
        want,
        "names through debuginfod vs files on disk"
    );
    let files = sql_rows(
        &cap,
        "SELECT path, binary, debug_info, status FROM symbol_file \
         WHERE path LIKE '%/hot' OR path LIKE '%libc.so.6' ORDER BY path",
    );
    let c = cache.to_str().unwrap();
    assert_eq!(
        files,
        vec![
            vec![
                "/usr/lib/x86_64-linux-gnu/libc.so.6".to_string(),
                format!("{c}/{libc_bid}/executable"),
                format!("{c}/{libc_bid}/debuginfo"),
                "ok".into()
            ],
            vec![
                files[1][0].clone(),
                format!("{c}/{hot_bid}/executable"),
                format!("{c}/{hot_bid}/executable"),
                "ok".into()
            ],
        ]
    );
    assert!(files[1][0].ends_with("/hot"));
    // Source lines of libc come from the fetched debug file.
    let lines = sql_scalar(
        &cap,
        "SELECT count(*) FROM symbol s JOIN module m ON s.module_id = m.module_id \
         WHERE m.path LIKE '%libc.so.6' AND s.line IS NOT NULL",
    );
    assert!(lines.parse::<u64>().unwrap() > 0, "no libc lines");

    // DEBUGINFOD_URLS does the same; the cache now answers without asking.
    let env_cap = t.path().join("env");
    let url_path = PathBuf::from(&url);
    run(&env_cap, &[("DEBUGINFOD_URLS", &url_path)], &[]);
    assert_eq!(hotspot_names(&env_cap), want);
    // --no-debuginfod wins over the environment.
    let off = t.path().join("off");
    let other_cache = t.path().join("cache2");
    let o = trawl_env(
        &[
            ("DEBUGINFOD_URLS", &url_path),
            ("DEBUGINFOD_CACHE_PATH", &other_cache),
        ],
        &[
            "ingest",
            data.to_str().unwrap(),
            "-o",
            off.to_str().unwrap(),
            "--symfs",
            empty.to_str().unwrap(),
            "--no-debuginfod",
        ],
    );
    assert!(o.status.success());
    assert!(!other_cache.exists());
}

#[test]
fn a_wrong_or_silent_server_is_refused_and_bounded() {
    let t = tempfile::tempdir().unwrap();
    let hot_bid = build_id(&fixture_bin().join("hot"));
    // A plain HTTP server whose `executable` for hot's build-id is another
    // program.
    let www = t.path().join("www");
    let d = www.join("buildid").join(&hot_bid);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::copy(fixture_bin().join("regress"), d.join("executable")).unwrap();
    let port = free_port();
    let _http = Server(
        Command::new("python3")
            .args([
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "-d",
            ])
            .arg(&www)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    let url = format!("http://127.0.0.1:{port}");
    let t0 = Instant::now();
    while status(&format!("{url}/buildid/{hot_bid}/executable")) != "200" {
        assert!(t0.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(100));
    }
    let empty = t.path().join("empty");
    std::fs::create_dir(&empty).unwrap();
    let cache = t.path().join("cache");
    let cap = t.path().join("cap");
    let data = fixture("hot-fp.data");
    let o = trawl_env(
        &[("DEBUGINFOD_CACHE_PATH", &cache)],
        &[
            "ingest",
            data.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--symfs",
            empty.to_str().unwrap(),
            "--debuginfod",
            &url,
        ],
    );
    assert!(o.status.success());
    let msg = sql_scalar(
        &cap,
        "SELECT message FROM symbol_file WHERE path LIKE '%/hot'",
    );
    assert!(msg.contains("the file has build-id"), "{msg}");
    assert!(!cache.join(&hot_bid).join("executable").exists());
    // Nothing half-written left in the cache either.
    let left: Vec<_> = walk(&cache);
    assert!(left.is_empty(), "{left:?}");

    // A server that accepts connections and never answers: the timeout.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let surl = format!("http://{}", silent.local_addr().unwrap());
    let cap2 = t.path().join("cap2");
    let t1 = Instant::now();
    let timeout = PathBuf::from("2");
    let o = trawl_env(
        &[
            ("DEBUGINFOD_CACHE_PATH", &cache),
            ("DEBUGINFOD_TIMEOUT", &timeout),
        ],
        &[
            "ingest",
            data.to_str().unwrap(),
            "-o",
            cap2.to_str().unwrap(),
            "--symfs",
            empty.to_str().unwrap(),
            "--debuginfod",
            &surl,
        ],
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    // Three modules asked (the program, libc, ld.so), each once, 2 s each.
    assert!(t1.elapsed() < Duration::from_secs(30), "{:?}", t1.elapsed());
    let msg = sql_scalar(
        &cap2,
        "SELECT message FROM symbol_file WHERE path LIKE '%/hot'",
    );
    assert!(msg.contains("debuginfod"), "{msg}");
    drop(silent);
}
