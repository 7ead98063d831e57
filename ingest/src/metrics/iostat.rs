//! `iostat [-x] -t` text and `iostat -o JSON` → metric points.
//!
//! CPU lines become `cpu_user`, `cpu_nice`, `cpu_sys`, `cpu_iowait`,
//! `cpu_steal`, `cpu_idle`; device columns become `disk_*` metrics of the
//! device (the entity): `r/s` → `disk_r_per_s`, `rkB/s` →
//! `disk_rkB_per_s`, `%util` → `disk_util_pct`, `aqu-sz` → `disk_aqu_sz`.
//! The first report is iostat's average since boot (`since_boot`).
//!
//! Times: `-t` prints a line with the report's time, in the locale's format
//! (`11/22/26 09:41:00`, local) or ISO 8601 with `S_TIME_FORMAT=ISO`
//! (`2026-11-22T09:41:02+0000`, UTC).

use super::{MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

/// iostat's device column name (text or JSON) → metric name.
pub fn disk_metric(col: &str) -> String {
    // JSON drops the `%` of the percentages.
    let col = match col {
        "util" | "rrqm" | "wrqm" | "drqm" => format!("%{col}"),
        c => c.to_string(),
    };
    let (pct, c) = match col.strip_prefix('%') {
        Some(c) => (true, c.to_string()),
        None => (false, col),
    };
    let mut m = format!("disk_{}", c.replace("/s", "_per_s").replace('-', "_"));
    if pct {
        m.push_str("_pct");
    }
    m
}

fn cpu_metric(col: &str) -> String {
    match col.trim_start_matches('%') {
        "user" => "cpu_user".into(),
        "nice" => "cpu_nice".into(),
        "system" => "cpu_sys".into(),
        "iowait" => "cpu_iowait".into(),
        "steal" => "cpu_steal".into(),
        "idle" => "cpu_idle".into(),
        c => format!("cpu_{c}"),
    }
}

/// The `Linux 6.1.0 (host) \t DATE \t _ARCH_ \t (N CPU)` line sysstat
/// tools start with.
pub fn is_sysstat_banner(line: &str) -> bool {
    line.starts_with("Linux ") && line.trim_end().ends_with("CPU)")
}

pub fn sniff_text(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    lines.next().is_some_and(is_sysstat_banner)
        && lines.any(|l| l.starts_with("avg-cpu:") || l.starts_with("Device "))
}

pub fn sniff_json(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let t = text.trim_start();
    t.starts_with("{\"sysstat\"") && (t.contains("\"disk\"") || t.contains("\"avg-cpu\""))
}

/// A report time line → (ns, clock).
pub fn parse_time(s: &str) -> Option<(i64, &'static str)> {
    let s = s.trim();
    if let Ok(t) = chrono::DateTime::parse_from_str(s, "%Y-%m-%dT%H:%M:%S%z") {
        return Some((t.timestamp_nanos_opt()?, "utc"));
    }
    for f in [
        "%m/%d/%y %H:%M:%S",
        "%m/%d/%Y %H:%M:%S",
        "%m/%d/%Y %I:%M:%S %p",
        "%m/%d/%y %I:%M:%S %p",
        "%Y-%m-%d %H:%M:%S",
    ] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Some((t.and_utc().timestamp_nanos_opt()?, "local"));
        }
    }
    None
}

