//! Times without a session: the origin `t_ns` counts from, each capture's
//! offsets, durations as users write them, UTC text and `window_start`.

use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Int64Array};
use datafusion::arrow::datatypes::{DataType, Int64Type};
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};

use crate::error::{Error, Result};

/// The instant `t_ns` counts from, per capture.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct Origin {
    pub kind: OriginKind,
    /// Added to the instant (`exec:app+1.5`).
    pub offset_ns: i64,
}

#[derive(Clone, Debug, PartialEq, Default)]
pub enum OriginKind {
    /// The earliest time of any input of the capture (sample, call, metric
    /// row).
    #[default]
    First,
    /// The first successful exec of a program of this name (perf COMM exec
    /// records, strace `execve` calls).
    Exec(String),
    /// A UTC instant, ns since the epoch.
    Utc(i64),
}

impl Origin {
    /// `first`, `exec:NAME`, `@EPOCH_SECONDS` or an RFC 3339 time
    /// (`2026-11-22T10:27:12Z`), each optionally followed by `+SECONDS` or
    /// `-SECONDS`.
    pub fn parse(spec: &str) -> Result<Origin> {
        let s = spec.trim();
        let bad = || {
            Error::Usage(format!(
                "--t0 {spec:?}: expected `first`, `exec:NAME`, `@EPOCH_SECONDS` or an RFC 3339 time, optionally followed by +SECONDS or -SECONDS"
            ))
        };
        // A trailing +S / -S offset, if the rest is an origin.
        if let Some(cut) = s.rfind(['+', '-']).filter(|&c| c > 0) {
            let (base, off) = s.split_at(cut);
            if let (Ok(secs), Some(kind)) = (off.parse::<f64>(), parse_base(base.trim())) {
                if !secs.is_finite() {
                    return Err(bad());
                }
                return Ok(Origin {
                    kind,
                    offset_ns: (secs * 1e9).round() as i64,
                });
            }
        }
        let kind = parse_base(s).ok_or_else(bad)?;
        Ok(Origin { kind, offset_ns: 0 })
    }
}

fn parse_base(s: &str) -> Option<OriginKind> {
    if s == "first" {
        return Some(OriginKind::First);
    }
    if let Some(n) = s.strip_prefix("exec:") {
        return (!n.is_empty()).then(|| OriginKind::Exec(n.to_string()));
    }
    if let Some(e) = s.strip_prefix('@') {
        let v: f64 = e.parse().ok()?;
        return v
            .is_finite()
            .then(|| OriginKind::Utc((v * 1e9).round() as i64));
    }
    let d = chrono::DateTime::parse_from_rfc3339(s).ok()?;
    d.timestamp_nanos_opt().map(OriginKind::Utc)
}

/// One input of a capture and where its times are.
#[derive(Clone, Debug)]
pub struct SourceTime {
    pub source_id: i32,
    pub clock: String,
    pub utc_offset_ns: Option<i64>,
    /// Earliest native time, and earliest UTC time (metric rows carry their
    /// own).
    pub first_native: Option<i64>,
    pub first_utc: Option<i64>,
}

/// The origin of one capture and the inputs' offsets.
#[derive(Clone, Debug)]
pub struct CaptureTime {
    pub capture: String,
    /// The origin in UTC, when it could be placed there.
    pub origin_utc_ns: Option<i64>,
    /// The origin is on this input's native clock (no UTC reference).
    pub native_source: Option<(i32, i64)>,
    pub how: String,
    pub sources: Vec<SourceTime>,
}

impl CaptureTime {
    /// native + offset = ns since the origin, for input `source_id`.
    pub fn offset(&self, source_id: i32) -> Option<i64> {
        let s = self.sources.iter().find(|s| s.source_id == source_id)?;
        if let (Some(o), Some(u)) = (s.utc_offset_ns, self.origin_utc_ns) {
            return Some(o - u);
        }
        match self.native_source {
            Some((id, t0)) if id == source_id => Some(-t0),
            _ => None,
        }
    }
}

/// `2026-11-22T10:27:12.345678901Z`.
pub fn utc_text(ns: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

/// `window_start(t_ns, window_ns)`: the start of the window of width
/// `window_ns` that `t_ns` falls in (windows start at 0: the origin).
pub(crate) fn window_start_udf() -> datafusion::logical_expr::ScalarUDF {
    create_udf(
        "window_start",
        vec![DataType::Int64, DataType::Int64],
        DataType::Int64,
        Volatility::Immutable,
        Arc::new(|args: &[ColumnarValue]| {
            let arrays = ColumnarValue::values_to_arrays(args)?;
            let t = arrays[0].as_primitive::<Int64Type>();
            let w = arrays[1].as_primitive::<Int64Type>();
            let out: Int64Array = t
                .iter()
                .zip(w.iter())
                .map(|(t, w)| match (t, w) {
                    (Some(t), Some(w)) if w > 0 => Some(t - t.rem_euclid(w)),
                    _ => None,
                })
                .collect();
            Ok(ColumnarValue::Array(Arc::new(out)))
        }),
    )
}

/// A time range as users write it, in ns: on the capture clock (`A..B`,
/// seconds as `perf script` prints times) or, written `+A..+B`, since each
/// capture's origin (`--t0`; seconds as `report timeline` prints them).
/// Either side may be omitted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TimeRange {
    pub from_ns: Option<i64>,
    pub to_ns: Option<i64>,
    /// `+A..+B`: since the origin, not on the capture clock.
    pub since_origin: bool,
}

