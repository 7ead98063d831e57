//! `trawl export --to perfetto`: the trace read back with Perfetto's own
//! published schema (`perfetto_check.py`, the `perfetto` package's
//! perfetto_trace_pb2), compared with perf script and the strace dump.

use std::collections::HashMap;
use std::path::Path;
use std::process::Command;

use crate::common::*;

/// The trace `cap` exports to, as perfetto_check.py prints it.
fn read_back(cap: &Path, extra: &[&str]) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.pftrace");
    let mut args = vec![
        "export",
        cap.to_str().unwrap(),
        "--to",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ];
    args.extend_from_slice(extra);
    trawl_ok(&args);
    let check = root().join("tests/e2e/perfetto_check.py");
    let o = Command::new("python3")
        .arg(&check)
        .arg(&out)
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "perfetto_check.py (pip install perfetto protobuf):\n{}",
        String::from_utf8_lossy(&o.stderr)
    );
    serde_json::from_slice(&o.stdout).unwrap()
}

/// Every sample of hot-fp.data is a PerfSample at perf script's time, on
/// its thread, with its leaf function last in its callstack (root first).
/// Expected: `perf script -F tid,time,ip,sym --ns -G` (the leaf only);
/// perf's `[unknown]` leaves are left out of the comparison (trawl names
/// them by address).
#[test]
fn samples_are_perf_scripts() {
    let (_t, cap) = ingest("hot-fp.data");
    let t = read_back(&cap, &["--no-inline"]);
    let script = perf(&[
        "script",
        "-i",
        fixture("hot-fp.data").to_str().unwrap(),
        "-F",
        "tid,time,ip,sym",
        "--ns",
        "-G",
    ]);
    let mut want: Vec<(u64, u64, String)> = Vec::new();
    for l in script.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() < 4 {
            continue;
        }
        let (s, ns) = f[1].trim_end_matches(':').split_once('.').unwrap();
        let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
        want.push((ts, f[0].parse().unwrap(), f[3].to_string()));
    }
    let samples = t["samples"].as_array().unwrap();
    assert_eq!(samples.len(), want.len(), "one PerfSample per sample");
    let mut got: Vec<(u64, u64, String)> = samples
        .iter()
        .map(|s| {
            (
                s["ts"].as_u64().unwrap(),
                s["tid"].as_u64().unwrap(),
                s["frames"]
                    .as_array()
                    .unwrap()
                    .last()
                    .unwrap()
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    got.sort();
    want.sort();
    let mut compared = 0;
    for (g, w) in got.iter().zip(&want) {
        assert_eq!((g.0, g.1), (w.0, w.1));
        if w.2 != "[unknown]" {
            assert_eq!(g.2, w.2, "leaf at {}", w.0);
            compared += 1;
        }
    }
    assert!(
        compared > want.len() * 9 / 10,
        "{compared} of {}",
        want.len()
    );
    // Threads and their process are described.
    let threads: Vec<&serde_json::Value> = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "thread")
        .collect();
    assert!(threads.iter().any(|x| x["name"] == "hot"), "{threads:?}");
}

/// The calls of io.strace (`strace -f -ttt -T -k -y`) are slices on their
/// thread: name, start (since the first call: the capture's origin) and
/// duration as the dump prints them, the return value and file attached.
/// Expected: the dump's lines, read here.
#[test]
fn strace_calls_are_slices_on_their_thread() {
    let dump = root().join("fixtures/strace/io.strace");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    trawl_ok(&[
        "ingest",
        dump.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    let t = read_back(&cap, &[]);
    let text = std::fs::read_to_string(&dump).unwrap();
    // `PID SECONDS.MICROS name(args) = ret <DURATION>` lines of whole calls.
    let mut want: Vec<(u64, String, u64, u64)> = Vec::new();
    let mut first = None;
    for l in text.lines() {
        if l.starts_with(' ') {
            continue; // a stack frame
        }
        let Some((tid, rest)) = l.split_once(' ') else {
            continue;
        };
        let Some((secs, call)) = rest.trim_start().split_once(' ') else {
            continue;
        };
        let (Ok(tid), Some((s, us))) = (tid.parse::<u64>(), secs.split_once('.')) else {
            continue;
        };
        let ts = s.parse::<u64>().unwrap() * 1_000_000_000 + us.parse::<u64>().unwrap() * 1000;
        first.get_or_insert(ts);
        if call.contains("<unfinished")
            || call.starts_with('<')
            || call.starts_with("+++")
            || call.starts_with("---")
        {
            continue;
        }
        let Some(name) = call.split('(').next() else {
            continue;
        };
        let Some(d) = call.rsplit_once('<').and_then(|(_, d)| d.strip_suffix('>')) else {
            continue;
        };
        let Some((ds, dus)) = d.split_once('.') else {
            continue;
        };
        let dur = ds.parse::<u64>().unwrap() * 1_000_000_000 + dus.parse::<u64>().unwrap() * 1000;
        want.push((tid, name.to_string(), ts, dur));
    }
    let first = first.unwrap();
    let want: Vec<(u64, String, u64, u64)> = want
        .into_iter()
        .map(|(t, n, s, d)| (t, n, s - first, d))
        .collect();
    assert!(want.len() > 50, "{}", want.len());
    let tracks: HashMap<u64, u64> = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "thread")
        .map(|x| (x["uuid"].as_u64().unwrap(), x["tid"].as_u64().unwrap()))
        .collect();
    let events = t["events"].as_array().unwrap();
    let mut open: HashMap<u64, (String, u64)> = HashMap::new();
    let mut got: Vec<(u64, String, u64, u64)> = Vec::new();
    let mut by_name_and_start: HashMap<(u64, u64), serde_json::Value> = HashMap::new();
    for e in events {
        let track = e["track"].as_u64().unwrap();
        let ts = e["ts"].as_u64().unwrap();
        match e["type"].as_u64().unwrap() {
            1 => {
                assert!(
                    open.insert(track, (e["name"].as_str().unwrap().to_string(), ts))
                        .is_none(),
                    "nested calls on one thread"
                );
                by_name_and_start.insert((tracks[&track], ts), e["args"].clone());
            }
            2 => {
                let (name, start) = open.remove(&track).expect("an end without a begin");
                got.push((tracks[&track], name, start, ts - start));
            }
            _ => {}
        }
    }
    for w in &want {
        assert!(got.contains(w), "{w:?} is not a slice");
    }
    // The write of `raw_writes` (io.c: 4096 bytes to out.bin) carries its
    // return value and file.
    let (tid, _, start, _) = want.iter().find(|w| w.1 == "write").unwrap();
    let args = &by_name_and_start[&(*tid, *start)];
    assert!(args["args"].as_str().unwrap().len() > 0, "{args}");
    assert!(args.get("ret").is_some(), "{args}");
}

/// vmstat's readings of the phases run (perf.data, strace, vmstat, sar
/// together) are counter tracks under a track named after the file: the
/// run-queue counter holds vmstat's `r` column, row by row (the first row,
/// averages since boot, left out), one second apart as its UTC column
/// says. Expected: vmstat.log, read here.
#[test]
fn metrics_are_counter_tracks() {
    let run = root().join("fixtures/phases/run1");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let inputs: Vec<String> = ["perf.data", "app.strace", "vmstat.log", "sar.csv"]
        .iter()
        .map(|f| run.join(f).to_str().unwrap().to_string())
        .collect();
    let mut args: Vec<&str> = vec!["ingest"];
    args.extend(inputs.iter().map(String::as_str));
    args.extend(["-o", cap.to_str().unwrap()]);
    trawl_ok(&args);
    let t = read_back(&cap, &[]);
    let text = std::fs::read_to_string(run.join("vmstat.log")).unwrap();
    let rows: Vec<Vec<&str>> = text
        .lines()
        .map(|l| l.split_whitespace().collect::<Vec<_>>())
        .filter(|f| f.len() > 15 && f[0].parse::<f64>().is_ok())
        .collect();
    let want: Vec<f64> = rows[1..].iter().map(|f| f[0].parse().unwrap()).collect();
    let tracks = t["tracks"].as_array().unwrap();
    let group = tracks
        .iter()
        .find(|x| x["name"] == "vmstat.log")
        .expect("a vmstat.log track");
    let runq = tracks
        .iter()
        .find(|x| x["name"] == "runq" && x["parent"] == group["uuid"])
        .expect("runq under vmstat.log");
    let points: Vec<(u64, f64)> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["track"] == runq["uuid"])
        .map(|e| (e["ts"].as_u64().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    let values: Vec<f64> = points.iter().map(|p| p.1).collect();
    assert_eq!(values, want);
    for w in points.windows(2) {
        assert_eq!(
            w[1].0 - w[0].0,
            1_000_000_000,
            "vmstat 1: one reading a second"
        );
    }
    // On the samples' clock: the readings fall within the samples' span.
    let ts: Vec<u64> = t["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["ts"].as_u64().unwrap())
        .collect();
    let (lo, hi) = (*ts.iter().min().unwrap(), *ts.iter().max().unwrap());
    assert!(
        points.iter().filter(|p| p.0 >= lo && p.0 <= hi).count() > points.len() / 2,
        "{lo}..{hi}"
    );
}

/// RAPL readings are power counters: under a track named after the
/// powercap file, `power_w[cores:0]` holds each interval's energy over its
/// length. Expected: the energy simulator's CSV (cumulative µJ of zone
/// `intel-rapl:0:0`, wrapping at its max_energy_range_uj), worked here.
#[test]
fn rapl_readings_are_power_counters() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let e = root().join("fixtures/energy");
    trawl_ok(&[
        "ingest",
        e.join("sim.data").to_str().unwrap(),
        e.join("sim-rapl.csv").to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    let t = read_back(&cap, &[]);
    let csv = std::fs::read_to_string(e.join("sim-rapl.csv")).unwrap();
    let mut prev: Option<(i64, f64)> = None;
    let mut want: Vec<f64> = Vec::new();
    for l in csv.lines().skip(1) {
        let f: Vec<&str> = l.split(',').collect();
        if f[1] != "intel-rapl:0:0" {
            continue;
        }
        // Seconds with nine decimals, as integer ns: an f64 of 1.7e9 s
        // keeps only about 0.2 µs.
        let (secs, frac) = f[0].split_once('.').unwrap();
        let ns = secs.parse::<i64>().unwrap() * 1_000_000_000
            + format!("{frac:0<9}")[..9].parse::<i64>().unwrap();
        let (uj, max): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        if let Some((t0, e0)) = prev {
            let d = if uj >= e0 { uj - e0 } else { uj + max - e0 };
            want.push(d / 1e6 / ((ns - t0) as f64 / 1e9));
        }
        prev = Some((ns, uj));
    }
    assert!(want.len() > 10, "{}", want.len());
    let tracks = t["tracks"].as_array().unwrap();
    let group = tracks.iter().find(|x| x["name"] == "sim-rapl.csv").unwrap();
    let cores = tracks
        .iter()
        .find(|x| x["name"] == "power_w[cores:0]" && x["parent"] == group["uuid"])
        .expect("power_w[cores:0]");
    let got: Vec<f64> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["track"] == cores["uuid"])
        .map(|x| x["value"].as_f64().unwrap())
        .collect();
    assert_eq!(got.len(), want.len());
    for (g, w) in got.iter().zip(&want) {
        assert!((g - w).abs() <= 1e-6 * w.abs().max(1.0), "{g} W vs {w} W");
    }
}

/// The thread (tid) each thread track and track under one is of.
fn thread_of_track(t: &serde_json::Value) -> HashMap<u64, i64> {
    let tracks = t["tracks"].as_array().unwrap();
    let mut out: HashMap<u64, i64> = tracks
        .iter()
        .filter(|x| x["kind"] == "thread")
        .map(|x| (x["uuid"].as_u64().unwrap(), x["tid"].as_i64().unwrap()))
        .collect();
    for x in tracks.iter().filter(|x| x["kind"] == "track") {
        if let Some(&tid) = x["parent"].as_u64().and_then(|p| out.get(&p)) {
            out.insert(x["uuid"].as_u64().unwrap(), tid);
        }
    }
    out
}

/// The uuids of the tracks named `name`.
fn tracks_named(t: &serde_json::Value, name: &str) -> Vec<u64> {
    t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"] == name)
        .map(|x| x["uuid"].as_u64().unwrap())
        .collect()
}

/// Every tracepoint and probe sample of the system-wide tp-file.data
/// (scheduler, signals, timers, kmalloc, block, IRQ, two uprobes) but the
/// scheduler switches (the thread states) and the syscall tracepoints (the
/// calls) is an instant on its thread at its time, with every field of its
/// format. Expected: perf's Python scripting engine (`perf script -s
/// tp_fields.py`: time, thread, CPU, fields), a field read with the
/// signedness of the kernel's format file as tracepoints.rs reads it.
/// With `--tid` and `--time`, only that thread's instants in that range.
#[test]
fn tracepoints_are_instants_with_perfs_fields() {
    use crate::tracepoints::{expected, perf_samples, tracefs_formats};
    let (_d, cap) = ingest("tp-file.data");
    let t = read_back(&cap, &[]);
    let formats = tracefs_formats();
    let thread = thread_of_track(&t);
    let mut want: Vec<&serde_json::Value> = Vec::new();
    let samples = perf_samples(&fixture("tp-file.data"));
    for s in &samples {
        let e = s["event"].as_str().unwrap();
        if e != "sched:sched_switch" && !e.starts_with("syscalls:") {
            want.push(s);
        }
    }
    assert!(want.len() > 500, "{}", want.len());
    let got: Vec<&serde_json::Value> = t["instants"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| i["categories"][0] == "tracepoint")
        .collect();
    assert_eq!(got.len(), want.len(), "one instant per sample");
    // By (time, thread, event, cpu): each perf sample has its instant.
    let mut by_key: HashMap<(u64, i64, String, i64), Vec<&serde_json::Value>> = HashMap::new();
    for i in &got {
        by_key
            .entry((
                i["ts"].as_u64().unwrap(),
                thread[&i["track"].as_u64().unwrap()],
                i["name"].as_str().unwrap().to_string(),
                // The sample's CPU (common_cpu when a field is named cpu).
                i["args"]
                    .get("common_cpu")
                    .unwrap_or(&i["args"]["cpu"])
                    .as_i64()
                    .unwrap(),
            ))
            .or_default()
            .push(i);
    }
    let mut fields = 0;
    for w in &want {
        let event = w["event"].as_str().unwrap();
        let key = (
            w["time_ns"].as_u64().unwrap(),
            w["pid"].as_i64().unwrap(),
            event.to_string(),
            w["cpu"].as_i64().unwrap(),
        );
        let candidates = by_key
            .get(&key)
            .unwrap_or_else(|| panic!("no instant for {w}"));
        let format = &formats[event];
        // Among instants at the same time, thread and CPU: the one whose
        // fields all match.
        let matches = candidates.iter().any(|i| {
            w["fields"].as_object().unwrap().iter().all(|(name, v)| {
                let (size, signed, decl) = &format[name];
                i["args"][name] == expected(v, *size, *signed, decl)
            })
        });
        assert!(matches, "{w}: fields differ from {candidates:?}");
        fields += w["fields"].as_object().unwrap().len();
    }
    assert!(fields > 2000, "{fields} fields compared");
    // The selection: one thread, one range of time.
    let tid = 13670;
    let (from, to) = (1461.96f64, 1462.0f64);
    let range = format!("{from}..{to}");
    let t = read_back(&cap, &["--tid", "13670", "--time", &range]);
    let thread = thread_of_track(&t);
    let n = want
        .iter()
        .filter(|w| {
            let ts = w["time_ns"].as_f64().unwrap() / 1e9;
            w["pid"] == tid && ts >= from && ts < to
        })
        .count();
    let got: Vec<&serde_json::Value> = t["instants"].as_array().unwrap().iter().collect();
    assert!(n > 10, "{n}");
    assert_eq!(got.len(), n);
    for i in got {
        assert_eq!(thread[&i["track"].as_u64().unwrap()], tid);
    }
}

/// The thread states of offcpu.data (every `sched:sched_switch` with its
/// stack, the PERF_RECORD_SWITCH records): each time a thread left the CPU
/// is a slice on its `thread state` track, from the switch out to its
/// switch in, named as Perfetto names the state the thread left in.
/// Expected: `perf script --show-switch-events` (each sched_switch's time,
/// thread and prev_state, up to the thread's next PERF_RECORD_SWITCH IN,
/// paired by offcpu.rs), and the program's 200 ms nanosleep.
#[test]
fn thread_states_are_perf_scripts_switches() {
    let (_d, cap) = ingest("offcpu.data");
    let t = read_back(&cap, &[]);
    let want = crate::offcpu::perf_intervals("offcpu.data", false);
    let states: Vec<u64> = tracks_named(&t, "thread state");
    assert!(!states.is_empty());
    let thread = thread_of_track(&t);
    let got: Vec<(i64, u64, u64, String)> = t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| states.contains(&s["track"].as_u64().unwrap()))
        .map(|s| {
            (
                thread[&s["track"].as_u64().unwrap()],
                s["ts"].as_u64().unwrap(),
                s["dur"].as_u64().unwrap(),
                s["name"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    for w in &want {
        let name = match w.state.trim_end_matches('+') {
            "S" => "Sleeping",
            "D" => "Uninterruptible Sleep",
            "R" => "Runnable (Preempted)",
            other => panic!("a state this test does not name: {other}"),
        };
        let key = (w.tid as i64, w.start as u64, w.ns as u64, name.to_string());
        assert!(got.contains(&key), "{key:?} is not a slice");
    }
    // The program's 200 ms nanosleep (within 30 ms).
    assert!(
        got.iter()
            .any(|g| g.3 == "Sleeping" && (g.2 as i64 - 200_000_000).abs() < 30_000_000),
        "no 200 ms sleep"
    );
    // Between two switches out, the thread ran.
    assert!(got.iter().any(|g| g.3 == "Running"));
}

/// `--pair block:block_rq_issue,block:block_rq_complete,dev,sector`: each
/// block request of tp-z.data is a slice from its issue to its completion
/// on a track of that name. Expected: perf's scripting engine's samples of
/// the two events, paired here by (dev, sector), a completion taking the
/// last issue of its key.
#[test]
fn paired_events_are_slices() {
    use crate::tracepoints::perf_samples;
    let (_d, cap) = ingest("tp-z.data");
    let pair = "block:block_rq_issue,block:block_rq_complete,dev,sector";
    let t = read_back(&cap, &["--pair", pair]);
    let mut issued: HashMap<(u64, u64), u64> = HashMap::new();
    let mut want: Vec<(u64, u64)> = Vec::new();
    for s in perf_samples(&fixture("tp-z.data")) {
        let key = || {
            (
                s["fields"]["dev"].as_u64().unwrap(),
                s["fields"]["sector"].as_u64().unwrap(),
            )
        };
        let ts = s["time_ns"].as_u64().unwrap();
        match s["event"].as_str().unwrap() {
            "block:block_rq_issue" => {
                issued.insert(key(), ts);
            }
            "block:block_rq_complete" => {
                if let Some(t0) = issued.remove(&key()) {
                    want.push((t0, ts - t0));
                }
            }
            _ => {}
        }
    }
    assert!(!want.is_empty(), "tp-z.data caught completions");
    let name = "block:block_rq_issue → block:block_rq_complete";
    let tracks: Vec<u64> = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["name"].as_str().unwrap().starts_with(name))
        .map(|x| x["uuid"].as_u64().unwrap())
        .collect();
    let mut got: Vec<(u64, u64)> = t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| tracks.contains(&s["track"].as_u64().unwrap()))
        .map(|s| (s["ts"].as_u64().unwrap(), s["dur"].as_u64().unwrap()))
        .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    // A pair names its start, end and key.
    let o = trawl(&[
        "export",
        cap.to_str().unwrap(),
        "--to",
        "perfetto",
        "-o",
        "/dev/null",
        "--pair",
        "block:block_rq_issue",
    ]);
    assert_refused(&o, "START,END,KEY");
}

/// Two captures in one trace: each capture's processes are their own
/// (ids `k × 10,000,000 + pid`, names `comm [capture]`), each capture's
/// samples on its own time axis from its origin (their gaps as perf
/// script's). Expected: perf script's sample times and threads of each.
#[test]
fn several_captures_share_one_trace() {
    let dir = tempfile::tempdir().unwrap();
    let (hot, threads) = (dir.path().join("hot"), dir.path().join("threads"));
    ingest_file(&fixture("hot-fp.data"), &hot, &[]);
    ingest_file(&fixture("threads.data"), &threads, &[]);
    let out = dir.path().join("two.pftrace");
    trawl_ok(&[
        "export",
        hot.to_str().unwrap(),
        threads.to_str().unwrap(),
        "--to",
        "perfetto",
        "-o",
        out.to_str().unwrap(),
    ]);
    let o = Command::new("python3")
        .arg(root().join("tests/e2e/perfetto_check.py"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let t: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let samples = t["samples"].as_array().unwrap();
    // Samples beyond what memory holds go to disk in sorted runs and come
    // back merged: with 100 held, the checked trace's samples are many
    // runs of both captures, and the file is the same, byte for byte.
    assert!(samples.len() > 1000, "{}", samples.len());
    let spilled = dir.path().join("spilled.pftrace");
    let cache = tempfile::tempdir().unwrap();
    let o = Command::new(trawl_exe())
        .env("XDG_CACHE_HOME", cache.path())
        .env("TRAWL_SPILL_SAMPLES", "100")
        .args([
            "export",
            hot.to_str().unwrap(),
            threads.to_str().unwrap(),
            "--to",
            "perfetto",
            "-o",
            spilled.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(std::fs::read(&spilled).unwrap() == std::fs::read(&out).unwrap());
    // A failed export leaves no file behind, not even its temporary one.
    let bad = dir.path().join("bad.pftrace");
    let o = trawl(&[
        "export",
        hot.to_str().unwrap(),
        "--to",
        "perfetto",
        "--pair",
        "sched:sched_wakeup,sched:sched_switch",
        "-o",
        bad.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("bad"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
    let processes: Vec<&serde_json::Value> = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "process")
        .collect();
    // Capture k (in the order given) has the ids from k × 10,000,000.
    for (k, file, name) in [(0u64, "hot-fp.data", "hot"), (1, "threads.data", "threads")] {
        let script = perf(&[
            "script",
            "-i",
            fixture(file).to_str().unwrap(),
            "-F",
            "tid,time",
            "--ns",
        ]);
        let want: Vec<(u64, u64)> = script
            .lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let (s, ns) = f.get(1)?.trim_end_matches(':').split_once('.')?;
                Some((
                    f[0].parse().ok()?,
                    s.parse::<u64>().ok()? * 1_000_000_000 + ns.parse::<u64>().ok()?,
                ))
            })
            .collect();
        let mine: Vec<&serde_json::Value> = samples
            .iter()
            .filter(|s| s["pid"].as_u64().unwrap() / 10_000_000 == k)
            .collect();
        assert_eq!(mine.len(), want.len(), "{file}");
        let mut got: Vec<(u64, u64)> = mine
            .iter()
            .map(|s| {
                (
                    s["tid"].as_u64().unwrap() - k * 10_000_000,
                    s["ts"].as_u64().unwrap(),
                )
            })
            .collect();
        got.sort_by_key(|g| g.1);
        let mut want = want;
        want.sort_by_key(|w| w.1);
        for (g, w) in got.iter().zip(&want) {
            assert_eq!(g.0, w.0);
            // The same gaps from the first sample.
            assert_eq!(g.1 - got[0].1, w.1 - want[0].1);
        }
        // On its own axis from its origin: the first sample within a
        // second of 0.
        assert!(got[0].1 < 1_000_000_000, "{}", got[0].1);
        assert!(
            processes
                .iter()
                .any(|p| p["pid"].as_u64().unwrap() / 10_000_000 == k
                    && p["name"].as_str().unwrap().ends_with(&format!("[{name}]"))),
            "{processes:?}"
        );
    }
}

/// LBR-timed samples: the last sample of lbr-fig8.data (in F3) holds the
/// returns of F1 then F2 with 6000 and 18000 cycles (Ono et al. 2014,
/// Fig. 8; fixtures/perf/README.md): on the thread's `LBR-timed` track, a
/// slice of F1 then one of F2 three times as long, F2's ending at the
/// sample (`perf script`'s time), F1's where F2's begins.
#[test]
fn lbr_entries_are_timed_slices() {
    let (_d, cap) = ingest("lbr-fig8.data");
    let t = read_back(&cap, &[]);
    let lbr = tracks_named(&t, "LBR-timed");
    let mut got: Vec<(String, u64, u64)> = t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| lbr.contains(&s["track"].as_u64().unwrap()))
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["ts"].as_u64().unwrap(),
                s["dur"].as_u64().unwrap(),
            )
        })
        .collect();
    got.sort_by_key(|g| g.1);
    let names: Vec<&str> = got.iter().map(|g| g.0.as_str()).collect();
    assert_eq!(names, ["F1", "F2"]);
    let last = perf(&[
        "script",
        "-i",
        fixture("lbr-fig8.data").to_str().unwrap(),
        "-F",
        "time",
        "--ns",
    ]);
    let last = last
        .lines()
        .filter(|l| !l.trim().is_empty())
        .last()
        .unwrap();
    let (s, ns) = last.trim().trim_end_matches(':').split_once('.').unwrap();
    let at = s.parse::<u64>().unwrap() * 1_000_000_000 + ns.parse::<u64>().unwrap();
    let (f1, f2) = (&got[0], &got[1]);
    assert_eq!(f2.1 + f2.2, at, "F2 ends at the sample");
    assert_eq!(f1.1 + f1.2, f2.1, "F1 ends where F2 begins");
    assert!((f2.2 as i64 - 3 * f1.2 as i64).abs() <= 2, "{f1:?} {f2:?}");
}

/// `--rule 'cpu_user > 90'`: the phases run's vmstat.log says 100, 100
/// and 98 in its rows of 10:29:19, :20 and :21 (each row the average of
/// the second before it), and less in every other row: one range, from
/// the 10:29:18 reading to the 10:29:21 one, on a track of its own.
/// Expected: vmstat.log, read by hand; the readings' times are the
/// counter track's.
#[test]
fn exhaustion_ranges_are_a_track() {
    let run = root().join("fixtures/phases/run1");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    trawl_ok(&[
        "ingest",
        run.join("perf.data").to_str().unwrap(),
        run.join("vmstat.log").to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    let t = read_back(&cap, &["--rule", "cpu_user > 90"]);
    let track = tracks_named(&t, "exhaustion: cpu_user > 90");
    assert_eq!(track.len(), 1);
    let ranges: Vec<(u64, u64)> = t["slices"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["track"] == track[0])
        .map(|s| (s["ts"].as_u64().unwrap(), s["dur"].as_u64().unwrap()))
        .collect();
    let user = tracks_named(&t, "cpu_user");
    let readings: Vec<(u64, f64)> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| user.contains(&e["track"].as_u64().unwrap()))
        .map(|e| (e["ts"].as_u64().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    // vmstat.log's rows from 10:29:15 (the first, since boot, left out).
    let at = |i: usize| readings[i].0;
    assert_eq!(readings[3].1, 19.0, "the 10:29:18 row");
    assert_eq!(readings[6].1, 98.0, "the 10:29:21 row");
    assert_eq!(ranges, [(at(3), at(6) - at(3))]);
}

/// The bytes a process has mapped, a counter of its process, follow its
/// calls in mem.strace: each rises by the page-rounded length at an
/// mmap(NULL, ...), falls at munmap, grows by what mremap adds and brk
/// moves. Expected: the dump's lines, worked by hand.
#[test]
fn mapped_bytes_follow_the_calls() {
    let dump = root().join("fixtures/strace/mem.strace");
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&dump, &cap, &[]);
    let t = read_back(&cap, &[]);
    let process: Vec<u64> = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["kind"] == "process" && x["pid"] == 19715)
        .map(|x| x["uuid"].as_u64().unwrap())
        .collect();
    let counter = t["tracks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["name"] == "mapped bytes" && process.contains(&x["parent"].as_u64().unwrap()))
        .expect("a mapped bytes counter under process 19715");
    assert_eq!(counter["unit"], 3, "bytes");
    let points: Vec<(u64, f64)> = t["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["track"] == counter["uuid"])
        .map(|e| (e["ts"].as_u64().unwrap(), e["value"].as_f64().unwrap()))
        .collect();
    // Since the dump's first line (the execve at 1795330737.599434: the
    // origin).
    let first = 1_795_330_737_599_434u64 * 1000;
    let change = |at_us: u64| {
        let ts = at_us * 1000 - first;
        let i = points
            .iter()
            .position(|p| p.0 == ts)
            .unwrap_or_else(|| panic!("no reading at {ts}"));
        points[i].1 - if i == 0 { 0.0 } else { points[i - 1].1 }
    };
    // mmap(NULL, 8192, ...): the first mapping.
    assert_eq!(change(1_795_330_737_607_038), 8192.0);
    // mmap(NULL, 33699, ...) of a file: 9 pages.
    assert_eq!(change(1_795_330_737_618_538), 36864.0);
    // munmap(0x7f6411019000, 1048576) of the mmap just before.
    assert_eq!(change(1_795_330_737_692_062), 1048576.0);
    assert_eq!(change(1_795_330_737_694_617), -1048576.0);
    // mremap 32768 → 131072.
    assert_eq!(change(1_795_330_737_701_905), 98304.0);
    // brk from 0x564b2f9fc000 to 0x564b2fa3c000, then down to ...a2c000.
    assert_eq!(change(1_795_330_737_713_055), 262144.0);
    assert_eq!(change(1_795_330_737_715_276), -65536.0);
}
