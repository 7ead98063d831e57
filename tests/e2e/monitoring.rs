//! Monitoring metrics (fixtures/metrics, recorded here with the commands in
//! its README): the `metric` table against the files' own text, read
//! without trawl, and `date` for the times.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::*;

fn metrics_fixture(name: &str) -> PathBuf {
    root().join("fixtures/metrics").join(name)
}

fn ingest_metrics(names: &[&str], extra: &[&str]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let cap = dir.path().join("cap");
    let files: Vec<PathBuf> = names.iter().map(|n| metrics_fixture(n)).collect();
    let mut args = vec!["ingest"];
    args.extend(files.iter().map(|f| f.to_str().unwrap()));
    args.extend(["-o", cap.to_str().unwrap(), "--no-symbolize"]);
    args.extend_from_slice(extra);
    trawl_ok(&args);
    (dir, cap)
}

/// The values of the metric rows of line `line` of the input, sorted, as
/// `{:?}` of f64 prints them.
fn line_values(cap: &Path, line: usize) -> Vec<String> {
    let mut v: Vec<String> = sql_rows(
        cap,
        &format!("SELECT value FROM metric WHERE line = {line}"),
    )
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    v.sort();
    v
}

/// Seconds since the epoch of a UTC date and time, from `date`.
fn epoch(date_time: &str) -> i64 {
    let o = Command::new("date")
        .args(["-u", "-d", &format!("{date_time} UTC"), "+%s"])
        .output()
        .unwrap();
    String::from_utf8(o.stdout).unwrap().trim().parse().unwrap()
}

/// The data rows of a vmstat log as (column → value) pairs and the
/// trailing date and time, read by splitting on whitespace.
fn vmstat_rows(name: &str) -> Vec<(Vec<(String, String)>, Option<String>)> {
    let text = std::fs::read_to_string(metrics_fixture(name)).unwrap();
    let mut header: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for l in text.lines() {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.first() == Some(&"r") {
            header = t.iter().map(|s| s.to_string()).collect();
        } else if t.first().is_some_and(|f| f.parse::<u64>().is_ok()) {
            let timed = t.len() == header.len() + 1;
            let n = if timed { t.len() - 2 } else { t.len() };
            let pairs = header[..n]
                .iter()
                .cloned()
                .zip(t[..n].iter().map(|s| s.to_string()))
                .collect();
            out.push((pairs, timed.then(|| format!("{} {}", t[n], t[n + 1]))));
        }
    }
    out
}

/// Every vmstat value of the fixtures is a `metric` row with the column's
/// name mapped, at the row's time; the first row is vmstat's since-boot
/// average.
#[test]
fn vmstat_values_and_times_match_the_log() {
    for (name, zone_utc) in [
        ("vmstat.log", true),
        ("vmstat-wide.log", true),
        ("vmstat-notime.log", false),
        ("vmstat-repeat.log", true),
    ] {
        let (_t, cap) = ingest_metrics(&[name], &[]);
        let want = vmstat_rows(name);
        assert!(want.len() >= 3, "{name}");
        let map = |c: &str| match c {
            "r" => "runq",
            "b" => "blocked",
            "swpd" => "swap_used",
            "free" => "mem_free",
            "buff" => "mem_buff",
            "cache" => "mem_cache",
            "inact" => "mem_inactive",
            "active" => "mem_active",
            "si" => "swap_in",
            "so" => "swap_out",
            "bi" => "blocks_in",
            "bo" => "blocks_out",
            "in" => "interrupts",
            "cs" => "context_switches",
            "us" => "cpu_user",
            "sy" => "cpu_sys",
            "id" => "cpu_idle",
            "wa" => "cpu_iowait",
            "st" => "cpu_steal",
            "gu" => "cpu_guest",
            other => panic!("unknown vmstat column {other}"),
        };
        let got = sql_rows(&cap,
            "SELECT sample, metric, CAST(value AS BIGINT), time_ns, clock, since_boot FROM metric ORDER BY sample, line, metric",
        );
        let mut expect = Vec::new();
        for (i, (pairs, time)) in want.iter().enumerate() {
            let t = time
                .as_ref()
                .map(|t| (epoch(t) * 1_000_000_000).to_string())
                .unwrap_or_default();
            let clock = match (time, zone_utc) {
                (None, _) => "none",
                (Some(_), true) => "utc",
                (Some(_), false) => unreachable!(),
            };
            for (c, v) in pairs {
                expect.push(vec![
                    i.to_string(),
                    map(c).to_string(),
                    v.clone(),
                    t.clone(),
                    clock.to_string(),
                    (i == 0).to_string(),
                ]);
            }
        }
        expect.sort_by(|a, b| {
            (a[0].parse::<u32>().unwrap(), &a[1]).cmp(&(b[0].parse::<u32>().unwrap(), &b[1]))
        });
        assert_eq!(got, expect, "{name}");
        // A log without times says so at ingest, once.
        assert_eq!(
            sql_scalar(
                &cap,
                "SELECT COALESCE(string_agg(kind, ','), 'none') FROM diagnostic"
            ),
            if zone_utc { "none" } else { "no_time_axis" },
            "{name}"
        );
    }
}

