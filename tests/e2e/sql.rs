//! `trawl sql` and `trawl tables` over one and several captures.

use crate::common::*;

#[test]
fn several_captures_get_a_capture_column() {
    // Expected counts: perf script on each fixture.
    let (_a, cap1) = ingest("hot-fp.data");
    let (_b, cap2) = ingest("threads.data");
    let out = trawl_ok(&[
        "sql",
        cap1.to_str().unwrap(),
        cap2.to_str().unwrap(),
        "SELECT count(DISTINCT capture) AS captures, count(*) AS samples FROM perf_sample",
        "--format",
        "csv",
    ]);
    let want = perf_script_samples(&fixture("hot-fp.data"))
        + perf_script_samples(&fixture("threads.data"));
    assert_eq!(out.lines().nth(1).unwrap(), format!("2,{want}"));
}

#[test]
fn a_directory_of_captures_is_an_archive() {
    let dir = tempfile::tempdir().unwrap();
    for (name, f) in [("run1", "hot-fp.data"), ("run2", "hot-z.data")] {
        let cap = dir.path().join(name);
        trawl_ok(&[
            "ingest",
            fixture(f).to_str().unwrap(),
            "-o",
            cap.to_str().unwrap(),
            "--no-symbolize",
        ]);
    }
    let out = trawl_ok(&[
        "sql",
        dir.path().to_str().unwrap(),
        "SELECT capture, count(*) FROM perf_sample GROUP BY capture ORDER BY capture",
        "--format",
        "csv",
    ]);
    let rows = csv_rows(&out);
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[0][0], "run1");
    assert_eq!(
        rows[0][1],
        perf_script_samples(&fixture("hot-fp.data")).to_string()
    );
    assert_eq!(
        rows[1][1],
        perf_script_samples(&fixture("hot-z.data")).to_string()
    );
}

/// The README's SQL example on hot-fp.data: samples and CPU time (ms) per
/// command. Source: `perf script -F comm,period` on the same file (a line
/// per sample: the command, then the period in ns), counted and summed
/// here.
#[test]
fn readme_query_of_samples_and_cpu_ms_per_command_is_perf_scripts() {
    let file = fixture("hot-fp.data");
    let script = perf(&["script", "-i", file.to_str().unwrap(), "-F", "comm,period"]);
    let mut per: std::collections::BTreeMap<String, (u64, u64)> = Default::default();
    for l in script.lines().filter(|l| !l.trim().is_empty()) {
        let (comm, period) = l.trim().rsplit_once(char::is_whitespace).unwrap();
        let e = per.entry(comm.trim().to_string()).or_default();
        e.0 += 1;
        e.1 += period.parse::<u64>().unwrap();
    }
    assert_eq!(
        per.values().map(|v| v.0 as usize).sum::<usize>(),
        perf_script_samples(&file)
    );
    let (_t, cap) = ingest("hot-fp.data");
    let got = sql_rows(
        &cap,
        "SELECT comm, count(*) AS samples, round(sum(period) / 1e6, 1) AS cpu_ms \
         FROM perf_sample GROUP BY comm ORDER BY comm",
    );
    assert_eq!(got.len(), per.len(), "{got:?} vs {per:?}");
    for (r, (comm, (n, p))) in got.iter().zip(&per) {
        assert_eq!(&r[0], comm);
        assert_eq!(r[1], n.to_string(), "{comm}: samples");
        let ms = (*p as f64 / 1e6 * 10.0).round() / 10.0;
        assert_eq!(r[2].parse::<f64>().unwrap(), ms, "{comm}: cpu_ms");
    }
}

#[test]
fn output_formats_and_query_files() {
    let (t, cap) = ingest("hot-fp.data");
    let q = t.path().join("q.sql");
    std::fs::write(
        &q,
        "-- comment; with a semicolon\nSELECT 1 AS one;\nSELECT count(*) AS n FROM perf_sample;\n",
    )
    .unwrap();
    let json = trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "--file",
        q.to_str().unwrap(),
        "--format",
        "json",
    ]);
    let n = perf_script_samples(&fixture("hot-fp.data"));
    assert_eq!(json.trim(), format!("[{{\"n\":{n}}}]"));
    let pq = t.path().join("out.parquet");
    trawl_ok(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT * FROM module",
        "--format",
        "parquet",
        "-o",
        pq.to_str().unwrap(),
    ]);
    assert!(std::fs::metadata(&pq).unwrap().len() > 100);
    let table = trawl_ok(&["sql", cap.to_str().unwrap(), "SELECT 'x' AS a"]);
    assert!(
        table.contains("| a |") && table.contains("| x |"),
        "{table}"
    );
}

