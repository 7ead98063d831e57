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
type Fields = HashMap<String, (u32, bool, String)>;

/// The kernel's format files, by `system:name`.
fn tracefs_formats() -> HashMap<String, Fields> {
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
fn perf_samples(data: &Path) -> Vec<Value> {
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
fn expected(v: &Value, size: u32, signed: bool, decl: &str) -> Value {
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
