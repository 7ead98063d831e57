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
    // Two captures are two clocks and two id spaces: refused, naming the
    // way to pick one.
    let (_h, hot) = ingest("hot-fp.data");
    let o = trawl(&[
        "export",
        cap.to_str().unwrap(),
        hot.to_str().unwrap(),
        "--to",
        "perfetto",
        "-o",
        dir.path().join("two.pftrace").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--capture NAME"));
    assert!(!dir.path().join("two.pftrace").exists());
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
