//! The perf.data writer (for what this machine cannot record: branch
//! stacks, hardware group reads, weights, data sources): every field of
//! the file it writes is read back with the real `perf script -D` and
//! compared with what was written; then trawl's tables are compared with
//! the same values.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use trawl_ingest::perf::header::{branch, flag, read_format, sample};
use trawl_ingest::perf::records::{context, BranchEntry, ReadValues};
use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};

use crate::common::*;

const ST_ALL: u64 = sample::IP
    | sample::TID
    | sample::TIME
    | sample::ADDR
    | sample::ID
    | sample::CPU
    | sample::PERIOD
    | sample::READ
    | sample::CALLCHAIN
    | sample::BRANCH_STACK
    | sample::WEIGHT_STRUCT
    | sample::DATA_SRC;

/// Two-member group (cycles:u leader, instructions:u) read at every
/// sample, 3-entry branch stacks, weight struct and data source.
fn rich_file() -> (Vec<u8>, Vec<SampleOut>, [u64; 2]) {
    let mut w = PerfDataWriter::new();
    let mut lead = sampling(0, 0, 100_000, ST_ALL);
    lead.read_format = read_format::GROUP
        | read_format::ID
        | read_format::TOTAL_TIME_ENABLED
        | read_format::TOTAL_TIME_RUNNING;
    lead.branch_sample_type = (1 << 0) | (1 << 4) | branch::HW_INDEX; // USER | ANY_CALL
    lead.flags |= flag::EXCLUDE_KERNEL;
    let mut member = sampling(0, 1, 0, ST_ALL);
    member.read_format = lead.read_format;
    member.branch_sample_type = lead.branch_sample_type;
    member.flags |= flag::EXCLUDE_KERNEL;
    let l = w.add_event(lead, "cycles:u");
    let m = w.add_event(member, "instructions:u");
    w.groups.push(("{cycles:u,instructions:u}".into(), 0, 2));
    let ids = [w.event_id(l), w.event_id(m)];
    w.comm(42, 42, "prog", 1_000, true);
    w.mmap2(
        42,
        42,
        0x400000,
        0x10000,
        0,
        "/opt/prog",
        1_001,
        Some(&[0xab; 20]),
    );
    let mut samples = Vec::new();
    for i in 0..4u64 {
        let s = SampleOut {
            event: l,
            ip: 0x401000 + 16 * i,
            pid: 42,
            tid: 42,
            time: 2_000_000 + 1000 * i,
            addr: 0x7fff_0000 + i,
            cpu: (i % 2) as u32,
            period: 100_000,
            read: Some(ReadValues {
                time_enabled: Some(5000 * (i + 1)),
                time_running: Some(4000 * (i + 1)),
                values: vec![
                    (100_000 * (i + 1), Some(ids[0]), None),
                    (250_000 * (i + 1) + i, Some(ids[1]), None),
                ],
            }),
            callchain: vec![context::USER, 0x401000 + 16 * i, 0x402000],
            branch: (0..3)
                .map(|k| BranchEntry {
                    from: 0x401100 + 0x10 * k + i,
                    to: 0x401800 + 0x10 * k,
                    // k = 0 mispredicted, others predicted; cycles; type 4 = call
                    flags: (if k == 0 { 1 } else { 2 }) | ((k * 7 + i) << 4) | (4 << 20),
                    counters: None,
                })
                .collect(),
            branch_hw_idx: Some(7 + i),
            // var1 weight, var2 instruction latency, var3
            weight: (30 + i) | ((5 + i) << 32) | (2 << 48),
            data_src: 0x6810_0142 + i,
            ..Default::default()
        };
        w.sample(&s);
        samples.push(s);
    }
    w.lost(5, 2_010_000);
    w.lost_samples(3, 2_011_000);
    w.finished_round();
    (w.to_bytes(), samples, ids)
}

/// The rich file written to a temporary directory: (dir, file, samples, ids).
fn rich_on_disk() -> (tempfile::TempDir, PathBuf, Vec<SampleOut>, [u64; 2]) {
    let (bytes, samples, ids) = rich_file();
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rich.data");
    std::fs::write(&file, &bytes).unwrap();
    (dir, file, samples, ids)
}

