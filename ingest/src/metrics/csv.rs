//! Generic metric CSV: a header naming `time`, `metric`, `value` and
//! optionally `entity` (any order, any case), one point per row. Times:
//! epoch seconds (`1700000000.25`), RFC 3339 (`2026-11-22T09:37:05.5Z`,
//! `+01:00` offsets), or `YYYY-MM-DD HH:MM:SS[.f]` (no zone: local).

use super::{MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

struct Header {
    time: usize,
    metric: usize,
    value: usize,
    entity: Option<usize>,
    width: usize,
}

fn header(line: &str) -> Option<Header> {
    let names: Vec<String> = line
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    let at = |n: &str| names.iter().position(|c| c == n);
    Some(Header {
        time: at("time")?,
        metric: at("metric")?,
        value: at("value")?,
        entity: at("entity"),
        width: names.len(),
    })
}

pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    text.lines().next().is_some_and(|l| header(l).is_some())
}

pub(crate) use crate::fields::parse_time;

pub fn read(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut lines = text.lines().enumerate();
    let Some((_, first)) = lines.next() else {
        return Ok(0);
    };
    let Some(h) = header(first) else {
        diags.report(
            Position::Line(1),
            Severity::Error,
            "missing_columns",
            "the header names no time, metric and value columns: nothing read",
        )?;
        return Ok(0);
    };
    let mut rows = 0u64;
    for (i, line) in lines {
        let n = i as u64 + 1;
        let Some(f) = super::csv_fields(diags, n, line, h.width)? else {
            continue;
        };
        let Some((time_ns, clock)) = parse_time(f[h.time]) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_time",
                format!("unreadable time {:?}: row skipped", f[h.time]),
            )?;
            continue;
        };
        let Ok(value) = f[h.value].parse::<f64>() else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_row",
                format!("value {:?} is not a number: row skipped", f[h.value]),
            )?;
            continue;
        };
        sink.point(&Point {
            line: n,
            sample: rows as i64,
            time_ns: Some(time_ns),
            clock,
            entity: h.entity.map(|e| f[e]).filter(|e| !e.is_empty()),
            metric: f[h.metric],
            value,
            since_boot: false,
        });
        rows += 1;
    }
    Ok(rows)
}
