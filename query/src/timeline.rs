//! Time series profiles (Ono et al. 2014, time-series performance
//! analysis): samples per time window and function (or module, process),
//! the top N keys of the capture and the rest as `[other]`, with each key's
//! share of the window.

use datafusion::prelude::{ident, lit, DataFrame};

use crate::error::{Error, Result};
use crate::session::Session;
use datafusion::arrow::record_batch::RecordBatch;

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

/// Rows: capture, window_start_s, key (named `by`), samples, cost (the
/// period sum) and share_pct (of the window's cost), windows of
/// `window_ns` from the origin; `event` defaults to the event with most
/// samples. With `lbr`, the samples are `lbr_samples(method)`: every
/// sample and its branch entries' pseudo-samples, cost their weight in
/// ns, and a last column `method`. `only` narrows the samples to
/// processes, threads, commands, a time range and captures (its event is
/// not read; not with `lbr`).
pub async fn timeline(
    s: &Session,
    window_ns: i64,
    key: TimelineKey,
    top: usize,
    event: Option<&str>,
    lbr: Option<crate::lbr::Method>,
    only: &crate::sample::SampleFilter,
) -> Result<(DataFrame, String)> {
    if window_ns <= 0 {
        return Err(Error::Usage("--window must be > 0".into()));
    }
    let narrowed = !(only.pids.is_empty()
        && only.tids.is_empty()
        && only.comms.is_empty()
        && only.captures.is_empty()
        && only.time_from_ns.is_none()
        && only.time_to_ns.is_none());
    if lbr.is_some() && narrowed {
        return Err(Error::Usage(
            "--pid, --tid, --comm, --time and --capture do not apply with --lbr".into(),
        ));
    }
    let event = crate::sample::choose_event(s, event).await?;
    crate::time::require_aligned_samples(s, &event).await?;
    let name = crate::choice::Choice::name(key);
    let mut cols = vec![
        ident("capture"),
        ident("window_start_s"),
        ident("key").alias(name),
        ident("samples"),
        ident("cost"),
        ident("share_pct"),
    ];
    let mut args = vec![lit(window_ns)];
    let f = match lbr {
        None => "timeline",
        Some(m) => {
            // Branch entries as samples: the points of lbr_samples(method).
            args.push(lit(m.name()));
            cols.push(ident("method"));
            "lbr_timeline"
        }
    };
    args.extend([
        lit("by"),
        lit(name),
        lit("top"),
        lit(top as i64),
        lit("event"),
        lit(event.as_str()),
    ]);
    only.selection_args(&mut args);
    let df = crate::functions::call(s, f, &args).await?;
    Ok((df.select(cols)?, event))
}

/// One capture's timeline rows as a grid for a stacked plot: every window
/// from the first to the last (empty ones included), the keys by their
/// summed share with `[other]` last, and each key's share per window.
#[derive(Clone, Debug, PartialEq)]
pub struct Grid {
    /// Window starts, s.
    pub windows: Vec<f64>,
    pub keys: Vec<String>,
    /// `pct[key][window]`.
    pub pct: Vec<Vec<f64>>,
}

/// The [`Grid`] of `capture` in the rows of [`timeline`] (windows
/// `window_ns` wide); None when it has no rows.
pub fn grid(batches: &[RecordBatch], capture: &str, window_ns: i64) -> Option<Grid> {
    let mut cells: Vec<(f64, String, f64)> = Vec::new();
    for b in batches {
        let cap = crate::rows::string_values(b.column(0));
        let w = crate::rows::float_values(b.column(1));
        let k = crate::rows::string_values(b.column(2));
        let pct = crate::rows::float_values(b.column(5));
        for i in 0..b.num_rows() {
            if cap[i].as_deref() == Some(capture) {
                cells.push((
                    w[i].unwrap_or(0.0),
                    k[i].clone().unwrap_or_default(),
                    pct[i].unwrap_or(0.0),
                ));
            }
        }
    }
    if cells.is_empty() {
        return None;
    }
    let width = window_ns as f64 / 1e9;
    let lo = cells.iter().map(|c| c.0).fold(f64::INFINITY, f64::min);
    let hi = cells.iter().map(|c| c.0).fold(f64::NEG_INFINITY, f64::max);
    let n = ((hi - lo) / width).round() as usize + 1;
    let windows: Vec<f64> = (0..n).map(|i| lo + i as f64 * width).collect();
    let mut keys: Vec<(String, f64)> = Vec::new();
    for (_, k, p) in &cells {
        match keys.iter_mut().find(|x| &x.0 == k) {
            Some(x) => x.1 += p,
            None => keys.push((k.clone(), *p)),
        }
    }
    keys.sort_by(|a, b| {
        (a.0 == "[other]")
            .cmp(&(b.0 == "[other]"))
            .then(b.1.total_cmp(&a.1))
            .then(a.0.cmp(&b.0))
    });
    let mut pct = vec![vec![0.0; n]; keys.len()];
    for (w, k, p) in &cells {
        let i = (((w - lo) / width).round() as usize).min(n - 1);
        let j = keys.iter().position(|x| &x.0 == k).unwrap_or(0);
        pct[j][i] += p;
    }
    Some(Grid {
        windows,
        keys: keys.into_iter().map(|k| k.0).collect(),
        pct,
    })
}

impl crate::choice::Choice for TimelineKey {
    const ALL: &'static [Self] = &[Self::Function, Self::Module, Self::Process];
    fn name(self) -> &'static str {
        match self {
            Self::Function => "function",
            Self::Module => "module",
            Self::Process => "process",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            Self::Function => "the leaf function (exclusive time)",
            Self::Module => "the leaf's module",
            Self::Process => "comm[pid]",
        }
    }
}