/// Ingests `file` without symbolization into `dir/cap`.
fn ingest_plain(dir: &Path, file: &Path) -> PathBuf {
    let cap = dir.join("cap");
    ingest_file(file, &cap, &["--no-symbolize"]);
    cap
}

/// The fields `perf script -D` prints for each PERF_RECORD_SAMPLE.
#[derive(Debug, Default)]
struct Dumped {
    time: u64,
    ip: u64,
    pid_tid: String,
    period: u64,
    addr: u64,
    chain: Vec<u64>,
    /// (from, to, cycles, M/P flag letter, type)
    branches: Vec<(u64, u64, u64, String, String)>,
    weight: (u64, u64),
    data_src: u64,
    enabled: u64,
    running: u64,
    group: Vec<(u64, u64)>,
}

fn hex(s: &str) -> u64 {
    u64::from_str_radix(s.trim_start_matches("0x"), 16).unwrap()
}

fn perf_dump(file: &std::path::Path) -> Vec<Dumped> {
    let out = perf(&["script", "-D", "-i", file.to_str().unwrap()]);
    let mut v: Vec<Dumped> = Vec::new();
    let mut section = "";
    for l in out.lines() {
        if l.contains("PERF_RECORD_SAMPLE") {
            // "0 2000000 0x258 [0x108]: PERF_RECORD_SAMPLE(IP, 0x2): 42/42: 0x401000 period: 100000 addr: 0x7fff0000"
            let t: Vec<&str> = l.split_whitespace().collect();
            let pos = t
                .iter()
                .position(|x| x.starts_with("PERF_RECORD_SAMPLE"))
                .unwrap();
            let mut d = Dumped {
                time: t[1].parse().unwrap(),
                ..Default::default()
            };
            d.pid_tid = t[pos + 2].trim_end_matches(':').to_string();
            d.ip = hex(t[pos + 3]);
            d.period = t[pos + 5].parse().unwrap();
            d.addr = hex(t[pos + 7]);
            v.push(d);
            section = "";
            continue;
        }
        let Some(d) = v.last_mut() else { continue };
        let t = l.trim();
        if t.starts_with("... FP chain") {
            section = "chain";
        } else if t.starts_with("... branch stack") {
            section = "branch";
        } else if let Some(w) = t.strip_prefix("... weight: ") {
            let p: Vec<&str> = w.split(',').collect();
            d.weight = (p[0].parse().unwrap(), hex(p[1]));
        } else if let Some(x) = t.strip_prefix(". data_src: ") {
            d.data_src = hex(x);
        } else if let Some(x) = t.strip_prefix("...... time enabled ") {
            d.enabled = hex(x);
        } else if let Some(x) = t.strip_prefix("...... time running ") {
            d.running = hex(x);
        } else if let Some(x) = t.strip_prefix("..... id ") {
            let (id, val) = x.split_once(", value ").unwrap();
            d.group.push((hex(id), hex(val)));
        } else if t.starts_with(".....") && !t.starts_with("......") && section == "chain" {
            d.chain.push(hex(t.split_whitespace().last().unwrap()));
        } else if t.starts_with(".....") && t.contains(" -> ") && section == "branch" {
            // ".....  0: 0000000000401100 -> 0000000000401800 0 cycles M    0 CALL"
            let p: Vec<&str> = t.split_whitespace().collect();
            let flag = p[7].to_string();
            d.branches.push((
                hex(p[2]),
                hex(p[4]),
                p[5].parse().unwrap(),
                flag,
                p.last().unwrap().to_string(),
            ));
        }
    }
    v
}

