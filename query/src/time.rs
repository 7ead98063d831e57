//! Time alignment: the inputs of one capture on one relative time axis.
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
    ArrayRef, BooleanBuilder, Int32Builder, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::SchemaRef;
use datafusion::arrow::record_batch::RecordBatch;

pub use crate::clock::{
    parse_duration_ns, parse_seconds_range, parse_seconds_range_of, utc_text, CaptureTime, Origin,
    OriginKind, SourceTime, TimeRange,
};
use crate::error::{Error, Result};
use crate::rows::i64_at;
use crate::session::Session;
use datafusion::scalar::ScalarValue;

async fn rows(s: &Session, q: &str) -> Result<Vec<RecordBatch>> {
    Ok(s.sql(q).await?.collect().await?)
}

impl Session {
    /// Each capture's time origin and its inputs' offsets (computed on
    /// first use: it reads the earliest time of every input).
    pub async fn times(&self) -> Result<&[CaptureTime]> {
        self.shared
            .times
            .get_or_try_init(|| compute(self, &self.shared.origin))
            .await
            .map(Vec::as_slice)
    }
}

/// Which inputs' clock a time range is on: those holding perf samples or
/// traced calls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RowsOf {
    Samples,
    Calls,
}

impl RowsOf {
    /// The inputs holding such rows.
    fn inputs_query(self) -> &'static str {
        match self {
            RowsOf::Samples => "SELECT DISTINCT capture, source_id FROM perf_sample",
            RowsOf::Calls => "SELECT DISTINCT capture, source_id FROM syscall",
        }
    }
}

/// `r` in ns on the capture clock (`time_ns`), as the filters of the
/// analyses take it: as given, or for `+A..+B` (since the origin) moved by
/// the offset of the inputs of `captures` (all when empty) that hold
/// `rows`. A range since the origin needs those inputs on one time axis
/// with one offset: one capture, or captures whose origins are at the same
/// instant of their clock.
pub async fn on_clock(
    s: &Session,
    r: TimeRange,
    captures: &[String],
    rows: RowsOf,
) -> Result<(Option<i64>, Option<i64>)> {
    if !r.since_origin {
        return Ok((r.from_ns, r.to_ns));
    }
    let (o, _) = clock_offset(s, captures, rows, "--time").await?;
    let shift = |v: Option<i64>| v.map(|v| v.saturating_sub(o));
    Ok((shift(r.from_ns), shift(r.to_ns)))
}

/// `r` in ns since the origin (`t_ns`) for `capture`: as given for
/// `+A..+B`, else moved from the capture clock by the offset of its inputs
/// holding `rows`. A range that ends before their first row is refused
/// (seconds since the origin are written `+A..+B`). `option` is named in
/// errors.
pub async fn since_origin(
    s: &Session,
    r: TimeRange,
    capture: &str,
    rows: RowsOf,
    option: &str,
) -> Result<(Option<i64>, Option<i64>)> {
    if r.since_origin {
        return Ok((r.from_ns, r.to_ns));
    }
    let (o, first) = clock_offset(s, &[capture.to_string()], rows, option).await?;
    if let (Some(to), Some(first)) = (r.to_ns, first) {
        if to <= first {
            let secs = |t: i64| {
                format!(
                    "{}.{:06}",
                    t.div_euclid(1_000_000_000),
                    t.rem_euclid(1_000_000_000) / 1000
                )
            };
            return Err(Error::Usage(format!(
                "{option}: {}..{} ends before capture {capture}'s first {} at {} s on its clock (as perf script prints times); \
                 seconds since the origin are written +START..+END",
                r.from_ns.map(secs).unwrap_or_default(),
                secs(to),
                if rows == RowsOf::Samples { "sample" } else { "call" },
                secs(first),
            )));
        }
    }
    let shift = |v: Option<i64>| v.map(|v| v.saturating_add(o));
    Ok((shift(r.from_ns), shift(r.to_ns)))
}

