//! Tracepoints and probes as typed tables, checked field by field against
//! perf's own Python scripting engine (`perf script -s`, the
//! `event_fields_dict` it hands a script) on captures recorded here
//! system-wide (fixtures/perf/README.md): file mode with call stacks, pipe
//! mode, and zstd-compressed (`-z`).
//!
//! perf's engine gives a signed field narrower than 8 bytes as its unsigned
//! bits (an `int node` of -1 is 4294967295) and non-printable `char`
//! arrays as bytes; the expected value is therefore perf's bits read with
//! the signedness of the kernel's own format file for the event
//! (fixtures/perf/tp-formats.txt, copied from /sys/kernel/tracing when the
//! captures were recorded, read here with a regular expression of the
//! test's own), and a `char` array's text up to its first NUL.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::common::*;

/// One `field:` line of a format file: (size, signed, declaration).
pub(crate) type Fields = HashMap<String, (u32, bool, String)>;

/// The kernel's format files, by `system:name`.
pub(crate) fn tracefs_formats() -> HashMap<String, Fields> {
    let text = std::fs::read_to_string(fixture("tp-formats.txt")).unwrap();
    let mut out: HashMap<String, Fields> = HashMap::new();
    let mut system = String::new();
    let mut event = String::new();
    for line in text.lines() {
        if let Some(s) = line.strip_prefix("system: ") {
            system = s.to_string();
        } else if let Some(n) = line.strip_prefix("name: ") {
            event = format!("{system}:{n}");
        } else if let Some(rest) = line.trim().strip_prefix("field:") {
            // field:DECL NAME;\toffset:N;\tsize:N;\tsigned:N;
            let parts: Vec<&str> = rest.split(';').map(str::trim).collect();
            let decl = parts[0];
            let name = decl
                .rsplit(' ')
                .next()
                .unwrap()
                .split('[')
                .next()
                .unwrap()
                .to_string();
            let size: u32 = parts[2].strip_prefix("size:").unwrap().parse().unwrap();
            let signed = parts[3] == "signed:1";
            out.entry(event.clone())
                .or_default()
                .insert(name, (size, signed, decl.to_string()));
        }
    }
    out
}

