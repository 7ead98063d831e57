//! `trawl export`: each file opened by its consumer.
//!
//! - pprof: `go tool pprof` (Debian's golang-go) reads the file; its `-top`
//!   flat and cum per function equal `trawl report hotspots` self and total
//!   samples, and its flat counts equal `perf report --no-children` on the
//!   same perf.data; `-raw` sums to perf script's period total.
//! - speedscope: the file validates against speedscope's published schema
//!   (`file-format-schema.json` of the npm package `speedscope`, found at
//!   `$SPEEDSCOPE_SCHEMA` or `target/npm/node_modules/speedscope/...`; `.ci/run`
//!   installs it) with Python's `jsonschema`; its samples per thread and
//!   leaf function equal perf script's.
//! - Firefox Profiler: the Profiler's own code loads the file (its
//!   published CLI, `@firefox-devtools/profiler-cli`, bundles the web app's
//!   unserialize/upgrade and processing; `tests/e2e/firefox_check/`,
//!   installed under `target/npm` by `.ci/run`) and its samples per thread
//!   and leaf function equal perf script's; the file is also read back
//!   directly (stringArray → funcTable → frameTable → stackTable →
//!   samples) with the same expectation;
//!   its leaf frames' lines (`frameTable.line`, the file from
//!   `funcTable.fileName`) equal `perf report --sort srcline`.
//! - folded: the lines sum to perf script's sample count, and the leaves
//!   to perf report's self counts.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;
use crate::perf_fixtures::perf_report;

