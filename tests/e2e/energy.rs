//! RAPL energy (Ono et al. 2015, sampling-based power measurement):
//! readings from a powercap CSV
//! and `perf stat -I -x,` output, wrap-around, bad input, the sampler
//! script, and the split of each interval's energy across cores and then
//! functions, checked against the paper's worked example (Fig. 2:
//! cores 20 J at 70 : 30 → 14 J and 6 J; DRAM 10 J at 20 : 80 → 2 J and
//! 8 J). This machine has no RAPL: the perf.data is written with
//! `trawl_synth::perf` (checked with `perf script`), the readings
//! in the formats the tools print.

use std::path::{Path, PathBuf};

use trawl_ingest::perf::header::{flag, read_format, sample};
use trawl_ingest::perf::records::{context, ReadValues};
use trawl_synth::perf::{sampling, PerfDataWriter, SampleOut};

use crate::common::*;

/// Wall-clock ns at the clock-data reference (2023-11-14T22:13:20Z) and
/// CLOCK_MONOTONIC ns at the same moment.
const WALL: u64 = 1_700_000_000_000_000_000;
const MONO: u64 = 1_000_000_000;

/// Two samples of a `cpu-clock` group with `cycles` and
/// `LLC-load-misses`: in F1 on CPU 0 (thread 10; cycles 70, misses 20)
/// half a second after the reference, in F2 on CPU 1 (thread 11; cycles
/// 30, misses 80) 0.6 s after. Recorded with `-k CLOCK_MONOTONIC`.
fn fig2_perf() -> Vec<u8> {
    let mut w = PerfDataWriter::new();
    let st = sample::IP
        | sample::TID
        | sample::TIME
        | sample::CPU
        | sample::PERIOD
        | sample::READ
        | sample::CALLCHAIN;
    let rf = read_format::GROUP | read_format::ID;
    let mut events = Vec::new();
    for (i, (ty, cfg, name)) in [
        (1, 0, "cpu-clock"),
        (0, 0, "cycles"),
        (3, 0x10002, "LLC-load-misses"),
    ]
    .into_iter()
    .enumerate()
    {
        let mut at = sampling(ty, cfg, if i == 0 { 1_000_000 } else { 0 }, st);
        at.read_format = rf;
        at.flags |= flag::USE_CLOCKID;
        at.clockid = 1;
        events.push(w.add_event(at, name));
    }
    w.groups
        .push(("{cpu-clock,cycles,LLC-load-misses}".into(), 0, 3));
    w.clock_data = Some((1, WALL, MONO));
    let ids: Vec<u64> = events.iter().map(|&e| w.event_id(e)).collect();
    let bin = fixture_bin().join("lbr");
    let f = |name: &str| 0x5555_0000_0000 + symbol_address(&bin, name) + 4;
    for (tid, cpu, func, cycles, misses, dt) in [
        (10, 0, "F1", 70, 20, 500_000_000),
        (11, 1, "F2", 30, 80, 600_000_000),
    ] {
        w.comm(tid, tid, "worker", MONO, true);
        w.mmap2(
            tid,
            tid,
            0x5555_0000_0000,
            0x10_0000,
            0,
            bin.to_str().unwrap(),
            MONO,
            None,
        );
        let ip = f(func);
        w.sample(&SampleOut {
            event: events[0],
            ip,
            pid: tid,
            tid,
            time: MONO + dt,
            cpu,
            period: 1_000_000,
            read: Some(ReadValues {
                time_enabled: None,
                time_running: None,
                values: vec![
                    (dt, Some(ids[0]), None),
                    (cycles, Some(ids[1]), None),
                    (misses, Some(ids[2]), None),
                ],
            }),
            callchain: vec![context::USER, ip],
            ..Default::default()
        });
    }
    w.finished_round();
    w.to_bytes()
}

/// Powercap readings a second apart around the samples: package 30 J,
/// cores 20 J, DRAM 10 J.
const FIG2_CSV: &str = "time,zone,name,energy_uj,max_energy_range_uj
1700000000.000000000,intel-rapl:0,package-0,1000000,262143328850
1700000000.000000000,intel-rapl:0:0,core,5000000,262143328850
1700000000.000000000,intel-rapl:0:2,dram,7000000,65712999613
1700000001.000000000,intel-rapl:0,package-0,31000000,262143328850
1700000001.000000000,intel-rapl:0:0,core,25000000,262143328850
1700000001.000000000,intel-rapl:0:2,dram,17000000,65712999613
";