/// The one offset (native + offset = `t_ns`) of the inputs of `captures`
/// (all when empty) that hold `rows` (0 when none does), and their
/// earliest native time.
async fn clock_offset(
    s: &Session,
    captures: &[String],
    rows: RowsOf,
    option: &str,
) -> Result<(i64, Option<i64>)> {
    let mut holding = std::collections::HashSet::new();
    for b in self::rows(s, rows.inputs_query()).await? {
        let cap = crate::rows::string_values(b.column(0));
        for (i, c) in cap.into_iter().enumerate() {
            if let (Some(c), Some(id)) = (c, i64_at(&b, 1, i)) {
                holding.insert((c, id as i32));
            }
        }
    }
    let mut offsets = std::collections::BTreeSet::new();
    let mut unplaced = Vec::new();
    let mut first: Option<i64> = None;
    for c in s.times().await? {
        if !captures.is_empty() && !captures.contains(&c.capture) {
            continue;
        }
        for src in &c.sources {
            if !holding.contains(&(c.capture.clone(), src.source_id)) {
                continue;
            }
            if let Some(f) = src.first_native {
                first = Some(first.map_or(f, |m| m.min(f)));
            }
            match c.offset(src.source_id) {
                Some(o) => {
                    offsets.insert(o);
                }
                None => unplaced.push(c.capture.clone()),
            }
        }
    }
    match (offsets.len(), unplaced.first()) {
        (0 | 1, None) => Ok((offsets.first().copied().unwrap_or(0), first)),
        (_, Some(c)) => Err(Error::Usage(format!(
            "{option}: +START..+END counts from the capture's origin, and capture {c} has inputs that are not on its time axis \
             (perf recorded without -k next to other inputs); give times on the capture clock (START..END, as perf script prints them) \
             or pick the origin with --t0 exec:COMMAND"
        ))),
        (n, None) => Err(Error::Usage(format!(
            "{option}: the two ways of writing times (START..END on the capture clock, as perf script prints them; +START..+END since \
             the origin, as report timeline prints them) differ by {n} different amounts across the selected captures; \
             pick one capture with --capture NAME, or write the times the other way"
        ))),
    }
}

/// Registers `time_base` (computed when a query first reads it), the
/// `*_t` views and `window_start`.
pub async fn register(s: &Session) -> Result<()> {
    s.register_derived(&trawl_capture::schema::TIME_BASE, |s| async move {
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
        s.define_views(stmt).await?;
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
        let cap = crate::rows::string_values(b.column(0));
        let clock = crate::rows::string_values(b.column(2));
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
        let cap = crate::rows::string_values(b.column(0));
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
            let cap = crate::rows::string_values(b.column(0));
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

fn time_base_schema() -> SchemaRef {
    trawl_capture::schema::TIME_BASE.capture_schema()
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

/// Fails unless some perf samples of `event` are on the captures' time
/// axis (perf recorded without `-k CLOCK` has no UTC reference; next to
/// other inputs its samples get no `t_ns`).
pub async fn require_aligned_samples(s: &Session, event: &str) -> Result<()> {
    let q = "SELECT count(*) AS n FROM perf_sample_t WHERE t_ns IS NOT NULL AND CAST(event AS VARCHAR) = $event";
    if crate::session::count(s, q, &[("event", ScalarValue::from(event))]).await? > 0 {
        return Ok(());
    }
    let mut msg = format!(
        "no {event} samples on the capture's time axis: record with `perf record -k CLOCK_MONOTONIC` so perf's times can be placed next to the other inputs' (see `source.clock`)"
    );
    if s.shared.origin.kind == crate::clock::OriginKind::First {
        // Counting each input from the program's exec needs no shared clock.
        let comm = crate::session::scalar(
            s,
            "SELECT comm FROM perf_sample GROUP BY comm ORDER BY count(*) DESC, comm LIMIT 1",
        )
        .await?
        .unwrap_or_else(|| "NAME".into());
        msg.push_str(&format!(
            ", or count every input's times from the program's exec: --t0 exec:{comm} (Python: trawl.open(..., t0=\"exec:{comm}\"))"
        ));
    }
    Err(Error::Usage(msg))
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
