//! The figures of power samples (Ono et al. 2015, sampling-based power
//! measurement): the energy of the power data as histograms (Fig. 6, 8)
//! and each sample's energy over time (Fig. 5, 7). The CLI's `report
//! power-samples --plot/--plot-time` draw them.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use trawl_query::datafusion::arrow::array::{Array, AsArray, RecordBatch};
use trawl_query::datafusion::arrow::compute::concat_batches;
use trawl_query::datafusion::arrow::datatypes::{Float64Type, Int64Type};
use trawl_query::datafusion::prelude::{col, lit};
use trawl_query::session::Session;

use crate::{energy_over_time, histograms, Image};

/// A column of `b` by name.
fn column<'a>(
    b: &'a RecordBatch,
    name: &str,
) -> Result<&'a trawl_query::datafusion::arrow::array::ArrayRef> {
    b.column_by_name(name)
        .with_context(|| format!("no column {name} in the result"))
}

/// Histograms of the energy of the power data (`power_data(...)` rows):
/// the best subset of `power_samples(...)`'s `summary` (most data within
/// ±10 % of the target, then the smallest mean error), then each
/// time-based grouping.
pub fn power_data(
    image: Image,
    summary: &[RecordBatch],
    data: &[RecordBatch],
    target_j: f64,
) -> Result<Vec<u8>> {
    let one = |b: &[RecordBatch]| -> Result<RecordBatch> {
        let schema = b.first().context("no rows")?.schema();
        Ok(concat_batches(&schema, b)?)
    };
    let (summary, data) = (&one(summary)?, &one(data)?);
    let method = trawl_query::string_values(column(summary, "method")?);
    let events = trawl_query::string_values(column(summary, "events")?);
    let w10 = column(summary, "within_10_pct")?.as_primitive::<Float64Type>();
    let err = column(summary, "mean_error_pct")?.as_primitive::<Float64Type>();
    let mut best: Option<(usize, f64, f64)> = None;
    let mut panels: Vec<String> = Vec::new();
    for i in 0..summary.num_rows() {
        if w10.is_null(i) {
            continue;
        }
        if method[i].as_deref() == Some("time") {
            panels.push(events[i].clone().unwrap_or_default());
        } else if best.is_none_or(|(_, w, e)| (w10.value(i), -err.value(i).abs()) > (w, -e.abs())) {
            best = Some((i, w10.value(i), err.value(i)));
        }
    }
    if let Some((i, _, _)) = best {
        panels.insert(0, events[i].clone().unwrap_or_default());
    }
    let hist: Vec<(String, Vec<f64>)> = panels
        .into_iter()
        .map(|p| {
            let v = trawl_query::power::datum_values(data, &p);
            (p, v)
        })
        .collect();
    histograms(image, "energy per power datum (J)", &hist, target_j)
}

/// `sample_rapl()` of the first capture of `s`: one panel per sampled
/// event (`time_event` first), joules over time (ms since the first sample
/// drawn).
pub async fn energy_per_sample(image: Image, s: &Session, time_event: &str) -> Result<Vec<u8>> {
    let cap = s
        .captures()
        .first()
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let rows = trawl_query::functions::call(s, "sample_rapl", &[])
        .await?
        .filter(col("capture").eq(lit(cap.as_str())))?
        .select_columns(&["event", "t_ns", "joules"])?
        .collect()
        .await?;
    let mut by: BTreeMap<String, Vec<(i64, f64)>> = Default::default();
    for b in &rows {
        let ev = trawl_query::string_values(column(b, "event")?);
        let t = column(b, "t_ns")?.as_primitive::<Int64Type>();
        let j = column(b, "joules")?.as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if let (Some(e), false, false) = (&ev[i], t.is_null(i), j.is_null(i)) {
                by.entry(e.clone())
                    .or_default()
                    .push((t.value(i), j.value(i)));
            }
        }
    }
    if by.is_empty() {
        bail!("no sample read a RAPL counter (power/energy-*): nothing to plot");
    }
    let t0 = by
        .values()
        .flat_map(|v| v.iter().map(|p| p.0))
        .min()
        .unwrap_or(0);
    let mut names: Vec<String> = by.keys().cloned().collect();
    names.sort_by_key(|n| (n != time_event, n.clone()));
    let panels: Vec<(String, Vec<(f64, f64)>)> = names
        .into_iter()
        .map(|n| {
            let pts = by[&n]
                .iter()
                .map(|&(t, j)| ((t - t0) as f64 / 1e6, j))
                .collect();
            (n, pts)
        })
        .collect();
    energy_over_time(
        image,
        &format!("{cap}: energy per sample over time"),
        &panels,
    )
}
