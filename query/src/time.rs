//! Time alignment (issue 5): the inputs of one capture on one relative
//! time axis.
//!
//! Every table keeps its native times (`perf_sample.time_ns` on perf's
//! clock, `syscall.time_ns` on strace's, `metric.time_ns` on the monitoring
//! tool's). `source.utc_offset_ns` (and `metric.utc_ns`) place them on UTC
//! where the input says how; the [`Origin`] the user picks (`--t0`) is one
//! instant per capture, and `t_ns` = ns since it. The session exposes:
//!
//! - `time_base`: per capture and input, the clock, `offset_ns` (native +
//!   offset = `t_ns`; null when the input cannot be placed on the capture's
//!   axis), the origin in UTC and how it was found;
//! - `perf_sample_t`, `syscall_t`, `metric_t`, `energy_t`: the tables
//!   with `t_ns`;
//! - `window_start(t_ns, window_ns)`: the start of the window `t_ns` falls
//!   in (windows start at the origin).

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, BooleanBuilder, Int32Builder, Int64Array, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Int64Type, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::logical_expr::{create_udf, ColumnarValue, Volatility};

use crate::{Error, Result, Session};
use datafusion::scalar::ScalarValue;

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

async fn rows(s: &Session, q: &str) -> Result<Vec<RecordBatch>> {
    Ok(s.sql(q).await?.collect().await?)
}

/// Row `i` of column `col` as i64 (cast), `None` when null.
pub(crate) fn i64_at(b: &RecordBatch, col: usize, i: usize) -> Option<i64> {
    let c = datafusion::arrow::compute::cast(b.column(col), &DataType::Int64).ok()?;
    let c = c.as_primitive::<Int64Type>();
    (!c.is_null(i)).then(|| c.value(i))
}

/// Registers `time_base` (computed when a query first reads it), the
/// `*_t` views and `window_start`.
pub async fn register(s: &Session) -> Result<()> {
    s.register_lazy("time_base", time_base_schema(), |s| async move {
        Ok(vec![time_base_batch(s.times().await?)?])
    })?;
    for stmt in [
        "CREATE VIEW perf_sample_t AS SELECT x.*, x.time_ns + b.offset_ns AS t_ns \
         FROM perf_sample x JOIN time_base b ON x.capture = b.capture AND x.source_id = b.source_id",
        "CREATE VIEW syscall_t AS SELECT x.*, x.time_ns + b.offset_ns AS t_ns \
         FROM syscall x JOIN time_base b ON x.capture = b.capture AND x.source_id = b.source_id",
        "CREATE VIEW energy_t AS SELECT x.*, x.time_ns + b.offset_ns AS t_ns \
         FROM energy x JOIN time_base b ON x.capture = b.capture AND x.source_id = b.source_id",
        "CREATE VIEW metric_t AS SELECT x.*, \
           CASE WHEN x.utc_ns IS NOT NULL AND b.origin_utc_ns IS NOT NULL THEN x.utc_ns - b.origin_utc_ns \
                ELSE x.time_ns + b.offset_ns END AS t_ns \
         FROM metric x JOIN time_base b ON x.capture = b.capture AND x.source_id = b.source_id",
    ] {
        s.ctx.sql(stmt).await?;
    }
    Ok(())
}