#[test]
fn writer_output_reads_back_in_perf_field_by_field() {
    let (_dir, file, samples, ids) = rich_on_disk();
    let dumped = perf_dump(&file);
    assert_eq!(dumped.len(), samples.len(), "perf script -D sample count");
    for (d, s) in dumped.iter().zip(&samples) {
        assert_eq!(d.time, s.time);
        assert_eq!(d.ip, s.ip);
        assert_eq!(d.pid_tid, format!("{}/{}", s.pid, s.tid));
        assert_eq!(d.period, s.period);
        assert_eq!(d.addr, s.addr);
        assert_eq!(d.chain, s.callchain);
        assert_eq!(d.branches.len(), s.branch.len());
        for (db, sb) in d.branches.iter().zip(&s.branch) {
            assert_eq!((db.0, db.1, db.2), (sb.from, sb.to, sb.cycles() as u64));
            assert_eq!(db.3, if sb.mispred() { "M" } else { "P" });
            assert_eq!(db.4, "CALL");
        }
        assert_eq!(
            d.weight,
            (s.weight & 0xffff_ffff, (s.weight >> 32) & 0xffff)
        );
        assert_eq!(d.data_src, s.data_src);
        let r = s.read.as_ref().unwrap();
        assert_eq!(
            (d.enabled, d.running),
            (r.time_enabled.unwrap(), r.time_running.unwrap())
        );
        let want: Vec<(u64, u64)> = r
            .values
            .iter()
            .map(|(v, id, _)| (id.unwrap(), *v))
            .collect();
        assert_eq!(d.group, want);
    }
    assert_eq!(ids.len(), 2);
}

#[test]
fn writer_output_matches_trawl_tables() {
    let (dir, file, samples, _) = rich_on_disk();
    let cap = ingest_plain(dir.path(), &file);
    let c = cap.to_str().unwrap();

    let rows = csv_rows(&trawl_ok(&[
        "sql", c,
        "SELECT sample_id, time_ns, pid, tid, cpu, event, period, ip, addr, weight, weight_ins_lat, weight_var3, data_src, n_read, n_branch FROM perf_sample ORDER BY sample_id",
        "--format", "csv",
    ]));
    assert_eq!(rows.len(), samples.len());
    for (i, (r, s)) in rows.iter().zip(&samples).enumerate() {
        let want = vec![
            // Samples are numbered from 0 in file order.
            i.to_string(),
            s.time.to_string(),
            s.pid.to_string(),
            s.tid.to_string(),
            s.cpu.to_string(),
            "cycles:u".into(),
            s.period.to_string(),
            s.ip.to_string(),
            s.addr.to_string(),
            (s.weight & 0xffff_ffff).to_string(),
            ((s.weight >> 32) & 0xffff).to_string(),
            (s.weight >> 48).to_string(),
            s.data_src.to_string(),
            "2".into(),
            "3".into(),
        ];
        assert_eq!(r, &want);
    }

    let rows = csv_rows(&trawl_ok(&[
        "sql", c,
        "SELECT sample_id, idx, from_ip, to_ip, mispred, predicted, cycles, type, hw_idx FROM perf_branch ORDER BY sample_id, idx",
        "--format", "csv",
    ]));
    let mut want = Vec::new();
    for (i, s) in samples.iter().enumerate() {
        for (k, b) in s.branch.iter().enumerate() {
            want.push(vec![
                i.to_string(),
                k.to_string(),
                b.from.to_string(),
                b.to.to_string(),
                b.mispred().to_string(),
                b.predicted().to_string(),
                b.cycles().to_string(),
                "4".into(),
                s.branch_hw_idx.unwrap().to_string(),
            ]);
        }
    }
    assert_eq!(rows, want);

    let rows = csv_rows(&trawl_ok(&[
        "sql", c,
        "SELECT sample_id, idx, event, value, counter_kernel_id, time_enabled_ns, time_running_ns FROM perf_sample_read ORDER BY sample_id, idx",
        "--format", "csv",
    ]));
    let mut want = Vec::new();
    let names: HashMap<usize, &str> = [(0, "cycles:u"), (1, "instructions:u")].into();
    for (i, s) in samples.iter().enumerate() {
        let r = s.read.as_ref().unwrap();
        for (k, (v, id, _)) in r.values.iter().enumerate() {
            want.push(vec![
                i.to_string(),
                k.to_string(),
                names[&k].to_string(),
                v.to_string(),
                id.unwrap().to_string(),
                r.time_enabled.unwrap().to_string(),
                r.time_running.unwrap().to_string(),
            ]);
        }
    }
    assert_eq!(rows, want);

    let meta = trawl_ok(&[
        "sql",
        c,
        "SELECT value FROM capture_meta WHERE key = 'hostname'",
        "--format",
        "csv",
    ]);
    assert_eq!(meta.lines().nth(1), Some("trawl-writer"));
    let bid = sql_scalar(&cap, "SELECT build_id FROM module WHERE path = '/opt/prog'");
    assert_eq!(bid, "ab".repeat(20));
}

