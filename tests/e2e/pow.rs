//! The CPU case of Morita et al., H/W resource exhaustion analysis (§4,
//! Fig. 11, Table 4): `calculate_pow` is the application function, and
//! most of its time is in libm's pow, called at a line of the application
//! (`cpu_stress_pow.c:14` in the paper and in
//! `fixtures/perf/src/cpu_stress_pow.c`). The fixture `pow.data` is a real
//! recording with DWARF call graphs (libm has no
//! frame pointers: with `-g` the frame of `calculate_pow` above pow would
//! be lost). Expected values come from perf on the same file: its own
//! unwinding (`perf script`), `perf report --children` / `--no-children`,
//! and `objdump -d` for the one frame perf misnames.

use std::collections::{BTreeMap, HashMap};
use std::process::Command;

use crate::common::*;

/// One sample of `perf script -F comm,pid,ip,sym,dso,srcline --no-inline`:
/// (comm, frames leaf first as (ip, sym, dso, srcline)).
type PerfSample = (String, Vec<(u64, String, String, String)>);

fn perf_samples(file: &std::path::Path) -> Vec<PerfSample> {
    let text = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "comm,pid,ip,sym,dso,srcline",
        "--no-inline",
    ]);
    let mut out: Vec<PerfSample> = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.trim().is_empty()) {
        let mut lines = block.lines().filter(|l| !l.is_empty()).peekable();
        let head = lines.next().unwrap();
        let comm = head.split_whitespace().next().unwrap().to_string();
        let mut frames = Vec::new();
        while let Some(l) = lines.next() {
            // "\t   11ad calculate_pow (/path/bin/pow1)"
            let t = l.trim();
            let (ip, rest) = t.split_once(' ').unwrap();
            let open = rest.rfind(" (").unwrap();
            let sym = rest[..open].to_string();
            let dso = rest[open + 2..rest.len() - 1].to_string();
            // Its source line follows on a line of its own, if any.
            let src = match lines.peek() {
                Some(n) if n.starts_with("  ") && !n.starts_with("\t") => {
                    lines.next().unwrap().trim().to_string()
                }
                _ => String::new(),
            };
            frames.push((u64::from_str_radix(ip, 16).unwrap(), sym, dso, src));
        }
        out.push((comm, frames));
    }
    out
}

/// `perf report --stdio` percentages by symbol (first `%` column).
fn perf_report_pct(file: &std::path::Path, children: bool) -> HashMap<String, f64> {
    let text = perf(&[
        "report",
        "-i",
        file.to_str().unwrap(),
        "--stdio",
        if children {
            "--children"
        } else {
            "--no-children"
        },
        "--sort",
        "sym",
        "-g",
        "none",
    ]);
    text.lines()
        .filter(|l| !l.starts_with('#') && l.contains("[.]"))
        .map(|l| {
            let pct: f64 = l
                .split_whitespace()
                .next()
                .unwrap()
                .trim_end_matches('%')
                .parse()
                .unwrap();
            (l.split("[.] ").nth(1).unwrap().trim().to_string(), pct)
        })
        .collect()
}

/// `objdump -d`'s labels of a binary, by address.
fn objdump_labels(bin: &std::path::Path) -> BTreeMap<u64, String> {
    let o = Command::new("objdump")
        .arg("-d")
        .arg(bin)
        .output()
        .expect("objdump");
    String::from_utf8_lossy(&o.stdout)
        .lines()
        .filter_map(|l| {
            let (a, rest) = l.split_once(" <")?;
            let name = rest.strip_suffix(">:")?;
            Some((u64::from_str_radix(a, 16).ok()?, name.to_string()))
        })
        .collect()
}