/// Each capture's origin and its inputs' offsets.
pub(crate) async fn compute(s: &Session, origin: &Origin) -> Result<Vec<CaptureTime>> {
    let mut caps: BTreeMap<String, CaptureTime> = s
        .captures()
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                CaptureTime {
                    capture: c.name.clone(),
                    origin_utc_ns: None,
                    native_source: None,
                    how: String::new(),
                    sources: Vec::new(),
                },
            )
        })
        .collect();
    for b in rows(
        s,
        "SELECT capture, source_id, clock, utc_offset_ns FROM source ORDER BY capture, source_id",
    )
    .await?
    {
        let cap = crate::string_values(b.column(0));
        let clock = crate::string_values(b.column(2));
        for i in 0..b.num_rows() {
            let Some(c) = cap[i].as_ref().and_then(|n| caps.get_mut(n)) else {
                continue;
            };
            c.sources.push(SourceTime {
                source_id: i64_at(&b, 1, i).unwrap_or(0) as i32,
                clock: clock[i].clone().unwrap_or_default(),
                utc_offset_ns: i64_at(&b, 3, i),
                first_native: None,
                first_utc: None,
            });
        }
    }
    // Earliest times per input.
    let firsts = "SELECT capture, source_id, min(time_ns) AS n, CAST(NULL AS BIGINT) AS u FROM perf_sample GROUP BY 1, 2 \
         UNION ALL SELECT capture, source_id, min(time_ns), CAST(NULL AS BIGINT) FROM syscall GROUP BY 1, 2 \
         UNION ALL SELECT capture, source_id, min(time_ns), min(utc_ns) FROM metric GROUP BY 1, 2 \
         UNION ALL SELECT capture, source_id, min(time_ns), CAST(NULL AS BIGINT) FROM energy GROUP BY 1, 2";
    for b in rows(s, firsts).await? {
        let cap = crate::string_values(b.column(0));
        for i in 0..b.num_rows() {
            let Some(c) = cap[i].as_ref().and_then(|n| caps.get_mut(n)) else {
                continue;
            };
            let id = i64_at(&b, 1, i).unwrap_or(0) as i32;
            let Some(src) = c.sources.iter_mut().find(|x| x.source_id == id) else {
                continue;
            };
            let (n, u) = (i64_at(&b, 2, i), i64_at(&b, 3, i));
            if let Some(n) = n {
                src.first_native = Some(src.first_native.map_or(n, |m: i64| m.min(n)));
                if let Some(o) = src.utc_offset_ns {
                    let v = n + o;
                    src.first_utc = Some(src.first_utc.map_or(v, |m: i64| m.min(v)));
                }
            }
            if let Some(u) = u {
                src.first_utc = Some(src.first_utc.map_or(u, |m: i64| m.min(u)));
            }
        }
    }
    // Exec events per input, as (capture, source_id, native ns).
    let mut execs: Vec<(String, i32, i64)> = Vec::new();
    if let OriginKind::Exec(name) = &origin.kind {
        // perf's comm is the first 15 bytes of the name.
        let comm: String = name.chars().take(15).collect();
        let q = "SELECT capture, source_id, min(time_ns) FROM perf_task_event \
               WHERE CAST(kind AS VARCHAR) = 'exec' AND comm = $comm AND time_ns IS NOT NULL GROUP BY 1, 2 \
             UNION ALL SELECT capture, source_id, min(time_ns) FROM syscall \
               WHERE CAST(name AS VARCHAR) IN ('execve', 'execveat') AND retval = 0 AND time_ns IS NOT NULL \
                 AND (starts_with(args, $p1) OR strpos(args, $p2) > 0) GROUP BY 1, 2";
        let params = [
            ("comm", ScalarValue::from(comm.as_str())),
            ("p1", ScalarValue::from(format!("\"{name}\""))),
            ("p2", ScalarValue::from(format!("/{name}\""))),
        ];
        for b in s.sql_with(q, &params).await?.collect().await? {
            let cap = crate::string_values(b.column(0));
            for i in 0..b.num_rows() {
                if let (Some(c), Some(t)) = (cap[i].clone(), i64_at(&b, 2, i)) {
                    execs.push((c, i64_at(&b, 1, i).unwrap_or(0) as i32, t));
                }
            }
        }
    }
    for c in caps.values_mut() {
        let cands: Vec<(i32, i64)> = match &origin.kind {
            OriginKind::First => c
                .sources
                .iter()
                .filter_map(|x| x.first_native.map(|n| (x.source_id, n)))
                .collect(),
            OriginKind::Exec(_) => execs
                .iter()
                .filter(|(n, _, _)| *n == c.capture)
                .map(|(_, id, t)| (*id, *t))
                .collect(),
            OriginKind::Utc(u) => {
                c.origin_utc_ns = Some(u + origin.offset_ns);
                c.how = format!("{} (given)", utc_text(*u));
                continue;
            }
        };
        let what = match &origin.kind {
            OriginKind::Exec(n) => format!("exec of {n}"),
            _ => "first event".to_string(),
        };
        // In UTC where the input can be placed there (metric inputs by
        // their own utc_ns).
        let on_utc = |id: i32, t: i64| -> Option<i64> {
            let src = c.sources.iter().find(|x| x.source_id == id)?;
            match src.utc_offset_ns {
                Some(o) => Some(t + o),
                None if matches!(origin.kind, OriginKind::First) => src.first_utc,
                None => None,
            }
        };
        let best_utc = cands
            .iter()
            .filter_map(|&(id, t)| on_utc(id, t).map(|u| (u, id)))
            .min();
        if let Some((u, id)) = best_utc {
            c.origin_utc_ns = Some(u + origin.offset_ns);
            c.how = format!("{what}, input {id}: {}", utc_text(u));
        } else if let Some(&(id, t)) = cands.iter().min_by_key(|(id, _)| *id) {
            c.native_source = Some((id, t + origin.offset_ns));
            c.how = format!("{what}, input {id} (its own clock: no UTC reference)");
        } else if let OriginKind::Exec(n) = &origin.kind {
            return Err(Error::Usage(format!(
                "--t0 exec:{n}: capture {} has no exec of {n} (perf COMM exec records, strace execve calls with times)",
                c.capture
            )));
        } else {
            c.how = "no timed events".into();
        }
        if origin.offset_ns != 0 {
            c.how += &format!(" {:+} s", origin.offset_ns as f64 / 1e9);
        }
    }
    Ok(caps.into_values().collect())
}

