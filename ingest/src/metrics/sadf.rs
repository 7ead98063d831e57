//! `sadf -d` (sar data as CSV, `;`-separated): blocks of a `# hostname;
//! interval;timestamp;COLUMNS...` header and rows. Times are UTC (`...
//! UTC`) unless `sadf -t` printed local ones. Entity columns (CPU, DEV,
//! IFACE, ...) name what a row is about (`CPU` -1 is `all`); the rest are
//! metrics: CPU columns as `cpu_*` (`%user` → `cpu_user`), others `%x` →
//! `x_pct`, `/s` → `_per_s`, `-` → `_`, prefixed `disk_` for devices and
//! `net_` for interfaces (`kbmemfree`, `memused_pct`, `disk_rkB_per_s`,
//! `disk_util_pct`, the names iostat's columns get).

use super::{MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

const ENTITY_COLUMNS: &[&str] = &[
    "CPU",
    "DEV",
    "IFACE",
    "TTY",
    "FILESYSTEM",
    "MOUNTPOINT",
    "BUS",
    "INTR",
    "TYPE",
    "FCHOST",
];

/// Metric name of a column; `prefix` is `disk_` in a DEV block, `net_` in
/// an IFACE one.
fn metric(col: &str, prefix: &str) -> String {
    match col {
        "%user" | "%usr" => return "cpu_user".into(),
        "%nice" => return "cpu_nice".into(),
        "%system" | "%sys" => return "cpu_sys".into(),
        "%iowait" => return "cpu_iowait".into(),
        "%steal" => return "cpu_steal".into(),
        "%idle" => return "cpu_idle".into(),
        "%irq" => return "cpu_irq".into(),
        "%soft" => return "cpu_soft".into(),
        "%guest" => return "cpu_guest".into(),
        "%gnice" => return "cpu_gnice".into(),
        _ => {}
    }
    let (pct, c) = match col.strip_prefix('%') {
        Some(c) => (true, c),
        None => (false, col),
    };
    let mut m = format!("{prefix}{}", c.replace("/s", "_per_s").replace('-', "_"));
    if pct {
        m.push_str("_pct");
    }
    m
}

pub fn sniff(head: &[u8]) -> bool {
    String::from_utf8_lossy(head)
        .lines()
        .next()
        .is_some_and(|l| l.starts_with("# hostname;interval;timestamp;"))
}

fn parse_time(s: &str) -> Option<(i64, &'static str)> {
    let (t, clock) = match s.strip_suffix(" UTC") {
        Some(t) => (t, "utc"),
        None => (s, "local"),
    };
    let t = chrono::NaiveDateTime::parse_from_str(t.trim(), "%Y-%m-%d %H:%M:%S").ok()?;
    Some((t.and_utc().timestamp_nanos_opt()?, clock))
}

pub fn read(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut cols: Vec<&str> = Vec::new();
    let mut times: Vec<i64> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some(h) = line.strip_prefix("# ") {
            cols = h.split(';').collect();
            if cols.get(..3) != Some(&["hostname", "interval", "timestamp"][..]) {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "missing_columns",
                    "a header without hostname;interval;timestamp: its rows are skipped",
                )?;
                cols.clear();
            }
            continue;
        }
        let f: Vec<&str> = line.split(';').collect();
        if cols.is_empty() {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "missing_header",
                "a row before any usable header: skipped",
            )?;
            continue;
        }
        if f.len() != cols.len() {
            super::bad_width(diags, n, f.len(), cols.len())?;
            continue;
        }
        let Some((time_ns, clock)) = parse_time(f[2]) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_time",
                format!("unreadable time {:?}: row skipped", f[2]),
            )?;
            continue;
        };
        // Samples: the distinct times, in the order first seen.
        let sample = match times.iter().position(|&t| t == time_ns) {
            Some(k) => k,
            None => {
                times.push(time_ns);
                times.len() - 1
            }
        } as i64;
        let entity: Vec<String> = cols[3..]
            .iter()
            .zip(&f[3..])
            .filter(|(c, _)| ENTITY_COLUMNS.contains(c))
            .map(|(c, v)| {
                if *c == "CPU" && *v == "-1" {
                    "all".to_string()
                } else {
                    v.to_string()
                }
            })
            .collect();
        let entity = (!entity.is_empty()).then(|| entity.join("/"));
        let prefix = if cols.contains(&"DEV") {
            "disk_"
        } else if cols.contains(&"IFACE") {
            "net_"
        } else {
            ""
        };
        for (c, v) in cols[3..].iter().zip(&f[3..]) {
            if ENTITY_COLUMNS.contains(c) {
                continue;
            }
            let Ok(value) = v.parse::<f64>() else {
                super::bad_value(diags, n, c, v)?;
                continue;
            };
            sink.point(&Point {
                line: n,
                sample,
                time_ns: Some(time_ns),
                clock,
                entity: entity.as_deref(),
                metric: &metric(c, prefix),
                value,
                since_boot: false,
            });
        }
    }
    Ok(times.len() as u64)
}