#[test]
fn tables_lists_columns_with_their_documentation() {
    let (_t, cap) = ingest("hot-fp.data");
    let out = trawl_ok(&["tables", cap.to_str().unwrap()]);
    assert!(out.contains("perf_sample") && out.contains("time_ns"));
    assert!(out.contains("Timestamp in ns on the capture's clock"));
}

/// Samples a hotspot report selects: the sum of self samples by module
/// (every sample has exactly one leaf).
fn selected(cap: &std::path::Path, filter: &[&str]) -> u64 {
    let mut args = vec![
        "report",
        "hotspots",
        cap.to_str().unwrap(),
        "--by",
        "module",
        "--format",
        "csv",
    ];
    args.extend_from_slice(filter);
    csv_rows(&trawl_ok(&args))
        .iter()
        .map(|r| r[1].parse::<u64>().unwrap())
        .sum()
}

#[test]
fn hotspot_filters_select_samples() {
    // Expected: the samples perf script prints with the same filter
    // (--comms), and plain counts for pid and time.
    let (_t, cap) = ingest("procs.data");
    let file = fixture("procs.data");
    let hot_samples = perf(&[
        "script",
        "-i",
        file.to_str().unwrap(),
        "-F",
        "comm",
        "--comms",
        "hot",
    ])
    .lines()
    .filter(|l| l.trim() == "hot")
    .count() as u64;
    assert!(hot_samples > 0);
    assert_eq!(selected(&cap, &["--comm", "hot"]), hot_samples);

    let pid = sql_scalar(
        &cap,
        "SELECT pid FROM perf_sample WHERE comm = 'hot' LIMIT 1",
    );
    assert_eq!(selected(&cap, &["--pid", &pid]), hot_samples);

    // A time window: the first half of the recording.
    let mid: i64 = sql_scalar(
        &cap,
        "SELECT CAST((min(time_ns) + max(time_ns)) / 2 AS BIGINT) FROM perf_sample",
    )
    .parse()
    .unwrap();
    let want: u64 = sql_scalar(
        &cap,
        &format!("SELECT count(*) FROM perf_sample WHERE time_ns < {mid}"),
    )
    .parse()
    .unwrap();
    let range = format!("..{}.{:09}", mid / 1_000_000_000, mid % 1_000_000_000);
    assert_eq!(selected(&cap, &["--time", &range]), want);
}

/// Rows of a CSV as sorted lines (order-free comparison).
fn sorted_lines(csv: &str) -> Vec<String> {
    let mut v: Vec<String> = csv.lines().skip(1).map(str::to_string).collect();
    v.sort();
    v
}

