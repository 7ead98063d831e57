//! Exhaustion ranges and their causes end to end on fixtures/phases: three
//! recorded runs of a program with a CPU, a memory and an I/O phase, each
//! with perf.data (`-k CLOCK_MONOTONIC`), an strace dump (`-ttt -k`),
//! vmstat and sar logs. Expected values come from the raw files (perf's
//! header and `perf script`, the strace text, the vmstat and sadf text) and
//! from the program (phases.c).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use std::collections::HashMap;

use crate::common::*;

fn run_dir(n: usize) -> PathBuf {
    root().join(format!("fixtures/phases/run{n}"))
}

/// The three runs, ingested once: `<tmp>/run1` ...
fn runs() -> &'static [PathBuf; 3] {
    static RUNS: OnceLock<(tempfile::TempDir, [PathBuf; 3])> = OnceLock::new();
    &RUNS
        .get_or_init(|| {
            let dir = tempfile::tempdir().unwrap();
            let caps = [1, 2, 3].map(|n| {
                let cap = dir.path().join(format!("run{n}"));
                ingest_run(n, &cap);
                cap
            });
            (dir, caps)
        })
        .1
}

/// Ingests run `n` (perf, strace, vmstat, sar) into `cap`.
pub(crate) fn ingest_run(n: usize, cap: &Path) {
    let d = run_dir(n);
    let files = ["perf.data", "app.strace", "vmstat.log", "sar.csv"]
        .map(|f| d.join(f).to_string_lossy().into_owned());
    let bin = root().join("fixtures/phases/bin");
    let mut args = vec!["ingest"];
    args.extend(files.iter().map(String::as_str));
    args.extend([
        "--debug-dir",
        bin.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    trawl_ok(&args);
}

/// perf's clock reference (`perf report --header-only`): (TOD s, monotonic s).
fn perf_reference(n: usize) -> (f64, f64) {
    let h = perf(&[
        "report",
        "-i",
        run_dir(n).join("perf.data").to_str().unwrap(),
        "--header-only",
    ]);
    let l = h
        .lines()
        .find(|l| l.starts_with("# reference time:"))
        .expect("clock data");
    // # reference time: 2026-11-22 10:29:16.171871 = 1795343356.171871 (TOD) = 31784.836947331 (monotonic)
    let parts: Vec<&str> = l.split(" = ").collect();
    let tod: f64 = parts[1].split_whitespace().next().unwrap().parse().unwrap();
    let mono: f64 = parts[2].split_whitespace().next().unwrap().parse().unwrap();
    (tod, mono)
}

/// The program's exec: strace's `execve("./bin/phases", ...)` time (epoch s).
fn strace_exec(n: usize) -> f64 {
    let t = std::fs::read_to_string(run_dir(n).join("app.strace")).unwrap();
    let l = t
        .lines()
        .find(|l| l.contains("execve(\"./bin/phases\""))
        .unwrap();
    l.split_whitespace().nth(1).unwrap().parse().unwrap()
}

fn f(m: &std::collections::HashMap<String, String>, k: &str) -> f64 {
    m[k].parse().unwrap_or_else(|_| panic!("{k}: {:?}", m[k]))
}

/// vmstat rows (time truncated to the second, UTC epoch s; the columns by
/// name) after the since-boot first row.
fn vmstat(n: usize) -> Vec<(f64, std::collections::HashMap<String, f64>)> {
    let t = std::fs::read_to_string(run_dir(n).join("vmstat.log")).unwrap();
    let mut lines = t.lines();
    lines.next();
    let names: Vec<String> = lines
        .next()
        .unwrap()
        .split_whitespace()
        .map(String::from)
        .collect();
    lines
        .skip(1)
        .map(|l| {
            let v: Vec<&str> = l.split_whitespace().collect();
            let when = format!("{} {}", v[v.len() - 2], v[v.len() - 1]);
            let t = chrono_free_epoch(&when);
            let m = names
                .iter()
                .take(17)
                .cloned()
                .zip(v.iter().map(|x| x.parse::<f64>().unwrap()))
                .collect();
            (t, m)
        })
        .collect()
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) → epoch seconds, by date(1).
fn chrono_free_epoch(s: &str) -> f64 {
    let o = std::process::Command::new("date")
        .args(["-u", "-d", &format!("{s} UTC"), "+%s"])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
}

/// Ranges where `pred` holds on rows that describe (previous time, time],
/// relative to `t0` (s): hand-written from the documented semantics.
fn expected_ranges(rows: &[(f64, bool)], t0: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (i, &(t, hit)) in rows.iter().enumerate() {
        if !hit || i == 0 {
            continue;
        }
        let start = rows[i - 1].0 - t0;
        match out.last_mut() {
            Some(l) if (l.1 - start).abs() < 1e-9 => l.1 = t - t0,
            _ => out.push((start, t - t0)),
        }
    }
    out
}

/// CPU_RULE's ranges of run `n` worked from its vmstat log (seconds after
/// the exec strace saw).
fn cpu_ranges_from_vmstat(n: usize) -> Vec<(f64, f64)> {
    let cpu: Vec<(f64, bool)> = vmstat(n)
        .iter()
        .map(|(t, m)| (*t, m["us"] + m["sy"] > 90.0 && m["r"] > 2.0))
        .collect();
    expected_ranges(&cpu, strace_exec(n))
}

fn ranges_of(cap: &Path, rule: &str) -> Vec<(f64, f64)> {
    csv_maps(&report_csv(
        "exhaustion",
        cap,
        &["--rule", rule, "--t0", "exec:phases"],
    ))
    .iter()
    .map(|m| (f(m, "start_s"), f(m, "end_s")))
    .collect()
}

fn close(a: &[(f64, f64)], b: &[(f64, f64)]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x.0 - y.0).abs() < 1e-5 && (x.1 - y.1).abs() < 1e-5)
}

