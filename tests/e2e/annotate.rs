//! Oracle Solaris Studio Performance Analyzer, metrics mapped to program
//! structure, below the function: metrics per instruction (the
//! disassembly view) and per load object. Expected values: `perf annotate
//! --stdio -n` (samples per instruction and objdump's disassembly),
//! `addr2line` (each instruction's line) and `perf report --sort dso`
//! (load objects), on the same recorded files.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// `perf annotate --stdio -n FUNCTION` instruction rows: (address,
/// samples, instruction text).
pub(crate) fn perf_annotate(file: &Path, function: &str) -> Vec<(u64, u64, String)> {
    perf(&[
        "annotate",
        "-i",
        file.to_str().unwrap(),
        "--stdio",
        "-n",
        function,
    ])
    .lines()
    .filter_map(|l| {
        // "     457 :   11a3:   add    %rcx,%rax"
        let (n, rest) = l.split_once(" :")?;
        let n: u64 = n.trim().parse().ok()?;
        let (a, text) = rest.trim_start().split_once(':')?;
        let a = u64::from_str_radix(a.trim(), 16).ok()?;
        Some((a, n, text.trim().to_string()))
    })
    .collect()
}

struct Row {
    address: u64,
    samples: u64,
    pct: f64,
    text: String,
    srcline: String,
    inline_function: String,
}

fn trawl_annotate(cap: &Path, function: &str) -> Vec<Row> {
    csv_maps(&trawl_ok(&[
        "report",
        "annotate",
        function,
        cap.to_str().unwrap(),
        "--format",
        "csv",
    ]))
    .into_iter()
    .map(|r| Row {
        address: u64::from_str_radix(&r["address"], 16).unwrap(),
        samples: r["samples"].parse().unwrap(),
        pct: r["pct"].parse().unwrap(),
        text: r["text"].clone(),
        srcline: r["srcline"].clone(),
        inline_function: r["inline_function"].clone(),
    })
    .collect()
}

/// The mnemonic, with objdump's segment-prefix spelling (`cs nopw
/// 0x0(...)`) and iced's (`nopw %cs:0x0(...)`) both reduced to `nopw`.
fn mnemonic(text: &str) -> &str {
    let mut w = text.split_whitespace();
    match w.next() {
        Some("cs" | "ds" | "es" | "ss" | "fs" | "gs") => w.next().unwrap_or(""),
        Some(m) => m,
        None => "",
    }
}

fn check_against_perf(data: &str, function: &str) -> Vec<Row> {
    let (_d, cap) = ingest(data);
    let got = trawl_annotate(&cap, function);
    let want = perf_annotate(&fixture(data), function);
    assert!(!want.is_empty(), "perf annotate {function}: no rows");
    // Every instruction objdump lists, in order, with perf's samples.
    assert_eq!(
        got.iter()
            .map(|r| (r.address, r.samples))
            .collect::<Vec<_>>(),
        want.iter().map(|w| (w.0, w.1)).collect::<Vec<_>>(),
        "{data} {function}: (address, samples) differ from perf annotate"
    );
    for (g, w) in got.iter().zip(&want) {
        assert_eq!(
            mnemonic(&g.text),
            mnemonic(&w.2),
            "{data} {function} at {:x}: {:?} vs objdump's {:?}",
            g.address,
            g.text,
            w.2
        );
    }
    // The shares are of the function's samples (perf's local period
    // percent), summing to 100.
    let total: u64 = got.iter().map(|r| r.samples).sum();
    assert!(total > 0);
    let sum: f64 = got.iter().map(|r| r.pct).sum();
    assert!((sum - 100.0).abs() < 0.1, "{sum}");
    got
}

#[test]
fn instructions_and_their_samples_match_perf_annotate() {
    for f in ["spin_a", "spin_b", "fib", "libc_work"] {
        check_against_perf("hot-fp.data", f);
    }
    // libm, decoded from the machine's own file: pow's implementation and
    // the application function that calls it.
    check_against_perf("pow.data", "__ieee754_pow_fma");
    check_against_perf("pow.data", "calculate_pow");
    // Inlined code: the instruction's innermost function is named.
    let run = check_against_perf("inline.data", "run");
    assert!(
        run.iter()
            .any(|r| r.samples > 0 && r.inline_function == "kernel"),
        "no sampled instruction inlined from kernel()"
    );
}

