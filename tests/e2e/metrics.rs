//! Exclusive, inclusive and attributed metrics (Oracle Solaris Studio
//! Performance Analyzer, metrics mapped to program structure): the
//! manual's worked example and hand-worked recursion on synthetic
//! captures of the fixture binary `calls`, and the identities on a real
//! recording with direct and indirect recursion, checked against
//! `perf report --children`.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use trawl_ingest::perf::header::sample;
use trawl_ingest::perf::records::context;
use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};

use crate::common::*;

/// Start addresses of the functions of `bin/calls`, from nm (the binary is
/// PIE: text file offsets equal virtual addresses).
fn calls_functions() -> HashMap<String, u64> {
    let out = Command::new("nm")
        .arg(fixture_bin().join("calls"))
        .output()
        .expect("nm (binutils)");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut it = l.split(' ');
            let (a, t, n) = (it.next()?, it.next()?, it.next()?);
            let a = u64::from_str_radix(a, 16).ok()?;
            (t == "T").then(|| (n.to_string(), a))
        })
        .collect()
}

const BASE: u64 = 0x5555_0000_0000;

/// A capture of `bin/calls` whose samples have the given stacks (root
/// first) and periods. Leaf addresses are 1 byte into the function, return
/// addresses 8 bytes in (so address - 1 is inside the caller too).
fn synthetic(stacks: &[(&[&str], u64)]) -> Vec<u8> {
    let f = calls_functions();
    let path = std::fs::canonicalize(fixture_bin().join("calls")).unwrap();
    let mut w = PerfDataWriter::new();
    let ev = w.add_event(
        sampling(
            1,
            0,
            1000,
            sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::CALLCHAIN,
        ),
        "cpu-clock",
    );
    w.comm(7, 7, "calls", 1, true);
    w.mmap2(7, 7, BASE, 0x10_0000, 0, path.to_str().unwrap(), 2, None);
    for (i, (stack, period)) in stacks.iter().enumerate() {
        let mut chain = vec![context::USER];
        for (k, name) in stack.iter().rev().enumerate() {
            let start = *f.get(*name).unwrap_or_else(|| panic!("nm has no {name}"));
            chain.push(BASE + start + if k == 0 { 1 } else { 8 });
        }
        w.sample(&SampleOut {
            event: ev,
            ip: chain[1],
            pid: 7,
            tid: 7,
            time: 10 + i as u64,
            period: *period,
            callchain: chain,
            ..Default::default()
        });
    }
    w.finished_round();
    w.to_bytes()
}

fn capture_of(stacks: &[(&[&str], u64)]) -> (tempfile::TempDir, std::path::PathBuf) {
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("perf.data");
    std::fs::write(&file, synthetic(stacks)).unwrap();
    let cap = t.path().join("cap");
    ingest_file(&file, &cap, &[]);
    (t, cap)
}

/// function -> (self, total) weight from `trawl report hotspots`.
fn hotspots(cap: &Path, weight: &str) -> HashMap<String, (u64, u64)> {
    let out = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--weight",
        weight,
        "--format",
        "csv",
    ]);
    let col = |p: &str| {
        if weight == "samples" {
            format!("{p}_samples")
        } else {
            format!("{p}_{weight}")
        }
    };
    csv_maps(&out)
        .into_iter()
        .map(|r| {
            (
                r["function"].clone(),
                (
                    r[&col("self")].parse().unwrap(),
                    r[&col("total")].parse().unwrap(),
                ),
            )
        })
        .collect()
}

/// (role, function) -> weight from `trawl report callers|callees F`.
fn edges(cap: &Path, which: &str, f: &str, weight: &str) -> HashMap<(String, String), u64> {
    let out = trawl_ok(&[
        "report",
        which,
        f,
        cap.to_str().unwrap(),
        "--weight",
        weight,
        "--format",
        "csv",
    ]);
    let col = if weight == "samples" {
        "samples"
    } else {
        weight
    };
    csv_maps(&out)
        .into_iter()
        .map(|r| {
            (
                (r["role"].clone(), r["function"].clone()),
                r[col].parse().unwrap(),
            )
        })
        .collect()
}

fn m(pairs: &[(&str, &str, u64)]) -> HashMap<(String, String), u64> {
    pairs
        .iter()
        .map(|(r, f, w)| ((r.to_string(), f.to_string()), *w))
        .collect()
}