const CPU_RULE: &str = "cpu_user+cpu_sys > 90 and runq > 2";

#[test]
fn inputs_of_a_run_line_up_on_utc() {
    let cap = &runs()[0];
    // Every input of the run is placed on UTC.
    assert_eq!(
        sql_scalar(cap, "SELECT count(*) FROM time_base WHERE NOT aligned"),
        "0"
    );
    assert_eq!(
        sql_rows(cap, "SELECT clock FROM source ORDER BY source_id"),
        vec![
            vec!["perf:CLOCK_MONOTONIC"],
            vec!["utc"],
            vec!["utc"],
            vec!["utc"]
        ]
        .into_iter()
        .map(|r| r.into_iter().map(String::from).collect::<Vec<_>>())
        .collect::<Vec<_>>()
    );
    // perf's exec of phases, placed on UTC with perf's own header
    // (`perf report --header-only`) and `perf script --show-task-events`.
    let (tod, mono) = perf_reference(1);
    let s = perf(&[
        "script",
        "-i",
        run_dir(1).join("perf.data").to_str().unwrap(),
        "--show-task-events",
    ]);
    let l = s
        .lines()
        .find(|l| l.contains("PERF_RECORD_COMM exec: phases"))
        .unwrap();
    let t: f64 = l
        .split_whitespace()
        .nth(2)
        .unwrap()
        .trim_end_matches(':')
        .parse()
        .unwrap();
    let perf_exec_utc = tod + (t - mono);
    // strace saw the same exec within a few ms (execve entry vs the
    // kernel's exec event).
    let strace_utc = strace_exec(1);
    assert!(
        (perf_exec_utc - strace_utc).abs() < 0.005,
        "{perf_exec_utc} vs {strace_utc}"
    );
    // trawl: both on the capture's axis, from t0 = the first event.
    let origin: f64 = sql_scalar(cap, "SELECT min(origin_utc_ns) FROM time_base")
        .parse::<f64>()
        .unwrap()
        / 1e9;
    let perf_t: f64 = sql_scalar(
        cap,
        "SELECT e.time_ns + b.offset_ns FROM perf_task_event e JOIN time_base b USING (capture, source_id) \
         WHERE kind = 'exec' AND comm = 'phases'",
    )
    .parse::<f64>()
    .unwrap()
        / 1e9;
    assert!((perf_t - (perf_exec_utc - origin)).abs() < 2e-6, "{perf_t}");
    let strace_t: f64 = sql_scalar(
        cap,
        "SELECT min(t_ns) FROM syscall_t WHERE name = 'execve' AND args LIKE '\"./bin/phases\"%'",
    )
    .parse::<f64>()
    .unwrap()
        / 1e9;
    assert!(
        (strace_t - (strace_utc - origin)).abs() < 2e-6,
        "{strace_t}"
    );
    // --t0 exec:phases puts the exec at 0 (the earlier of the two).
    let m = csv_maps(&trawl_ok(&[
        "report",
        "timeline",
        cap.to_str().unwrap(),
        "--window",
        "1s",
        "--t0",
        "exec:phases",
        "--format",
        "csv",
    ]));
    assert!(m.iter().any(|r| f(r, "window_start_s") == 0.0));
}

#[test]
fn exhaustion_ranges_follow_the_logs() {
    for n in 1..=3 {
        let cap = &runs()[n - 1];
        let t0 = strace_exec(n);
        let rows = vmstat(n);
        let want = cpu_ranges_from_vmstat(n);
        let got = ranges_of(cap, CPU_RULE);
        assert!(close(&got, &want), "run{n}: {got:?} vs {want:?}");
        // One range, within a second of the CPU phase (2–6 s after exec;
        // vmstat's times are whole seconds).
        assert_eq!(got.len(), 1, "run{n}");
        assert!(
            got[0].0 > 1.0 && got[0].0 < 3.0 && got[0].1 > 4.0 && got[0].1 < 7.0,
            "run{n}: {got:?}"
        );

        let io: Vec<(f64, bool)> = rows.iter().map(|(t, m)| (*t, m["bo"] > 100000.0)).collect();
        let want = expected_ranges(&io, t0);
        let got = ranges_of(cap, "blocks_out > 100000");
        assert!(close(&got, &want), "run{n}: {got:?} vs {want:?}");
        assert!(
            got.len() == 1 && got[0].0 > 19.0 && got[0].1 < 28.0,
            "run{n}: {got:?}"
        );

        // Memory from sadf's %memused (semicolon CSV, UTC times).
        let sar = std::fs::read_to_string(run_dir(n).join("sar.csv")).unwrap();
        let mut header: Vec<&str> = Vec::new();
        let mut mem: Vec<(f64, bool)> = Vec::new();
        for l in sar.lines() {
            if let Some(h) = l.strip_prefix("# ") {
                header = h.split(';').collect();
                continue;
            }
            let Some(i) = header.iter().position(|c| *c == "%memused") else {
                continue;
            };
            let v: Vec<&str> = l.split(';').collect();
            let t = chrono_free_epoch(v[2].trim_end_matches(" UTC"));
            mem.push((t, v[i].parse::<f64>().unwrap() > 5.0));
        }
        let want = expected_ranges(&mem, t0);
        let got = ranges_of(cap, "memused_pct > 5");
        assert!(close(&got, &want), "run{n}: {got:?} vs {want:?}");
    }
    // Merging and minimum duration: `or` of the three rules gives three
    // ranges per run; a 60 s gap merges them into one; a 6 s minimum
    // keeps the memory range only (11 s; the I/O range is 5 s).
    let all = format!("{CPU_RULE} or memused_pct > 5 or blocks_out > 100000");
    let cap = &runs()[0];
    assert_eq!(ranges_of(cap, &all).len(), 3);
    let merged = csv_maps(&report_csv(
        "exhaustion",
        cap,
        &["--rule", &all, "--gap", "60s"],
    ));
    assert_eq!(merged.len(), 1);
    let long = csv_maps(&report_csv(
        "exhaustion",
        cap,
        &[
            "--rule",
            &all,
            "--t0",
            "exec:phases",
            "--min-duration",
            "6s",
        ],
    ));
    assert_eq!(long.len(), 1);
    assert!(f(&long[0], "start_s") > 6.0 && f(&long[0], "end_s") < 21.0);
    // The SQL table function gives the same ranges.
    let sql = sql_rows(
        cap,
        &format!(
            "SELECT start_s, end_s FROM exhaustion('{}', 0, 0) ORDER BY start_s",
            all.replace('\'', "''")
        ),
    );
    let cli = csv_maps(&report_csv("exhaustion", cap, &["--rule", &all]));
    assert_eq!(sql.len(), cli.len());
    for (a, b) in sql.iter().zip(&cli) {
        assert_eq!(a[0].parse::<f64>().unwrap(), f(b, "start_s"));
    }
}