/// Each instruction's source line (innermost inline level) is the one
/// `addr2line -i` prints first for its address.
#[test]
fn instruction_lines_are_addr2lines() {
    for (data, bin, function) in [
        ("hot-fp.data", "hot", "spin_a"),
        ("inline.data", "inl", "run"),
    ] {
        let (_d, cap) = ingest(data);
        let rows = trawl_annotate(&cap, function);
        let mut args = vec!["-i".to_string(), "-e".to_string()];
        args.push(fixture_bin().join(bin).to_string_lossy().into_owned());
        // A separator address after each one: where one address's inline
        // chain ends.
        for r in &rows {
            args.push(format!("{:x}", r.address));
            args.push("0".into());
        }
        let o = Command::new("addr2line")
            .args(&args)
            .output()
            .expect("addr2line");
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        let mut firsts = Vec::new();
        let mut new = true;
        for l in text.lines() {
            if l.starts_with("??") {
                new = true;
                continue;
            }
            if new {
                let base = l.rsplit('/').next().unwrap();
                firsts.push(base.split(" (").next().unwrap().to_string());
                new = false;
            }
        }
        assert_eq!(firsts.len(), rows.len(), "{text}");
        for (r, want) in rows.iter().zip(&firsts) {
            assert_eq!(&r.srcline, want, "{bin} {:x}", r.address);
        }
    }
}

/// Load objects (as the Performance Analyzer defines them): exclusive and
/// inclusive samples per module
/// as `perf report --sort dso` counts them, on captures with several
/// modules.
#[test]
fn load_objects_match_perf_report_sort_dso() {
    for data in ["pow.data", "procs.data"] {
        let (_d, cap) = ingest(data);
        let rows = csv_maps(&report_csv("hotspots", &cap, &["--by", "module"]));
        for children in [false, true] {
            let text = perf(&[
                "report",
                "-i",
                fixture(data).to_str().unwrap(),
                if children {
                    "--children"
                } else {
                    "--no-children"
                },
                "--sort",
                "dso",
                "-n",
                "--stdio",
                "-g",
                "none",
            ]);
            // "54.81%  296  libm.so.6" (self), "99.81%  45.00%  243  pow1"
            // (children: its first column).
            let want: HashMap<String, f64> = text
                .lines()
                .filter(|l| !l.starts_with('#') && l.contains('%'))
                .map(|l| {
                    let f: Vec<&str> = l.split_whitespace().collect();
                    let pct: f64 = f[0].trim_end_matches('%').parse().unwrap();
                    (f.last().unwrap().to_string(), pct)
                })
                .collect();
            assert!(want.len() >= 3, "{data}: {text}");
            let col = if children { "total_pct" } else { "self_pct" };
            let got: HashMap<String, f64> = rows
                .iter()
                .filter(|r| r[col] != "0.0")
                .map(|r| {
                    let base = r["module"].rsplit('/').next().unwrap().to_string();
                    let p: f64 = r[col].parse().unwrap();
                    (base, (p * 100.0).round() / 100.0)
                })
                .collect();
            // perf's DWARF unwinding of pow.data's one ld.so sample ends
            // in the address -1 (`perf script`: "ffffffffffffffff
            // [unknown]"), which perf counts as a frame in [unknown] and
            // trawl drops; real unmapped frames (procs.data) are in both.
            let mut want = want;
            if data == "pow.data" && children {
                assert_eq!(want.remove("[unknown]"), Some(0.19), "{text}");
            }
            assert_eq!(got, want, "{data} {col}");
            if !children {
                // And the sample counts, perf's -n column.
                let n: HashMap<String, u64> = text
                    .lines()
                    .filter(|l| !l.starts_with('#') && l.contains('%'))
                    .map(|l| {
                        let f: Vec<&str> = l.split_whitespace().collect();
                        (f.last().unwrap().to_string(), f[1].parse().unwrap())
                    })
                    .collect();
                let ours: HashMap<String, u64> = rows
                    .iter()
                    .filter(|r| r["self_samples"] != "0")
                    .map(|r| {
                        let base = r["module"].rsplit('/').next().unwrap().to_string();
                        (base, r["self_samples"].parse().unwrap())
                    })
                    .collect();
                assert_eq!(ours, n, "{data} self samples");
            }
        }
    }
}