#[test]
fn lost_records_match_perf() {
    // Expected: perf script -D prints the LOST record with its count.
    let (dir, file, _, _) = rich_on_disk();
    let dump = perf(&["script", "-D", "-i", file.to_str().unwrap()]);
    let lost_line = dump
        .lines()
        .find(|l| l.contains("PERF_RECORD_LOST"))
        .expect("perf sees the LOST record");
    // "0 2010000 0x678 [0x40]: PERF_RECORD_LOST: id:100: lost:5"
    let count: u64 = lost_line
        .rsplit("lost:")
        .next()
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let time = lost_line.split_whitespace().nth(1).unwrap();
    let cap = ingest_plain(dir.path(), &file);
    let rows = csv_rows(&trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT kind, count, time_ns, event_id FROM perf_lost ORDER BY time_ns",
        "--format",
        "csv",
    ]));
    assert_eq!(rows[0].join(","), format!("lost,{count},{time},0"));
    // "0 2011000 0x6b8 [0x38]: PERF_RECORD_LOST_SAMPLES: id:100: lost samples :3"
    let ls = dump
        .lines()
        .find(|l| l.contains("PERF_RECORD_LOST_SAMPLES"))
        .expect("perf sees LOST_SAMPLES");
    let n: u64 = ls.rsplit(':').next().unwrap().trim().parse().unwrap();
    let t = ls.split_whitespace().nth(1).unwrap();
    assert_eq!(rows[1].join(","), format!("lost_samples,{n},{t},0"));
}

/// A file of perf's first attr version (64 bytes, `PERF_ATTR_SIZE_VER0`, as
/// old perf wrote them): the pid and tid of a two-threaded process, the
/// time and ip of each sample as `perf script -D` reads them are trawl's.
/// The corpus's files from other machines with 64-byte attrs have one
/// thread per process (pid = tid), so a pid/tid mix-up there passes them.
#[test]
fn first_version_attrs_read_as_perf_reads_them() {
    let mut w = PerfDataWriter::new();
    let mut a = sampling(
        1,
        0,
        10_000,
        sample::IP | sample::TID | sample::TIME | sample::CPU | sample::PERIOD,
    );
    a.size = 64;
    let e = w.add_event(a, "cpu-clock");
    w.comm(70, 70, "prog", 1_000, true);
    w.comm(70, 71, "worker", 1_100, false);
    for i in 0..6u64 {
        w.sample(&SampleOut {
            event: e,
            ip: 0x401000 + 8 * i,
            pid: 70,
            tid: 70 + (i % 2) as i32,
            time: 2_000_000 + 1000 * i,
            cpu: (i % 2) as u32,
            period: 10_000,
            ..Default::default()
        });
    }
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("ver0.data");
    let bytes = w.to_bytes();
    // The header's attr size: 64 bytes of attr and 16 of its ids' section.
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), 80);
    std::fs::write(&file, &bytes).unwrap();

    let dumped = perf_dump(&file);
    let perf: Vec<Vec<String>> = dumped
        .iter()
        .map(|d| {
            let (pid, tid) = d.pid_tid.split_once('/').unwrap();
            vec![pid.into(), tid.into(), d.time.to_string(), d.ip.to_string()]
        })
        .collect();
    // perf reads both threads (what was written).
    let tids: std::collections::BTreeSet<&str> = perf.iter().map(|r| r[1].as_str()).collect();
    assert_eq!(perf.len(), 6);
    assert_eq!(tids.into_iter().collect::<Vec<_>>(), ["70", "71"]);

    let cap = ingest_plain(dir.path(), &file);
    let rows = sql_rows(
        &cap,
        "SELECT pid, tid, time_ns, ip FROM perf_sample ORDER BY sample_id",
    );
    assert_eq!(rows, perf, "trawl vs perf script -D");
}