/// `2026-11-22T10:27:12.345678901Z`.
pub fn utc_text(ns: i64) -> String {
    chrono::DateTime::from_timestamp_nanos(ns).to_rfc3339_opts(chrono::SecondsFormat::AutoSi, true)
}

fn time_base_schema() -> SchemaRef {
    trawl_capture::schema::TIME_BASE.session_schema()
}

fn time_base_batch(caps: &[CaptureTime]) -> Result<RecordBatch> {
    let mut cap = StringBuilder::new();
    let mut id = Int32Builder::new();
    let mut clock = StringBuilder::new();
    let mut off = Int64Builder::new();
    let mut aligned = BooleanBuilder::new();
    let mut origin = Int64Builder::new();
    let mut how = StringBuilder::new();
    for c in caps {
        for src in &c.sources {
            cap.append_value(&c.capture);
            id.append_value(src.source_id);
            clock.append_value(&src.clock);
            let o = c.offset(src.source_id);
            off.append_option(o);
            // Metric inputs with local times carry utc_ns per row.
            let per_row = src.clock.starts_with("local") && src.first_utc.is_some();
            aligned.append_value(o.is_some() || (per_row && c.origin_utc_ns.is_some()));
            origin.append_option(c.origin_utc_ns);
            how.append_value(&c.how);
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(cap.finish()),
        Arc::new(id.finish()),
        Arc::new(clock.finish()),
        Arc::new(off.finish()),
        Arc::new(aligned.finish()),
        Arc::new(origin.finish()),
        Arc::new(how.finish()),
    ];
    Ok(RecordBatch::try_new(time_base_schema(), cols)
        .map_err(datafusion::error::DataFusionError::from)?)
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

/// Fails unless some perf samples of `event` are on the captures' time
/// axis (perf recorded without `-k CLOCK` has no UTC reference; next to
/// other inputs its samples get no `t_ns`).
pub async fn require_aligned_samples(s: &Session, event: &str) -> Result<()> {
    let q = "SELECT CAST(count(*) AS VARCHAR) AS n FROM perf_sample_t WHERE t_ns IS NOT NULL AND CAST(event AS VARCHAR) = $event";
    match crate::memory::scalar_with(s, q, &[("event", ScalarValue::from(event))])
        .await?
        .as_deref()
    {
        Some("0") | None => Err(Error::Usage(format!(
            "no {event} samples on the capture's time axis: record with `perf record -k CLOCK_MONOTONIC` so perf's times can be placed next to the other inputs' (see `source.clock`)"
        ))),
        _ => Ok(()),
    }
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

    #[test]
    fn origins_parse() {
        assert_eq!(Origin::parse("first").unwrap(), Origin::default());
        assert_eq!(
            Origin::parse("exec:my-app+1.5").unwrap(),
            Origin {
                kind: OriginKind::Exec("my-app".into()),
                offset_ns: 1_500_000_000
            }
        );
        assert_eq!(
            Origin::parse("@1763807232.5").unwrap().kind,
            OriginKind::Utc(1_763_807_232_500_000_000)
        );
        assert_eq!(
            Origin::parse("2026-11-22T10:27:12+01:00-2").unwrap(),
            Origin {
                kind: OriginKind::Utc(
                    chrono::DateTime::parse_from_rfc3339("2026-11-22T09:27:12Z")
                        .unwrap()
                        .timestamp_nanos_opt()
                        .unwrap()
                ),
                offset_ns: -2_000_000_000
            }
        );
        assert!(Origin::parse("exec:").is_err());
        assert!(Origin::parse("yesterday").is_err());
        assert_eq!(parse_duration_ns("10ms").unwrap(), 10_000_000);
        assert_eq!(parse_duration_ns("1.5").unwrap(), 1_500_000_000);
        assert!(parse_duration_ns("-1s").is_err());
    }
}
