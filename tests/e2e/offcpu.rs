//! Off-CPU time (`thread_state`, `offcpu(...)`, `report offcpu`, `report
//! timeline --threads`) on `fixtures/perf/src/offcpu.c`, a program that
//! blocks in known functions for known times (nanosleep 200 ms in
//! `sleep_a_while`, a pipe read of 300 ms in `read_pipe`, a mutex held 150
//! ms by another thread in `lock_mutex`).
//!
//! Expected values: `perf script --ns --show-switch-events` on the same
//! file (each sched_switch sample's time, state and call chain, up to the
//! thread's next PERF_RECORD_SWITCH IN; or each PERF_RECORD_SWITCH OUT with
//! the call chain of the thread's `context-switches` sample right before
//! it), and the program's own durations (within 30 ms: the machine may be
//! slow to wake a thread).

use std::collections::HashMap;

use crate::common::*;

/// One off-CPU interval as perf script shows it.
pub(crate) struct Interval {
    pub(crate) tid: i32,
    /// Its start (the switch out) and length.
    pub(crate) start: i64,
    pub(crate) ns: i64,
    pub(crate) state: String,
    syms: Vec<String>,
}

fn ns(t: &str) -> i64 {
    let (s, f) = t.trim_end_matches(':').split_once('.').unwrap();
    s.parse::<i64>().unwrap() * 1_000_000_000 + f.parse::<i64>().unwrap()
}

/// perf script's sched_switch samples paired with the thread's next
/// switch-in record (or, with `outs_from_switch`, its switch-out records,
/// each with the call chain of a `context-switches` sample of the thread
/// when that is the thread's last line before it).
pub(crate) fn perf_intervals(file: &str, outs_from_switch: bool) -> Vec<Interval> {
    let out = perf(&[
        "script",
        "-i",
        fixture(file).to_str().unwrap(),
        "--show-switch-events",
        "--ns",
        "-F",
        "tid,time,event,trace,ip,sym",
    ]);
    let mut open: HashMap<i32, (i64, String, Vec<String>)> = HashMap::new();
    // A thread's context-switches sample's call chain, until its next
    // switch line.
    let mut cs: HashMap<i32, Vec<String>> = HashMap::new();
    let mut done = Vec::new();
    let mut cur: Option<i32> = None;
    let mut cur_cs: Option<i32> = None;
    for line in out.lines() {
        if line.starts_with('\t') {
            let sym = line.split_whitespace().nth(1).unwrap_or("").to_string();
            if let Some(o) = cur.and_then(|t| open.get_mut(&t)) {
                o.2.push(sym);
            } else if let Some(c) = cur_cs.and_then(|t| cs.get_mut(&t)) {
                c.push(sym);
            }
            continue;
        }
        (cur, cur_cs) = (None, None);
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 3 {
            continue;
        }
        let (tid, t) = (f[0].parse::<i32>().unwrap(), ns(f[1]));
        // Samples of other events between the two do not count.
        let is_switch = line.contains("PERF_RECORD_SWITCH") || line.contains(" context-switches:");
        let before = if is_switch { cs.remove(&tid) } else { None };
        if line.contains(" context-switches:") {
            cs.insert(tid, Vec::new());
            cur_cs = Some(tid);
        } else if line.contains("sched:sched_switch:") && !outs_from_switch {
            let state = line
                .split("prev_state=")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap();
            open.insert(tid, (t, state.to_string(), Vec::new()));
            cur = Some(tid);
        } else if line.contains("PERF_RECORD_SWITCH OUT") && outs_from_switch {
            let state = if line.contains("preempt") {
                "R"
            } else {
                "blocked"
            };
            open.insert(tid, (t, state.to_string(), before.unwrap_or_default()));
        } else if line.contains("PERF_RECORD_SWITCH IN") {
            if let Some((t0, state, syms)) = open.remove(&tid) {
                done.push(Interval {
                    tid,
                    start: t0,
                    ns: t - t0,
                    state,
                    syms,
                });
            }
        }
    }
    assert!(!done.is_empty(), "no intervals in perf script of {file}");
    done
}

