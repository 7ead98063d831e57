//! Captures nobody on this project made: public test data of other tools
//! (provenance and licences in `fixtures/corpus/*/README.md`), read
//! whole, with the values checked against the text itself and the
//! diagnostics against what is really wrong with each file.

use crate::common::*;
use std::path::{Path, PathBuf};

fn corpus(dir: &str, name: &str) -> PathBuf {
    root().join("fixtures/corpus").join(dir).join(name)
}

fn ingest(files: &[PathBuf], extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let mut args = vec!["ingest"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", cap.to_str().unwrap(), "--no-symbolize"]);
    args.extend_from_slice(extra);
    trawl_ok(&args);
    (dir, cap)
}

/// line → the sorted values trawl stored for it.
fn values_by_line(cap: &Path) -> std::collections::HashMap<usize, Vec<String>> {
    let mut m: std::collections::HashMap<usize, Vec<String>> = Default::default();
    for r in sql_rows(cap, "SELECT line, value FROM metric") {
        m.entry(r[0].parse().unwrap())
            .or_default()
            .push(r[1].clone());
    }
    for v in m.values_mut() {
        v.sort();
    }
    m
}

fn sorted_numbers<'a>(cells: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = cells
        .filter_map(|c| c.parse::<f64>().ok())
        .map(|x| format!("{x:?}"))
        .collect();
    v.sort();
    v
}

/// sysstat's `sadf -d -C -- -A`: every number of every row is stored
/// (the entity columns and CPU -1 aside, as sysstat's manual names them),
/// the two restarts are `linux_restart` with their CPU counts, the comment
/// is skipped, and the only diagnostics are the USB rows whose header does
/// not match them (see the corpus README).
#[test]
fn sysstat_sadf_every_activity() {
    let f = corpus("sysstat", "expected.sadf-d");
    let (_t, cap) = ingest(&[f.clone()], &[]);
    let stored = values_by_line(&cap);
    let text = std::fs::read_to_string(&f).unwrap();
    let entity_cols = [
        "CPU",
        "DEV",
        "IFACE",
        "TTY",
        "FILESYSTEM",
        "MOUNTPOINT",
        "BUS",
        "INTR",
        "TYPE",
        "FCHOST",
        "DEVICE",
        "BAT",
    ];
    let mut header: Vec<&str> = Vec::new();
    let mut usb_lines = Vec::new();
    let mut rows = 0;
    for (i, l) in text.lines().enumerate() {
        let n = i + 1;
        if let Some(h) = l.strip_prefix("# ") {
            header = h.split(';').collect();
            continue;
        }
        let f: Vec<&str> = l.split(';').collect();
        if f[1] == "-1" {
            let want = match f[3].strip_prefix("LINUX-RESTART\t(") {
                Some(c) => vec![format!(
                    "{:?}",
                    c.split(' ').next().unwrap().parse::<f64>().unwrap()
                )],
                None => {
                    assert!(f[3].starts_with("COM "), "line {n}");
                    assert!(!stored.contains_key(&n), "line {n}");
                    continue;
                }
            };
            assert_eq!(stored.get(&n), Some(&want), "line {n}");
            continue;
        }
        if header.contains(&"manufact") {
            usb_lines.push(n.to_string());
            continue;
        }
        let want = sorted_numbers(
            header
                .iter()
                .zip(&f)
                .skip(3)
                .filter(|(c, _)| !entity_cols.contains(c))
                .map(|(_, v)| *v)
                .chain(f.iter().skip(header.len()).copied()),
        );
        assert_eq!(
            stored.get(&n).cloned().unwrap_or_default(),
            want,
            "line {n}"
        );
        rows += 1;
    }
    assert!(rows > 500, "{rows}");
    let diags: Vec<String> = sql_rows(&cap, "SELECT line FROM diagnostic ORDER BY line")
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
    assert_eq!(diags, usb_lines);
    // `INTR;CPU*`: a value per CPU, as many as the row has (8 to 11
    // here: the CPU count changes at the restarts).
    let sum_rows_with_cpu_8 = text
        .lines()
        .filter(|l| l.contains(" UTC;sum;") && l.split(';').count() > 4 + 8)
        .count();
    assert_eq!(sum_rows_with_cpu_8, 4);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM metric WHERE metric = 'intr_per_s' AND entity = 'sum/8'"
        ),
        sum_rows_with_cpu_8.to_string()
    );
}

/// `sadf -d -h` (repeating columns) is refused at each header, not read
/// as rows of the wrong width.
#[test]
fn sysstat_sadf_one_line_is_refused_by_header() {
    let f = corpus("sysstat", "expected.sadf-dh");
    let (_t, cap) = ingest(&[f.clone()], &[]);
    let text = std::fs::read_to_string(&f).unwrap();
    let headers: Vec<Vec<String>> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| l.starts_with("# "))
        .map(|(i, _)| vec![(i + 1).to_string(), "unsupported_table".to_string()])
        .collect();
    assert_eq!(headers.len(), 2);
    assert_eq!(
        sql_rows(&cap, "SELECT line, kind FROM diagnostic ORDER BY line"),
        headers
    );
    // Only the restarts are stored.
    assert_eq!(
        sql_rows(&cap, "SELECT DISTINCT metric FROM metric"),
        vec![vec!["linux_restart".to_string()]]
    );
}