/// perf script -s's samples: one JSON object per line.
pub(crate) fn perf_samples(data: &Path) -> Vec<Value> {
    let o = Command::new("perf")
        .args(["script", "-i"])
        .arg(data)
        .arg("-s")
        .arg(fixture("src/tp_fields.py"))
        .output()
        .expect("perf must be installed");
    assert!(o.status.success(), "perf script -s: {o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A field's value as trawl must give it, from perf's.
pub(crate) fn expected(v: &Value, size: u32, signed: bool, decl: &str) -> Value {
    let text = |b: &[u8]| {
        let end = b.iter().position(|&x| x == 0).unwrap_or(b.len());
        Value::String(String::from_utf8_lossy(&b[..end]).into_owned())
    };
    let is_char_array = decl.contains("char") && decl.contains('[');
    match v {
        Value::Number(n) if !is_char_array => {
            // perf's bits, as the format's signedness reads them.
            let bits = if let Some(u) = n.as_u64() {
                u as u128
            } else {
                n.as_i64().unwrap() as i128 as u128
            };
            let width = 8 * size.min(8);
            let bits = bits & ((1u128 << width) - 1);
            if signed && bits >> (width - 1) == 1 {
                Value::from((bits as i128 - (1i128 << width)) as i64)
            } else {
                Value::from(bits as u64)
            }
        }
        Value::String(s) if is_char_array => text(s.as_bytes()),
        Value::Object(o) if is_char_array => {
            let hex = o["hex"].as_str().unwrap();
            let b: Vec<u8> = (0..hex.len())
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
                .collect();
            text(&b)
        }
        other => panic!("a field this test does not read: {decl} = {other}"),
    }
}

/// trawl's rows of every event of the capture, with perf's, compared.
fn compare(data: &str) -> BTreeMap<String, usize> {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&fixture(data), &cap, &["--no-symbolize"]);
    let cap = cap.to_str().unwrap();
    let formats = tracefs_formats();
    let mut by_event: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for s in perf_samples(&fixture(data)) {
        by_event
            .entry(s["event"].as_str().unwrap().to_string())
            .or_default()
            .push(s);
    }
    assert!(by_event.len() >= 12, "{:?}", by_event.keys());
    let mut counts = BTreeMap::new();
    for (event, samples) in &by_event {
        let fields = &formats[event];
        let q = format!("SELECT * FROM tracepoint('{event}')");
        let rows: Vec<Value> =
            serde_json::from_str(&trawl_ok(&["sql", cap, &q, "--format", "json"])).unwrap();
        assert_eq!(rows.len(), samples.len(), "{data}: {event}: sample count");
        let pid_col = if fields.contains_key("pid") {
            "common_pid"
        } else {
            "pid"
        };
        // Both in time order; samples at the same time by CPU, then by
        // their fields.
        let key =
            |t: &Value, cpu: &Value, f: String| (t.as_i64().unwrap(), cpu.as_u64().unwrap(), f);
        let mut want: Vec<_> = samples
            .iter()
            .map(|s| {
                let mut f = serde_json::Map::new();
                for (k, v) in s["fields"].as_object().unwrap() {
                    let (size, signed, decl) = &fields[k];
                    f.insert(k.clone(), expected(v, *size, *signed, decl));
                }
                f.insert("pid".into(), s["pid"].clone());
                key(&s["time_ns"], &s["cpu"], Value::Object(f).to_string())
            })
            .collect();
        let mut got: Vec<_> = rows
            .iter()
            .map(|r| {
                let mut f = serde_json::Map::new();
                for k in samples[0]["fields"].as_object().unwrap().keys() {
                    f.insert(k.clone(), r[k].clone());
                }
                f.insert("pid".into(), r[pid_col].clone());
                key(
                    &r["time_ns"],
                    &r[if fields.contains_key("cpu") {
                        "common_cpu"
                    } else {
                        "cpu"
                    }],
                    Value::Object(f).to_string(),
                )
            })
            .collect();
        want.sort();
        got.sort();
        for (w, g) in want.iter().zip(&got) {
            assert_eq!(w, g, "{data}: {event}");
        }
        // trawl's columns: the sample's 8, then the format's fields.
        let header = trawl_ok(&["sql", cap, &format!("{q} LIMIT 1"), "--format", "csv"]);
        let n_fields = fields.keys().filter(|k| !k.starts_with("common_")).count();
        assert_eq!(
            header.lines().next().unwrap().split(',').count(),
            8 + n_fields,
            "{event}: {header}"
        );
        counts.insert(event.clone(), samples.len());
    }
    counts
}

#[test]
fn every_field_of_every_sample_matches_perf_scripting() {
    for data in ["tp-file.data", "tp-pipe.data", "tp-z.data"] {
        let counts = compare(data);
        // The probes with their arguments and return value are there.
        assert_eq!(counts["probe_tp:checksum"], 20, "{data}");
        assert_eq!(counts["probe_tp:checksum__return"], 20, "{data}");
    }
}

/// Probe arguments worked by hand from src/tp.c: call i gets names[i % 5],
/// n = i - 10 and k = i * 1000 - 7000 (a short: signed), and returns
/// checksum's value.
#[test]
fn probe_arguments_as_the_program_passed_them() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&fixture("tp-pipe.data"), &cap, &["--no-symbolize"]);
    let out = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT name_string, n, k FROM tracepoint('probe_tp:checksum') ORDER BY time_ns",
        "--format",
        "csv",
    ]);
    let names = ["alpha", "beta", "", "gamma delta", "x"];
    let want: Vec<String> = (0..20)
        .map(|i| {
            format!(
                "{},{},{}",
                names[i % 5],
                i as i64 - 10,
                i as i64 * 1000 - 7000
            )
        })
        .collect();
    let got: Vec<&str> = out.lines().skip(1).collect();
    assert_eq!(got, want);
    let types = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT arrow_typeof(name_string), arrow_typeof(n), arrow_typeof(k) FROM tracepoint('probe_tp:checksum') LIMIT 1",
        "--format",
        "csv",
    ]);
    assert_eq!(types.lines().nth(1), Some("Utf8,Int64,Int16"));
}

/// perf script's listing of `data` (`--ns`): (tid, time in ns, event, the
/// event's text as its format's print fmt renders it).
fn listing(data: &str) -> Vec<(i64, i64, String, String)> {
    let o = Command::new("perf")
        .args(["script", "--ns", "-F", "tid,time,event,trace", "-i"])
        .arg(fixture(data))
        .output()
        .expect("perf must be installed");
    assert!(o.status.success(), "{o:?}");
    String::from_utf8(o.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let mut it = l.split_whitespace();
            let tid: i64 = it.next().unwrap().parse().unwrap();
            let (s, ns) = it
                .next()
                .unwrap()
                .trim_end_matches(':')
                .split_once('.')
                .unwrap();
            let t = s.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap();
            let event = it.next().unwrap().trim_end_matches(':').to_string();
            (tid, t, event, it.collect::<Vec<_>>().join(" "))
        })
        .collect()
}