fn export(cap: &Path, to: &str, out: &Path, extra: &[&str]) {
    let mut args = vec![
        "export",
        cap.to_str().unwrap(),
        "--to",
        to,
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trawl_ok(&args);
}

fn go_pprof(args: &[&str]) -> String {
    let o = Command::new("go")
        .args(["tool", "pprof"])
        .args(args)
        // No symbolization, no network, no $HOME/pprof writes.
        .env("PPROF_TMPDIR", std::env::temp_dir())
        .env("PPROF_BINARY_PATH", "/nonexistent")
        .output()
        .expect("go must be installed (apt-get install golang-go)");
    assert!(
        o.status.success(),
        "go tool pprof {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout).unwrap()
}

/// `go tool pprof -top` rows: function → (flat, cum).
fn pprof_top(file: &Path, sample_index: &str) -> HashMap<String, (i64, i64)> {
    let out = go_pprof(&[
        "-top",
        "-nodecount=100000",
        "-nodefraction=0",
        "-edgefraction=0",
        &format!("-sample_index={sample_index}"),
        file.to_str().unwrap(),
    ]);
    let mut rows = HashMap::new();
    let mut in_table = false;
    for line in out.lines() {
        if line.trim_start().starts_with("flat") {
            in_table = true;
            continue;
        }
        if !in_table || line.trim().is_empty() {
            continue;
        }
        let t: Vec<&str> = line.split_whitespace().collect();
        let flat: i64 = t[0].parse().unwrap();
        let cum: i64 = t[3].parse().unwrap();
        // pprof marks a function inlined at that place `NAME (inline)`.
        let name = t[5..].join(" ");
        let name = name.strip_suffix(" (inline)").unwrap_or(&name).to_string();
        let e = rows.entry(name).or_insert((0, 0));
        e.0 += flat;
        e.1 += cum;
    }
    assert!(!rows.is_empty(), "pprof -top printed no rows:\n{out}");
    rows
}

#[test]
fn pprof_top_equals_hotspots_and_perf_report() {
    for (name, inline) in [
        ("hot-fp.data", false),
        ("inline.data", true),
        ("procs.data", false),
    ] {
        let (t, cap) = ingest(name);
        let out = t.path().join("p.pb.gz");
        let mut extra = vec!["--weight", "samples"];
        if !inline {
            extra.push("--no-inline");
        }
        export(&cap, "pprof", &out, &extra);
        let top = pprof_top(&out, "samples");
        // Against trawl's own report (which the perf_fixtures tests check
        // against perf report): every function, flat = self, cum = total.
        let mut hs_args = vec!["--weight", "samples"];
        if !inline {
            hs_args.push("--no-inline");
        }
        let hs = csv_maps(&report_csv("hotspots", &cap, &hs_args));
        let mut want: HashMap<String, (i64, i64)> = HashMap::new();
        for r in &hs {
            let e = want.entry(r["function"].clone()).or_insert((0, 0));
            e.0 += r["self_samples"].parse::<i64>().unwrap();
            e.1 += r["total_samples"].parse::<i64>().unwrap();
        }
        // pprof merges functions of one name; hotspots keeps them per module
        // (summed above). Cum of a name in two modules on one stack would
        // differ: none of these fixtures has one.
        assert_eq!(top, want, "{name}: pprof -top vs trawl report hotspots");
        // Against perf report directly: flat per resolved symbol.
        if !inline {
            let mut perf_self: HashMap<String, i64> = HashMap::new();
            for r in perf_report(&fixture(name), false) {
                *perf_self.entry(r.sym.clone()).or_default() += r.samples as i64;
            }
            for (sym, n) in &perf_self {
                if sym.starts_with("0x") {
                    continue; // unresolved: perf prints absolute addresses
                }
                assert_eq!(
                    top.get(sym).map(|v| v.0),
                    Some(*n),
                    "{name}: {sym} flat vs perf report --no-children"
                );
            }
        }
        let total: i64 = top.values().map(|v| v.0).sum();
        assert_eq!(
            total as usize,
            perf_script_samples(&fixture(name)),
            "{name}"
        );
    }
}

#[test]
fn pprof_weights_are_the_periods_in_nanoseconds() {
    let (t, cap) = ingest("hot-fp.data");
    let out = t.path().join("p.pb.gz");
    export(&cap, "pprof", &out, &[]);
    let raw = go_pprof(&["-raw", out.to_str().unwrap()]);
    assert!(raw.contains("samples/count cpu-clock/nanoseconds"), "{raw}");
    // A clock with a modifier (cpu-clock:u, recorded as clock-u.data) is a
    // clock: its periods are nanoseconds too.
    let (tu, capu) = ingest("clock-u.data");
    let outu = tu.path().join("u.pb.gz");
    export(&capu, "pprof", &outu, &[]);
    let rawu = go_pprof(&["-raw", outu.to_str().unwrap()]);
    assert!(
        rawu.contains("samples/count cpu-clock:u/nanoseconds"),
        "{rawu}"
    );
    // -raw lists each sample as `COUNT WEIGHT: LOCATIONS`.
    let mut n = 0i64;
    let mut w = 0i64;
    let mut in_samples = false;
    for line in raw.lines() {
        if line.starts_with("Samples:") {
            in_samples = true;
            continue;
        }
        if line.starts_with("Locations") {
            break;
        }
        let Some((vals, _)) = line.split_once(':') else {
            continue;
        };
        let v: Vec<i64> = vals
            .split_whitespace()
            .filter_map(|x| x.parse().ok())
            .collect();
        if in_samples && v.len() == 2 {
            n += v[0];
            w += v[1];
        }
    }
    let script = perf(&[
        "script",
        "-i",
        fixture("hot-fp.data").to_str().unwrap(),
        "-F",
        "period",
    ]);
    let periods: Vec<i64> = script
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect();
    assert_eq!(n as usize, periods.len());
    assert_eq!(w, periods.iter().sum::<i64>());
    // A filter applies: one process of procs.data.
    let (t2, cap2) = ingest("procs.data");
    let pids = sql_rows(&cap2, "SELECT DISTINCT pid FROM perf_sample ORDER BY pid");
    let pid = &pids[1][0];
    let out2 = t2.path().join("one.pb.gz");
    export(
        &cap2,
        "pprof",
        &out2,
        &["--pid", pid, "--weight", "samples"],
    );
    let top = pprof_top(&out2, "samples");
    let want = sql_scalar(
        &cap2,
        &format!("SELECT count(*) FROM perf_sample WHERE pid = {pid}"),
    );
    assert_eq!(
        top.values().map(|v| v.0).sum::<i64>().to_string(),
        want,
        "--pid {pid}"
    );
}

/// Each leaf perf script names (not an address) has perf's sample count
/// in `got`, per thread; returns how many were compared.
fn assert_named_leaves(
    got: &HashMap<(i32, String), i64>,
    want: &HashMap<(i32, String), i64>,
) -> usize {
    let mut checked = 0;
    for ((tid, sym), n) in want {
        if sym.starts_with("[unknown]") || sym.starts_with("0x") {
            continue;
        }
        assert_eq!(
            got.get(&(*tid, sym.clone())),
            Some(n),
            "tid {tid} leaf {sym}"
        );
        checked += 1;
    }
    checked
}

/// perf script's samples per (tid, leaf symbol) of a fixture.
pub(crate) fn perf_leaves(file: &Path) -> HashMap<(i32, String), i64> {
    let out = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "tid,ip,sym",
        "--no-inline",
    ]);
    let mut m = HashMap::new();
    let mut tid: Option<i32> = None;
    for line in out.lines() {
        if line.trim().is_empty() {
            tid = None;
            continue;
        }
        match tid {
            None => tid = line.trim().parse().ok(),
            Some(t) => {
                // First frame line after the tid line: the leaf.
                let sym = line.split_whitespace().nth(1).unwrap_or("").to_string();
                *m.entry((t, sym)).or_default() += 1;
                tid = Some(i32::MIN);
            }
        }
    }
    m.retain(|(t, _), _| *t != i32::MIN);
    m
}