pub(crate) fn fig2_capture(dir: &Path) -> PathBuf {
    let data = dir.join("fig2.data");
    std::fs::write(&data, fig2_perf()).unwrap();
    let csv = dir.join("fig2-rapl.csv");
    std::fs::write(&csv, FIG2_CSV).unwrap();
    let cap = dir.join("fig2");
    let o = trawl(&[
        "ingest",
        data.to_str().unwrap(),
        csv.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
        "--debug-dir",
        fixture_bin().to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    cap
}

#[test]
fn written_group_reads_and_clock_read_back_in_perf() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("fig2.data");
    std::fs::write(&data, fig2_perf()).unwrap();
    // perf script: both samples at their monotonic times, on their CPUs,
    // with the functions of bin/lbr.
    // (perf script prints one line per group member.)
    let out = perf(&[
        "script",
        "-F",
        "tid,cpu,time,event,ip,sym",
        "-G",
        "-i",
        data.to_str().unwrap(),
    ]);
    let lines: Vec<&str> = out.lines().filter(|l| l.contains("cpu-clock")).collect();
    assert_eq!(lines.len(), 2, "{out}");
    assert!(
        lines[0].contains("[000]") && lines[0].contains("1.500000") && lines[0].ends_with("F1"),
        "{out}"
    );
    assert!(
        lines[1].contains("[001]") && lines[1].contains("1.600000") && lines[1].ends_with("F2"),
        "{out}"
    );
    // The group values, as perf script -D dumps them.
    let dump = perf(&["script", "-D", "-i", data.to_str().unwrap()]);
    let values: Vec<u64> = dump
        .lines()
        .filter_map(|l| l.trim().strip_prefix("..... id "))
        .map(|x| {
            u64::from_str_radix(
                x.split(", value ").nth(1).unwrap().trim_start_matches("0x"),
                16,
            )
            .unwrap()
        })
        .collect();
    assert_eq!(values, [500_000_000, 70, 20, 600_000_000, 30, 80]);
}

#[test]
fn fig2_split_across_cores_then_functions() {
    let dir = tempfile::tempdir().unwrap();
    let cap = fig2_capture(dir.path());
    // The intervals: package 30 J, cores 20 J, DRAM 10 J.
    let rows = sql_rows(
        &cap,
        "SELECT CAST(domain AS VARCHAR) AS d, delta_uj, interval_ns FROM energy WHERE delta_uj IS NOT NULL ORDER BY 1",
    );
    assert_eq!(
        rows,
        [
            ["cores", "20000000.0", "1000000000"],
            ["dram", "10000000.0", "1000000000"],
            ["package", "30000000.0", "1000000000"],
        ]
    );
    let report = |by: &str| {
        csv_maps(&trawl_ok(&[
            "report",
            "energy",
            cap.to_str().unwrap(),
            "--by",
            by,
            "--core-indicator",
            "read:cycles",
            "--dram-indicator",
            "read:LLC-load-misses",
            "--format",
            "csv",
        ]))
    };
    let j = |rows: &[std::collections::HashMap<String, String>],
             dom: &str,
             key: &str,
             col: &str|
     -> f64 {
        rows.iter()
            .find(|r| r["domain"] == dom && r[col] == key)
            .unwrap_or_else(|| panic!("{dom} {key} in {rows:?}"))["joules"]
            .parse()
            .unwrap()
    };
    // Ono et al. 2015, Fig. 2, by hand: cores 20 J × 70/100 = 14 J on core 0,
    // × 30/100 = 6 J on core 1; DRAM 10 J × 20/100 = 2 J, × 80/100 = 8 J;
    // the package's 30 J by the core indicator: 21 J and 9 J.
    let cpu = report("cpu");
    for (dom, c0, c1) in [
        ("cores", 14.0, 6.0),
        ("dram", 2.0, 8.0),
        ("package", 21.0, 9.0),
    ] {
        assert!((j(&cpu, dom, "0", "cpu") - c0).abs() < 1e-9, "{cpu:?}");
        assert!((j(&cpu, dom, "1", "cpu") - c1).abs() < 1e-9, "{cpu:?}");
    }
    // One function per core here: F1 ran on core 0, F2 on core 1.
    let f = report("function");
    assert!(
        (j(&f, "cores", "F1", "function") - 14.0).abs() < 1e-9,
        "{f:?}"
    );
    assert!(
        (j(&f, "dram", "F2", "function") - 8.0).abs() < 1e-9,
        "{f:?}"
    );
    let share: f64 = f
        .iter()
        .find(|r| r["domain"] == "cores" && r["function"] == "F1")
        .unwrap()["share_pct"]
        .parse()
        .unwrap();
    assert_eq!(share, 70.0);
    // By period (both samples 1 ms) the split is even.
    let even = csv_maps(&trawl_ok(&[
        "report",
        "energy",
        cap.to_str().unwrap(),
        "--by",
        "process",
        "--format",
        "csv",
    ]));
    assert!(
        (j(&even, "cores", "worker[10]", "process") - 10.0).abs() < 1e-9,
        "{even:?}"
    );
    // The same analysis from SQL: energy_by with the same arguments gives
    // the report's rows (hand-worked values above), and the plain table
    // sample_energy (default: period) the even split.
    let sql = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT * FROM energy_by('cpu', 'core', 'read:cycles', 'dram', 'read:LLC-load-misses')",
        "--format",
        "csv",
    ]);
    let mut got: Vec<String> = sql.lines().map(str::to_string).collect();
    let mut want: Vec<String> = trawl_ok(&[
        "report",
        "energy",
        cap.to_str().unwrap(),
        "--by",
        "cpu",
        "--core-indicator",
        "read:cycles",
        "--dram-indicator",
        "read:LLC-load-misses",
        "--format",
        "csv",
    ])
    .lines()
    .map(str::to_string)
    .collect();
    got.sort();
    want.sort();
    assert_eq!(got, want);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT round(sum(joules), 6) FROM sample_energy WHERE domain = 'cores' AND cpu = 0"
        ),
        "10.0"
    );
    let two = csv_maps(&trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT * FROM energy_by(['package', 'function']) WHERE domain = 'cores' ORDER BY function",
        "--format",
        "csv",
    ]));
    // fig2's perf.data records no CPU topology: the package is unknown.
    assert_eq!(two.len(), 2, "{two:?}");
    assert_eq!(
        (two[0]["package"].as_str(), two[0]["function"].as_str()),
        ("?", "F1")
    );
    let o = trawl(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT * FROM energy_by('socket')",
    ]);
    assert!(
        String::from_utf8_lossy(&o.stderr)
            .contains("keys are function, line, process, cpu and package"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn powercap_wrap_order_and_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let csv = dir.path().join("rapl.csv");
    std::fs::write(
        &csv,
        "time,zone,name,energy_uj,max_energy_range_uj
1700000000.0,intel-rapl:0,package-0,262143000000,262143328850
1700000000.5,intel-rapl:0,package-0,171150,262143328850
1700000000.4,intel-rapl:0,package-0,200000,262143328850
1700000001.0,intel-rapl:0,package-0,1171150,262143328850
1700000001.0,intel-rapl:0:1,uncore,5,262143328850
1700000001.0,intel-rapl:0:9,mystery,5,262143328850
1700000001.5,intel-rapl:0,package-0,garbage,262143328850
1700000002.0,intel-rapl:0:2,dram,100,
1700000003.0,intel-rapl:0:2,dram,50,
",
    )
    .unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&csv, &cap, &[]);
    // Wrap: 262143328850 - 262143000000 + 171150 = 500000 µJ in 0.5 s.
    let rows = sql_rows(
        &cap,
        "SELECT line, CAST(domain AS VARCHAR) AS d, delta_uj, interval_ns, wrapped FROM energy ORDER BY line",
    );
    assert_eq!(rows[1], ["3", "package", "500000.0", "500000000", "true"]);
    assert_eq!(rows[2], ["5", "package", "1000000.0", "500000000", "false"]);
    assert_eq!(rows[3][1], "gpu");
    // A DRAM counter that went back with no wrap range: energy unknown.
    let last = rows.last().unwrap();
    assert_eq!(
        (last[0].as_str(), last[2].as_str(), last[4].as_str()),
        ("10", "", "true")
    );
    let diags = sql_rows(&cap, "SELECT line, kind FROM diagnostic ORDER BY line");
    let kinds: Vec<(String, String)> = diags.iter().map(|r| (r[0].clone(), r[1].clone())).collect();
    for want in [
        ("4", "out_of_order"),
        ("7", "unknown_domain"),
        ("8", "bad_row"),
        ("10", "counter_wrap"),
    ] {
        assert!(
            kinds.contains(&(want.0.to_string(), want.1.to_string())),
            "{want:?} in {kinds:?}"
        );
    }
    let o = trawl(&[
        "ingest",
        csv.to_str().unwrap(),
        "-o",
        dir.path().join("s").to_str().unwrap(),
        "--strict",
    ]);
    assert_refused(&o, "unknown_domain");
}