/// The README's metrics example: run1's vmstat and sar logs ingested
/// alone, `--rule CPU_RULE --min-duration 2s`, no `--t0` (the origin is
/// the first event of the logs). Source: the log text, with the rule
/// applied here by hand: vmstat's `us + sy > 90 and r > 2` on each row
/// after the since-boot one, a row standing for the second before its
/// time; the origin is the earliest time printed in either log (vmstat's
/// since-boot row); sar's %user + %system is checked to agree with vmstat's
/// on every row, so either log gives the same range.
#[test]
fn readme_cpu_range_of_the_logs_alone_is_the_vmstat_rows() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("metrics");
    let d = run_dir(1);
    trawl_ok(&[
        "ingest",
        d.join("vmstat.log").to_str().unwrap(),
        d.join("sar.csv").to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    // vmstat's since-boot row (the third line) and sadf's first row.
    let vm = std::fs::read_to_string(d.join("vmstat.log")).unwrap();
    let v: Vec<&str> = vm.lines().nth(2).unwrap().split_whitespace().collect();
    let vm_first = chrono_free_epoch(&format!("{} {}", v[v.len() - 2], v[v.len() - 1]));
    let sar = std::fs::read_to_string(d.join("sar.csv")).unwrap();
    let mut sar_cpu: HashMap<i64, f64> = HashMap::new();
    let mut sar_first = f64::MAX;
    let mut header: Vec<&str> = Vec::new();
    for l in sar.lines() {
        if let Some(h) = l.strip_prefix("# ") {
            header = h.split(';').collect();
            continue;
        }
        let v: Vec<&str> = l.split(';').collect();
        if v.len() < 3 {
            continue;
        }
        let t = chrono_free_epoch(v[2].trim_end_matches(" UTC"));
        sar_first = sar_first.min(t);
        let col = |c: &str| header.iter().position(|h| *h == c);
        if let (Some(u), Some(s)) = (col("%user"), col("%system")) {
            sar_cpu.insert(
                t as i64,
                v[u].parse::<f64>().unwrap() + v[s].parse::<f64>().unwrap(),
            );
        }
    }
    let origin = vm_first.min(sar_first);
    let rows = vmstat(1);
    for (t, m) in &rows {
        if let Some(s) = sar_cpu.get(&(*t as i64)) {
            assert_eq!(*s > 90.0, m["us"] + m["sy"] > 90.0, "sar vs vmstat at {t}");
        }
    }
    // The since-boot row first, never a hit: the next row then covers the
    // second before it (the interval of the log).
    let hits: Vec<(f64, bool)> = std::iter::once((vm_first, false))
        .chain(
            rows.iter()
                .map(|(t, m)| (*t, m["us"] + m["sy"] > 90.0 && m["r"] > 2.0)),
        )
        .collect();
    let want: Vec<(f64, f64)> = expected_ranges(&hits, origin)
        .into_iter()
        .filter(|(a, b)| b - a >= 2.0)
        .collect();
    assert_eq!(want.len(), 1, "{want:?}");
    let got = csv_maps(&report_csv(
        "exhaustion",
        &cap,
        &["--rule", CPU_RULE, "--min-duration", "2s"],
    ));
    assert_eq!(got.len(), want.len(), "{got:?} vs {want:?}");
    let utc = |s: f64| {
        let o = std::process::Command::new("date")
            .args([
                "-u",
                "-d",
                &format!("@{}", origin + s),
                "+%Y-%m-%dT%H:%M:%SZ",
            ])
            .output()
            .unwrap();
        String::from_utf8(o.stdout).unwrap().trim().to_string()
    };
    for (i, (g, (a, b))) in got.iter().zip(&want).enumerate() {
        assert_eq!(g["range"], (i + 1).to_string());
        assert_eq!(g["start_ns"], ((a * 1e9).round() as i64).to_string());
        assert_eq!(g["end_ns"], ((b * 1e9).round() as i64).to_string());
        assert_eq!(f(g, "start_s"), *a);
        assert_eq!(f(g, "end_s"), *b);
        assert_eq!(f(g, "duration_s"), b - a);
        assert_eq!(g["start_utc"], utc(*a));
        assert_eq!(g["end_utc"], utc(*b));
    }
}

#[test]
fn ranges_common_to_all_runs() {
    let r = runs();
    // Each run's range from its own vmstat log (not from trawl).
    let per: Vec<Vec<(f64, f64)>> = (1..=3).map(cpu_ranges_from_vmstat).collect();
    assert!(per.iter().all(|v| v.len() == 1), "{per:?}");
    let out = trawl_ok(&[
        "report",
        "exhaustion",
        "--rule",
        CPU_RULE,
        "--t0",
        "exec:phases",
        "--format",
        "csv",
        "--runs",
        r[0].to_str().unwrap(),
        r[1].to_str().unwrap(),
        r[2].to_str().unwrap(),
    ]);
    let m = csv_maps(&out);
    assert_eq!(m.len(), 1);
    // The intersection of the three runs' ranges.
    let start = per.iter().map(|v| v[0].0).fold(f64::MIN, f64::max);
    let end = per.iter().map(|v| v[0].1).fold(f64::MAX, f64::min);
    assert!(
        (f(&m[0], "start_s") - start).abs() < 1e-5 && (f(&m[0], "end_s") - end).abs() < 1e-5,
        "{m:?} vs {start}..{end}"
    );
    // Each run's own range is listed beside it.
    for (k, want) in per.iter().enumerate() {
        let (a, b) = m[0][&format!("run{}", k + 1)].split_once("..").unwrap();
        let (a, b): (f64, f64) = (a.parse().unwrap(), b.parse().unwrap());
        assert!(
            (a - want[0].0).abs() < 1e-5 && (b - want[0].1).abs() < 1e-5,
            "run{}: {a}..{b} vs {want:?}",
            k + 1
        );
    }
}

#[test]
fn cpu_cause_matches_perf_script() {
    let cap = &runs()[0];
    let out = report_csv(
        "cause",
        cap,
        &[
            "--resource",
            "cpu",
            "--rule",
            CPU_RULE,
            "--t0",
            "exec:phases",
        ],
    );
    let rows = csv_maps(&out);
    let top = &rows[0];
    assert_eq!(top["app_function"], "crunch");
    assert!(f(top, "app_function_pct") > 95.0, "{top:?}");
    let (a, b) = (f(top, "range_start_s"), f(top, "range_end_s"));
    let trawl_crunch: u64 = rows
        .iter()
        .filter(|m| m["actual_function"] == "crunch")
        .map(|m| m["samples"].parse::<u64>().unwrap())
        .sum();
    // perf script: samples in the same range (on perf's clock) whose leaf
    // symbol is crunch. The range is relative to the exec in strace's
    // dump, on UTC; perf's header relates its clock to UTC.
    let (tod, mono) = perf_reference(1);
    let t0 = strace_exec(1);
    let (pa, pb) = (a + t0 - tod + mono, b + t0 - tod + mono);
    let s = perf(&[
        "script",
        "-i",
        run_dir(1).join("perf.data").to_str().unwrap(),
        "-F",
        "pid,time,ip,sym",
    ]);
    let mut n = 0;
    let mut lines = s.lines().peekable();
    while let Some(l) = lines.next() {
        if !l.trim_end().ends_with(':') {
            continue;
        }
        let t: f64 = l
            .split_whitespace()
            .nth(1)
            .unwrap()
            .trim_end_matches(':')
            .parse()
            .unwrap();
        let leaf = lines
            .peek()
            .map(|x| x.split_whitespace().nth(1).unwrap_or("").to_string());
        if t >= pa && t < pb && leaf.as_deref() == Some("crunch") {
            n += 1;
        }
    }
    assert!(n > 500, "{n}");
    assert_eq!(trawl_crunch, n);
}

/// Rows as sorted lists of (column, value), sorted: the same rows in any
/// order (SQL gives rows in the order its query asks for).
fn same_rows(rows: &[HashMap<String, String>]) -> Vec<Vec<(String, String)>> {
    let mut v: Vec<Vec<(String, String)>> = rows
        .iter()
        .map(|r| {
            let mut kv: Vec<(String, String)> =
                r.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
            kv.sort();
            kv
        })
        .collect();
    v.sort();
    v
}

#[test]
fn memory_and_io_causes_match_the_program_and_the_dump() {
    let cap = &runs()[0];
    // At the peak inside the memory range: grow_heap's 48 × 64 MiB
    // (phases.c:62), as the program allocates them.
    let rows = csv_maps(&report_csv(
        "cause",
        cap,
        &[
            "--resource",
            "memory",
            "--rule",
            "memused_pct > 5",
            "--at",
            "max",
            "--t0",
            "exec:phases",
        ],
    ));
    let g = rows
        .iter()
        .find(|m| m["app_function"] == "grow_heap")
        .expect("grow_heap");
    assert_eq!(g["bytes"], (48u64 << 26).to_string());
    assert_eq!(g["regions"], "48");
    assert_eq!(g["app_line"], "phases.c:62");
    assert_eq!(rows[0]["app_function"], "grow_heap");
    let from_sql = csv_maps(&trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "--t0",
        "exec:phases",
        "--format",
        "csv",
        "SELECT * FROM cause_memory('memused_pct > 5', 'at', 'max')",
    ]));
    assert_eq!(
        same_rows(&from_sql),
        same_rows(&rows),
        "cause_memory(...) = report cause --resource memory"
    );
    // I/O: write_log's bytes = the 1 MiB writes to fd 3 in the dump from
    // one second before the range to its end.
    let lead = 1.0;
    let rows = csv_maps(&report_csv(
        "cause",
        cap,
        &[
            "--resource",
            "io",
            "--rule",
            "blocks_out > 100000",
            "--lead",
            "1",
            "--t0",
            "exec:phases",
        ],
    ));
    // The same from SQL: cause_io with the rule and lead as arguments.
    let sql = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "--t0",
        "exec:phases",
        "--format",
        "csv",
        "SELECT * FROM cause_io('blocks_out > 100000', 'lead_ns', 1000000000)",
    ]);
    let from_sql = csv_maps(&sql);
    assert_eq!(
        same_rows(&from_sql),
        same_rows(&rows),
        "cause_io(...) = report cause --resource io"
    );
    let w = rows
        .iter()
        .find(|m| m["app_function"] == "write_log")
        .expect("write_log");
    let (a, b) = (f(w, "range_start_s"), f(w, "range_end_s"));
    let t0 = strace_exec(1);
    let dump = std::fs::read_to_string(run_dir(1).join("app.strace")).unwrap();
    let mut bytes = 0u64;
    for l in dump.lines() {
        let mut it = l.split_whitespace();
        let (Some(_pid), Some(t)) = (it.next(), it.next()) else {
            continue;
        };
        let Ok(t) = t.parse::<f64>() else { continue };
        if l.contains(" write(3, ") && t - t0 >= a - lead && t - t0 < b {
            let ret = l.rsplit(" = ").next().unwrap();
            bytes += ret.trim().parse::<u64>().unwrap();
        }
    }
    assert!(bytes > 500 << 20, "{bytes}");
    assert_eq!(w["bytes"], bytes.to_string());
    assert_eq!(w["app_line"], "phases.c:84");
    assert_eq!(w["direction"], "write");
}

