//! The intervals a power model is fitted on: one row per window of a
//! domain's energy counter, with its watts and each event's rate.

use std::sync::Arc;

use datafusion::arrow::array::{ArrayRef, AsArray, Float64Builder, Int64Builder, RecordBatch};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::common::ScalarValue;

use crate::error::{Error, Result};
use crate::session::Session;

use super::inputs::{
    chain_params, series, text_list, COUNTER_INTERVALS, COUNTER_READS, SAMPLED_EVENTS,
};

/// Sum of the values in (a, b].
fn sum_in(v: &[(i64, f64)], a: i64, b: i64) -> f64 {
    let lo = v.partition_point(|x| x.0 <= a);
    let hi = v.partition_point(|x| x.0 <= b);
    v[lo..hi].iter().map(|x| x.1).sum()
}

/// What the model is fitted on.
#[derive(Clone, Debug)]
pub struct ModelInput {
    /// The events whose rates explain the power.
    pub events: Vec<String>,
    /// The energy domain (`cores`, `package`, …).
    pub domain: String,
    pub zones: Vec<String>,
    /// The samples whose counter reads give the rates (default: the event
    /// the chosen counter was read by, else the one with most samples).
    pub event: Option<String>,
    /// Intervals are merged until they span this (RAPL updates about
    /// every millisecond: shorter intervals are dominated by that step).
    pub window_ns: i64,
    /// The package whose counter and CPUs' samples are modelled (needed
    /// when the domain is read per package).
    pub package: Option<i32>,
}

/// What [`model_intervals`] used.
#[derive(Clone, Debug)]
pub struct ModelSource {
    pub event: String,
    pub chain: crate::rapl::Chain,
    /// Per model event: `read` (counter increase) or `sampled` (periods).
    pub how: Vec<(String, &'static str)>,
}

/// The intervals a model is fitted on (t_ns (end), seconds, joules, watts,
/// rate_1 … rate_k: events/s of `input.events` in order), one row per run
/// of consecutive counter intervals spanning `window_ns` (a last shorter
/// run is dropped), in time order.
pub async fn model_intervals(
    s: &Session,
    input: &ModelInput,
) -> Result<(ModelSource, RecordBatch)> {
    let event = match &input.event {
        Some(e) => e.clone(),
        None => {
            // The leader of the group that read the domain's counter.
            let lead = crate::session::scalar_with(
                s,
                "SELECT split_part(zone, '@', 2) FROM energy WHERE CAST(domain AS VARCHAR) = $domain AND zone LIKE '%@%' \
                 GROUP BY zone ORDER BY count(*) DESC, zone LIMIT 1",
                &[("domain", ScalarValue::from(input.domain.as_str()))],
            )
            .await?;
            match lead {
                Some(l) if !l.is_empty() => l,
                _ => crate::sample::choose_event(s, None).await?,
            }
        }
    };
    let crate::rapl::DomainCounter { chain, package } =
        crate::rapl::domain_counter(s, &event, &input.domain, &input.zones, input.package).await?;
    // Counter increases read at the event's samples.
    let params = [
        ("events", text_list(&input.events)),
        ("event", ScalarValue::from(event.as_str())),
        ("cap", ScalarValue::from(chain.capture.as_str())),
        ("package", ScalarValue::Int32(package)),
    ];
    let reads = series(s, COUNTER_READS, &params).await?;
    let sampled = series(
        s,
        SAMPLED_EVENTS,
        &[params[0].clone(), params[2].clone(), params[3].clone()],
    )
    .await?;
    let mut how = Vec::new();
    let mut src: Vec<&Vec<(i64, f64)>> = Vec::new();
    for e in &input.events {
        if let Some(v) = reads.get(e) {
            how.push((e.clone(), "read"));
            src.push(v);
        } else if let Some(v) = sampled.get(e) {
            how.push((e.clone(), "sampled"));
            src.push(v);
        } else {
            return Err(Error::Usage(format!(
                "event {e:?}: neither read at the {event} samples nor sampled in {}",
                chain.capture
            )));
        }
    }
    let iv = s
        .sql_with(COUNTER_INTERVALS, &chain_params(&chain, package))
        .await?
        .collect()
        .await?;
    let k = input.events.len();
    let mut t_col = Int64Builder::new();
    let mut sec = Float64Builder::new();
    let mut joules = Float64Builder::new();
    let mut watts = Float64Builder::new();
    let mut rates: Vec<Float64Builder> = (0..k).map(|_| Float64Builder::new()).collect();
    let mut n = 0;
    // Consecutive intervals merged until they span the window (a gap
    // between readings starts a new one).
    let mut open: Option<(i64, i64, f64)> = None;
    let mut emit = |(a, z, uj): (i64, i64, f64)| {
        let secs = (z - a) as f64 * 1e-9;
        t_col.append_value(z);
        sec.append_value(secs);
        joules.append_value(uj * 1e-6);
        watts.append_value(uj * 1e-6 / secs);
        for (j, v) in src.iter().enumerate() {
            rates[j].append_value(sum_in(v, a, z) / secs);
        }
        n += 1;
    };
    for b in &iv {
        let (t0, t1, uj) = (
            b.column(0).as_primitive::<Int64Type>(),
            b.column(1).as_primitive::<Int64Type>(),
            b.column(2).as_primitive::<Float64Type>(),
        );
        for i in 0..b.num_rows() {
            let (a, z, e) = (t0.value(i), t1.value(i), uj.value(i));
            open = match open {
                Some((oa, oz, oe)) if oz == a => Some((oa, z, oe + e)),
                Some(o) => {
                    emit(o);
                    Some((a, z, e))
                }
                None => Some((a, z, e)),
            };
            if let Some(o) = open {
                if o.1 - o.0 >= input.window_ns {
                    emit(o);
                    open = None;
                }
            }
        }
    }
    if n == 0 {
        return Err(Error::Usage(format!(
            "no intervals of {} on the samples' time axis",
            chain.zone
        )));
    }
    let names: Vec<String> = (1..=k).map(|j| format!("rate_{j}")).collect();
    let mut cols: Vec<(&str, ArrayRef)> = vec![
        ("t_ns", Arc::new(t_col.finish())),
        ("seconds", Arc::new(sec.finish())),
        ("joules", Arc::new(joules.finish())),
        ("watts", Arc::new(watts.finish())),
    ];
    for (name, mut r) in names.iter().zip(rates) {
        cols.push((name, Arc::new(r.finish())));
    }
    let batch = crate::rows::batch_of(cols)?;
    Ok((ModelSource { event, chain, how }, batch))
}