/// Intervals worked out from a listing the way biolatency and runqlat
/// do (a map from key to the latest start; an end takes and removes its
/// start): (start ns, duration ns) in start order.
fn paired(
    rows: &[(i64, i64, String, String)],
    start: &str,
    end: &str,
    key: impl Fn(&(i64, i64, String, String)) -> String,
) -> Vec<(i64, i64)> {
    let mut open: HashMap<String, i64> = HashMap::new();
    let mut out = Vec::new();
    for r in rows {
        if r.2 == start {
            open.insert(key(r), r.1);
        } else if r.2 == end {
            if let Some(t) = open.remove(&key(r)) {
                out.push((t, r.1 - t));
            }
        }
    }
    out.sort();
    out
}

/// trawl's intervals of `tracepoint_pairs(ARGS)`: (start ns, duration ns)
/// in start order.
fn trawl_pairs(cap: &str, args: &str) -> Vec<(i64, i64)> {
    let q = format!("SELECT start_ns, duration_ns FROM tracepoint_pairs({args}) ORDER BY start_ns");
    trawl_ok(&["sql", cap, &q, "--format", "csv"])
        .lines()
        .skip(1)
        .map(|l| {
            let (a, b) = l.split_once(',').unwrap();
            (a.parse().unwrap(), b.parse().unwrap())
        })
        .collect()
}

/// Block I/O latency (issue → completion by device and sector) and
/// openat's duration (entry → exit by thread), from perf script's text:
/// the same intervals, and biolatency's histogram of whole µs.
#[test]
fn paired_events_match_an_independent_pairing_of_perf_script() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&fixture("tp-z.data"), &cap, &["--no-symbolize"]);
    let cap = cap.to_str().unwrap();
    let rows = listing("tp-z.data");
    // "254,0 WS 4096 () 170638896 + 8 ..." / "254,0 WS () 170638896 + 8 ...":
    // the device, and the sector before the '+'.
    let block_key = |r: &(i64, i64, String, String)| {
        let w: Vec<&str> = r.3.split_whitespace().collect();
        let plus = w.iter().position(|x| *x == "+").unwrap();
        format!("{} {}", w[0], w[plus - 1])
    };
    let want = paired(
        &rows,
        "block:block_rq_issue",
        "block:block_rq_complete",
        block_key,
    );
    assert!(want.len() >= 40, "{}", want.len());
    assert_eq!(
        trawl_pairs(
            cap,
            "'block:block_rq_issue', 'block:block_rq_complete', ['dev', 'sector']"
        ),
        want
    );

    // biolatency: usecs = ns / 1000, in [2^k, 2^(k+1)) (0 and 1 together).
    let mut hist: BTreeMap<u32, (i64, i64)> = BTreeMap::new();
    for (_, d) in &want {
        let us = d / 1000;
        let b = if us < 2 {
            0
        } else {
            63 - (us as u64).leading_zeros()
        };
        let e = hist.entry(b).or_default();
        e.0 += 1;
        e.1 += d;
    }
    let want_hist: Vec<String> = hist
        .iter()
        .map(|(b, (n, ns))| {
            let range = if *b == 0 {
                "0 -> 1".to_string()
            } else {
                format!("{} -> {}", 1u64 << b, (1u64 << (b + 1)) - 1)
            };
            format!("{range},{n},{ns}")
        })
        .collect();
    let out = trawl_ok(&[
        "report",
        "latency",
        cap,
        "--start",
        "block:block_rq_issue",
        "--end",
        "block:block_rq_complete",
        "--key",
        "dev",
        "--key",
        "sector",
        "--format",
        "csv",
    ]);
    let got_hist: Vec<String> = out
        .lines()
        .skip(1)
        .map(|l| {
            let c: Vec<&str> = l.split(',').collect();
            format!("{},{},{}", c[0], c[2], c[4])
        })
        .collect();
    assert_eq!(got_hist, want_hist);

    // openat: entry to exit of the same thread.
    let want = paired(
        &rows,
        "syscalls:sys_enter_openat",
        "syscalls:sys_exit_openat",
        |r| r.0.to_string(),
    );
    assert!(want.len() >= 30, "{}", want.len());
    assert_eq!(
        trawl_pairs(
            cap,
            "'syscalls:sys_enter_openat', 'syscalls:sys_exit_openat', 'common_pid'"
        ),
        want
    );
}