/// `perf stat -I 1000 -a -x, -e power/energy-pkg/,power/energy-ram/`
/// output in perf 6.1's CSV layout (time, value, unit, event, run time,
/// percentage enabled, metric, unit): joules per interval.
const PERF_STAT: &str = "     1.001175893,2.47,Joules,power/energy-pkg/,1001153609,100.00,,
     1.001175893,0.98,Joules,power/energy-ram/,1001153609,100.00,,
     2.002410520,2.51,Joules,power/energy-pkg/,1001200392,100.00,,
     2.002410520,<not counted>,Joules,power/energy-ram/,0,0.00,,
     3.003595611,2.50,Joules,power/energy-pkg/,1001177011,100.00,,
";

#[test]
fn perf_stat_intervals() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("stat.csv");
    std::fs::write(&f, PERF_STAT).unwrap();
    let cap = dir.path().join("cap");
    ingest_file(&f, &cap, &[]);
    let rows = sql_rows(
        &cap,
        "SELECT CAST(domain AS VARCHAR) AS d, time_ns, delta_uj, round(energy_uj) AS e, interval_ns FROM energy ORDER BY d, time_ns",
    );
    assert_eq!(
        rows,
        [
            ["dram", "1001175893", "980000.0", "980000.0", "1001175893"],
            [
                "package",
                "1001175893",
                "2470000.0",
                "2470000.0",
                "1001175893"
            ],
            [
                "package",
                "2002410520",
                "2510000.0",
                "4980000.0",
                "1001234627"
            ],
            [
                "package",
                "3003595611",
                "2500000.0",
                "7480000.0",
                "1001185091"
            ],
        ]
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT kind FROM diagnostic"),
        "not_counted"
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT CAST(clock AS VARCHAR) AS c FROM source"),
        "perf-stat:relative"
    );
    // Relative times cannot be placed next to samples: no silent split.
    let both = dir.path().join("both");
    let data = dir.path().join("fig2.data");
    std::fs::write(&data, fig2_perf()).unwrap();
    let o = trawl(&[
        "ingest",
        data.to_str().unwrap(),
        f.to_str().unwrap(),
        "-o",
        both.to_str().unwrap(),
        "--no-symbolize",
    ]);
    assert!(o.status.success());
    let o = trawl(&["report", "energy", both.to_str().unwrap()]);
    assert_refused(&o, "cannot be placed on the samples' time axis");
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("cannot be placed"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn sampler_script_writes_what_ingest_reads() {
    let dir = tempfile::tempdir().unwrap();
    // A powercap tree as the kernel exposes it.
    for (z, name, uj) in [
        ("intel-rapl:0", "package-0", "123456"),
        ("intel-rapl:0:0", "core", "2345"),
        ("intel-rapl:0:2", "dram", "999"),
    ] {
        let d = dir.path().join("powercap").join(z);
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("name"), format!("{name}\n")).unwrap();
        std::fs::write(d.join("energy_uj"), format!("{uj}\n")).unwrap();
        std::fs::write(d.join("max_energy_range_uj"), "262143328850\n").unwrap();
    }
    let out = dir.path().join("r.csv");
    let st = std::process::Command::new("python3")
        .arg(root().join("scripts/rapl-sample.py"))
        .args([
            "-i",
            "0.01",
            "-o",
            out.to_str().unwrap(),
            "--",
            "sleep",
            "0.05",
        ])
        .env("RAPL_ROOT", dir.path().join("powercap"))
        .status()
        .unwrap();
    assert!(st.success());
    let cap = dir.path().join("cap");
    ingest_file(&out, &cap, &[]);
    let doms = sql_rows(
        &cap,
        "SELECT CAST(domain AS VARCHAR) AS d, count(*), min(energy_uj), max(COALESCE(delta_uj, 0)) FROM energy GROUP BY 1 ORDER BY 1",
    );
    let names: Vec<&str> = doms.iter().map(|r| r[0].as_str()).collect();
    assert_eq!(names, ["cores", "dram", "package"]);
    for r in &doms {
        assert!(r[1].parse::<i64>().unwrap() >= 2, "{doms:?}");
        // The counters did not move: every interval 0 µJ.
        assert_eq!(r[3], "0.0");
    }
    assert_eq!(doms[2][2], "123456.0");
}

