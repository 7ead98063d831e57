//! Energy-based samples: samples of several events merged in time order
//! and cut into runs whose modelled energy reaches a target, against runs
//! of N time-based samples.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{AsArray, Float64Builder, Int64Builder, RecordBatch, StringBuilder};
use datafusion::arrow::datatypes::{Float64Type, Int64Type};
use datafusion::common::ScalarValue;

use crate::error::{Error, Result};
use crate::session::Session;

use super::inputs::{chain_params, series, text_list, COUNTER_CURVE, SAMPLED_EVENTS};

/// The model that says what each sample is worth: J per event, W always.
#[derive(Clone, Debug, Default)]
pub struct Model {
    pub intercept_w: f64,
    pub coef: BTreeMap<String, f64>,
}

impl Model {
    /// The model given as `EVENT=JOULES` coefficients and a constant power;
    /// None when no coefficient is given (the model is then fitted).
    pub fn given(coef: &[String], intercept_w: f64) -> Result<Option<Model>> {
        let mut model = Model {
            intercept_w,
            ..Default::default()
        };
        for c in coef {
            let (e, v) = c
                .rsplit_once('=')
                .ok_or_else(|| Error::Usage(format!("coef {c:?}: expected EVENT=JOULES")))?;
            let v: f64 = v
                .parse()
                .ok()
                .filter(|v: &f64| v.is_finite())
                .ok_or_else(|| Error::Usage(format!("coef {c:?}: {v:?} is not a number")))?;
            model.coef.insert(e.to_string(), v);
        }
        Ok((!model.coef.is_empty()).then_some(model))
    }
}

/// What [`power_samples`] merges.
#[derive(Clone, Debug)]
pub struct PowerSamplesInput {
    /// Sampled events to merge (every subset is tried).
    pub events: Vec<String>,
    /// The time-based event compared (`cpu-clock`).
    pub time_event: String,
    pub target_j: f64,
    /// Time-based runs of this many samples, besides the best count.
    pub group: Option<usize>,
    pub model: Model,
    pub domain: String,
    pub zones: Vec<String>,
    /// See [`super::ModelInput::package`].
    pub package: Option<i32>,
}

/// The cumulative energy of one counter, interpolated between readings.
struct Curve(Vec<(i64, f64)>);

impl Curve {
    fn at(&self, t: i64) -> Option<f64> {
        let v = &self.0;
        let i = v.partition_point(|x| x.0 < t);
        if i < v.len() && v[i].0 == t {
            return Some(v[i].1);
        }
        if i == 0 || i == v.len() {
            return None;
        }
        let ((a, ea), (b, eb)) = (v[i - 1], v[i]);
        Some(ea + (eb - ea) * (t - a) as f64 / (b - a) as f64)
    }
}

/// One power datum.
struct Datum {
    start: i64,
    end: i64,
    samples: i64,
    predicted: f64,
}

/// Every subset of `events` (non-empty), largest first.
fn subsets(events: &[String]) -> Vec<Vec<String>> {
    let n = events.len();
    let mut out: Vec<Vec<String>> = (1..(1u32 << n))
        .map(|m| {
            (0..n)
                .filter(|i| m & (1 << i) != 0)
                .map(|i| events[i].clone())
                .collect()
        })
        .collect();
    out.sort_by(|a, b| b.len().cmp(&a.len()).then(a.cmp(b)));
    out
}

/// Runs of merged samples whose modelled energy comes closest to
/// `target`: each sample of event e adds coef_e × its period, and the
/// intercept adds intercept × the time since the previous sample. A run
/// ends at the sample that takes it past the target when that leaves it
/// nearer the target than stopping before, else at the previous sample.
/// The first sample opens the first run; a last run that does not reach
/// the target is dropped.
fn energy_runs(merged: &[(i64, f64)], intercept: f64, target: f64) -> Vec<Datum> {
    let mut out = Vec::new();
    let Some(&(mut start, _)) = merged.first() else {
        return out;
    };
    let (mut acc, mut prev, mut n) = (0.0, start, 0);
    for &(t, pred) in &merged[1..] {
        let add = pred + intercept * (t - prev) as f64 * 1e-9;
        if acc + add >= target && n > 0 && target - acc < acc + add - target {
            // Stopping before this sample is nearer the target.
            out.push(Datum {
                start,
                end: prev,
                samples: n,
                predicted: acc,
            });
            (start, acc, n) = (prev, 0.0, 0);
        }
        acc += add;
        prev = t;
        n += 1;
        if acc >= target {
            out.push(Datum {
                start,
                end: t,
                samples: n,
                predicted: acc,
            });
            (start, acc, n) = (t, 0.0, 0);
        }
    }
    out
}

