//! `vmstat [-w] [-a] [-t] [-n] DELAY` output → metric points.
//!
//! The column header line names the columns; with `-t` the last header
//! token is the time zone and every row ends in `YYYY-MM-DD HH:MM:SS`
//! local time. Headers repeat every screenful without `-n`; they are
//! recognised wherever they appear. The first row after a header of the
//! first block is vmstat's average since boot, not a measurement of the
//! interval: it is marked `since_boot`.

use super::{zone_clock, MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

/// vmstat's column names → trawl's metric names.
fn metric_name(col: &str) -> Option<&'static str> {
    Some(match col {
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
        _ => return None,
    })
}

/// Does this look like vmstat output (its two header lines)?
pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let (Some(a), Some(b)) = (lines.next(), lines.next()) else {
        return false;
    };
    let a = a.trim_start();
    (a.starts_with("procs ") || a.starts_with("--procs--"))
        && b.split_whitespace().take(2).eq(["r", "b"])
}

/// A local or UTC `YYYY-MM-DD HH:MM:SS` → ns since the epoch of that
/// clock (local times are read as if UTC; [`Clock`] says which).
fn parse_datetime(date: &str, time: &str) -> Option<i64> {
    let t = chrono::NaiveDateTime::parse_from_str(&format!("{date} {time}"), "%Y-%m-%d %H:%M:%S")
        .ok()?;
    t.and_utc().timestamp_nanos_opt()
}

pub fn read(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut cols: Vec<Option<&'static str>> = Vec::new();
    let mut timed = false;
    let mut clock = String::from("none");
    let mut rows = 0u64;
    let mut last_time: Option<i64> = None;
    let mut header_seen = false;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with("procs ") || t.starts_with("--procs--") {
            continue;
        }
        let tokens: Vec<&str> = t.split_whitespace().collect();
        if tokens.first() == Some(&"r") {
            // The column header; with -t its last token is the zone.
            let known = tokens.iter().filter(|c| metric_name(c).is_some()).count();
            timed = known < tokens.len();
            cols = tokens[..known].iter().map(|c| metric_name(c)).collect();
            if timed {
                let zone = tokens[known..].join(" ");
                let c = zone_clock(&zone);
                if header_seen && c != clock {
                    diags.report(
                        Position::Line(n),
                        Severity::Warning,
                        "clock_changed",
                        format!("the time zone changed from {clock} to {c}"),
                    )?;
                }
                clock = c;
            } else if !header_seen {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "no_time_axis",
                    "vmstat without -t: its rows have no time, so they cannot be placed next to the other inputs \
                     (exhaustion ranges, cause, plots); they count from the log's start only. Record with `vmstat -t`",
                )?;
            }
            header_seen = true;
            continue;
        }
        if !header_seen {
            diags.report(
                Position::Line(n),
                Severity::Error,
                "missing_header",
                "a vmstat row before any column header: skipped",
            )?;
            continue;
        }
        let want = cols.len() + if timed { 2 } else { 0 };
        if tokens.len() != want {
            super::bad_width(diags, n, tokens.len(), want)?;
            continue;
        }
        let time_ns = if timed {
            match parse_datetime(tokens[want - 2], tokens[want - 1]) {
                Some(v) => Some(v),
                None => {
                    diags.report(
                        Position::Line(n),
                        Severity::Warning,
                        "bad_time",
                        format!(
                            "unreadable time {:?}: row skipped",
                            tokens[want - 2..].join(" ")
                        ),
                    )?;
                    continue;
                }
            }
        } else {
            None
        };
        if let (Some(t), Some(prev)) = (time_ns, last_time) {
            if t < prev {
                // Local clocks go back at the end of daylight saving time
                // (or when the clock is set): say so, never reorder.
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "time_went_back",
                    format!(
                        "the {clock} clock went back {} s (a daylight saving change or a clock adjustment?): time_ns after this line is not comparable with time_ns before it (utc_ns is, with --tz ZONE)",
                        (prev - t) / 1_000_000_000
                    ),
                )?;
            }
        }
        if time_ns.is_some() {
            last_time = time_ns;
        }
        let mut values = Vec::with_capacity(cols.len());
        for (c, tok) in cols.iter().zip(&tokens) {
            match tok.parse::<f64>() {
                Ok(v) => values.push((*c, v)),
                Err(_) => {
                    values.clear();
                    break;
                }
            }
        }
        if values.is_empty() {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_row",
                "a field that is not a number: row skipped",
            )?;
            continue;
        }
        for (name, value) in values {
            let Some(metric) = name else { continue };
            sink.point(&Point {
                line: n,
                sample: rows as i64,
                time_ns,
                clock: &clock,
                entity: None,
                metric,
                value,
                since_boot: rows == 0,
            });
        }
        rows += 1;
    }
    Ok(rows)
}