struct Report {
    time: Option<(i64, &'static str)>,
    index: i64,
}

pub fn read_text(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut report = Report {
        time: None,
        index: -1,
    };
    // Reports start at their time line (-t); without times, at an avg-cpu
    // header, or at a Device header not preceded by one (-d).
    let mut saw_time = false;
    let mut cpu_header_open = false;
    let mut cpu_cols: Option<Vec<String>> = None;
    let mut dev_cols: Option<Vec<String>> = None;
    let mut last_time: Option<i64> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let t = line.trim();
        if t.is_empty() {
            dev_cols = None;
            continue;
        }
        if i == 0 && is_sysstat_banner(line) {
            continue;
        }
        if let Some((ns, clock)) = parse_time(t) {
            if let Some(prev) = last_time.filter(|&p| ns < p) {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "time_went_back",
                    format!(
                        "the {clock} clock went back {} s (a daylight saving change or a clock adjustment?)",
                        (prev - ns) / 1_000_000_000
                    ),
                )?;
            }
            last_time = Some(ns);
            saw_time = true;
            report = Report {
                time: Some((ns, clock)),
                index: report.index + 1,
            };
            continue;
        }
        if let Some(rest) = t.strip_prefix("avg-cpu:") {
            if !saw_time {
                report.index += 1;
            }
            cpu_header_open = true;
            cpu_cols = Some(rest.split_whitespace().map(cpu_metric).collect());
            continue;
        }
        if t.starts_with("Device") {
            dev_cols = Some(t.split_whitespace().skip(1).map(disk_metric).collect());
            if !saw_time && !cpu_header_open {
                report.index += 1;
            }
            cpu_header_open = false;
            continue;
        }
        let fields: Vec<&str> = t.split_whitespace().collect();
        let (entity, values, cols) = if let Some(cols) = cpu_cols.take() {
            (None, &fields[..], cols)
        } else if let Some(cols) = &dev_cols {
            (Some(fields[0]), &fields[1..], cols.clone())
        } else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "unparsed_line",
                format!(
                    "not an iostat header, time or value line: {:?}",
                    t.chars().take(80).collect::<String>()
                ),
            )?;
            continue;
        };
        if values.len() != cols.len() {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_row",
                format!(
                    "{} values where the header has {}: row skipped",
                    values.len(),
                    cols.len()
                ),
            )?;
            continue;
        }
        let (time_ns, clock) = match report.time {
            Some((t, c)) => (Some(t), c),
            None => (None, "none"),
        };
        for (c, v) in cols.iter().zip(values) {
            let Ok(value) = v.replace(',', ".").parse::<f64>() else {
                super::bad_value(diags, n, c, v)?;
                continue;
            };
            sink.point(&Point {
                line: n,
                sample: report.index.max(0),
                time_ns,
                clock,
                entity,
                metric: c,
                value,
                since_boot: report.index <= 0,
            });
        }
    }
    Ok((report.index + 1).max(0) as u64)
}

pub fn read_json(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let v: serde_json::Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            // A cut file (iostat interrupted) is the usual cause: say where.
            diags.report(
                Position::Line(e.line() as u64),
                Severity::Error,
                "bad_json",
                format!("{e}: nothing read from this file"),
            )?;
            return Ok(0);
        }
    };
    let mut reports = 0u64;
    let hosts = v["sysstat"]["hosts"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for host in &hosts {
        let stats = host["statistics"].as_array().cloned().unwrap_or_default();
        for (k, st) in stats.iter().enumerate() {
            let time = st["timestamp"].as_str().and_then(parse_time);
            if st["timestamp"].is_string() && time.is_none() {
                let ts = st["timestamp"].as_str().unwrap_or("");
                let line = text
                    .find(ts)
                    .map_or(0, |at| text[..at].matches('\n').count() as u64 + 1);
                diags.report(
                    Position::Line(line),
                    Severity::Warning,
                    "bad_time",
                    format!("report {k}: unreadable timestamp {}", st["timestamp"]),
                )?;
            }
            let (time_ns, clock) = match time {
                Some((t, c)) => (Some(t), c),
                None => (None, "none"),
            };
            let mut emit = |entity: Option<&str>, metric: &str, value: f64| {
                sink.point(&Point {
                    line: 0,
                    sample: k as i64,
                    time_ns,
                    clock,
                    entity,
                    metric,
                    value,
                    since_boot: k == 0,
                })
            };
            if let Some(cpu) = st["avg-cpu"].as_object() {
                for (c, v) in cpu {
                    if let Some(x) = v.as_f64() {
                        emit(None, &cpu_metric(c), x);
                    }
                }
            }
            for d in st["disk"].as_array().into_iter().flatten() {
                let dev = d["disk_device"].as_str().unwrap_or("?");
                for (c, v) in d.as_object().into_iter().flatten() {
                    if let Some(x) = v.as_f64() {
                        emit(Some(dev), &disk_metric(c), x);
                    }
                }
            }
            reports += 1;
        }
    }
    Ok(reports)
}