/// An archive of the three recordings (one capture each): every capture's
/// probe samples, each read with its own format, and the events listed once
/// per layout with the captures holding them.
#[test]
fn tracepoints_of_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("runs");
    for f in ["tp-file", "tp-pipe", "tp-z"] {
        std::fs::create_dir_all(src.join(f)).unwrap();
        std::fs::copy(fixture(&format!("{f}.data")), src.join(f).join("perf.data")).unwrap();
    }
    let arch = dir.path().join("arch");
    let o = crate::archive::archive_ingest(&src, &arch, &["--no-symbolize"]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let arch = arch.to_str().unwrap();
    let out = trawl_ok(&[
        "sql",
        arch,
        "SELECT capture, count(*) AS n, sum(n) AS sum_n, min(k) AS min_k FROM tracepoint('probe_tp:checksum') \
         GROUP BY capture ORDER BY capture",
        "--format",
        "csv",
    ]);
    // src/tp.c: n = i - 10 and k = i * 1000 - 7000 for i in 0..20.
    assert_eq!(
        out.lines().skip(1).collect::<Vec<_>>(),
        [
            "tp-file,20,-10,-7000",
            "tp-pipe,20,-10,-7000",
            "tp-z,20,-10,-7000"
        ]
    );
    let events = trawl_ok(&["report", "tracepoints", arch, "--format", "csv"]);
    let probe: Vec<&str> = events
        .lines()
        .filter(|l| l.starts_with("probe_tp:checksum,"))
        .collect();
    assert_eq!(
        probe,
        ["probe_tp:checksum,60,\"__probe_ip u64, name_string loc:str, n i64, k i16\",3"]
    );
    // One capture only, by name.
    let one = trawl_ok(&[
        "report",
        "tracepoints",
        arch,
        "--event",
        "probe_tp:checksum",
        "--capture",
        "tp-z",
        "--format",
        "csv",
    ]);
    assert_eq!(one.lines().count(), 21);
}

/// A format in the tracing data that cannot be read (its `ID:` line
/// damaged) is a warning at the tracing data record's byte offset; the
/// other events are read, the damaged one's payloads stay raw; --strict
/// stops there.
#[test]
fn a_damaged_format_is_a_diagnostic_at_its_offset() {
    let mut f = std::fs::read(fixture("tp-pipe.data")).unwrap();
    // Pipe mode: a 16-byte header, then records (u32 type, u16 misc, u16
    // size); HEADER_TRACING_DATA is type 66, its data after the record.
    let mut pos = 16;
    let at = loop {
        let ty = u32::from_le_bytes(f[pos..pos + 4].try_into().unwrap());
        if ty == 66 {
            break pos;
        }
        pos += u16::from_le_bytes(f[pos + 6..pos + 8].try_into().unwrap()) as usize;
    };
    let fmt = f[at..]
        .windows(17)
        .position(|w| w == b"name: checksum\nID")
        .unwrap()
        + at
        + 15;
    f[fmt..fmt + 2].copy_from_slice(b"IX");
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("damaged.data");
    std::fs::write(&data, &f).unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&data, &cap, &["--no-symbolize"]);
    let cap = cap.to_str().unwrap();
    let d = trawl_ok(&[
        "sql",
        cap,
        "SELECT byte_offset, severity, message FROM diagnostic WHERE kind = 'bad_tracepoint_format'",
        "--format",
        "csv",
    ]);
    let rows: Vec<&str> = d.lines().skip(1).collect();
    assert_eq!(rows.len(), 1, "{d}");
    assert!(
        rows[0].starts_with(&format!("{at},warning,")) && rows[0].contains("probe_tp"),
        "{d}"
    );
    // The return probe's format is whole: its fields are read.
    let n = trawl_ok(&[
        "sql",
        cap,
        "SELECT count(arg1) FROM tracepoint('probe_tp:checksum__return')",
        "--format",
        "csv",
    ]);
    assert_eq!(n.lines().nth(1), Some("20"));
    let o = trawl(&["sql", cap, "SELECT * FROM tracepoint('probe_tp:checksum')"]);
    assert_refused(&o, "no format for \"probe_tp:checksum\"");
    let o = trawl(&[
        "ingest",
        data.to_str().unwrap(),
        "-o",
        dir.path().join("strict").to_str().unwrap(),
        "--strict",
        "--no-symbolize",
    ]);
    assert_refused(&o, "bad_tracepoint_format");
}