#[test]
fn analyses_are_table_functions_with_the_reports_answers() {
    // `report hotspots --pid P` and `hotspots('function', 'pid', P)` in
    // SQL are the same rows. Expected source for the numbers themselves:
    // perf script's sample count of the process (the self samples add up
    // to it); the report is checked against perf report elsewhere
    // (perf_fixtures::hotspots_match_perf_report_processes).
    let (_t, cap) = ingest("procs.data");
    let c = cap.to_str().unwrap();
    let pid = sql_scalar(
        &cap,
        "SELECT pid FROM perf_sample WHERE comm = 'hot' LIMIT 1",
    );
    let report = trawl_ok(&[
        "report", "hotspots", c, "--pid", &pid, "--weight", "samples", "--format", "csv",
    ]);
    let q = format!(
        "SELECT function, module, self_samples, self_pct, total_samples, total_pct \
         FROM hotspots('function', 'pid', {pid}, 'weight', 'samples')"
    );
    let sql = trawl_ok(&["sql", c, &q, "--format", "csv"]);
    assert_eq!(report.lines().next(), sql.lines().next());
    assert_eq!(sorted_lines(&report), sorted_lines(&sql));
    let script = perf(&[
        "script",
        "-i",
        fixture("procs.data").to_str().unwrap(),
        "-F",
        "pid",
        "--pid",
        &pid,
    ])
    .lines()
    .filter(|l| !l.trim().is_empty())
    .count();
    let self_sum = sql_scalar(
        &cap,
        &format!(
            "SELECT sum(self_samples) FROM hotspots('function', 'pid', {pid}, 'weight', 'samples')"
        ),
    );
    assert_eq!(self_sum, script.to_string());

    // Composable: filtered, joined and aggregated like any table; a list
    // argument (two processes) is the union of the two.
    let pids = sql_scalar(
        &cap,
        "SELECT CAST(count(DISTINCT pid) AS VARCHAR) FROM perf_sample",
    );
    assert!(pids.parse::<u32>().unwrap() >= 2);
    let two: Vec<String> = csv_rows(&trawl_ok(&[
        "sql",
        c,
        "SELECT pid FROM perf_sample GROUP BY pid ORDER BY count(*) DESC LIMIT 2",
        "--format",
        "csv",
    ]))
    .into_iter()
    .map(|r| r[0].clone())
    .collect();
    let q = format!(
        "WITH a AS (SELECT function, total_samples FROM hotspots('function', 'pid', {p0}, 'weight', 'samples')), \
              b AS (SELECT function, total_samples FROM hotspots('function', 'pid', {p1}, 'weight', 'samples')), \
              ab AS (SELECT function, total_samples FROM hotspots('function', 'pid', {p0}, 'pid', {p1}, 'weight', 'samples')), \
              n AS (SELECT count(*) AS n FROM perf_sample WHERE pid IN ({p0}, {p1}) AND stack_id IS NOT NULL) \
         SELECT (SELECT sum(self_samples) FROM hotspots('function', 'pid', make_array({p0}, {p1}), 'weight', 'samples')) = (SELECT n FROM n), \
                bool_and(COALESCE(a.total_samples, 0) + COALESCE(b.total_samples, 0) = ab.total_samples) \
         FROM ab LEFT JOIN a ON a.function = ab.function LEFT JOIN b ON b.function = ab.function",
        p0 = two[0],
        p1 = two[1]
    );
    let out = trawl_ok(&["sql", c, &q, "--format", "csv"]);
    assert_eq!(out.lines().nth(1).unwrap(), "true,true", "{out}");
}

#[test]
fn table_function_arguments_are_checked() {
    let (_t, cap) = ingest("hot-fp.data");
    let c = cap.to_str().unwrap();
    for (q, want) in [
        (
            "SELECT * FROM hotspots('function', 'nope', 1)",
            "no parameter \"nope\"",
        ),
        ("SELECT * FROM hotspots('bogus')", "by is function, module"),
        (
            "SELECT * FROM hotspots('function', 'pid')",
            "name/value pairs",
        ),
        ("SELECT * FROM callers('main', 'pid', 'x')", "pid must be"),
    ] {
        assert_refused(&trawl(&["sql", c, q]), want);
    }
}

#[test]
fn opening_a_capture_reads_no_derived_data() {
    // Derived tables (time_base, memory_region, ...) are computed when a
    // query reads them, not when the capture is opened: with syscall.parquet
    // destroyed, a query of perf_sample still answers (the count perf
    // script prints), and only queries that need the system calls fail.
    let (_t, cap) = ingest("hot-fp.data");
    std::fs::write(cap.join("syscall.parquet"), b"not parquet").unwrap();
    let n = sql_scalar(&cap, "SELECT count(*) FROM perf_sample");
    assert_eq!(n, perf_script_samples(&fixture("hot-fp.data")).to_string());
    let o = trawl(&[
        "sql",
        cap.to_str().unwrap(),
        "SELECT count(*) FROM memory_region",
    ]);
    assert_refused(&o, "Corrupt footer");
    let o = trawl(&["sql", cap.to_str().unwrap(), "SELECT * FROM time_base"]);
    assert_refused(&o, "Corrupt footer");
}

