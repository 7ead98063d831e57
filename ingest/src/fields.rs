//! Fields of text logs that the readers of monitoring and energy logs
//! share: CSV rows checked against their header's width, values that are
//! not numbers reported, and time fields (epoch seconds exactly, RFC 3339,
//! local date-times).

use crate::diag::{Diagnostics, Position, Severity};

/// Reports a row of line `n` with `got` fields where the header has `want`.
pub(crate) fn bad_width(
    diags: &mut Diagnostics,
    n: u64,
    got: usize,
    want: usize,
) -> crate::error::Result<()> {
    diags.report(
        Position::Line(n),
        Severity::Warning,
        "bad_row",
        format!("{got} fields where the header has {want}: row skipped"),
    )
}

/// The fields of CSV line `n` (trimmed, quotes dropped), or `None` for a
/// blank line and for a row whose width is not the header's `width`
/// (reported).
pub(crate) fn csv_fields<'a>(
    diags: &mut Diagnostics,
    n: u64,
    line: &'a str,
    width: usize,
) -> crate::error::Result<Option<Vec<&'a str>>> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let f: Vec<&str> = line
        .split(',')
        .map(|c| c.trim().trim_matches('"'))
        .collect();
    if f.len() != width {
        bad_width(diags, n, f.len(), width)?;
        return Ok(None);
    }
    Ok(Some(f))
}

/// Reports a value `v` of column `col` on line `n` that is not a number.
pub(crate) fn bad_value(
    diags: &mut Diagnostics,
    n: u64,
    col: &str,
    v: &str,
) -> crate::error::Result<()> {
    diags.report(
        Position::Line(n),
        Severity::Warning,
        "bad_row",
        format!("{col} value {v:?} is not a number: skipped"),
    )
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