/// Local times across the end of daylight saving time (vmstat under
/// faketime in Europe/Berlin): kept as printed, on a `local:CEST` clock,
/// and the step back is a diagnostic at its line.
#[test]
fn vmstat_local_time_going_back_is_reported() {
    let (_t, cap) = ingest_metrics(&["vmstat-dst.log"], &[]);
    assert_eq!(
        sql_rows(&cap, "SELECT DISTINCT clock FROM metric"),
        vec![vec!["local:CEST".to_string()]]
    );
    let d = sql_rows(&cap, "SELECT kind, line FROM diagnostic ORDER BY kind");
    assert_eq!(
        d,
        vec![
            // Without --tz the local times cannot be placed on UTC.
            vec!["local_time".to_string(), "".to_string()],
            vec!["time_went_back".to_string(), "6".to_string()]
        ]
    );
    let times = sql_rows(
        &cap,
        "SELECT DISTINCT sample, time_ns FROM metric ORDER BY sample",
    );
    assert_eq!(
        times[3][1].parse::<i64>().unwrap(),
        epoch("2026-10-25 02:00:00") * 1_000_000_000
    );
    // With --strict the run fails.
    let dir = tempfile::tempdir().unwrap();
    let o = trawl(&[
        "ingest",
        metrics_fixture("vmstat-dst.log").to_str().unwrap(),
        "-o",
        dir.path().join("c").to_str().unwrap(),
        "--strict",
    ]);
    assert_refused(&o, "time_went_back");
    assert!(!dir.path().join("c").exists());
}

/// The generic CSV: RFC 3339 and epoch times, entities; a damaged copy
/// keeps its good rows and reports the rest by line.
#[test]
fn metric_csv_rows_and_damage() {
    let (_t, cap) = ingest_metrics(&["app.csv"], &[]);
    let got = sql_rows(
        &cap,
        "SELECT entity, metric, value, time_ns FROM metric ORDER BY line",
    );
    let text = std::fs::read_to_string(metrics_fixture("app.csv")).unwrap();
    let want: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            let t = match f[0].parse::<f64>() {
                Ok(s) => ((s * 1e9).round() as i64).to_string(),
                Err(_) => {
                    let (whole, frac) = f[0].trim_end_matches('Z').split_once('.').unwrap();
                    let ms: i64 = frac.parse().unwrap();
                    (epoch(&whole.replace('T', " ")) * 1_000_000_000 + ms * 1_000_000).to_string()
                }
            };
            let v: f64 = f[3].parse().unwrap();
            vec![f[1].to_string(), f[2].to_string(), format!("{v:?}"), t]
        })
        .collect();
    assert_eq!(got, want);

    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.csv");
    std::fs::write(
        &bad,
        format!("{text}2026-11-22T09:40:09Z,api,latency_ms\nnot-a-time,api,latency_ms,1\n2026-11-22T09:40:10Z,api,latency_ms,x\n"),
    )
    .unwrap();
    let cap2 = dir.path().join("cap");
    ingest_file(&bad, &cap2, &["--no-symbolize"]);
    assert_eq!(
        sql_scalar(&cap2, "SELECT count(*) FROM metric"),
        (text.lines().count() - 1).to_string()
    );
    let lines = text.lines().count() as i64;
    assert_eq!(
        sql_rows(&cap2, "SELECT kind, line FROM diagnostic ORDER BY line"),
        vec![
            vec!["bad_row".to_string(), (lines + 1).to_string()],
            vec!["bad_time".to_string(), (lines + 2).to_string()],
            vec!["bad_row".to_string(), (lines + 3).to_string()],
        ]
    );
}