#[test]
fn worked_example_of_the_oracle_analyzer_manual() {
    // The manual's figures: main 32 = 2 + A 10 + B 20;
    // C 25 = 10 from A + 15 from B = 5 + E 10 + F 10.
    // Stacks chosen by hand to produce them (period = the metric):
    let (_t, cap) = capture_of(&[
        (&["main"], 2),
        (&["main", "A", "C"], 5),
        (&["main", "A", "C", "E"], 5),
        (&["main", "B", "C", "E"], 5),
        (&["main", "B", "C", "F"], 10),
        (&["main", "B"], 5),
    ]);
    let h = hotspots(&cap, "period");
    assert_eq!(h["main"], (2, 32));
    assert_eq!(h["A"], (0, 10));
    assert_eq!(h["B"], (5, 20));
    assert_eq!(h["C"], (5, 25));
    assert_eq!(h["E"], (10, 10));
    assert_eq!(h["F"], (10, 10));
    assert_eq!(
        edges(&cap, "callees", "main", "period"),
        m(&[
            ("function", "main", 32),
            ("self", "main", 2),
            ("callee", "A", 10),
            ("callee", "B", 20)
        ])
    );
    assert_eq!(
        edges(&cap, "callers", "C", "period"),
        m(&[
            ("function", "C", 25),
            ("caller", "A", 10),
            ("caller", "B", 15)
        ])
    );
    assert_eq!(
        edges(&cap, "callees", "C", "period"),
        m(&[
            ("function", "C", 25),
            ("self", "C", 5),
            ("callee", "E", 10),
            ("callee", "F", 10)
        ])
    );
    // The same stacks weighed by sample count: 1 per stack.
    assert_eq!(
        edges(&cap, "callers", "C", "samples"),
        m(&[("function", "C", 4), ("caller", "A", 2), ("caller", "B", 2)])
    );
    // Load objects: everything is in `calls`.
    let out = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--by",
        "module",
        "--format",
        "csv",
    ]);
    let rows = csv_maps(&out);
    assert_eq!(rows.len(), 1);
    assert!(rows[0]["module"].ends_with("/calls"));
    assert_eq!(rows[0]["self_period"], "32");
    assert_eq!(rows[0]["total_period"], "32");
}

#[test]
fn recursion_by_hand() {
    // Direct recursion (rec) and indirect recursion (ping <-> pong); an
    // event counts once per stack in a function's inclusive metric, the
    // caller that started the recursion is attributed, and the callee side
    // follows the innermost occurrence. Worked by hand:
    //   rec: total 7 (4 + 3); callers: main 7; callees: self 4, burn 3.
    //   ping: total 3; callers: main 3; callees: self 1, pong 2.
    //   pong: total 3; callers: ping 3; callees: burn 2, ping 1.
    let (_t, cap) = capture_of(&[
        (&["main", "rec", "rec", "rec"], 4),
        (&["main", "rec", "rec", "burn"], 3),
        (&["main", "ping", "pong", "ping", "pong", "burn"], 2),
        (&["main", "ping", "pong", "ping"], 1),
    ]);
    let h = hotspots(&cap, "period");
    assert_eq!(h["rec"], (4, 7));
    assert_eq!(h["ping"], (1, 3));
    assert_eq!(h["pong"], (0, 3));
    assert_eq!(h["main"], (0, 10));
    assert_eq!(h["burn"], (5, 5));
    assert_eq!(
        edges(&cap, "callers", "rec", "period"),
        m(&[("function", "rec", 7), ("caller", "main", 7)])
    );
    assert_eq!(
        edges(&cap, "callees", "rec", "period"),
        m(&[
            ("function", "rec", 7),
            ("self", "rec", 4),
            ("callee", "burn", 3)
        ])
    );
    assert_eq!(
        edges(&cap, "callers", "ping", "period"),
        m(&[("function", "ping", 3), ("caller", "main", 3)])
    );
    assert_eq!(
        edges(&cap, "callees", "ping", "period"),
        m(&[
            ("function", "ping", 3),
            ("self", "ping", 1),
            ("callee", "pong", 2)
        ])
    );
    assert_eq!(
        edges(&cap, "callers", "pong", "period"),
        m(&[("function", "pong", 3), ("caller", "ping", 3)])
    );
    assert_eq!(
        edges(&cap, "callees", "pong", "period"),
        m(&[
            ("function", "pong", 3),
            ("callee", "burn", 2),
            ("callee", "ping", 1)
        ])
    );
    // main is where every stack begins.
    assert_eq!(
        edges(&cap, "callers", "main", "period"),
        m(&[("function", "main", 10), ("caller", "<root>", 10)])
    );
}

/// For every function: the callers sum to its inclusive metric, and self
/// plus callees sum to it too; the inclusive metric equals the hotspots
/// total.
fn check_identities(cap: &Path, weight: &str, functions: &[String]) -> usize {
    let h = hotspots(cap, weight);
    let mut checked = 0;
    for f in functions {
        let callers = edges(cap, "callers", f, weight);
        let callees = edges(cap, "callees", f, weight);
        let incl = callers[&("function".to_string(), f.clone())];
        assert_eq!(incl, callees[&("function".to_string(), f.clone())], "{f}");
        assert_eq!(incl, h[f].1, "{f}: inclusive vs hotspots total");
        let sum_callers: u64 = callers
            .iter()
            .filter(|((r, _), _)| r == "caller")
            .map(|(_, w)| w)
            .sum();
        let sum_callees: u64 = callees
            .iter()
            .filter(|((r, _), _)| r != "function")
            .map(|(_, w)| w)
            .sum();
        assert_eq!(sum_callers, incl, "{f}: sum of attributed(caller -> f)");
        assert_eq!(
            sum_callees, incl,
            "{f}: exclusive + sum of attributed(f -> callee)"
        );
        let excl = callees
            .get(&("self".to_string(), f.clone()))
            .copied()
            .unwrap_or(0);
        assert_eq!(excl, h[f].0, "{f}: exclusive vs hotspots self");
        checked += 1;
    }
    checked
}