/// Runs of `n` consecutive samples.
fn count_runs(times: &[i64], n: usize) -> Vec<Datum> {
    let mut out = Vec::new();
    let mut i = 0;
    while i + n < times.len() {
        out.push(Datum {
            start: times[i],
            end: times[i + n],
            samples: n as i64,
            predicted: f64::NAN,
        });
        i += n;
    }
    out
}

/// Merges the samples of every subset of the events into power data and
/// groups the time-based samples N at a time; returns the summary per
/// method and subset (data, mean, standard deviation, share within ±5 %
/// and ±10 % of the target, mean error) and the power data (method,
/// events, n_events, datum, t_start_ns, t_end_ns, samples, predicted_j,
/// measured_j).
pub async fn power_samples(
    s: &Session,
    input: &PowerSamplesInput,
) -> Result<(RecordBatch, RecordBatch)> {
    let crate::rapl::DomainCounter { chain, package } = crate::rapl::domain_counter(
        s,
        &input.time_event,
        &input.domain,
        &input.zones,
        input.package,
    )
    .await?;
    let mut curve = Vec::new();
    let mut cum = 0.0;
    for b in s
        .sql_with(COUNTER_CURVE, &chain_params(&chain, package))
        .await?
        .collect()
        .await?
    {
        let t = b.column(0).as_primitive::<Int64Type>();
        let uj = b.column(1).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            cum += uj.value(i) * 1e-6;
            curve.push((t.value(i), cum));
        }
    }
    let curve = Curve(curve);
    let mut names = input.events.clone();
    names.push(input.time_event.clone());
    let samples = series(
        s,
        SAMPLED_EVENTS,
        &[
            ("events", text_list(&names)),
            ("cap", ScalarValue::from(chain.capture.as_str())),
            ("package", ScalarValue::Int32(package)),
        ],
    )
    .await?;
    for e in &input.events {
        if !samples.contains_key(e) {
            return Err(Error::Usage(format!(
                "no samples of {e} on the capture's time axis"
            )));
        }
        if !input.model.coef.contains_key(e) {
            return Err(Error::Usage(format!("no model coefficient for {e}")));
        }
    }
    let p = input.target_j;
    // (method, events, n_events, runs)
    let mut sets: Vec<(String, String, i64, Vec<Datum>)> = Vec::new();
    for sub in subsets(&input.events) {
        let mut merged: Vec<(i64, f64)> = sub
            .iter()
            .flat_map(|e| {
                let c = input.model.coef[e];
                samples[e].iter().map(move |&(t, period)| (t, c * period))
            })
            .collect();
        merged.sort_by_key(|x| x.0);
        sets.push((
            "events".into(),
            sub.join(","),
            sub.len() as i64,
            energy_runs(&merged, input.model.intercept_w, p),
        ));
    }
    if let Some(times) = samples.get(&input.time_event) {
        let times: Vec<i64> = times.iter().map(|x| x.0).collect();
        if times.len() > 1 {
            let per = curve
                .at(times[times.len() - 1])
                .zip(curve.at(times[0]))
                .map(|(b, a)| (b - a) / (times.len() - 1) as f64);
            let mut ns: Vec<usize> = Vec::new();
            if let Some(per) = per.filter(|x| *x > 0.0) {
                ns.push(((p / per).round() as usize).max(1));
            }
            if let Some(g) = input.group {
                if !ns.contains(&g) {
                    ns.push(g);
                }
            }
            for n in ns {
                sets.push((
                    "time".into(),
                    format!("{} x{n}", input.time_event),
                    1,
                    count_runs(&times, n),
                ));
            }
        }
    }
    // The data rows and the summary.
    let (mut m, mut ev, mut ne, mut di, mut ts, mut te, mut ns, mut pr, mut me) = (
        StringBuilder::new(),
        StringBuilder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
    );
    let (
        mut sm,
        mut sev,
        mut sne,
        mut sn,
        mut smean,
        mut ssd,
        mut s5,
        mut s10,
        mut serr,
        mut sspan,
    ) = (
        StringBuilder::new(),
        StringBuilder::new(),
        Int64Builder::new(),
        Int64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
    );
    for (method, events, n_events, runs) in &sets {
        let mut vals = Vec::new();
        for (k, d) in runs.iter().enumerate() {
            let Some(j) = curve.at(d.end).zip(curve.at(d.start)).map(|(b, a)| b - a) else {
                continue;
            };
            vals.push(j);
            m.append_value(method);
            ev.append_value(events);
            ne.append_value(*n_events);
            di.append_value(k as i64);
            ts.append_value(d.start);
            te.append_value(d.end);
            ns.append_value(d.samples);
            pr.append_option(d.predicted.is_finite().then_some(d.predicted));
            me.append_value(j);
        }
        let n = vals.len();
        sm.append_value(method);
        sev.append_value(events);
        sne.append_value(*n_events);
        sn.append_value(n as i64);
        if n == 0 {
            for b in [
                &mut smean, &mut ssd, &mut s5, &mut s10, &mut serr, &mut sspan,
            ] {
                b.append_null();
            }
            continue;
        }
        let mean = vals.iter().sum::<f64>() / n as f64;
        let sd = if n > 1 {
            (vals.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
        } else {
            0.0
        };
        let within = |f: f64| {
            100.0
                * vals
                    .iter()
                    .filter(|v| (*v - p).abs() <= f * p + 1e-12)
                    .count() as f64
                / n as f64
        };
        smean.append_value(mean);
        ssd.append_value(sd);
        s5.append_value(within(0.05));
        s10.append_value(within(0.10));
        serr.append_value(100.0 * (mean - p) / p);
        let span: f64 =
            runs.iter().map(|d| (d.end - d.start) as f64).sum::<f64>() / runs.len() as f64 * 1e-6;
        sspan.append_value(span);
    }
    let batch = crate::rows::batch_of(vec![
        ("method", Arc::new(m.finish())),
        ("events", Arc::new(ev.finish())),
        ("n_events", Arc::new(ne.finish())),
        ("datum", Arc::new(di.finish())),
        ("t_start_ns", Arc::new(ts.finish())),
        ("t_end_ns", Arc::new(te.finish())),
        ("samples", Arc::new(ns.finish())),
        ("predicted_j", Arc::new(pr.finish())),
        ("measured_j", Arc::new(me.finish())),
    ])?;
    let summary = crate::rows::batch_of(vec![
        ("method", Arc::new(sm.finish())),
        ("events", Arc::new(sev.finish())),
        ("n_events", Arc::new(sne.finish())),
        ("data", Arc::new(sn.finish())),
        ("mean_j", Arc::new(smean.finish())),
        ("sd_j", Arc::new(ssd.finish())),
        ("within_5_pct", Arc::new(s5.finish())),
        ("within_10_pct", Arc::new(s10.finish())),
        ("mean_error_pct", Arc::new(serr.finish())),
        ("mean_span_ms", Arc::new(sspan.finish())),
    ])?;
    Ok((summary, batch))
}