/// iostat -x -t text (locale and ISO times) and JSON: every value of a
/// line is a metric row of that line (text), `%util` is
/// `disk_util_pct`, the JSON gives the same metrics and every value of
/// its reports, and the first report is the since-boot one.
#[test]
fn iostat_text_and_json() {
    for name in ["iostat.log", "iostat-iso.log"] {
        let (_t, cap) = ingest_metrics(&[name], &[]);
        let text = std::fs::read_to_string(metrics_fixture(name)).unwrap();
        let mut util = Vec::new();
        for (i, l) in text.lines().enumerate() {
            let f: Vec<&str> = l.split_whitespace().collect();
            let values: Vec<f64> = match f.first() {
                Some(d) if d.parse::<f64>().is_ok() => {
                    f.iter().map(|v| v.parse().unwrap()).collect()
                }
                Some(&"vda") => {
                    util.push(f.last().unwrap().to_string());
                    f[1..].iter().map(|v| v.parse().unwrap()).collect()
                }
                _ => continue,
            };
            let mut want: Vec<String> = values.iter().map(|v| format!("{v:?}")).collect();
            want.sort();
            assert_eq!(line_values(&cap, i + 1), want, "{name} line {}", i + 1);
        }
        let got_util: Vec<String> = sql_rows(&cap,
            "SELECT value FROM metric WHERE metric = 'disk_util_pct' AND entity = 'vda' ORDER BY sample",
        )
        .into_iter()
        .map(|r| format!("{:.2}", r[0].parse::<f64>().unwrap()))
        .collect();
        assert_eq!(got_util, util, "{name}");
        assert_eq!(
            sql_rows(
                &cap,
                "SELECT sample, bool_and(since_boot) FROM metric GROUP BY 1 ORDER BY 1"
            ),
            vec![
                vec!["0".to_string(), "true".to_string()],
                vec!["1".to_string(), "false".to_string()],
                vec!["2".to_string(), "false".to_string()],
            ]
        );
    }
    let clock = |name: &str| {
        let (_t, cap) = ingest_metrics(&[name], &[]);
        sql_scalar(&cap, "SELECT DISTINCT clock FROM metric")
    };
    assert_eq!(clock("iostat-iso.log"), "utc");
    assert_eq!(clock("iostat.log"), "local");
    let names = |name: &str| {
        let (_t, cap) = ingest_metrics(&[name], &[]);
        sql_rows(
            &cap,
            "SELECT DISTINCT metric, entity FROM metric ORDER BY 1, 2",
        )
    };
    assert_eq!(names("iostat.json"), names("iostat.log"));
    // The JSON's values: every number of report i (avg-cpu and each disk,
    // read here with serde_json) is a metric row of sample i, and no
    // other row is.
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(metrics_fixture("iostat.json")).unwrap())
            .unwrap();
    let reports = json["sysstat"]["hosts"][0]["statistics"]
        .as_array()
        .unwrap();
    assert_eq!(reports.len(), 3);
    let (_t, cap) = ingest_metrics(&["iostat.json"], &[]);
    for (i, r) in reports.iter().enumerate() {
        let mut want: Vec<String> = Vec::new();
        let mut numbers = |o: &serde_json::Value| {
            for v in o.as_object().unwrap().values() {
                if let Some(x) = v.as_f64() {
                    want.push(format!("{x:?}"));
                }
            }
        };
        numbers(&r["avg-cpu"]);
        for d in r["disk"].as_array().unwrap() {
            numbers(d);
        }
        want.sort();
        let mut got: Vec<String> = sql_rows(
            &cap,
            &format!("SELECT value FROM metric WHERE sample = {i}"),
        )
        .into_iter()
        .map(|r| r[0].clone())
        .collect();
        got.sort();
        assert_eq!(got, want, "iostat.json report {i}");
    }
}

/// Values of mpstat/pidstat rows: each row's numbers (after the time, and
/// for pidstat without UID and PID) are the metric rows of its line.
fn check_sysstat_rows(cap: &Path, name: &str, skip: usize) -> usize {
    let text = std::fs::read_to_string(metrics_fixture(name)).unwrap();
    let mut checked = 0;
    for (i, l) in text.lines().enumerate().skip(1) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 3
            || t[0] == "Average:"
            || t[0] == "#"
            || t[1..].iter().all(|v| v.parse::<f64>().is_err())
        {
            continue;
        }
        let mut want: Vec<String> = t[skip..]
            .iter()
            .filter_map(|v| v.parse::<f64>().ok())
            .map(|v| format!("{v:?}"))
            .collect();
        want.sort();
        assert_eq!(line_values(cap, i + 1), want, "{name} line {}", i + 1);
        checked += 1;
    }
    checked
}

