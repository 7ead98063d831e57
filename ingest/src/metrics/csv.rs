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

/// Decimal seconds (`1700000000.002`, `-3.5`) as ns, exactly: an f64
/// holds an epoch time in ns only to a few hundred ns. Digits past the
/// ninth decimal round; None for anything else (exponents, ...).
pub(crate) fn decimal_seconds_ns(s: &str) -> Option<i64> {
    let (neg, digits) = match s.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, s.strip_prefix('+').unwrap_or(s)),
    };
    let (int, frac) = digits.split_once('.').unwrap_or((digits, ""));
    let all_digits = |x: &str| x.bytes().all(|b| b.is_ascii_digit());
    if (int.is_empty() && frac.is_empty()) || !all_digits(int) || !all_digits(frac) {
        return None;
    }
    let secs: i64 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut ns: i64 = 0;
    let mut scale = 100_000_000;
    for (k, b) in frac.bytes().enumerate() {
        if k == 9 {
            ns += i64::from(b >= b'5');
            break;
        }
        ns += i64::from(b - b'0') * scale;
        scale /= 10;
    }
    let t = secs.checked_mul(1_000_000_000)?.checked_add(ns)?;
    Some(if neg { -t } else { t })
}

/// A time field → (ns, clock).
pub(crate) fn parse_time(s: &str) -> Option<(i64, &'static str)> {
    let s = s.trim().trim_matches('"');
    if let Some(ns) = decimal_seconds_ns(s) {
        return Some((ns, "utc"));
    }
    if let Ok(secs) = s.parse::<f64>() {
        return (secs.is_finite() && secs.abs() < 1e11)
            .then(|| ((secs * 1e9).round() as i64, "utc"));
    }
    if let Ok(t) = chrono::DateTime::parse_from_rfc3339(s) {
        return Some((t.timestamp_nanos_opt()?, "utc"));
    }
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = chrono::NaiveDateTime::parse_from_str(s, f) {
            return Some((t.and_utc().timestamp_nanos_opt()?, "local"));
        }
    }
    None
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_seconds_are_exact() {
        // Worked by hand: an f64 of 1700000000.002 s in ns is
        // 1700000000002000128.
        assert_eq!(
            decimal_seconds_ns("1700000000.002"),
            Some(1_700_000_000_002_000_000)
        );
        assert_eq!(
            decimal_seconds_ns("1700000000.123456789"),
            Some(1_700_000_000_123_456_789)
        );
        assert_eq!(decimal_seconds_ns("1.0000000005"), Some(1_000_000_001));
        assert_eq!(decimal_seconds_ns("-3.5"), Some(-3_500_000_000));
        assert_eq!(decimal_seconds_ns(".25"), Some(250_000_000));
        assert_eq!(decimal_seconds_ns("42"), Some(42_000_000_000));
        assert_eq!(decimal_seconds_ns("1e9"), None);
        assert_eq!(decimal_seconds_ns("."), None);
        assert_eq!(decimal_seconds_ns("99999999999999999999"), None);
        assert_eq!(
            parse_time("1700000000.002"),
            Some((1_700_000_000_002_000_000, "utc"))
        );
        assert_eq!(
            parse_time("1.7e9"),
            Some((1_700_000_000_000_000_000, "utc"))
        );
    }
}