#[test]
fn cpu_cause_names_the_application_line_that_called_libm() {
    let file = fixture("pow.data");
    let (_d, cap) = ingest("pow.data");
    let rows = csv_maps(&report_csv(
        "cause",
        &cap,
        &["--resource", "cpu", "--range", "+0..+1000"],
    ));

    // perf's own unwinding, sample by sample. The application is the
    // directory of the executable (trawl's default: the outermost module of
    // the stacks ending in _start). perf 6.1 names the PLT stub of pow in
    // pow1 `_init`; objdump says it is `pow@plt`.
    let labels = objdump_labels(&fixture_bin().join("pow1"));
    let samples = perf_samples(&file);
    assert!(samples.len() > 400, "{}", samples.len());
    let app_dir = "/work/main/fixtures/perf/bin/";
    let mut want: HashMap<(String, String, String), usize> = HashMap::new();
    for (comm, frames) in &samples {
        assert_eq!(comm, "pow1");
        let name = |f: &(u64, String, String, String)| -> String {
            if f.2.starts_with(app_dir) && f.1 == "_init" {
                labels.range(..=f.0).next_back().unwrap().1.clone()
            } else {
                f.1.clone()
            }
        };
        let leaf = name(&frames[0]);
        let app = frames
            .iter()
            .find(|f| f.2.starts_with(app_dir) && !name(f).ends_with("@plt"));
        let key = match app {
            Some(f) => (name(f), leaf, f.3.clone()),
            None => ("[outside the application]".into(), leaf, String::new()),
        };
        *want.entry(key).or_default() += 1;
    }
    let got: HashMap<(String, String, String), usize> = rows
        .iter()
        .map(|r| {
            (
                (
                    r["app_function"].clone(),
                    r["actual_function"].clone(),
                    r["app_line"].clone(),
                ),
                r["samples"].parse().unwrap(),
            )
        })
        .collect();
    assert_eq!(got, want);

    // The same range on the capture clock: perf script's first and last
    // sample times (63375.479004, 63376.018455) are inside 63375..63377.
    let abs = report_csv(
        "cause",
        &cap,
        &["--resource", "cpu", "--range", "63375..63377"],
    );
    let key = |r: &HashMap<String, String>| {
        ["app_function", "actual_function", "app_line", "samples"].map(|c| r[c].clone())
    };
    let mut a: Vec<_> = csv_maps(&abs).iter().map(key).collect();
    let mut b: Vec<_> = rows.iter().map(key).collect();
    a.sort();
    b.sort();
    assert_eq!(a, b);
    // Seconds since the origin written without `+` end before the first
    // sample: refused, with the way to write them.
    let o = trawl(&[
        "report",
        "cause",
        cap.to_str().unwrap(),
        "--resource",
        "cpu",
        "--range",
        "0..1000",
    ]);
    assert_eq!(o.status.code(), Some(1));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("+START..+END") && err.contains("63375.479"),
        "{err}"
    );

    // The paper's shape: calculate_pow, most of it in libm's pow
    // implementation, called at line 14; the process named.
    let pow_row = rows
        .iter()
        .find(|r| r["actual_function"] == "__ieee754_pow_fma")
        .unwrap();
    assert_eq!(pow_row["app_function"], "calculate_pow");
    assert_eq!(pow_row["app_line"], "cpu_stress_pow.c:14");
    assert_eq!(pow_row["comm"], "pow1");
    assert!(rows
        .iter()
        .all(|r| r["comm"] == "pow1" && r["process_pct"] == "100.0"));

    // Percentages as perf report's: calculate_pow with its callees
    // (--children), each leaf alone (--no-children).
    let children = perf_report_pct(&file, true);
    let pct = |r: &HashMap<String, String>, c: &str| -> f64 { r[c].parse().unwrap() };
    assert_eq!(pct(pow_row, "app_function_pct"), children["calculate_pow"]);
    let self_pct = perf_report_pct(&file, false);
    let mut by_leaf: HashMap<String, f64> = HashMap::new();
    for r in &rows {
        *by_leaf.entry(r["actual_function"].clone()).or_default() += pct(r, "cpu_ns");
    }
    let total: f64 = by_leaf.values().sum();
    for f in [
        "__ieee754_pow_fma",
        "pow@@GLIBC_2.29",
        "calculate_pow",
        "other_work",
    ] {
        let mine = (10000.0 * by_leaf[f] / total).round() / 100.0;
        assert_eq!(mine, self_pct[f], "{f}");
    }
}