/// mpstat -P ALL: a row per CPU and `all`, at the banner's date plus the
/// row's time of day (local clock).
#[test]
fn mpstat_rows_per_cpu() {
    let (_t, cap) = ingest_metrics(&["mpstat.log"], &[]);
    // time, CPU, then the values.
    assert_eq!(check_sysstat_rows(&cap, "mpstat.log", 2), 9);
    assert_eq!(
        sql_rows(&cap, "SELECT DISTINCT entity FROM metric ORDER BY 1"),
        vec![
            vec!["0".to_string()],
            vec!["1".to_string()],
            vec!["all".to_string()]
        ]
    );
    let text = std::fs::read_to_string(metrics_fixture("mpstat.log")).unwrap();
    let banner_date = text
        .lines()
        .next()
        .unwrap()
        .split('\t')
        .nth(1)
        .unwrap()
        .trim()
        .to_string();
    let first_row = text
        .lines()
        .nth(3)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_string();
    let o = Command::new("date")
        .args(["-u", "-d", &format!("{banner_date} {first_row} UTC"), "+%s"])
        .output()
        .unwrap();
    let want: i64 = String::from_utf8(o.stdout).unwrap().trim().parse().unwrap();
    assert_eq!(
        sql_scalar(&cap, "SELECT min(time_ns) FROM metric"),
        (want * 1_000_000_000).to_string()
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT DISTINCT clock FROM metric"),
        "local"
    );
}

/// Rows after midnight (mpstat under faketime from 23:59:58) are on the
/// next day.
#[test]
fn mpstat_midnight_wrap() {
    let (_t, cap) = ingest_metrics(&["mpstat-midnight.log"], &["--tz", "UTC"]);
    let t: Vec<i64> = sql_rows(&cap, "SELECT DISTINCT time_ns FROM metric ORDER BY 1")
        .into_iter()
        .map(|r| r[0].parse().unwrap())
        .collect();
    let midnight = epoch("2026-11-23 00:00:00") * 1_000_000_000;
    assert_eq!(
        t,
        (0..4)
            .map(|k| midnight + k * 1_000_000_000)
            .collect::<Vec<_>>()
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
    // --tz UTC: the UTC times are the wall-clock times.
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM metric WHERE utc_ns IS DISTINCT FROM time_ns"
        ),
        "0"
    );
}

/// pidstat with -h (one line per process) and without (a block per
/// report kind): values per line, entities `COMMAND[PID]`.
#[test]
fn pidstat_rows_per_process() {
    for name in ["pidstat.log", "pidstat-blocks.log"] {
        // Recorded in UTC; the times have no zone.
        let (_t, cap) = ingest_metrics(&[name], &["--tz", "UTC"]);
        // time, UID, PID, then the values (the command is not a number).
        assert!(check_sysstat_rows(&cap, name, 3) >= 4, "{name}");
        let text = std::fs::read_to_string(metrics_fixture(name)).unwrap();
        let l = text
            .lines()
            .find(|l| {
                l.split_whitespace()
                    .nth(2)
                    .is_some_and(|p| p.parse::<u32>().is_ok())
            })
            .unwrap();
        let f: Vec<&str> = l.split_whitespace().collect();
        let entity = format!("{}[{}]", f.last().unwrap(), f[2]);
        let n: u32 = sql_scalar(
            &cap,
            &format!("SELECT count(*) FROM metric WHERE entity = '{entity}'"),
        )
        .parse()
        .unwrap();
        assert!(n > 0, "{name}: {entity}");
        assert_eq!(
            sql_scalar(&cap, "SELECT count(*) FROM diagnostic"),
            "0",
            "{name}"
        );
    }
}