fn schema_path() -> PathBuf {
    if let Ok(p) = std::env::var("SPEEDSCOPE_SCHEMA") {
        return PathBuf::from(p);
    }
    let p = root().join("target/npm/node_modules/speedscope/dist/release/file-format-schema.json");
    assert!(
        p.exists(),
        "speedscope's schema is missing: npm install --prefix target/npm speedscope@1.25.0 (or set SPEEDSCOPE_SCHEMA)"
    );
    p
}

#[test]
fn speedscope_file_validates_and_keeps_the_samples() {
    let (t, cap) = ingest("threads.data");
    let out = t.path().join("s.speedscope.json");
    export(
        &cap,
        "speedscope",
        &out,
        &["--weight", "samples", "--no-inline"],
    );
    let check = Command::new("python3")
        .arg("-c")
        .arg(
            "import json, sys, jsonschema\n\
             s = json.load(open(sys.argv[1])); d = json.load(open(sys.argv[2]))\n\
             jsonschema.validate(d, s)\n\
             print('ok')",
        )
        .arg(schema_path())
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "speedscope schema validation failed: {}",
        String::from_utf8_lossy(&check.stderr)
    );
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let frames = d["shared"]["frames"].as_array().unwrap();
    let mut got: HashMap<(i32, String), i64> = HashMap::new();
    for p in d["profiles"].as_array().unwrap() {
        // Names are `comm (pid/tid)`.
        let name = p["name"].as_str().unwrap();
        let tid: i32 = name
            .rsplit_once('/')
            .unwrap()
            .1
            .trim_end_matches(')')
            .parse()
            .unwrap();
        let samples = p["samples"].as_array().unwrap();
        let weights = p["weights"].as_array().unwrap();
        assert_eq!(samples.len(), weights.len());
        assert_eq!(
            p["endValue"].as_i64().unwrap(),
            weights.iter().map(|w| w.as_i64().unwrap()).sum::<i64>()
        );
        for (s, w) in samples.iter().zip(weights) {
            let leaf = s.as_array().unwrap().last().unwrap().as_u64().unwrap();
            let f = frames[leaf as usize]["name"].as_str().unwrap().to_string();
            *got.entry((tid, f)).or_default() += w.as_i64().unwrap();
        }
    }
    let want = perf_leaves(&fixture("threads.data"));
    assert_eq!(got.values().sum::<i64>(), want.values().sum::<i64>());
    assert_named_leaves(&got, &want);
    // The source file of a function with DWARF.
    let worker = frames.iter().find(|f| f["name"] == "burn");
    assert!(
        worker.is_some_and(|f| f["file"].as_str().is_some_and(|x| x.ends_with("threads.c"))),
        "{worker:?}"
    );
}