/// The README's strace example: `trawl report unfreed` of run1's dump
/// ingested alone. Source: the dump's text, replayed here: every mmap
/// maps its return address for its length rounded up to pages (replacing
/// what was there: MAP_FIXED), munmap removes its range, brk grows (or
/// shrinks) the heap from the break `brk(NULL)` returned; what is mapped
/// at the end belongs to the call that mapped it. A call's application
/// function is the first of its `-k` frames in the program's directory
/// (the one of `_start`), `[outside the application]` when none is
/// (ld.so loading the libraries); its pieces are its regions.
#[test]
fn readme_unfreed_of_run1_is_what_the_dump_maps_and_never_unmaps() {
    let text = std::fs::read_to_string(run_dir(1).join("app.strace")).unwrap();
    // Completed calls in order: (pid, name, arguments, return value, frames).
    let mut calls: Vec<(String, String, String, String, Vec<String>)> = Vec::new();
    let mut pending: HashMap<String, String> = HashMap::new();
    let mut frames_follow = false;
    for l in text.lines() {
        if let Some(fr) = l.strip_prefix(" > ") {
            if frames_follow {
                calls.last_mut().unwrap().4.push(fr.to_string());
            }
            continue;
        }
        frames_follow = false;
        let mut it = l.splitn(3, ' ');
        let (Some(pid), Some(_time), Some(rest)) = (it.next(), it.next(), it.next()) else {
            continue;
        };
        let full = if let Some(head) = rest.strip_suffix(" <unfinished ...>") {
            pending.insert(pid.to_string(), head.to_string());
            continue;
        } else if let Some(r) = rest.strip_prefix("<... ") {
            let (_, tail) = r.split_once(" resumed>").unwrap();
            format!("{}{tail}", pending.remove(pid).unwrap())
        } else {
            rest.to_string()
        };
        let Some((call, ret)) = full.rsplit_once(" = ") else {
            continue; // +++ exited, --- signals
        };
        let Some((name, args)) = call.split_once('(') else {
            continue;
        };
        let ret = ret.split_whitespace().next().unwrap_or("").to_string();
        let args = args.trim_end().trim_end_matches(')').to_string();
        calls.push((pid.to_string(), name.to_string(), args, ret, Vec::new()));
        frames_follow = true;
    }
    // One exec, at the start; the other tasks are threads of its process.
    let pid = calls[0].0.clone();
    assert_eq!(calls[0].1, "execve");
    assert_eq!(calls.iter().filter(|c| c.1 == "execve").count(), 1);
    for c in calls.iter().filter(|c| c.0 != pid) {
        assert!(
            calls
                .iter()
                .any(|p| p.1.starts_with("clone") && p.3 == c.0 && p.2.contains("CLONE_THREAD")),
            "{} is not a thread of {pid}",
            c.0
        );
    }
    // Every call that maps or unmaps memory is one replayed here.
    for c in &calls {
        assert!(
            !["mremap", "shmat", "shmdt"].contains(&c.1.as_str()),
            "{}: not replayed",
            c.1
        );
    }
    let hex = |s: &str| u64::from_str_radix(s.trim().trim_start_matches("0x"), 16).unwrap();
    let page_up = |n: u64| n.div_ceil(4096) * 4096;
    // Live ranges [start, end) and the call (index) that mapped each.
    let mut live: Vec<(u64, u64, usize)> = Vec::new();
    let unmap = |live: &mut Vec<(u64, u64, usize)>, a: u64, b: u64| {
        let mut out = Vec::new();
        for &(s, e, c) in live.iter() {
            if e <= a || s >= b {
                out.push((s, e, c));
                continue;
            }
            if s < a {
                out.push((s, a, c));
            }
            if e > b {
                out.push((b, e, c));
            }
        }
        *live = out;
    };
    let mut brk: Option<u64> = None;
    for (i, (_, name, args, ret, _)) in calls.iter().enumerate() {
        if ret.starts_with('-') || ret == "?" {
            continue;
        }
        let a: Vec<&str> = args.split(", ").collect();
        match name.as_str() {
            "mmap" => {
                let (s, len) = (hex(ret), a[1].parse::<u64>().unwrap());
                unmap(&mut live, s, s + page_up(len));
                live.push((s, s + page_up(len), i));
            }
            "munmap" => {
                let (s, len) = (hex(a[0]), a[1].parse::<u64>().unwrap());
                unmap(&mut live, s, s + page_up(len));
            }
            "brk" => {
                let new = hex(ret);
                if let Some(old) = brk {
                    if new > old {
                        live.push((old, new, i));
                    } else {
                        unmap(&mut live, new, old);
                    }
                }
                brk = Some(new);
            }
            _ => {}
        }
    }
    // The application: the directory of the executable whose stacks end
    // in `_start` (as recorded: the dump names the paths of its machine).
    let start = calls
        .iter()
        .flat_map(|c| &c.4)
        .find(|f| f.contains("(_start+"))
        .unwrap();
    let exe = start.split_once('(').unwrap().0;
    let app_dir = format!("{}/", exe.rsplit_once('/').unwrap().0);
    let app_function = |frames: &[String]| {
        frames
            .iter()
            .find(|f| f.starts_with(&app_dir))
            .map(|f| {
                f.split_once('(')
                    .unwrap()
                    .1
                    .split('+')
                    .next()
                    .unwrap()
                    .to_string()
            })
            .unwrap_or_else(|| "[outside the application]".to_string())
    };
    // (application function, system call) → (bytes, regions).
    let mut want: std::collections::BTreeMap<(String, String), (u64, u64)> = Default::default();
    for &(s, e, c) in &live {
        let w = want
            .entry((app_function(&calls[c].4), calls[c].1.clone()))
            .or_default();
        w.0 += e - s;
        w.1 += 1;
    }
    let process: u64 = want.values().map(|w| w.0).sum();
    let by_app = |f: &str| -> u64 {
        want.iter()
            .filter(|(k, _)| k.0 == f)
            .map(|(_, w)| w.0)
            .sum()
    };
    let comm = calls[0]
        .2
        .split('"')
        .nth(1)
        .unwrap()
        .rsplit('/')
        .next()
        .unwrap();

    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("app");
    let bin = root().join("fixtures/phases/bin");
    ingest_file(
        &run_dir(1).join("app.strace"),
        &cap,
        &["--debug-dir", bin.to_str().unwrap()],
    );
    let rows = csv_maps(&report_csv("unfreed", &cap, &[]));
    // trawl names the libc function of the call (__mmap, mmap64, __brk):
    // the system call it makes is in the name.
    let syscall = |actual: &str| {
        ["munmap", "mmap", "brk"]
            .into_iter()
            .find(|s| actual.contains(s))
            .unwrap_or(actual)
            .to_string()
    };
    let mut got: std::collections::BTreeMap<(String, String), (u64, u64)> = Default::default();
    for r in &rows {
        assert_eq!(r["pid"], pid);
        assert_eq!(r["comm"], comm);
        assert_eq!(r["process_bytes"], process.to_string());
        assert_eq!(
            r["app_function_bytes"],
            by_app(&r["app_function"]).to_string(),
            "{}",
            r["app_function"]
        );
        let k = (r["app_function"].clone(), syscall(&r["actual_function"]));
        let prev = got.insert(
            k.clone(),
            (r["bytes"].parse().unwrap(), r["regions"].parse().unwrap()),
        );
        assert!(prev.is_none(), "{k:?} twice");
    }
    assert_eq!(got, want, "trawl vs the dump replayed");
    // As the README shows them: largest application function first.
    let order: Vec<u64> = rows
        .iter()
        .map(|r| r["app_function_bytes"].parse().unwrap())
        .collect();
    assert!(order.windows(2).all(|w| w[0] >= w[1]), "{order:?}");
}