#[test]
fn offcpu_time_per_function_is_perf_scripts_and_the_programs() {
    let (_t, cap) = ingest("offcpu.data");
    let ivs = perf_intervals("offcpu.data", false);
    // Per thread, blocked (not preempted) time.
    let mut per_tid: HashMap<String, i64> = HashMap::new();
    for i in ivs.iter().filter(|i| i.state != "R") {
        *per_tid.entry(i.tid.to_string()).or_default() += i.ns;
    }
    let threads = csv_maps(&report_csv("offcpu", &cap, &["--by", "thread"]));
    // Each thread's process, in a column so named (perf script's pid/tid).
    let pid_of: HashMap<String, String> = perf(&[
        "script",
        "-i",
        fixture("offcpu.data").to_str().unwrap(),
        "-F",
        "pid,tid",
    ])
    .lines()
    .filter_map(|l| {
        let (p, t) = l.trim().split_once('/')?;
        Some((t.trim().to_string(), p.trim().to_string()))
    })
    .collect();
    for r in &threads {
        assert_eq!(Some(&r["pid"]), pid_of.get(&r["key"]), "{r:?}");
        assert!(!r.contains_key("module"));
    }
    let got: HashMap<String, i64> = threads
        .into_iter()
        .map(|r| (r["key"].clone(), r["total_ns"].parse().unwrap()))
        .collect();
    assert_eq!(got, per_tid, "blocked ns per thread vs perf script");
    // Per function of the program, time with it in the blocking stack.
    let rows = csv_maps(&report_csv("offcpu", &cap, &[]));
    let total = |f: &str| -> i64 {
        rows.iter()
            .filter(|r| r["key"] == f)
            .map(|r| r["total_ns"].parse::<i64>().unwrap())
            .sum()
    };
    for (f, program_ms) in [
        ("sleep_a_while", 200),
        ("read_pipe", 300),
        ("lock_mutex", 150),
        ("helper_writer", 300),
        ("helper_holder", 150),
    ] {
        let want: i64 = ivs
            .iter()
            .filter(|i| i.state != "R" && i.syms.iter().any(|s| s == f))
            .map(|i| i.ns)
            .sum();
        assert_eq!(total(f), want, "{f}: trawl vs perf script");
        let ms = total(f) as f64 / 1e6;
        assert!(
            (ms - program_ms as f64).abs() < 30.0,
            "{f}: {ms} ms blocked, the program blocks {program_ms} ms"
        );
    }
    // The innermost user frame is where the program called the kernel.
    let selfs: HashMap<&str, i64> = rows
        .iter()
        .filter(|r| r["self_ns"] != "0")
        .map(|r| (r["key"].as_str(), r["self_ns"].parse().unwrap()))
        .collect();
    assert!(selfs.contains_key("__GI___lll_lock_wait"), "{selfs:?}");
    // By state: all sleeping (S) apart from preemptions, left out by default.
    let states = csv_maps(&report_csv(
        "offcpu",
        &cap,
        &["--by", "state", "--state", "S", "--state", "R"],
    ));
    let keys: Vec<&str> = states.iter().map(|r| r["key"].as_str()).collect();
    assert!(keys.contains(&"S"), "{keys:?}");
    // A stack per interval, folded root first.
    let stacks = csv_maps(&report_csv("offcpu", &cap, &["--by", "stack"]));
    assert!(
        stacks
            .iter()
            .any(|r| r["key"].contains("main;read_pipe;read")),
        "{:?}",
        stacks.iter().map(|r| &r["key"]).collect::<Vec<_>>()
    );
}