/// mpstat -A prints five tables in each interval (CPU utilisation, the
/// same per NUMA node, interrupts in total, each interrupt, each softirq):
/// every cell is stored under its own table's column, read here from the
/// header above it (e.g. the softirq table's `RCU/s` of CPU 0 is
/// `softirq_RCU_per_s`, never `cpu_idle`), and nodes are not CPUs.
#[test]
fn mpstat_all_tables_by_their_own_headers() {
    let (_t, cap) = ingest_metrics(&["mpstat-A.log"], &["--tz", "UTC"]);
    let text = std::fs::read_to_string(metrics_fixture("mpstat-A.log")).unwrap();
    let stored: std::collections::HashMap<(String, String, String), String> =
        sql_rows(&cap, "SELECT line, metric, entity, value FROM metric")
            .into_iter()
            .map(|r| ((r[0].clone(), r[1].clone(), r[2].clone()), r[3].clone()))
            .collect();
    let mut header: Vec<&str> = Vec::new();
    let mut checked = 0;
    for (i, l) in text.lines().enumerate().skip(1) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.is_empty() || t[0] == "Average:" {
            continue;
        }
        if t[1] == "CPU" || t[1] == "NODE" {
            header = t[1..].to_vec();
            continue;
        }
        let entity = if header[0] == "NODE" {
            format!("node:{}", t[1])
        } else {
            t[1].to_string()
        };
        for (col, v) in header[1..].iter().zip(&t[2..]) {
            let metric = match *col {
                "%usr" => "cpu_user".to_string(),
                "%sys" => "cpu_sys".to_string(),
                c if c.starts_with('%') => format!("cpu_{}", &c[1..]),
                "intr/s" => "cpu_intr_per_s".to_string(),
                c if [
                    "HI/s",
                    "TIMER/s",
                    "SCHED/s",
                    "RCU/s",
                    "NET_TX/s",
                    "NET_RX/s",
                    "BLOCK/s",
                    "IRQ_POLL/s",
                    "TASKLET/s",
                    "HRTIMER/s",
                ]
                .contains(&c) =>
                {
                    format!("softirq_{}_per_s", c.trim_end_matches("/s"))
                }
                c => format!("irq_{}_per_s", c.trim_end_matches("/s")),
            };
            let got = stored.get(&((i + 1).to_string(), metric, entity.clone()));
            assert_eq!(
                got,
                Some(&format!("{:?}", v.parse::<f64>().unwrap())),
                "line {} {col} {entity}",
                i + 1
            );
            checked += 1;
        }
    }
    assert!(checked >= 280, "{checked}");
    // No other row: every stored value is one of the cells checked above.
    assert_eq!(
        sql_scalar(&cap, "SELECT count(*) FROM metric"),
        checked.to_string()
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
}

/// A table trawl does not know (a sar report's memory table in a sysstat
/// text file) is skipped with a diagnostic naming its columns; the rows
/// of the tables after it are read by their own headers.
#[test]
fn sysstat_unknown_table_is_skipped_not_misread() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(metrics_fixture("mpstat.log")).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    let n = lines.len();
    // After mpstat's report: a table of `sar -r` (by hand, in sar's
    // format), then mpstat's first block again.
    let (mp_header, mp_row) = (lines[2], lines[3]);
    lines.extend([
        "",
        "09:00:00    kbmemfree   kbavail kbmemused  %memused",
        "09:00:01     22278304  24186296     94012      0.38",
        "",
        mp_header,
        mp_row,
    ]);
    let f = dir.path().join("mixed.log");
    std::fs::write(&f, lines.join("\n")).unwrap();
    let cap = dir.path().join("cap");
    trawl_ok(&[
        "ingest",
        f.to_str().unwrap(),
        "-o",
        cap.to_str().unwrap(),
        "--tz",
        "UTC",
    ]);
    assert_eq!(
        sql_rows(&cap, "SELECT line, kind FROM diagnostic"),
        vec![vec![(n + 2).to_string(), "unknown_table".to_string()]]
    );
    assert_eq!(
        sql_scalar(
            &cap,
            &format!("SELECT count(*) FROM metric WHERE line = {}", n + 3)
        ),
        "0"
    );
    assert_eq!(line_values(&cap, n + 6), line_values(&cap, 4));
    assert_eq!(check_sysstat_rows(&cap, "mpstat.log", 2), 9);
}