/// turbostat as `turbostat --quiet --show
/// Time_Of_Day_Seconds,Package,Core,CPU,PkgWatt,CorWatt,RAMWatt
/// --interval 1` prints it on two packages of two CPUs (tab-separated; a
/// header per block; package columns on each package's first CPU only).
/// Expected values by hand: W × the 1 s since the previous block; the
/// first block's length is unknown.
const TURBOSTAT: &str = "Time_Of_Day_Seconds\tPackage\tCore\tCPU\tPkgWatt\tCorWatt\tRAMWatt
1700000000.000100\t-\t-\t-\t40.00\t20.00\t6.00
1700000000.000100\t0\t0\t0\t25.00\t12.00\t4.00
1700000000.000110\t0\t1\t1
1700000000.000120\t1\t0\t2\t15.00\t8.00\t2.00
1700000000.000130\t1\t1\t3
Time_Of_Day_Seconds\tPackage\tCore\tCPU\tPkgWatt\tCorWatt\tRAMWatt
1700000001.000100\t-\t-\t-\t41.00\t21.00\t6.00
1700000001.000100\t0\t0\t0\t26.00\t13.00\t4.00
1700000001.000110\t0\t1\t1
1700000001.000120\t1\t0\t2\t15.00\t8.00\t2.00
1700000001.000130\t1\t1\t3
garbage line
Time_Of_Day_Seconds\tPackage\tCore\tCPU\tPkgWatt\tCorWatt\tRAMWatt
1700000002.000100\t-\t-\t-\t42.00\t22.00\t6.00
1700000002.000100\t0\t0\t0\t27.00\tbad\t4.00
1700000002.000110\t0\t1\t1
1700000002.000120\t1\t0\t2\t15.00\t8.00\t2.00
1700000002.000130\t1\t1\t3
";