#[test]
fn switch_events_alone_give_the_intervals_and_the_timeline() {
    let (_t, cap) = ingest("offcpu-switch.data");
    let ivs = perf_intervals("offcpu-switch.data", true);
    let mut per_tid: HashMap<String, i64> = HashMap::new();
    for i in ivs.iter().filter(|i| i.state != "R") {
        *per_tid.entry(i.tid.to_string()).or_default() += i.ns;
    }
    let got: HashMap<String, i64> = csv_maps(&report_csv("offcpu", &cap, &["--by", "thread"]))
        .into_iter()
        .map(|r| (r["key"].clone(), r["total_ns"].parse().unwrap()))
        .collect();
    assert_eq!(
        got, per_tid,
        "blocked ns per thread vs perf script's switch records"
    );
    // No stacks at a switch record: one key.
    let stacks = csv_maps(&report_csv("offcpu", &cap, &["--by", "stack"]));
    assert_eq!(stacks.len(), 1);
    assert_eq!(stacks[0]["key"], "[no stack]");
    assert!(ivs.iter().all(|i| i.syms.is_empty()));
    // The timeline: per thread, its states add up window by window to the
    // span its intervals cover, and never exceed a window.
    let tl = csv_maps(&report_csv(
        "timeline",
        &cap,
        &["--threads", "--window", "50ms"],
    ));
    let mut per_window: HashMap<(String, String), i64> = HashMap::new();
    let mut blocked: HashMap<String, i64> = HashMap::new();
    for r in &tl {
        let n: i64 = r["ns"].parse().unwrap();
        *per_window
            .entry((r["tid"].clone(), r["window_start_s"].clone()))
            .or_default() += n;
        if r["state"] == "blocked" {
            *blocked.entry(r["tid"].clone()).or_default() += n;
        }
    }
    assert!(
        per_window.values().all(|&n| n <= 50_000_000),
        "{per_window:?}"
    );
    assert_eq!(
        blocked, per_tid,
        "blocked ns in the timeline vs perf script"
    );
}

/// `perf record -e context-switches -c 1 --call-graph dwarf --switch-events`
/// (no tracepoint access needed): each switch-out record takes the stack
/// of the thread's context-switches sample just before it.
#[test]
fn context_switch_samples_give_switch_records_their_stacks() {
    let (_t, cap) = ingest("offcpu-cs.data");
    let ivs = perf_intervals("offcpu-cs.data", true);
    let blocked: Vec<&Interval> = ivs.iter().filter(|i| i.state != "R").collect();
    assert!(
        blocked.iter().all(|i| !i.syms.is_empty()),
        "a blocked interval without stack in perf script"
    );
    let rows = csv_maps(&report_csv("offcpu", &cap, &[]));
    let total = |f: &str| -> i64 {
        rows.iter()
            .filter(|r| r["key"] == f)
            .map(|r| r["total_ns"].parse::<i64>().unwrap())
            .sum()
    };
    for (f, program_ms) in [
        ("sleep_a_while", 200),
        ("read_pipe", 300),
        ("lock_mutex", 150),
        ("helper_writer", 300),
        ("helper_holder", 150),
    ] {
        let want: i64 = blocked
            .iter()
            .filter(|i| i.syms.iter().any(|s| s == f))
            .map(|i| i.ns)
            .sum();
        assert_eq!(total(f), want, "{f}: trawl vs perf script");
        let ms = total(f) as f64 / 1e6;
        assert!(
            (ms - program_ms as f64).abs() < 30.0,
            "{f}: {ms} ms blocked, the program blocks {program_ms} ms"
        );
    }
    let stacks = csv_maps(&report_csv("offcpu", &cap, &["--by", "stack"]));
    assert!(
        stacks.iter().all(|r| r["key"] != "[no stack]")
            && stacks
                .iter()
                .any(|r| r["key"].contains("main;lock_mutex;pthread_mutex_lock")),
        "{:?}",
        stacks.iter().map(|r| &r["key"]).collect::<Vec<_>>()
    );
}

/// A capture without context switches says what to record instead of
/// printing an empty table.
#[test]
fn no_switches_says_what_to_record() {
    let (_t, cap) = ingest("hot-fp.data");
    let o = trawl(&["report", "offcpu", cap.to_str().unwrap()]);
    assert_refused(&o, "no off-CPU intervals");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no off-CPU intervals") && err.contains("-e context-switches"),
        "{err}"
    );
}