/// pidstat -t: the process line is `COMMAND[TGID]`, each thread line
/// (`-` for its TGID, `|__` before its name) `COMMAND[TGID/TID]` of the
/// process above it; every number of every row is stored. pidstat -H
/// (with -h): epoch seconds, stored as UTC.
#[test]
fn pidstat_threads_and_epoch_times() {
    let (_t, cap) = ingest_metrics(&["pidstat-t.log"], &["--tz", "UTC"]);
    let text = std::fs::read_to_string(metrics_fixture("pidstat-t.log")).unwrap();
    let mut want_entities = std::collections::BTreeSet::new();
    let mut tgid = "";
    let mut rows = 0;
    for (i, l) in text.lines().enumerate().skip(1) {
        let t: Vec<&str> = l.split_whitespace().collect();
        if t.len() < 5 || t[0] == "Average:" || t[2] == "TGID" {
            continue;
        }
        let command = t.last().unwrap().trim_start_matches("|__");
        let entity = if t[3] == "-" {
            tgid = t[2];
            format!("{command}[{tgid}]")
        } else {
            format!("{command}[{tgid}/{}]", t[3])
        };
        // time, UID, TGID, TID, then the values (the command last).
        let mut want: Vec<String> = t[4..]
            .iter()
            .filter_map(|v| v.parse::<f64>().ok())
            .map(|v| format!("{v:?}"))
            .collect();
        want.sort();
        assert_eq!(line_values(&cap, i + 1), want, "line {}", i + 1);
        assert_eq!(
            sql_rows(
                &cap,
                &format!("SELECT DISTINCT entity FROM metric WHERE line = {}", i + 1)
            ),
            vec![vec![entity.clone()]],
            "line {}",
            i + 1
        );
        want_entities.insert(entity);
        rows += 1;
    }
    assert!(rows >= 16, "{rows}");
    assert!(want_entities.len() >= 3);
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");

    let (_t, cap) = ingest_metrics(&["pidstat-H.log"], &[]);
    let text = std::fs::read_to_string(metrics_fixture("pidstat-H.log")).unwrap();
    let rows: Vec<&str> = text
        .lines()
        .filter(|l| {
            l.split_whitespace()
                .next()
                .is_some_and(|t| t.len() >= 9 && t.parse::<i64>().is_ok())
        })
        .collect();
    assert!(rows.len() >= 3);
    let secs = rows[0].split_whitespace().next().unwrap();
    assert_eq!(
        sql_rows(&cap, "SELECT DISTINCT time_ns, utc_ns, clock FROM metric"),
        vec![vec![
            format!("{secs}000000000"),
            format!("{secs}000000000"),
            "utc".to_string()
        ]]
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT count(DISTINCT line) FROM metric"),
        rows.len().to_string()
    );
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
}

/// sadf -d (sar data recorded with sadc): every value of a row is a
/// metric row of its line, at the row's UTC time; `CPU` -1 is `all`,
/// devices' `%util` is `disk_util_pct` as for iostat.
#[test]
fn sadf_csv_blocks() {
    for name in ["sadf.csv", "sadf-cpus.csv", "sadf-restart.csv"] {
        let (_t, cap) = ingest_metrics(&[name], &[]);
        let text = std::fs::read_to_string(metrics_fixture(name)).unwrap();
        let mut header: Vec<&str> = Vec::new();
        for (i, l) in text.lines().enumerate() {
            if let Some(h) = l.strip_prefix("# ") {
                header = h.split(';').collect();
                continue;
            }
            let f: Vec<&str> = l.split(';').collect();
            // `host;-1;time;LINUX-RESTART\t(2 CPU)`: the restart, with
            // its CPU count, at its time.
            if f[1] == "-1" {
                let cpus = f[3].split('(').nth(1).unwrap().split(' ').next().unwrap();
                let t = epoch(f[2].trim_end_matches(" UTC")) * 1_000_000_000;
                assert_eq!(
                    sql_rows(
                        &cap,
                        &format!(
                            "SELECT metric, value, time_ns FROM metric WHERE line = {}",
                            i + 1
                        )
                    ),
                    vec![vec![
                        "linux_restart".to_string(),
                        format!("{:?}", cpus.parse::<f64>().unwrap()),
                        t.to_string()
                    ]],
                    "{name} line {}",
                    i + 1
                );
                continue;
            }
            let mut want: Vec<String> = header
                .iter()
                .zip(&f)
                .skip(3)
                .filter(|(c, _)| !["CPU", "DEV", "IFACE"].contains(c))
                .map(|(_, v)| format!("{:?}", v.parse::<f64>().unwrap()))
                .collect();
            want.sort();
            let got = sql_rows(
                &cap,
                &format!(
                    "SELECT value, time_ns, entity FROM metric WHERE line = {}",
                    i + 1
                ),
            );
            let mut values: Vec<String> = got.iter().map(|r| r[0].clone()).collect();
            values.sort();
            assert_eq!(values, want, "{name} line {}", i + 1);
            let t = epoch(f[2].trim_end_matches(" UTC")) * 1_000_000_000;
            assert!(
                got.iter().all(|r| r[1] == t.to_string()),
                "{name} line {}",
                i + 1
            );
            let entity = match header[3] {
                "CPU" if f[3] == "-1" => "all".to_string(),
                "CPU" | "DEV" | "IFACE" => f[3].to_string(),
                _ => String::new(),
            };
            assert!(got.iter().all(|r| r[2] == entity), "{name} line {}", i + 1);
        }
    }
    // A file that starts with a restart record is sadf's, read whole.
    let (_t, cap) = ingest_metrics(&["sadf-restart.csv"], &[]);
    assert_eq!(sql_scalar(&cap, "SELECT count(*) FROM diagnostic"), "0");
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM metric WHERE metric = 'linux_restart'"
        ),
        "2"
    );
    let (_t, cap) = ingest_metrics(&["sadf.csv"], &[]);
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM metric WHERE metric = 'disk_util_pct' AND entity = 'vda'"
        ),
        "2"
    );
}