/// mpstat -A and pidstat -t of sysstat's tests (9 CPUs, threads, the
/// scheduling policy's words): every number after the entity columns is
/// stored for its line, nothing else, no diagnostic.
#[test]
fn sysstat_mpstat_and_pidstat_text() {
    // name, tokens before the values (time, then the entity columns).
    for (name, skip) in [
        ("expected.mpstat-A", 2),
        ("expected.pidstat-Hh", 4),
        ("expected1.pidstat-At-TTASK", 4),
    ] {
        let f = corpus("sysstat", name);
        let (_t, cap) = ingest(&[f.clone()], &["--tz", "UTC"]);
        let stored = values_by_line(&cap);
        let text = std::fs::read_to_string(&f).unwrap();
        let mut rows = 0;
        for (i, l) in text.lines().enumerate().skip(1) {
            let t: Vec<&str> = l.split_whitespace().collect();
            if t.len() < 3
                || t[0] == "Average:"
                || t[0] == "#"
                || t[1..].iter().all(|v| v.parse::<f64>().is_err())
            {
                continue;
            }
            let want = sorted_numbers(t[skip..].iter().copied());
            assert_eq!(
                stored.get(&(i + 1)).cloned().unwrap_or_default(),
                want,
                "{name} line {}",
                i + 1
            );
            rows += 1;
        }
        assert_eq!(stored.len(), rows, "{name}");
        assert!(rows >= 20, "{name}: {rows}");
        assert_eq!(
            sql_scalar(&cap, "SELECT count(*) FROM diagnostic"),
            "0",
            "{name}"
        );
    }
}

/// Public perf.data files made on other machines (fixtures/corpus/perf:
/// google/perf_data_converter's test data, perf 3.3 to 6.12, x86_64,
/// i686, armv7, aarch64, file and pipe mode, Intel PT, branch stacks,
/// a corrupted file; linux-perf-data's zstd-compressed files of perf 6.5
/// and 6.16; ChromiumOS perf files of 2013, one big-endian), stored
/// zstd-compressed (trawl reads them so). Every file is read (none
/// refused); its sample count is what `perf script` prints where this
/// machine's perf reads the file, else the count of sample records by
/// count_samples.py (an independent reader of the record layout), as
/// EXPECTED.tsv says; its diagnostics are exactly the kinds EXPECTED.tsv
/// names (what is really wrong with the file; see the corpus README).
#[test]
fn perf_data_from_other_machines() {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let dir = root().join("fixtures/corpus/perf");
    let manifest = std::fs::read_to_string(dir.join("EXPECTED.tsv")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut by_perf = 0;
    for line in manifest.lines().filter(|l| !l.starts_with('#')) {
        let f: Vec<&str> = line.split('\t').collect();
        let (name, mode, from, samples, diags) = (f[0], f[1], f[4], f[5], f[6]);
        let file = dir.join(name);
        let cap = tmp.path().join(format!("cap{checked}"));
        trawl_ok(&[
            "ingest",
            file.to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--no-symbolize",
        ]);
        let got = sql_scalar(&cap, "SELECT count(*) FROM perf_sample");
        let want = if from == "perf" {
            let data = zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap();
            let plain = tmp.path().join("plain.data");
            std::fs::write(&plain, &data).unwrap();
            // One line per sample (-G: no call chains; --no-itrace: no
            // samples synthesized from a hardware trace).
            let mut args = vec!["script", "--no-itrace", "-G", "-F", "ip", "-i"];
            let p = plain.to_str().unwrap();
            args.push(if mode == "pipe" { "-" } else { p });
            let mut child = Command::new("perf")
                .env("HOME", perf_home())
                .args(&args)
                .stdin(if mode == "pipe" {
                    Stdio::piped()
                } else {
                    Stdio::null()
                })
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .expect("perf must be installed");
            if mode == "pipe" {
                let mut i = child.stdin.take().unwrap();
                std::thread::spawn(move || {
                    let _ = i.write_all(&data);
                });
            }
            let o = child.wait_with_output().unwrap();
            assert!(o.status.success(), "{name}: perf script failed");
            by_perf += 1;
            String::from_utf8_lossy(&o.stdout)
                .lines()
                .count()
                .to_string()
        } else {
            samples.to_string()
        };
        assert_eq!(got, want, "{name}: samples");
        let kinds = sql_scalar(
            &cap,
            "SELECT coalesce(string_agg(DISTINCT kind, ';' ORDER BY kind), '-') FROM diagnostic",
        )
        .replace(';', ",");
        assert_eq!(kinds, diags, "{name}: diagnostics");
        checked += 1;
    }
    assert_eq!(checked, 59);
    assert!(by_perf >= 50, "{by_perf}");
}