#[test]
fn timeline_windows_and_plots() {
    let cap = &runs()[0];
    let rows = csv_maps(&report_csv(
        "timeline",
        cap,
        &["--window", "250ms", "--top", "5", "--t0", "exec:phases"],
    ));
    // Every cpu-clock sample once (`perf script` counts them).
    let total: usize = rows
        .iter()
        .map(|m| m["samples"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, perf_script_samples(&run_dir(1).join("perf.data")));
    // --comm narrows the samples: each command's count is perf script's.
    let comms = perf(&[
        "script",
        "-i",
        run_dir(1).join("perf.data").to_str().unwrap(),
        "-F",
        "comm",
    ]);
    let mut per_comm: std::collections::BTreeMap<&str, usize> = Default::default();
    for c in comms.lines().map(str::trim).filter(|c| !c.is_empty()) {
        *per_comm.entry(c).or_default() += 1;
    }
    let (comm, n) = per_comm.iter().max_by_key(|(_, n)| **n).unwrap();
    assert!(*n < total, "{per_comm:?}");
    let only = csv_maps(&report_csv(
        "timeline",
        cap,
        &["--window", "250ms", "--comm", comm],
    ));
    let got: usize = only
        .iter()
        .map(|m| m["samples"].parse::<usize>().unwrap())
        .sum();
    assert_eq!(got, *n, "--comm {comm}");
    // Shares add up per window; the CPU phase's windows are crunch.
    let mut per_window: std::collections::BTreeMap<String, f64> = Default::default();
    for m in &rows {
        *per_window.entry(m["window_start_s"].clone()).or_default() += f(m, "share_pct");
    }
    assert!(per_window.values().all(|s| (s - 100.0).abs() < 0.1));
    let w3 = rows
        .iter()
        .find(|m| m["window_start_s"] == "3.0" && m["function"] == "crunch")
        .unwrap();
    assert!(f(w3, "share_pct") > 95.0);
    // Top 5 named, the rest [other].
    let names: std::collections::BTreeSet<&String> = rows.iter().map(|m| &m["function"]).collect();
    assert!(names.len() <= 6 && names.contains(&"[other]".to_string()));
    // window_start() in SQL buckets the same way (from the default t0).
    let first = csv_maps(&report_csv("timeline", cap, &["--window", "250ms"]));
    let windows: std::collections::BTreeSet<&String> =
        first.iter().map(|m| &m["window_start_s"]).collect();
    let n = sql_scalar(
        cap,
        "SELECT count(DISTINCT window_start(t_ns, 250000000)) FROM perf_sample_t WHERE event = 'cpu-clock'",
    );
    assert_eq!(n.parse::<usize>().unwrap(), windows.len());
    // Plots of the same rows, PNG and SVG, read back for their content.
    let dir = tempfile::tempdir().unwrap();
    let png = dir.path().join("t.png");
    let tsvg = dir.path().join("t.svg");
    let svg = dir.path().join("m.svg");
    for out in [&png, &tsvg] {
        trawl_ok(&[
            "report",
            "timeline",
            cap.to_str().unwrap(),
            "--window",
            "250ms",
            "--top",
            "5",
            "--t0",
            "exec:phases",
            "--plot",
            out.to_str().unwrap(),
            "--rule",
            CPU_RULE,
        ]);
    }
    // Each key's total share (over the windows, all 250 ms wide) is its
    // polygon's share of the stacked area.
    let mut share: std::collections::BTreeMap<String, f64> = Default::default();
    for m in &rows {
        *share.entry(m["function"].clone()).or_default() += f(m, "share_pct");
    }
    let total_share: f64 = share.values().sum();
    let t = std::fs::read_to_string(&tsvg).unwrap();
    let polys = crate::figure::polygons(&t);
    assert_eq!(polys.len(), share.len(), "one polygon per key");
    let total_area: f64 = polys.iter().map(|p| p.1).sum();
    let mut want: Vec<f64> = share.values().map(|v| v / total_share).collect();
    let mut got: Vec<f64> = polys.iter().map(|p| p.1 / total_area).collect();
    want.sort_by(f64::total_cmp);
    got.sort_by(f64::total_cmp);
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() < 0.005, "areas {got:?} vs shares {want:?}");
    }
    // The title, axes and every key in the legend.
    let texts = crate::figure::texts(&t);
    for k in share.keys() {
        assert!(texts.contains(k), "legend lacks {k}: {texts:?}");
    }
    assert!(
        texts
            .iter()
            .any(|x| x.contains("cpu-clock by function per 250ms")),
        "{texts:?}"
    );
    assert!(texts.contains(&"time since t0 (s)".to_string()));
    // The rule's range shaded: one translucent red rectangle spanning the
    // range on the time axis the polygons give (first window start to
    // last window end).
    let range = &ranges_of(cap, CPU_RULE)[0];
    let xs: Vec<f64> = crate::figure::tags(&t, "polygon")
        .iter()
        .flat_map(|p| {
            crate::figure::attr(p, "points")
                .unwrap()
                .split_whitespace()
                .map(|q| q.split_once(',').unwrap().0.parse::<f64>().unwrap())
                .collect::<Vec<_>>()
        })
        .collect();
    let (x0, x1) = (
        xs.iter().copied().fold(f64::MAX, f64::min),
        xs.iter().copied().fold(f64::MIN, f64::max),
    );
    let mut starts: Vec<f64> = per_window.keys().map(|k| k.parse().unwrap()).collect();
    starts.sort_by(f64::total_cmp);
    let (t_first, t_last) = (starts[0], starts[starts.len() - 1] + 0.25);
    let px = |s: f64| x0 + (s - t_first) / (t_last - t_first) * (x1 - x0);
    // The shading has a legend entry (a swatch of its colour) beside the
    // plot, as every key has: nothing of the legend lies over the data.
    assert!(texts.iter().any(|x| x == "the rule holds"), "{texts:?}");
    let red: Vec<&str> = crate::figure::tags(&t, "rect")
        .into_iter()
        .filter(|r| crate::figure::attr(r, "fill") == Some("#FF0000"))
        .collect();
    let left = |r: &str| crate::figure::attr(r, "x").unwrap().parse::<f64>().unwrap();
    let bands: Vec<&str> = red.iter().copied().filter(|r| left(r) < x1).collect();
    assert_eq!(bands.len(), 1, "{red:?}");
    assert_eq!(red.len(), 2, "the band and its legend swatch: {red:?}");
    for x in crate::figure::texts_at(&t) {
        if share.contains_key(&x.0) {
            assert!(
                x.1 > x1,
                "{} is drawn over the plot (x {} < {x1})",
                x.0,
                x.1
            );
        }
    }
    let bx: f64 = crate::figure::attr(bands[0], "x").unwrap().parse().unwrap();
    let bw: f64 = crate::figure::attr(bands[0], "width")
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        (bx - px(range.0)).abs() <= 2.0,
        "band at {bx} px, range starts at {} px",
        px(range.0)
    );
    assert!(
        (bx + bw - px(range.1)).abs() <= 2.0,
        "band ends at {} px vs {}",
        bx + bw,
        px(range.1)
    );
    // The PNG: the same figure, each key's colour covering its share of
    // the stacked pixels (its legend swatch adds 144).
    let img = crate::figure::png(&png);
    assert_eq!(img.dimensions(), (1200, 600));
    let counts = crate::figure::colour_counts(&img);
    let key_px: Vec<f64> = polys
        .iter()
        .map(|(fill, _)| counts.get(&crate::figure::rgb(fill)).copied().unwrap_or(0) as f64)
        .collect();
    let all_px: f64 = key_px.iter().sum();
    for ((fill, area), n) in polys.iter().zip(&key_px) {
        assert!(
            (n / all_px - area / total_area).abs() < 0.03,
            "{fill}: {n} px of {all_px} vs area share {}",
            area / total_area
        );
    }
    trawl_ok(&[
        "report",
        "exhaustion",
        cap.to_str().unwrap(),
        "--rule",
        CPU_RULE,
        "--plot",
        svg.to_str().unwrap(),
    ]);
    // The metric panels of Morita et al.'s Fig. 2: one per comparison of
    // the rule, captioned with it, with its threshold (a dashed red line
    // in the legend and across the panel), the run's step line, and the
    // rule's range shaded in each panel.
    let t = std::fs::read_to_string(&svg).unwrap();
    let texts = crate::figure::texts(&t);
    for want in [
        "cpu_user + cpu_sys (&gt; 90)",
        "runq (&gt; 2)",
        "threshold 90",
        "threshold 2",
    ] {
        assert!(texts.iter().any(|x| x == want), "{want} missing: {texts:?}");
    }
    assert_eq!(
        texts.iter().filter(|x| *x == "run1").count(),
        2,
        "{texts:?}"
    );
    let lines = crate::figure::tags(&t, "polyline");
    let stroke = |c: &str| {
        lines
            .iter()
            .filter(|l| crate::figure::attr(l, "stroke") == Some(c))
            .count()
    };
    // Per panel: the step line and its legend sample.
    assert_eq!(stroke("#4E79A7"), 4);
    let steps: Vec<usize> = lines
        .iter()
        .filter(|l| crate::figure::attr(l, "stroke") == Some("#4E79A7"))
        .map(|l| {
            crate::figure::attr(l, "points")
                .unwrap()
                .split_whitespace()
                .count()
        })
        .filter(|&n| n > 2)
        .collect();
    assert_eq!(steps.len(), 2, "a step line per panel: {steps:?}");
    assert!(stroke("#C80000") > 20, "dashed thresholds");
    let n_ranges = ranges_of(cap, CPU_RULE).len();
    let bands = crate::figure::tags(&t, "rect")
        .into_iter()
        .filter(|r| crate::figure::attr(r, "fill") == Some("#FF0000"))
        .count();
    // Each panel's ranges and the shading's legend swatch.
    assert_eq!(bands, 2 * n_ranges + 2);
    assert_eq!(texts.iter().filter(|x| *x == "the rule holds").count(), 2);
}