#[test]
fn turbostat_watts_per_package() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("turbostat.txt");
    std::fs::write(&f, TURBOSTAT).unwrap();
    let cap = dir.path().join("cap");
    let o = trawl(&["ingest", f.to_str().unwrap(), "-o", cap.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("turbostat"), "{err}");
    // Per-package rows, not the summary: package 0 at 26 W then 27 W over
    // 1 s each; package 1 at 15 W; CorWatt "bad" on line 20 skipped.
    let rows = sql_rows(
        &cap,
        "SELECT package, CAST(domain AS VARCHAR) AS d, line, CAST(round(delta_uj) AS BIGINT) AS uj, interval_ns FROM energy ORDER BY package, d, line",
    );
    let want: Vec<Vec<String>> = [
        ["0", "cores", "9", "13000000", "1000000000"],
        ["0", "dram", "9", "4000000", "1000000000"],
        ["0", "dram", "16", "4000000", "1000000000"],
        ["0", "package", "9", "26000000", "1000000000"],
        ["0", "package", "16", "27000000", "1000000000"],
        ["1", "cores", "11", "8000000", "1000000000"],
        ["1", "cores", "18", "8000000", "1000000000"],
        ["1", "dram", "11", "2000000", "1000000000"],
        ["1", "dram", "18", "2000000", "1000000000"],
        ["1", "package", "11", "15000000", "1000000000"],
        ["1", "package", "18", "15000000", "1000000000"],
    ]
    .iter()
    .map(|r| r.iter().map(|s| s.to_string()).collect())
    .collect();
    assert_eq!(rows, want);
    let diags = sql_rows(&cap, "SELECT line, kind FROM diagnostic ORDER BY line");
    assert_eq!(diags, [["13", "bad_row"], ["16", "bad_value"]]);
    // Energy readings only: report energy has no samples to attribute them
    // to (two packages without a CPU → package map are refused in
    // energy_sim.rs, `several_packages_without_topology_are_refused`).
    let o = trawl(&["report", "energy", cap.to_str().unwrap()]);
    assert_refused(&o, "the capture has no samples");
}