/// Bad input to the metric readers: local times across the end of
/// daylight saving become UTC with --tz (one second apart, never going
/// back; expected values from
/// `TZ=Europe/Berlin date -d '2026-10-25 02:59:57 CEST' +%s`, worked
/// out: CEST = UTC+2, CET = UTC+1); rows with missing columns are
/// reported by line and the rest kept; a metric CSV whose header lacks
/// the value column is an error diagnostic, not a guess.
#[test]
fn dst_with_tz_missing_columns_and_headers() {
    let (_t, cap) = ingest_metrics(&["vmstat-dst.log"], &["--tz", "Europe/Berlin"]);
    let utc: Vec<i64> = sql_rows(
        &cap,
        "SELECT DISTINCT sample, utc_ns FROM metric ORDER BY sample",
    )
    .into_iter()
    .map(|r| r[1].parse().unwrap())
    .collect();
    let first = epoch("2026-10-25 00:59:57") * 1_000_000_000;
    assert_eq!(
        utc,
        (0..utc.len() as i64)
            .map(|k| first + k * 1_000_000_000)
            .collect::<Vec<_>>()
    );
    assert_eq!(
        sql_scalar(
            &cap,
            "SELECT count(*) FROM diagnostic WHERE kind = 'local_time'"
        ),
        "0"
    );

    let dir = tempfile::tempdir().unwrap();
    // A vmstat row cut short.
    let text = std::fs::read_to_string(metrics_fixture("vmstat.log")).unwrap();
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    let cut: Vec<&str> = lines[3].split_whitespace().take(9).collect();
    lines[3] = cut.join(" ");
    let damaged = dir.path().join("vmstat-cut.log");
    std::fs::write(&damaged, lines.join("\n") + "\n").unwrap();
    let cap = dir.path().join("cut");
    ingest_file(&damaged, &cap, &[]);
    assert_eq!(
        sql_rows(&cap, "SELECT kind, line FROM diagnostic"),
        vec![vec!["bad_row".to_string(), "4".to_string()]]
    );
    assert_eq!(
        sql_scalar(&cap, "SELECT count(DISTINCT line) FROM metric"),
        (text.lines().count() - 3).to_string()
    );
    // A generic CSV without a value column.
    let csv = dir.path().join("novalue.csv");
    std::fs::write(&csv, "time,metric,entity\n2026-11-22T10:00:00Z,runq,host\n").unwrap();
    let o = trawl(&[
        "ingest",
        csv.to_str().unwrap(),
        "-o",
        dir.path().join("nv").to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_refused(&o, "unrecognised input format");
    assert!(
        err.contains("first line \"time,metric,entity\"")
            && err.contains("naming time, metric and value"),
        "{err}"
    );
    // Every format is named, the memory logs and energy readings too.
    for f in [
        "valgrind lackey logs",
        "/proc/PID/maps",
        "RAPL powercap CSV",
        "turbostat",
    ] {
        assert!(err.contains(f), "{f}: {err}");
    }
}