#[test]
fn bad_rules_and_runs_of_different_lengths() {
    let cap = &runs()[0];
    for (rule, want) in [
        ("no_such_metric > 1", "no_such_metric"),
        ("runq >", "ends early"),
        ("runq + 2", "not a condition"),
    ] {
        let o = trawl(&[
            "report",
            "exhaustion",
            cap.to_str().unwrap(),
            "--rule",
            rule,
        ]);
        assert_refused(&o, "rule");
        let e = String::from_utf8_lossy(&o.stderr);
        assert!(e.contains(want), "{rule}: {e}");
    }
    // A run whose metrics end early: said on stderr.
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.log");
    let text = std::fs::read_to_string(run_dir(2).join("vmstat.log")).unwrap();
    let cut: Vec<&str> = text.lines().take(14).collect();
    std::fs::write(&short, cut.join("\n") + "\n").unwrap();
    let c2 = dir.path().join("short");
    ingest_file(&short, &c2, &[]);
    let o = trawl(&[
        "report",
        "exhaustion",
        "--rule",
        CPU_RULE,
        "--runs",
        cap.to_str().unwrap(),
        c2.to_str().unwrap(),
    ]);
    assert!(o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains("different lengths"), "{e}");
    // Local times without a zone next to perf: not silently aligned.
    let local = dir.path().join("local");
    let o = trawl(&[
        "ingest",
        run_dir(1).join("perf.data").to_str().unwrap(),
        root()
            .join("fixtures/metrics/vmstat-dst.log")
            .to_str()
            .unwrap(),
        "-o",
        local.to_str().unwrap(),
        "--no-symbolize",
    ]);
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("--tz"));
    assert_eq!(
        sql_scalar(&local, "SELECT aligned FROM time_base WHERE source_id = 1"),
        "false"
    );
}

