//! Captures nobody on this project made: public test data of other tools
//! (provenance and licences in `fixtures/corpus/*/README.md`), read
//! whole, with the values checked against the text itself and the
//! diagnostics against what is really wrong with each file.

use crate::common::*;
use std::collections::HashMap;
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
fn values_by_line(cap: &Path) -> HashMap<usize, Vec<String>> {
    let mut m: HashMap<usize, Vec<String>> = Default::default();
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
/// is skipped, the USB rows are read in the order of their values (not of
/// their header: see the corpus README), and nothing is a diagnostic.
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
        "idvendor",
        "idprod",
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
            // sadf prints a USB device's values in the order `sadf -j`
            // names them (bus_number, idvendor, idprod, maxpower,
            // manufact, product: sysstat's json_stats.c), not its
            // header's: the maximum power is the seventh field.
            assert_eq!(
                stored.get(&n),
                Some(&vec![format!("{:?}", f[6].parse::<f64>().unwrap())]),
                "USB line {n}"
            );
            usb_lines.push(n);
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
    assert!(usb_lines.len() >= 4, "{usb_lines:?}");
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
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

/// sysstat's test file `data-12.0.0` (a sar file of sysstat 12.0.0 with
/// five USB devices), through this machine's `sadf -d -- -m USB`: every
/// device is a row with its bus, vendor and product ids and maximum power
/// as `sadf -j` on the same file gives them, and nothing is a diagnostic.
#[test]
fn sysstat_usb_devices_as_sadf_json() {
    let data = corpus("sysstat", "data-12.0.0");
    let sadf = |fmt: &str| {
        let o = std::process::Command::new("sadf")
            .env("LC_ALL", "C")
            .env("TZ", "GMT")
            .arg(fmt)
            .arg(&data)
            .args(["--", "-m", "USB"])
            .output()
            .expect("sadf must be installed (apt-get install sysstat)");
        assert!(o.status.success(), "sadf {fmt}: {o:?}");
        o.stdout
    };
    let tmp = tempfile::tempdir().unwrap();
    let csv = tmp.path().join("usb.sadf-d");
    std::fs::write(&csv, sadf("-d")).unwrap();
    let json: serde_json::Value = serde_json::from_slice(&sadf("-j")).unwrap();
    let mut want = Vec::new();
    for st in json["sysstat"]["hosts"][0]["statistics"]
        .as_array()
        .unwrap()
    {
        for d in st["power-management"]["usb-devices"].as_array().unwrap() {
            want.push(vec![
                format!(
                    "{}/{}/{}",
                    d["bus_number"],
                    d["idvendor"].as_str().unwrap(),
                    d["idprod"].as_str().unwrap()
                ),
                d["maxpower"].to_string(),
            ]);
        }
    }
    assert_eq!(want.len(), 5, "{json}");
    let (_t, cap) = ingest(&[csv], &[]);
    assert_eq!(
        sql_rows(
            &cap,
            "SELECT entity, CAST(value AS BIGINT) FROM metric WHERE metric = 'maxpower' ORDER BY line"
        ),
        want
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
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

/// One sample as a reader gives it: `None` where it gives no value.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Sample<F> {
    time: Option<i64>,
    pid: Option<i64>,
    tid: Option<i64>,
    ip: Option<u64>,
    event: Option<String>,
    /// Call chain, leaf first, context markers removed; `None`: none
    /// recorded.
    chain: Option<Vec<F>>,
    /// trawl: the user frames were unwound from the copied user stack
    /// (`--call-graph dwarf`); only the others are in `chain`.
    unwound: bool,
}

/// Runs `perf script --ns --no-itrace -F FIELDS EXTRA` on `plain` (pipe
/// mode: on its standard input), dropping the fields perf refuses for an
/// event that lacks them ("Cannot print 'time' field"); the output and the
/// fields printed.
fn perf_script_fields(plain: &Path, pipe: bool, extra: &[&str]) -> (String, Vec<&'static str>) {
    use std::io::Write;
    use std::process::{Command, Stdio};
    let mut fields = vec!["event", "pid", "tid", "time", "ip"];
    loop {
        let f = fields.join(",");
        let mut args = vec!["script", "--ns", "--no-itrace", "-F", &f];
        args.extend_from_slice(extra);
        args.extend(["-i", if pipe { "-" } else { plain.to_str().unwrap() }]);
        let mut child = Command::new("perf")
            .env("HOME", perf_home())
            .args(&args)
            .stdin(if pipe { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("perf must be installed");
        if pipe {
            let mut i = child.stdin.take().unwrap();
            let data = std::fs::read(plain).unwrap();
            std::thread::spawn(move || {
                let _ = i.write_all(&data);
            });
        }
        let o = child.wait_with_output().unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        if let Some(at) = err.find("Cannot print '") {
            let name = err[at + 14..].split('\'').next().unwrap_or("");
            if let Some(k) = fields.iter().position(|x| *x == name) {
                fields.remove(k);
                continue;
            }
        }
        assert!(
            o.status.success(),
            "{}: perf script failed: {err}",
            plain.display()
        );
        return (String::from_utf8_lossy(&o.stdout).into_owned(), fields);
    }
}

/// The samples of perf script's output (`-F event,pid,tid,time,ip` as far
/// as printed): a header line per sample (`PID/TID TIME: EVENT: [IP]`, the
/// event right-aligned and followed by `:`), then its call chain, an
/// address a line, when it has one.
fn parse_perf_script(out: &str, fields: &[&str]) -> Vec<Sample<u64>> {
    let has = |f: &str| fields.contains(&f);
    let hex = |s: &str| u64::from_str_radix(s.trim(), 16).unwrap();
    let mut v = Vec::new();
    let mut lines = out.lines().peekable();
    while let Some(line) = lines.next() {
        if line.trim().is_empty() || line.starts_with('\t') {
            continue;
        }
        let mut rest = line.trim_start();
        let (mut pid, mut tid, mut time) = (None, None, None);
        if has("pid") || has("tid") {
            let (w, r) = rest.split_once(char::is_whitespace).unwrap();
            let (a, b) = w.split_once('/').map_or((w, None), |(a, b)| (a, Some(b)));
            pid = Some(a.parse().unwrap());
            tid = b.map(|b| b.parse().unwrap());
            if !has("pid") {
                (pid, tid) = (None, pid);
            }
            rest = r.trim_start();
        }
        if has("time") {
            let (w, r) = rest.split_once(": ").unwrap();
            let (sec, ns) = w.split_once('.').unwrap();
            time = Some(sec.parse::<i64>().unwrap() * 1_000_000_000 + ns.parse::<i64>().unwrap());
            rest = r.trim_start();
        }
        let mut chain = None;
        while lines.peek().is_some_and(|l| l.starts_with('\t')) {
            let l = lines.next().unwrap();
            chain
                .get_or_insert_with(Vec::new)
                .push(hex(l.split_whitespace().next().unwrap()));
        }
        let rest = rest.trim_end();
        let (event, ip) = if chain.is_none() && has("ip") {
            match rest.strip_suffix(':') {
                // A call chain of nothing but context markers.
                Some(ev) => {
                    chain = Some(Vec::new());
                    (ev, None)
                }
                None => {
                    let (ev, ip) = rest.rsplit_once(": ").unwrap();
                    (ev, Some(hex(ip)))
                }
            }
        } else {
            (rest.strip_suffix(':').unwrap_or(rest), None)
        };
        v.push(Sample {
            time,
            pid,
            tid,
            ip,
            event: has("event").then(|| event.trim().to_string()),
            chain,
            unwound: false,
        });
    }
    v
}

/// count_samples.py --dump: the samples (S lines) and mmaps (M lines:
/// filename -> [(start, len, pgoff)]) of `file`, by the independent reader.
#[allow(clippy::type_complexity)]
fn dump(file: &Path) -> (Vec<Sample<u64>>, HashMap<String, Vec<(u64, u64, u64)>>) {
    let o = std::process::Command::new("python3")
        .arg(root().join("fixtures/corpus/perf/count_samples.py"))
        .arg("--dump")
        .arg(file)
        .output()
        .expect("python3");
    assert!(
        o.status.success(),
        "{}: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
    let text = String::from_utf8(o.stdout).unwrap();
    let opt = |s: &str| (s != "-").then(|| s.to_string());
    let hex = |s: &str| u64::from_str_radix(s, 16).unwrap();
    let (mut samples, mut maps) = (Vec::new(), HashMap::<String, Vec<_>>::new());
    for l in text.lines() {
        let f: Vec<&str> = l.split('\t').collect();
        match f[0] {
            "S" => samples.push(Sample {
                event: opt(f[1]),
                pid: opt(f[2]).map(|x| x.parse().unwrap()),
                tid: opt(f[3]).map(|x| x.parse().unwrap()),
                time: opt(f[4]).map(|x| x.parse().unwrap()),
                ip: opt(f[5]).map(|x| hex(&x)),
                chain: opt(f[6]).map(|c| c.split(',').filter(|x| !x.is_empty()).map(hex).collect()),
                unwound: false,
            }),
            "M" => {
                maps.entry(f[6].to_string())
                    .or_default()
                    .push((hex(f[3]), hex(f[4]), hex(f[5])))
            }
            _ => panic!("{}: {l}", file.display()),
        }
    }
    (samples, maps)
}

/// trawl's samples of `cap`: each frame of the stack as (rel_pc, module
/// path).
fn trawl_samples(cap: &Path) -> Vec<Sample<(u64, Option<String>)>> {
    let rows = sql_rows(
        cap,
        "SELECT s.sample_id, s.event, s.pid, s.tid, s.time_ns, s.ip, f.rel_pc, m.path, \
         s.has_user_stack, f.context \
         FROM perf_sample s \
         LEFT JOIN stack st ON st.segment = s.segment AND st.stack_id = s.stack_id \
         LEFT JOIN frame f ON f.segment = st.segment AND f.frame_id = st.frame_id \
         LEFT JOIN module m ON m.segment = f.segment AND m.module_id = f.module_id \
         ORDER BY s.sample_id, st.depth",
    );
    let opt = |s: &String| (!s.is_empty()).then(|| s.clone());
    let mut v: Vec<Sample<(u64, Option<String>)>> = Vec::new();
    let mut last = None;
    for r in rows {
        if last.as_ref() != Some(&r[0]) {
            last = Some(r[0].clone());
            v.push(Sample {
                event: opt(&r[1]),
                pid: opt(&r[2]).map(|x| x.parse().unwrap()),
                tid: opt(&r[3]).map(|x| x.parse().unwrap()),
                time: opt(&r[4]).map(|x| x.parse().unwrap()),
                ip: opt(&r[5]).map(|x| x.parse().unwrap()),
                chain: None,
                unwound: r[8] == "true",
            });
        }
        let last = v.last_mut().unwrap();
        if last.unwound && r[9] == "user" {
            last.chain.get_or_insert_with(Vec::new);
            continue;
        }
        if let Some(pc) = opt(&r[6]) {
            v.last_mut()
                .unwrap()
                .chain
                .get_or_insert_with(Vec::new)
                .push((pc.parse().unwrap(), opt(&r[7])));
        }
    }
    v
}

/// Every sample of trawl's capture against the reference's, field by
/// field, as multisets (samples at the same time may come in either
/// order). A frame of trawl's stack is its module-relative address
/// (`rel_pc`: the file offset in a file mapping, the address itself
/// elsewhere); the reference's is the address (count_samples.py) or, for an
/// address in a mapping it knows, perf 6.1's offset in it: they agree when
/// equal or when a mapping of trawl's module (by the independent reader's
/// mmap records) holds the address at that offset. Without a recorded
/// call chain trawl's stack is the ip alone.
fn compare_samples(
    name: &str,
    want: Vec<Sample<u64>>,
    got: Vec<Sample<(u64, Option<String>)>>,
    maps: &HashMap<String, Vec<(u64, u64, u64)>>,
    loose_names: bool,
) {
    assert_eq!(got.len(), want.len(), "{name}: samples");
    let frame_ok = |(pc, path): &(u64, Option<String>), v: u64| {
        *pc == v
            || path.as_ref().and_then(|p| maps.get(p)).is_some_and(|ms| {
                ms.iter()
                    .any(|&(s, l, o)| v >= s && v - s < l.max(1) && v - s + o == *pc)
            })
    };
    let key = |s: &Sample<u64>| (s.time, s.pid, s.tid, s.ip);
    let gkey = |s: &Sample<(u64, Option<String>)>| (s.time, s.pid, s.tid, s.ip);
    let mut want = want;
    want.sort_by_key(key);
    let mut got = got;
    got.sort_by_key(gkey);
    let mut i = 0;
    while i < want.len() {
        // A group of samples of one key: each matched with one of trawl's.
        let k = key(&want[i]);
        let j = want[i..]
            .iter()
            .position(|s| key(s) != k)
            .map_or(want.len(), |n| i + n);
        let mut free: Vec<&Sample<(u64, Option<String>)>> = got[i..j].iter().collect();
        for w in &want[i..j] {
            let at = free.iter().position(|g| {
                gkey(g) == k
                    && match (&w.event, &g.event) {
                        (None, _) => true,
                        // A name only in a HEADER_EVENT_TYPE record (ChromeOS
                        // pipe mode, matched by config: count_samples.py):
                        // trawl derives it as perf does, the same base name
                        // with the attr's modifiers (`cycles:HG`).
                        (Some(w), Some(g)) if loose_names => {
                            g == w || g.starts_with(&format!("{w}:"))
                        }
                        (w, g) => w.as_ref() == g.as_ref(),
                    }
                    && match (&w.chain, &g.chain) {
                        // DWARF-unwound user frames replace the
                        // callchain's user part: the rest is compared.
                        (Some(wc), Some(gc)) if g.unwound => {
                            wc.len() >= gc.len() && gc.iter().zip(wc).all(|(g, &v)| frame_ok(g, v))
                        }
                        (None, Some(_)) if g.unwound => true,
                        (None, Some(c)) => {
                            c.len() == 1 && w.ip.is_none_or(|ip| frame_ok(&c[0], ip))
                        }
                        (Some(wc), Some(gc)) => {
                            wc.len() == gc.len() && gc.iter().zip(wc).all(|(g, &v)| frame_ok(g, v))
                        }
                        (Some(wc), None) => wc.is_empty(),
                        (None, None) => false,
                    }
            });
            match at {
                Some(a) => {
                    free.remove(a);
                }
                None => panic!(
                    "{name}: sample {w:x?} (sample {i} in time order) not in trawl's; trawl has {:x?}",
                    &got[i..j]
                ),
            }
        }
        i = j;
    }
}

/// Public perf.data files made on other machines (fixtures/corpus/perf:
/// google/perf_data_converter's test data, perf 3.3 to 6.12, x86_64,
/// i686, armv7, aarch64, file and pipe mode, Intel PT, branch stacks,
/// a corrupted file; linux-perf-data's zstd-compressed files of perf 6.5
/// and 6.16; ChromiumOS perf files of 2013, one big-endian), stored
/// zstd-compressed (trawl reads them so). Every file is read (none
/// refused); every sample's event, pid, tid, time, ip and call chain is
/// what `perf script` prints where this machine's perf reads the file,
/// else what count_samples.py (an independent reader of the record
/// layout, either byte order) reads, as EXPECTED.tsv says; its
/// diagnostics are exactly the kinds EXPECTED.tsv names (what is really
/// wrong with the file; see the corpus README).
#[test]
fn perf_data_from_other_machines() {
    let dir = root().join("fixtures/corpus/perf");
    let manifest = std::fs::read_to_string(dir.join("EXPECTED.tsv")).unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    let mut by_perf = 0;
    let mut frames = 0;
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
        let (dumped, maps) = dump(&file);
        let want = if from == "perf" {
            let data = zstd::decode_all(std::fs::File::open(&file).unwrap()).unwrap();
            let plain = tmp.path().join("plain.data");
            std::fs::write(&plain, &data).unwrap();
            let pipe = mode == "pipe";
            // The ip on the header line (-G: no call chains), then the
            // call chains (perf's default stops at 127 frames).
            let (flat, fields) = perf_script_fields(&plain, pipe, &["-G"]);
            let (chains, fields2) = perf_script_fields(&plain, pipe, &["--max-stack", "4096"]);
            assert_eq!(fields, fields2, "{name}");
            let mut flat = parse_perf_script(&flat, &fields);
            let chains = parse_perf_script(&chains, &fields);
            assert_eq!(flat.len(), chains.len(), "{name}: perf script -G");
            for (a, b) in flat.iter_mut().zip(chains) {
                assert_eq!((a.time, a.pid, a.tid), (b.time, b.pid, b.tid), "{name}");
                a.chain = b.chain;
            }
            by_perf += 1;
            flat
        } else {
            assert_eq!(
                dumped.len().to_string(),
                samples,
                "{name}: count_samples.py"
            );
            dumped
        };
        frames += want
            .iter()
            .map(|s| s.chain.as_ref().map_or(1, Vec::len))
            .sum::<usize>();
        compare_samples(name, want, trawl_samples(&cap), &maps, from == "count");
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
    assert!(frames > 100_000, "{frames} frames compared");
}