/// Measured energy of the power data of one subset (`events` as in the
/// data rows of [`power_samples`]), in order of data.
pub fn datum_values(data: &RecordBatch, events: &str) -> Vec<f64> {
    let ev = crate::rows::string_values(data.column(1));
    let measured = crate::rows::float_values(data.column(8));
    ev.iter()
        .zip(measured)
        .filter(|(e, _)| e.as_deref() == Some(events))
        .filter_map(|(_, m)| m)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_end_nearest_the_target() {
        // Hand-worked, target 1 J, no intercept: samples worth 0.35 J each
        // after the opening one: 0.35, 0.7, 1.05 → 1.05 (0.05 over) is
        // nearer than 0.7 (0.3 short): the run takes the third sample.
        let m: Vec<(i64, f64)> = (0..7).map(|i| (i * 10, 0.35)).collect();
        let r = energy_runs(&m, 0.0, 1.0);
        assert_eq!(r.len(), 2);
        assert_eq!((r[0].start, r[0].end, r[0].samples), (0, 30, 3));
        assert!((r[0].predicted - 1.05).abs() < 1e-12);
        assert_eq!((r[1].start, r[1].end), (30, 60));
        // 0.3 J samples: 0.9 then 1.2 → stop at 0.9 (0.1 short).
        let m: Vec<(i64, f64)> = (0..8).map(|i| (i * 10, 0.3)).collect();
        let r = energy_runs(&m, 0.0, 1.0);
        assert_eq!((r[0].end, r[0].samples), (30, 3));
        assert!((r[0].predicted - 0.9).abs() < 1e-12);
        assert_eq!((r[1].start, r[1].end), (30, 60));
        // The intercept: 2 W over 100 ms gaps adds 0.2 J per sample.
        let m: Vec<(i64, f64)> = (0..6).map(|i| (i * 100_000_000, 0.3)).collect();
        let r = energy_runs(&m, 2.0, 1.0);
        assert_eq!((r[0].end, r[0].samples), (200_000_000, 2));
        // Time-based: runs of 3 of 10 samples: 3 runs.
        let t: Vec<i64> = (0..10).collect();
        let c = count_runs(&t, 3);
        assert_eq!(
            c.iter().map(|d| (d.start, d.end)).collect::<Vec<_>>(),
            [(0, 3), (3, 6), (6, 9)]
        );
    }
}