#[test]
fn datafusion_settings_come_from_the_environment() {
    // As in datafusion-cli: DATAFUSION_* variables set the session's
    // options (read back from information_schema), a bad value is an
    // error naming the option, and partitions otherwise follow the cores.
    let (_t, cap) = ingest("hot-fp.data");
    let q = "SELECT value FROM information_schema.df_settings \
             WHERE name = 'datafusion.execution.target_partitions'";
    let run = |env: &[(&str, &str)]| {
        let mut c = std::process::Command::new(crate::common::trawl_exe());
        c.args(["sql", cap.to_str().unwrap(), q, "--format", "csv"]);
        c.envs(env.iter().copied());
        c.output().unwrap()
    };
    let o = run(&[("DATAFUSION_EXECUTION_TARGET_PARTITIONS", "3")]);
    assert!(o.status.success());
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().nth(1), Some("3"));
    let cores = std::thread::available_parallelism()
        .unwrap()
        .get()
        .to_string();
    let o = run(&[]);
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).lines().nth(1),
        Some(cores.as_str())
    );
    let o = run(&[("DATAFUSION_EXECUTION_BATCH_SIZE", "abc")]);
    assert_refused(&o, "batch_size");
    assert!(String::from_utf8_lossy(&o.stderr).contains("batch_size"));
}

#[test]
fn functions_lists_every_analysis_and_each_runs() {
    // `trawl functions` lists the table functions; each answers a call
    // with only its leading argument on a real capture (the row counts of
    // the reports are checked against perf elsewhere).
    let (_t, cap) = ingest("hot-fp.data");
    let list = csv_maps(&trawl_ok(&["functions", "--format", "csv"]));
    let mut names: Vec<String> = list.iter().map(|r| r["function"].clone()).collect();
    names.dedup();
    assert_eq!(
        names,
        [
            "stack_weight",
            "selected_sample",
            "hotspot_key",
            "hotspots",
            "callers",
            "callees",
            "folded",
            "diff",
            "offcpu",
            "timeline",
            "thread_timeline",
            "annotate",
            "tracepoint",
            "tracepoint_events",
            "tracepoint_pairs",
            "latency",
            "lbr_samples",
            "lbr_functions",
            "lbr_summary",
            "lbr_points",
            "lbr_sequence",
            "lbr_timeline",
            "live_regions",
            "unfreed",
            "io_bytes",
            "pages",
            "page_reuse_pairs",
            "page_reuse",
            "page_reuse_plan",
            "mem_symbols",
            "energy_by",
            "cause_cpu",
            "cause_memory",
            "cause_io",
            "power_model",
            "power_intervals",
            "power_samples",
            "power_data",
            "sample_rapl",
        ]
    );
    // The stack analyses run here; the others on their own fixtures
    // (tests/sql/*.slt, energy.rs, energy_sim.rs, phases.rs,
    // tracepoints.rs).
    for call in [
        "stack_weight()",
        "selected_sample()",
        "hotspot_key('function')",
        "diff('function', 'base', 'cap', 'new', 'cap')",
        "hotspots('function')",
        "callers('main')",
        "callees('main')",
        "folded()",
        "timeline(10000000)",
        "annotate('spin_a')",
    ] {
        let n: u64 = sql_scalar(&cap, &format!("SELECT count(*) FROM {call}"))
            .parse()
            .unwrap();
        assert!(n > 0, "{call}: no rows");
    }
}

#[test]
fn callers_and_callees_reports_are_their_table_functions() {
    // `report callers|callees F` is `callers('F')` / `callees('F')` with
    // the weight column named after the weight (`period` by default); the
    // same rows. (Their numbers are checked, worked by hand and against
    // perf report --children, in metrics.rs.)
    let (_t, cap) = ingest("hot-fp.data");
    let c = cap.to_str().unwrap();
    for r in ["callers", "callees"] {
        for f in ["spin_a", "main"] {
            let report = trawl_ok(&["report", r, f, c, "--format", "csv"]);
            let sql = trawl_ok(&[
                "sql",
                c,
                &format!("SELECT * FROM {r}('{f}')"),
                "--format",
                "csv",
            ]);
            assert_eq!(
                report.lines().next().unwrap(),
                sql.lines().next().unwrap().replace(",weight,", ",period,"),
                "{r} {f}"
            );
            assert!(report.lines().count() > 2, "{r} {f}: {report}");
            assert_eq!(sorted_lines(&report), sorted_lines(&sql), "{r} {f}");
        }
    }
}