/// Parses `--time`: `START..END` in seconds on the capture clock, or
/// `+START..+END` in seconds since the origin ([`TimeRange`]).
pub fn parse_seconds_range(s: &str) -> Result<TimeRange> {
    parse_seconds_range_of("--time", s)
}

/// [`parse_seconds_range`] of the option `option` (named in errors).
pub fn parse_seconds_range_of(option: &str, s: &str) -> Result<TimeRange> {
    let Some((a, b)) = s.split_once("..") else {
        return Err(Error::Usage(format!(
            "{option} {s:?}: expected START..END (seconds as perf script prints times) or +START..+END (seconds since the origin, as report timeline prints them)"
        )));
    };
    // (value, written with a leading +)
    let p = |x: &str| -> Result<(Option<i64>, bool)> {
        let x = x.trim();
        let (rel, num) = match x.strip_prefix('+') {
            Some(n) => (true, n.trim()),
            None => (false, x),
        };
        if num.is_empty() {
            return if rel {
                Err(Error::Usage(format!(
                    "{option} {s:?}: a number must follow +"
                )))
            } else {
                Ok((None, false))
            };
        }
        match num.parse::<f64>() {
            Ok(v) if v.is_finite() => Ok((Some((v * 1e9).round() as i64), rel)),
            _ => Err(Error::Usage(format!(
                "{option}: {x:?} is not a number of seconds"
            ))),
        }
    };
    let ((from, ra), (to, rb)) = (p(a)?, p(b)?);
    let since_origin = ra || rb;
    if (from.is_some() && !ra && since_origin) || (to.is_some() && !rb && since_origin) {
        return Err(Error::Usage(format!(
            "{option} {s:?}: write both sides on the capture clock (A..B) or both since the origin (+A..+B)"
        )));
    }
    if let (Some(f), Some(t)) = (from, to) {
        if t <= f {
            return Err(Error::Usage(format!(
                "{option} {s:?}: the end must come after the start"
            )));
        }
    }
    Ok(TimeRange {
        from_ns: from,
        to_ns: to,
        since_origin,
    })
}

/// Parses a duration: `10ms`, `1s`, `500us`, `250ns`, `2m`, or plain
/// seconds.
pub fn parse_duration_ns(s: &str) -> Result<i64> {
    let t = s.trim();
    let (num, mul) = if let Some(v) = t.strip_suffix("ns") {
        (v, 1.0)
    } else if let Some(v) = t.strip_suffix("us") {
        (v, 1e3)
    } else if let Some(v) = t.strip_suffix("ms") {
        (v, 1e6)
    } else if let Some(v) = t.strip_suffix('s') {
        (v, 1e9)
    } else if let Some(v) = t.strip_suffix('m') {
        (v, 60e9)
    } else {
        (t, 1e9)
    };
    match num.trim().parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok((v * mul).round() as i64),
        _ => Err(Error::Usage(format!(
            "{s:?}: expected a duration such as 10ms, 1s, 500us or 2.5 (seconds)"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `--time`'s two forms, worked by hand: seconds on the capture clock,
    /// or written with `+`, since the origin; mixed forms are refused.
    #[test]
    fn time_ranges_are_written_two_ways() {
        let r = parse_seconds_range("1.5..2").unwrap();
        assert_eq!(
            (r.from_ns, r.to_ns, r.since_origin),
            (Some(1_500_000_000), Some(2_000_000_000), false)
        );
        let r = parse_seconds_range("+0.25..+1").unwrap();
        assert_eq!(
            (r.from_ns, r.to_ns, r.since_origin),
            (Some(250_000_000), Some(1_000_000_000), true)
        );
        let r = parse_seconds_range("..+3").unwrap();
        assert_eq!(
            (r.from_ns, r.to_ns, r.since_origin),
            (None, Some(3_000_000_000), true)
        );
        let r = parse_seconds_range("7..").unwrap();
        assert_eq!(
            (r.from_ns, r.to_ns, r.since_origin),
            (Some(7_000_000_000), None, false)
        );
        for bad in ["+1..2", "1..+2", "+..2", "2..1", "+2..+1", "a..b", "1-2"] {
            assert!(parse_seconds_range(bad).is_err(), "{bad}");
        }
    }
}
