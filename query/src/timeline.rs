//! Time series profiles (issue 5): samples per time window and function
//! (or module, process), the top N keys of the capture and the rest as
//! `[other]`, with each key's share of the window.

use datafusion::prelude::{ident, lit, DataFrame};

use crate::memory::quote;
use crate::{Error, Result, Session};

/// What the timeline is broken down by.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimelineKey {
    /// The leaf function (exclusive time).
    Function,
    /// The leaf's module.
    Module,
    /// `comm[pid]`.
    Process,
}

impl TimelineKey {
    fn sql(self) -> &'static str {
        match self {
            TimelineKey::Function => "COALESCE(l.function, '[unknown]')",
            TimelineKey::Module => "COALESCE(l.module, '[unknown]')",
            TimelineKey::Process => {
                "concat(COALESCE(CAST(x.comm AS VARCHAR), '?'), '[', CAST(x.pid AS VARCHAR), ']')"
            }
        }
    }
}

/// Rows: capture, window_start_s, key (named `by`), samples, cost (the
/// period sum) and share_pct (of the window's cost), windows of
/// `window_ns` from the origin; `event` defaults to the event with most
/// samples. With `lbr`, the samples are `lbr_samples(method)`: every
/// sample and its branch entries' pseudo-samples, cost their weight in
/// ns, and a last column `method`.
pub async fn timeline(
    s: &Session,
    window_ns: i64,
    key: TimelineKey,
    top: usize,
    event: Option<&str>,
    lbr: Option<crate::lbr::Method>,
) -> Result<(DataFrame, String)> {
    if window_ns <= 0 {
        return Err(Error::Usage("--window must be > 0".into()));
    }
    let event = crate::analyses::choose_event(s, event).await?;
    crate::time::require_aligned_samples(s, &event).await?;
    let name = match key {
        TimelineKey::Function => "function",
        TimelineKey::Module => "module",
        TimelineKey::Process => "process",
    };
    let Some(m) = lbr else {
        let args = [
            lit(window_ns),
            lit("by"),
            lit(name),
            lit("top"),
            lit(top as i64),
            lit("event"),
            lit(event.as_str()),
        ];
        let df = crate::analyses::call(s, "timeline", &args).await?;
        let cols = [
            "capture",
            "window_start_s",
            "key",
            "samples",
            "cost",
            "share_pct",
        ]
        .map(|c| {
            if c == "key" {
                ident(c).alias(name)
            } else {
                ident(c)
            }
        });
        return Ok((df.select(cols)?, event));
    };
    // With branch entries as samples: lbr_samples(METHOD) in place of
    // perf_sample_t (its method is an argument of a table function the
    // SQL reads, which a parameter cannot give).
    let (from, cost, method) = match Some(m) {
        None => (
            "perf_sample_t".to_string(),
            "COALESCE(x.period, 1)",
            String::new(),
        ),
        Some(m) => (
            format!("lbr_samples({})", m.sql()),
            "x.weight_ns",
            format!(", {} AS method", quote(m.sql().trim_matches('\''))),
        ),
    };
    let q = format!(
        "WITH k AS ( \
           SELECT x.capture, window_start(x.t_ns, {w}) AS w, {key} AS key, {cost} AS cost \
           FROM {from} x \
           LEFT JOIN stack_entry l ON l.capture = x.capture AND l.stack_id = x.stack_id AND l.pos = 0 \
           WHERE CAST(x.event AS VARCHAR) = {e} AND x.t_ns IS NOT NULL), \
         tot AS (SELECT capture, key, sum(cost) AS c FROM k GROUP BY capture, key), \
         top AS (SELECT capture, key FROM ( \
           SELECT capture, key, row_number() OVER (PARTITION BY capture ORDER BY c DESC, key) AS rn FROM tot) \
           WHERE rn <= {top}), \
         g AS (SELECT k.capture, k.w, COALESCE(top.key, '[other]') AS key, count(*) AS samples, \
                 CAST(sum(k.cost) AS BIGINT) AS cost \
           FROM k LEFT JOIN top ON top.capture = k.capture AND top.key = k.key \
           GROUP BY k.capture, k.w, COALESCE(top.key, '[other]')) \
         SELECT capture, CAST(w AS DOUBLE) / 1e9 AS window_start_s, key AS {name}, samples, cost, \
           round(100.0 * cost / sum(cost) OVER (PARTITION BY capture, w), 2) AS share_pct{method} \
         FROM g ORDER BY capture, w, cost DESC, key",
        w = window_ns,
        key = key.sql(),
        e = quote(&event),
    );
    Ok((s.sql(&q).await?, event))
}