/// The report's CSV and the table function's, as sorted lines, the
/// report's header with `rename` (report column → function column)
/// applied and the function's columns cut to the report's.
fn report_equals_function(report: &[&str], sql: &[&str], rename: &[(&str, &str)]) {
    let r = trawl_ok(&[report, &["--format", "csv"]].concat());
    let s = trawl_ok(&[sql, &["--format", "csv"]].concat());
    let mut r_head = r.lines().next().unwrap().to_string();
    for (a, b) in rename {
        r_head = r_head.replace(a, b);
    }
    let s_head: Vec<&str> = s.lines().next().unwrap().split(',').collect();
    let keep = r_head.split(',').count();
    assert_eq!(r_head, s_head[..keep].join(","), "{report:?} vs {sql:?}");
    let cut = |csv: &str| -> Vec<String> {
        // csv_rows leaves the header out.
        let mut v: Vec<String> = csv_rows(csv)
            .into_iter()
            .map(|row| row[..keep].join("\u{1f}"))
            .collect();
        v.sort();
        v
    };
    let (rr, ss) = (cut(&r), cut(&s));
    assert!(!rr.is_empty(), "{report:?}: no rows");
    assert_eq!(rr, ss, "{report:?} vs {sql:?}");
}

#[test]
fn every_report_is_its_table_function() {
    // `trawl report X` is the query of its table function plus formatting
    // (rows sorted, a few columns left out or named after what they hold):
    // the same rows. The numbers themselves are checked against
    // independent tools where each report is tested (strace.rs,
    // memlog.rs, lbr.rs, energy.rs, phases.rs, ...).
    let dir = tempfile::tempdir().unwrap();
    let caps = crate::cluster::captures(dir.path());
    let [arch, phases, memlog, energy] = [0, 1, 2, 3].map(|i| caps[i].to_str().unwrap());
    let (_t, lbr) = ingest("lbr-fig8.data");
    let lbr = lbr.to_str().unwrap();
    let rule = "cpu_user+cpu_sys > 90 and runq > 2";
    report_equals_function(
        &["report", "timeline", arch, "--window", "10ms"],
        &["sql", arch, "SELECT * FROM timeline(10000000)"],
        &[(",function,", ",key,")],
    );
    report_equals_function(
        &["report", "unfreed", arch],
        &["sql", arch, "SELECT * FROM unfreed()"],
        &[],
    );
    report_equals_function(
        &["report", "io", arch],
        &["sql", arch, "SELECT * FROM io_bytes()"],
        &[],
    );
    report_equals_function(
        &["report", "pages", memlog],
        &["sql", memlog, "SELECT * FROM pages()"],
        &[],
    );
    report_equals_function(
        &["report", "page-reuse", memlog],
        &["sql", memlog, "SELECT * FROM page_reuse()"],
        &[],
    );
    report_equals_function(
        &["report", "mem-symbols", memlog],
        &["sql", memlog, "SELECT * FROM mem_symbols()"],
        &[],
    );
    for (view, f) in [
        ("functions", "lbr_functions('3')"),
        ("summary", "lbr_summary('3')"),
        ("points", "lbr_points('3')"),
    ] {
        report_equals_function(
            &["report", "lbr", lbr, "--view", view],
            &["sql", lbr, &format!("SELECT * FROM {f}")],
            &[],
        );
    }
    report_equals_function(
        &[
            "report",
            "energy",
            energy,
            "--by",
            "function",
            "--core-indicator",
            "read:cycles",
            "--dram-indicator",
            "read:LLC-load-misses",
        ],
        &[
            "sql",
            energy,
            "SELECT * FROM energy_by('function', 'core', 'read:cycles', 'dram', 'read:LLC-load-misses')",
        ],
        &[],
    );
    report_equals_function(
        &[
            "report",
            "cause",
            phases,
            "--resource",
            "cpu",
            "--rule",
            rule,
            "--t0",
            "exec:phases",
        ],
        &[
            "sql",
            phases,
            "--t0",
            "exec:phases",
            &format!("SELECT * FROM cause_cpu('{rule}')"),
        ],
        &[],
    );
}
