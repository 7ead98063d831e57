//! `sadf -d` (sar data as CSV, `;`-separated): blocks of a `# hostname;
//! interval;timestamp;COLUMNS...` header and rows. Times are UTC (`...
//! UTC`) unless `sadf -t` printed local ones. Entity columns (CPU, DEV,
//! IFACE, ...) name what a row is about (`CPU` -1 is `all`); the rest are
//! metrics: CPU columns as `cpu_*` (`%user` → `cpu_user`), others `%x` →
//! `x_pct`, `/s` → `_per_s`, `-` → `_`, prefixed `disk_` for devices and
//! `net_` for interfaces (`kbmemfree`, `memused_pct`, `disk_rkB_per_s`,
//! `disk_util_pct`, the names iostat's columns get).
//!
//! USB devices (`sar -m USB`) are the entity `BUS/idvendor/idprod`
//! (`2/3f0/862`) with the metric `maxpower` (mA); sadf prints their values
//! in another order than its header names them (`sadf -j` is right), and
//! they are read in the values' order.
//!
//! `sar -I` per CPU (`INTR;CPU*`, a value per CPU) is `intr_per_s` of the
//! entity `INTR/CPU`. `sadf -d -h` (every activity on one line, groups
//! of columns that repeat) is refused with one diagnostic at its header.
//!
//! sadf prints a `host;-1;time;LINUX-RESTART\t(N CPU)` line where the
//! system restarted (counters start again from zero; a file that covers a
//! boot starts with one): it is the metric `linux_restart` (value the CPU
//! count) at that time. `host;-1;time;COM text` comments (`sadc -C`) are
//! skipped.

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
    "idvendor",
    "idprod",
    "INTR",
    "TYPE",
    "FCHOST",
    "DEVICE",
    "BAT",
];

/// Columns of words, not measurements (a battery's `status`, a USB
/// device's names): not stored.
const TEXT_COLUMNS: &[&str] = &["status", "manufact", "product"];

/// The USB devices' header as sadf prints it (sysstat's `activity.c`), and
/// the order it prints their values in (`sadf -j` names them: bus_number,
/// idvendor, idprod, maxpower, manufact, product).
const USB_HEADER: &[&str] = &[
    "manufact", "product", "BUS", "idvendor", "idprod", "maxpower",
];
const USB_VALUES: &[&str] = &[
    "BUS", "idvendor", "idprod", "maxpower", "manufact", "product",
];

/// sadf's USB block: its values come in another order than its header
/// names them, the bus number and maximum power (integers) where the
/// header puts the names. A row in the header's order is read so.
fn usb_values_reordered(cols: &[&str], f: &[&str]) -> bool {
    let int = |i: usize| f.get(i).is_some_and(|v| v.parse::<u64>().is_ok());
    cols.get(3..) == Some(USB_HEADER) && int(3) && int(6)
}

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

const HEADER: &str = "# hostname;interval;timestamp;";

/// A restart or comment record: `host;-1;time;LINUX-RESTART...` or
/// `host;-1;time;COM ...` (the rest of the line).
fn special(line: &str) -> Option<(&str, &str)> {
    let mut f = line.splitn(4, ';');
    let (_host, interval, time, rest) = (f.next()?, f.next()?, f.next()?, f.next()?);
    (interval == "-1" && (rest.starts_with("LINUX-RESTART") || rest.starts_with("COM ")))
        .then_some((time, rest))
}

pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    // A file that covers a boot starts with its restart record.
    let first = lines.by_ref().find(|l| special(l).is_none());
    first.is_some_and(|l| l.starts_with(HEADER))
        && text
            .lines()
            .next()
            .is_some_and(|l| l.starts_with(HEADER) || special(l).is_some())
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
    // The current header is `sadf -d -h`'s (rows skipped).
    let mut repeated = false;
    let mut times: Vec<i64> = Vec::new();
    // Samples: the distinct times, in the order first seen.
    let mut sample_of = |time_ns: i64| match times.iter().position(|&t| t == time_ns) {
        Some(k) => k as i64,
        None => {
            times.push(time_ns);
            times.len() as i64 - 1
        }
    };
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if line.trim().is_empty() {
            continue;
        }
        if let Some((time, rest)) = special(line) {
            let Some(cpus) = rest.strip_prefix("LINUX-RESTART") else {
                continue; // a comment
            };
            let Some((time_ns, clock)) = parse_time(time) else {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "bad_time",
                    format!("unreadable time {time:?}: restart record skipped"),
                )?;
                continue;
            };
            // `\t(8 CPU)`; sysstat before 11 printed no count.
            let cpus = cpus
                .trim()
                .trim_start_matches('(')
                .split_whitespace()
                .next()
                .and_then(|c| c.parse::<f64>().ok())
                .unwrap_or(f64::NAN);
            sink.point(&Point {
                line: n,
                sample: sample_of(time_ns),
                time_ns: Some(time_ns),
                clock,
                entity: None,
                metric: "linux_restart",
                value: cpus,
                since_boot: false,
            });
            continue;
        }
        if let Some(h) = line.strip_prefix("# ") {
            cols = h.split(';').collect();
            repeated = false;
            if h.contains("[...]") {
                // `sadf -d -h`: every activity on one line, groups of
                // columns repeated per CPU, device... as many times as
                // there are.
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "unsupported_table",
                    "columns that repeat ([...], `sadf -d -h`): its rows are skipped; run sadf -d without -h",
                )?;
                repeated = true;
                continue;
            }
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
        if repeated {
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
        // `INTR;CPU*` (`sar -I` per CPU): a value per CPU, as many as
        // the row has.
        let per_cpu = cols.last() == Some(&"CPU*") && cols.contains(&"INTR");
        if f.len() != cols.len() && !(per_cpu && f.len() >= cols.len()) {
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
        let sample = sample_of(time_ns);
        let usb: Vec<&str>;
        let cols: &[&str] = if usb_values_reordered(&cols, &f) {
            usb = cols[..3].iter().chain(USB_VALUES).copied().collect();
            &usb
        } else {
            &cols
        };
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
        if per_cpu {
            let first = cols.len() - 1;
            for (k, v) in f[first..].iter().enumerate() {
                let Ok(value) = v.parse::<f64>() else {
                    super::bad_value(diags, n, "CPU*", v)?;
                    continue;
                };
                let entity = format!("{}/{k}", entity.as_deref().unwrap_or("?"));
                sink.point(&Point {
                    line: n,
                    sample,
                    time_ns: Some(time_ns),
                    clock,
                    entity: Some(&entity),
                    metric: "intr_per_s",
                    value,
                    since_boot: false,
                });
            }
        }
        for (c, v) in cols[3..].iter().zip(&f[3..]) {
            if ENTITY_COLUMNS.contains(c) || TEXT_COLUMNS.contains(c) || *c == "CPU*" {
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