/// A power counter read at samples that goes back (a damaged file): the
/// interval is left null and reported at the sample's byte offset; the
/// readings before and after are kept.
#[test]
fn power_reads_going_back_are_reported_at_their_sample() {
    let mut w = PerfDataWriter::new();
    let st = sample::IP | sample::TID | sample::TIME | sample::PERIOD | sample::READ;
    let rf = read_format::GROUP | read_format::ID;
    let mut ev = Vec::new();
    for (ty, name) in [(1, "cpu-clock"), (20, "power/energy-pkg/")] {
        let mut at = sampling(ty, 0, if ty == 1 { 1_000_000 } else { 0 }, st);
        at.read_format = rf;
        ev.push(w.add_event(at, name));
    }
    w.groups
        .push(("{cpu-clock,power/energy-pkg/}".into(), 0, 2));
    let ids: Vec<u64> = ev.iter().map(|&e| w.event_id(e)).collect();
    w.comm(10, 10, "app", 1, true);
    // 1 J, 3 J, then 2 J (back), then 4 J: in 2^-32 J units.
    for (i, j) in [1u64, 3, 2, 4].into_iter().enumerate() {
        w.sample(&SampleOut {
            event: ev[0],
            ip: 0x401000,
            pid: 10,
            tid: 10,
            time: 1_000_000 * (i as u64 + 1),
            period: 1_000_000,
            read: Some(ReadValues {
                time_enabled: None,
                time_running: None,
                values: vec![(0, Some(ids[0]), None), (j << 32, Some(ids[1]), None)],
            }),
            ..Default::default()
        });
    }
    w.finished_round();
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("back.data");
    std::fs::write(&data, w.to_bytes()).unwrap();
    let cap = dir.path().join("cap");
    trawl_ok(&[
        "ingest",
        data.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
    ]);
    // The first read holds the energy since the start; 3 → 2 has no
    // known wrap range: null; 2 → 4 is 2 J.
    let rows = sql_rows(
        &cap,
        "SELECT zone, line, CAST(delta_uj AS BIGINT) AS d FROM energy ORDER BY line",
    );
    let z = "power/energy-pkg/@cpu-clock";
    assert_eq!(
        rows,
        [
            [z, "1", "1000000"],
            [z, "2", "2000000"],
            [z, "3", ""],
            [z, "4", "2000000"]
        ]
    );
    // Reported at the third sample's byte offset, which perf script -D
    // prints for that sample.
    let d = sql_rows(&cap, "SELECT kind, byte_offset FROM diagnostic");
    assert_eq!(d.len(), 1, "{d:?}");
    assert_eq!(d[0][0], "counter_wrap");
    let dump = perf(&["script", "-D", "-i", data.to_str().unwrap()]);
    let offsets: Vec<u64> = dump
        .lines()
        .filter(|l| l.contains("PERF_RECORD_SAMPLE"))
        .filter_map(|l| l.split_whitespace().find(|x| x.starts_with("0x")))
        .map(|x| u64::from_str_radix(&x[2..], 16).unwrap())
        .collect();
    assert_eq!(offsets.len(), 4, "{dump}");
    assert_eq!(d[0][1], offsets[2].to_string());
}