#[test]
fn utc_times_of_the_dump_and_the_logs() {
    // Expected: every call's time as strace -ttt printed it on its line
    // (epoch seconds, so UTC as written); sar's and vmstat's rows as
    // their text says (date -u); perf's samples: see
    // perf_fixtures::utc_times_equal_perf_script_tod.
    let cap = &runs()[0];
    let text = std::fs::read_to_string(run_dir(1).join("app.strace")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let rows = sql_rows(
        cap,
        "SELECT line, CAST(time_utc AS BIGINT) FROM syscall ORDER BY line",
    );
    assert!(rows.len() > 1000);
    for r in &rows {
        let l: usize = r[0].parse().unwrap();
        let secs = lines[l - 1].split_whitespace().nth(1).unwrap();
        let (s, frac) = secs.split_once('.').unwrap();
        let ns = s.parse::<i64>().unwrap() * 1_000_000_000
            + format!("{frac:0<9}").parse::<i64>().unwrap();
        assert_eq!(
            r[1].parse::<i64>().unwrap(),
            ns,
            "line {l}: {}",
            lines[l - 1]
        );
    }
    // The first call, as a time of day.
    let first = lines[0].split_whitespace().nth(1).unwrap();
    let o = std::process::Command::new("date")
        .args(["-u", "-d", &format!("@{first}"), "+%Y-%m-%dT%H:%M:%S.%NZ"])
        .output()
        .unwrap();
    assert_eq!(
        utc_text(&sql_scalar(
            cap,
            "SELECT time_utc FROM syscall WHERE line = 1"
        )),
        utc_text(&String::from_utf8(o.stdout).unwrap())
    );
    // sar: `2026-11-22 10:29:15 UTC` on the first row.
    let sar = std::fs::read_to_string(run_dir(1).join("sar.csv")).unwrap();
    let when = sar.lines().nth(1).unwrap().split(';').nth(2).unwrap();
    let when = when.trim_end_matches(" UTC");
    let src = |fmt: &str| {
        sql_scalar(
            cap,
            &format!("SELECT source_id FROM source WHERE format = '{fmt}'"),
        )
    };
    assert_eq!(
        utc_text(&sql_scalar(
            cap,
            &format!(
                "SELECT min(time_utc) FROM metric WHERE source_id = {}",
                src("sadf")
            )
        )),
        utc_text(when)
    );
    // vmstat: every row after the since-boot one, at its printed second.
    let vm = vmstat(1);
    let mine: Vec<f64> = sql_rows(
        cap,
        &format!(
            "SELECT DISTINCT sample, CAST(time_utc AS BIGINT) FROM metric \
             WHERE source_id = {} AND NOT since_boot ORDER BY sample",
            src("vmstat")
        ),
    )
    .iter()
    .map(|r| r[1].parse::<i64>().unwrap() as f64 / 1e9)
    .collect();
    assert_eq!(mine, vm.iter().map(|(t, _)| *t).collect::<Vec<_>>());
}