#[test]
fn identities_hold_on_a_recursive_recording() {
    let (_t, cap) = ingest("recurse.data");
    let fs: Vec<String> = [
        "main",
        "rec",
        "ping",
        "pong",
        "burn",
        "__libc_start_call_main",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_eq!(check_identities(&cap, "period", &fs), fs.len());
    assert_eq!(check_identities(&cap, "samples", &fs), fs.len());
    // Inclusive and exclusive figures equal perf report's on the same file.
    let h = hotspots(&cap, "samples");
    let total: u64 = h.values().map(|v| v.0).sum();
    for children in [false, true] {
        for r in crate::perf_fixtures::perf_report(&fixture("recurse.data"), children) {
            if r.kernel || !fs.contains(&r.sym) {
                continue;
            }
            let (pct, mine) = match r.children {
                Some(c) => (c, h[&r.sym].1),
                None => (r.self_pct, h[&r.sym].0),
            };
            let mine_pct = 100.0 * mine as f64 / total as f64;
            assert!(
                (mine_pct - pct).abs() <= 0.0051,
                "children={children} {}: trawl {mine_pct:.2}% perf {pct}%",
                r.sym
            );
        }
    }
}

#[test]
fn flamegraph_draws_the_selected_stacks() {
    let (t, cap) = ingest("hot-fp.data");
    let svg = t.path().join("fg.svg");
    let folded = t.path().join("fg.folded");
    trawl_ok(&[
        "report",
        "flamegraph",
        cap.to_str().unwrap(),
        "-o",
        svg.to_str().unwrap(),
        "--folded",
        folded.to_str().unwrap(),
        "--weight",
        "samples",
    ]);
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.starts_with("<?xml") && s.contains("spin_a") && s.contains("</svg>"));
    // The folded stacks: one sample each, as many as perf script lists;
    // root first (spin_a's stacks end in spin_a and start at the root).
    let text = std::fs::read_to_string(&folded).unwrap();
    let total: usize = text
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<usize>().unwrap())
        .sum();
    assert_eq!(total, perf_script_samples(&fixture("hot-fp.data")));
    assert!(text
        .lines()
        .any(|l| l.starts_with("__libc_start_call_main;main;spin_a ")));
}

#[test]
fn counter_weights_are_group_read_deltas() {
    // group.data: {cpu-clock,task-clock}:S; perf script prints each
    // member's increase since the thread's previous sample as its period.
    let (_t, cap) = ingest("group.data");
    let out = trawl_ok(&[
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--weight",
        "read:task-clock",
        "--format",
        "csv",
    ]);
    let mine: u64 = csv_maps(&out)
        .iter()
        .map(|r| r["self_task_clock"].parse::<u64>().unwrap())
        .sum();
    let script = perf(&[
        "script",
        "-i",
        fixture("group.data").to_str().unwrap(),
        "-F",
        "event,period",
    ]);
    let expected: u64 = script
        .lines()
        .filter(|l| l.contains("task-clock"))
        .filter_map(|l| l.split_whitespace().next()?.parse::<u64>().ok())
        .sum();
    assert!(expected > 0);
    assert_eq!(
        mine, expected,
        "sum of task-clock deltas vs perf script periods"
    );
}

#[test]
fn addr2line_command_matches_binutils() {
    // From run (0x1190, nm) to the end of .text: inline chains of depth 4.
    let exe = fixture_bin().join("inl");
    let addrs: Vec<String> = (0x1190..0x1240)
        .step_by(3)
        .map(|a| format!("{a:#x}"))
        .collect();
    let mut args = vec!["addr2line", "-e", exe.to_str().unwrap()];
    args.extend(addrs.iter().map(String::as_str));
    let mine = trawl_ok(&args);
    let out = Command::new("addr2line")
        .args(["-f", "-i", "-C", "-e", exe.to_str().unwrap()])
        .args(&addrs)
        .output()
        .unwrap();
    let theirs = String::from_utf8_lossy(&out.stdout).replace("??:?", "??:0");
    let norm = |s: &str| -> Vec<String> {
        s.lines()
            .map(|l| l.split(" (discriminator").next().unwrap().to_string())
            .collect()
    };
    assert_eq!(norm(&mine), norm(&theirs));
}