#[test]
fn firefox_profile_reads_back_the_samples() {
    let (t, cap) = ingest("threads.data");
    let out = t.path().join("f.json");
    export(&cap, "firefox", &out, &["--no-inline"]);
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    assert!(d["meta"]["version"].as_u64().is_some(), "no meta.version");
    let shared_strings = d["shared"]["stringArray"].as_array();
    let mut got: HashMap<(i32, String), i64> = HashMap::new();
    for th in d["threads"].as_array().unwrap() {
        let tid: i32 = match &th["tid"] {
            serde_json::Value::String(s) => s.parse().unwrap(),
            v => v.as_i64().unwrap() as i32,
        };
        let strings = th["stringArray"].as_array().or(shared_strings).unwrap();
        let func_name = th["funcTable"]["name"].as_array().unwrap();
        let frame_func = th["frameTable"]["func"].as_array().unwrap();
        let stack_frame = th["stackTable"]["frame"].as_array().unwrap();
        let samples = &th["samples"];
        let stacks = samples["stack"].as_array().unwrap();
        let weights = samples["weight"].as_array();
        for (i, st) in stacks.iter().enumerate() {
            let Some(st) = st.as_u64() else { continue };
            let frame = stack_frame[st as usize].as_u64().unwrap();
            let func = frame_func[frame as usize].as_u64().unwrap();
            let name = strings[func_name[func as usize].as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
                .to_string();
            let w = weights.map_or(1, |w| w[i].as_i64().unwrap_or(1));
            *got.entry((tid, name)).or_default() += w;
        }
    }
    let want = perf_leaves(&fixture("threads.data"));
    assert_eq!(got.values().sum::<i64>(), want.values().sum::<i64>());
    assert_named_leaves(&got, &want);
    // A weight the Profiler cannot show is refused, naming the way out.
    let o = trawl(&[
        "export",
        cap.to_str().unwrap(),
        "--to",
        "firefox",
        "-o",
        out.to_str().unwrap(),
        "--weight",
        "weight",
    ]);
    assert_refused(&o, "--weight weight cannot be written");
    assert!(String::from_utf8_lossy(&o.stderr).contains("pprof/speedscope"));
}

/// The Firefox Profiler's own loader run on `profile`
/// (`tests/e2e/firefox_check/check.mjs`): what the Profiler built from it,
/// per thread (samples, self samples per function, heaviest stack).
fn firefox_profiler_check(profile: &Path) -> serde_json::Value {
    let npm = std::env::var_os("FIREFOX_CHECK_NPM")
        .map(PathBuf::from)
        .unwrap_or_else(|| root().join("target/npm"));
    assert!(
        npm.join("node_modules/@firefox-devtools/profiler-cli/dist/profiler-cli.js")
            .exists(),
        "the Firefox Profiler's CLI is missing: npm install --save-exact --prefix target/npm @firefox-devtools/profiler-cli@0.10.0 (or set FIREFOX_CHECK_NPM)"
    );
    let o = Command::new("node")
        .arg(root().join("tests/e2e/firefox_check/check.mjs"))
        .arg(profile)
        .env("FIREFOX_CHECK_NPM", &npm)
        .output()
        .expect("node");
    assert!(
        o.status.success(),
        "the Firefox Profiler refused the file:\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn firefox_profiler_loads_the_file_with_perf_script_leaves() {
    // Expected: perf script's leaf per sample and thread (threads.data:
    // four threads of a program whose workers burn in `burn`).
    let (t, cap) = ingest("threads.data");
    let out = t.path().join("f.json");
    export(&cap, "firefox", &out, &["--no-inline"]);
    let v = firefox_profiler_check(&out);
    assert!(v["processedProfileVersion"].as_u64().is_some(), "{v}");
    let threads = v["threads"].as_array().unwrap();
    assert_eq!(threads.len(), 4, "{v}");
    let mut got: HashMap<(i32, String), i64> = HashMap::new();
    for th in threads {
        let tid: i32 = th["tid"].as_str().unwrap().parse().unwrap();
        for (f, n) in th["selfSamples"].as_object().unwrap() {
            *got.entry((tid, f.clone())).or_default() += n.as_i64().unwrap();
        }
    }
    let want = perf_leaves(&fixture("threads.data"));
    assert_eq!(got.values().sum::<i64>(), want.values().sum::<i64>());
    let checked = assert_named_leaves(&got, &want);
    assert!(checked >= 4, "{checked} leaves compared");
    // The heaviest stack of a worker thread, as the Profiler's call tree
    // shows it, ends in the function the workers burn in.
    assert!(threads.iter().any(|th| {
        th["heaviestStack"]
            .as_array()
            .and_then(|s| s.last())
            .and_then(|f| f.as_str())
            == Some("burn")
    }));
}

/// The Profiler's source view counts samples per `frameTable.line` of a
/// function whose `funcTable.fileName` it opens. Expected: `perf report
/// --no-children --sort srcline` on the same perf.data (inline.data: the
/// leaf is an inlined `step` at three lines of inl.c).
#[test]
fn firefox_profile_has_the_source_lines_of_perf_report() {
    let (t, cap) = ingest("inline.data");
    let out = t.path().join("f.json");
    export(&cap, "firefox", &out, &[]);
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
    let mut got: HashMap<String, u64> = HashMap::new();
    for th in d["threads"].as_array().unwrap() {
        let s = |i: &serde_json::Value| th["stringArray"][i.as_u64().unwrap() as usize].as_str();
        let (funcs, frames) = (&th["funcTable"], &th["frameTable"]);
        for st in th["samples"]["stack"].as_array().unwrap() {
            let Some(st) = st.as_u64() else { continue };
            let frame = th["stackTable"]["frame"][st as usize].as_u64().unwrap() as usize;
            let func = frames["func"][frame].as_u64().unwrap() as usize;
            let (file, line) = (&funcs["fileName"][func], &frames["line"][frame]);
            if file.is_null() || line.is_null() {
                continue;
            }
            let base = s(file).unwrap().rsplit('/').next().unwrap();
            *got.entry(format!("{base}:{line}")).or_default() += 1;
        }
    }
    let want = crate::lines::perf_srclines(&fixture("inline.data"));
    assert!(want.len() >= 5, "{want:?}");
    for (srcline, n) in &want {
        assert_eq!(got.get(srcline), Some(n), "{srcline}: {got:?}");
    }
    // One function per name and file: `step` once, with its lines on frames.
    let th = &d["threads"][0];
    let names: Vec<&str> = th["funcTable"]["name"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            th["stringArray"][i.as_u64().unwrap() as usize]
                .as_str()
                .unwrap()
        })
        .collect();
    assert_eq!(
        names.iter().filter(|n| **n == "step").count(),
        1,
        "{names:?}"
    );
}

#[test]
fn folded_export_sums_to_perf_script() {
    let (t, cap) = ingest("hot-fp.data");
    let out = t.path().join("f.folded");
    export(
        &cap,
        "folded",
        &out,
        &["--weight", "samples", "--no-inline"],
    );
    let text = std::fs::read_to_string(&out).unwrap();
    let piped = trawl_ok(&[
        "export",
        cap.to_str().unwrap(),
        "--to",
        "folded",
        "-o",
        "-",
        "--weight",
        "samples",
        "--no-inline",
    ]);
    assert_eq!(piped, text, "-o - writes the file to standard output");
    assert!(!Path::new("-").exists());
    let mut total = 0i64;
    let mut leaf: HashMap<String, i64> = HashMap::new();
    for l in text.lines() {
        let (stack, n) = l.rsplit_once(' ').unwrap();
        let n: i64 = n.parse().unwrap();
        total += n;
        *leaf
            .entry(stack.rsplit(';').next().unwrap().to_string())
            .or_default() += n;
    }
    assert_eq!(total as usize, perf_script_samples(&fixture("hot-fp.data")));
    for r in perf_report(&fixture("hot-fp.data"), false) {
        if r.sym.starts_with("0x") {
            continue;
        }
        assert_eq!(leaf.get(&r.sym), Some(&(r.samples as i64)), "{}", r.sym);
    }
}

/// Several captures in one Firefox profile: each process named with its
/// capture, each capture's samples those perf script prints for its file,
/// every thread's samples in time order, and the same file whatever order
/// the captures are named in. Expected: `perf script` on diff-base.data
/// and diff-new.data.
#[test]
fn firefox_profile_of_two_captures_keeps_them_apart() {
    let t = tempfile::tempdir().unwrap();
    let bin = fixture_bin();
    let caps: Vec<PathBuf> = ["base", "new"]
        .iter()
        .map(|name| {
            let cap = t.path().join(name);
            ingest_file(
                &fixture(&format!("diff-{name}.data")),
                &cap,
                &["--debug-dir", bin.to_str().unwrap()],
            );
            cap
        })
        .collect();
    let (ab, ba) = (t.path().join("ab.json"), t.path().join("ba.json"));
    // The second capture after the options (clap takes positionals anywhere).
    export(&caps[0], "firefox", &ab, &[caps[1].to_str().unwrap()]);
    export(&caps[1], "firefox", &ba, &[caps[0].to_str().unwrap()]);
    assert!(
        std::fs::read(&ab).unwrap() == std::fs::read(&ba).unwrap(),
        "the profile depends on the order the captures are named in"
    );
    let d: serde_json::Value = serde_json::from_slice(&std::fs::read(&ab).unwrap()).unwrap();
    let mut got: HashMap<String, usize> = HashMap::new();
    for th in d["threads"].as_array().unwrap() {
        let process = th["processName"].as_str().unwrap();
        let capture = ["base", "new"]
            .into_iter()
            .find(|c| process.ends_with(&format!(" ({c})")))
            .unwrap_or_else(|| panic!("process {process:?} names no capture"));
        let samples = &th["samples"];
        let deltas = samples["timeDeltas"].as_array().unwrap();
        assert!(
            deltas.iter().all(|d| d.as_f64().unwrap() >= 0.0),
            "samples of {process} out of time order"
        );
        *got.entry(capture.to_string()).or_default() +=
            samples["length"].as_u64().unwrap() as usize;
    }
    for c in ["base", "new"] {
        let want: i64 = perf_leaves(&fixture(&format!("diff-{c}.data")))
            .values()
            .sum();
        assert_eq!(got.get(c).copied(), Some(want as usize), "samples of {c}");
    }
}

/// `--process-root`: each process a root frame `comm-pid` over its stacks,
/// as `perf script | stackcollapse-perf.pl --pid` folds them. Expected:
/// perf script's samples per comm and pid of procs.data (a parent, a
/// forked child and an exec'd `hot`); the other formats refuse it.
#[test]
fn folded_stacks_with_a_process_root() {
    let (_t, cap) = ingest("procs.data");
    let script = perf(&[
        "script",
        "-i",
        fixture("procs.data").to_str().unwrap(),
        "-F",
        "comm,pid",
    ]);
    let mut want: HashMap<String, i64> = HashMap::new();
    for l in script.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() == 2 {
            *want.entry(format!("{}-{}", f[0], f[1])).or_default() += 1;
        }
    }
    assert!(want.len() >= 3, "{want:?}");
    let out = trawl_ok(&[
        "export",
        cap.to_str().unwrap(),
        "--to",
        "folded",
        "--process-root",
        "--weight",
        "samples",
        "-o",
        "-",
    ]);
    let mut got: HashMap<String, i64> = HashMap::new();
    for l in out.lines() {
        let (stack, w) = l.rsplit_once(' ').unwrap();
        let root = stack.split(';').next().unwrap();
        *got.entry(root.to_string()).or_default() += w.parse::<i64>().unwrap();
    }
    assert_eq!(got, want);
    let o = trawl(&[
        "export",
        cap.to_str().unwrap(),
        "--to",
        "pprof",
        "--process-root",
        "-o",
        "-",
    ]);
    assert_eq!(o.status.code(), Some(1));
}