/// `report latency --by thread` and `--by function` (docs/guide/
/// tracepoints.md) on openat's entry → exit in tp-file.data (call graphs),
/// worked out from `perf script -F tid,time,event,ip,sym,dso` paired as
/// biolatency pairs: per thread (the start's), its intervals, their total,
/// shortest and longest; per function perf names in the start's stack,
/// the intervals whose stack holds it (each once) and the total of those
/// where it is the innermost frame (`self_ns`).
#[test]
fn latency_by_thread_and_function_match_perf_script() {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&fixture("tp-file.data"), &cap, &[]);
    let cap = cap.to_str().unwrap();
    let out = perf(&[
        "script",
        "--ns",
        "-F",
        "tid,time,event,ip,sym,dso",
        "-i",
        fixture("tp-file.data").to_str().unwrap(),
    ]);
    // (tid, time, event, [function perf names, or None], innermost first)
    let mut samples: Vec<(i64, i64, String, Vec<Option<String>>)> = Vec::new();
    for l in out.lines() {
        if l.trim().is_empty() {
            continue;
        }
        if let Some(frame) = l.strip_prefix('\t') {
            let (_addr, rest) = frame.trim().split_once(' ').unwrap();
            let sym = rest.rsplit_once(" (").map_or(rest, |(s, _)| s);
            samples
                .last_mut()
                .unwrap()
                .3
                .push((sym != "[unknown]").then(|| sym.to_string()));
            continue;
        }
        let mut it = l.split_whitespace();
        let tid: i64 = it.next().unwrap().parse().unwrap();
        let (s, ns) = it
            .next()
            .unwrap()
            .trim_end_matches(':')
            .split_once('.')
            .unwrap();
        let t = s.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap();
        let event = it.next().unwrap().trim_end_matches(':').to_string();
        samples.push((tid, t, event, Vec::new()));
    }
    // Paired by thread: (tid, duration, the start's frames).
    let mut open: HashMap<i64, usize> = HashMap::new();
    let mut intervals = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        if s.2 == "syscalls:sys_enter_openat" {
            open.insert(s.0, i);
        } else if s.2 == "syscalls:sys_exit_openat" {
            if let Some(st) = open.remove(&s.0) {
                intervals.push((s.0, s.1 - samples[st].1, &samples[st].3));
            }
        }
    }
    assert!(intervals.len() >= 30, "{}", intervals.len());
    // key -> (intervals, total, min, max, self)
    type Agg = BTreeMap<String, (i64, i64, i64, i64, i64)>;
    let add = |m: &mut Agg, k: String, d: i64, own: bool| {
        let e = m.entry(k).or_insert((0, 0, i64::MAX, 0, 0));
        e.0 += 1;
        e.1 += d;
        e.2 = e.2.min(d);
        e.3 = e.3.max(d);
        if own {
            e.4 += d;
        }
    };
    let (mut by_thread, mut by_function) = (Agg::new(), Agg::new());
    for (tid, d, frames) in &intervals {
        add(&mut by_thread, tid.to_string(), *d, false);
        let mut seen = std::collections::HashSet::new();
        for (k, f) in frames.iter().enumerate() {
            if let Some(f) = f {
                if seen.insert(f.clone()) {
                    add(&mut by_function, f.clone(), *d, k == 0);
                }
            }
        }
    }
    let report = |by: &str| -> Agg {
        let out = trawl_ok(&[
            "report",
            "latency",
            cap,
            "--start",
            "syscalls:sys_enter_openat",
            "--end",
            "syscalls:sys_exit_openat",
            "--key",
            "common_pid",
            "--by",
            by,
            "--format",
            "csv",
        ]);
        csv_maps(&out)
            .into_iter()
            .filter(|r| !r["key"].starts_with("0x"))
            .map(|r| {
                let n = |c: &str| r[c].parse::<i64>().unwrap_or(0);
                (
                    r["key"].clone(),
                    (
                        n("intervals"),
                        n("total_ns"),
                        n("min_ns"),
                        n("max_ns"),
                        n("self_ns"),
                    ),
                )
            })
            .collect()
    };
    assert_eq!(report("thread"), by_thread, "--by thread");
    assert!(by_function.len() >= 3, "{by_function:?}");
    assert_eq!(report("function"), by_function, "--by function");
}
