//! The power model and energy-based samples (Ono et al. 2015,
//! sampling-based power measurement, §3.2–3.5).
//!
//! - [`PowerFit`]: the SQL aggregate `power_fit(watts, rate1, …, rateK)`:
//!   multiple linear regression `watts = a + Σ c_i · rate_i` (least
//!   squares), returning `{intercept, coefficients, r2, n}`. Rows with a
//!   null or non-finite value are left out.
//! - [`model_intervals`]: the rows a model is fitted on, one per interval
//!   of a domain's energy counter: its energy, watts and each event's rate
//!   (the counter's increase read at the samples in the interval, or the
//!   sampled periods when the event is sampled, not read).
//! - [`fit`] (the same least squares as `power_fit`) and [`fit_table`]:
//!   coefficients, R², R_i = P / c_i (§3.3, Table 3).
//! - [`power_samples`]: samples of several events merged in time order and
//!   cut into runs whose modelled energy reaches a target P (§3.5); each
//!   run is a power datum whose measured energy (the RAPL counter over the
//!   run) shows how close the sampling came to equal-energy samples;
//!   compared with runs of N consecutive time-based samples (Table 6,
//!   Fig. 6/8), for every subset of the events.

use std::collections::BTreeMap;
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, Int64Array, Int64Builder, ListArray,
    RecordBatch, StringBuilder, StructArray,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type, Int64Type};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use crate::error::{Error, Result};
use crate::session::Session;

/// Counter increases read at the samples.
const COUNTER_READS: &str = include_str!("../analyses/energy/inputs/counter_reads.sql");
/// Samples of events, weighing their periods.
const SAMPLED_EVENTS: &str = include_str!("../analyses/energy/inputs/sampled_events.sql");
/// One counter's intervals.
const COUNTER_INTERVALS: &str = include_str!("../analyses/energy/inputs/counter_intervals.sql");
/// One counter's readings in time order.
const COUNTER_CURVE: &str = include_str!("../analyses/energy/inputs/counter_curve.sql");

/// `power_fit(y, x1, …, xk)`: least squares `y = a + Σ c_i x_i`.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct PowerFit {
    signature: Signature,
}

impl Default for PowerFit {
    fn default() -> Self {
        PowerFit {
            signature: Signature::user_defined(Volatility::Immutable),
        }
    }
}

fn fit_fields() -> Fields {
    Fields::from(vec![
        Field::new("intercept", DataType::Float64, true),
        Field::new(
            "coefficients",
            DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            true,
        ),
        Field::new("r2", DataType::Float64, true),
        Field::new("n", DataType::Int64, false),
    ])
}

impl AggregateUDFImpl for PowerFit {
    fn name(&self) -> &str {
        "power_fit"
    }
    fn signature(&self) -> &Signature {
        &self.signature
    }
    fn return_type(&self, _args: &[DataType]) -> datafusion::error::Result<DataType> {
        Ok(DataType::Struct(fit_fields()))
    }
    /// Every argument is read as a double.
    fn coerce_types(&self, args: &[DataType]) -> datafusion::error::Result<Vec<DataType>> {
        if args.len() < 2 {
            return Err(datafusion::error::DataFusionError::Plan(
                "power_fit(y, x1, ...): a response and at least one regressor".into(),
            ));
        }
        for a in args {
            if !(a.is_numeric() || a.is_null()) {
                return Err(datafusion::error::DataFusionError::Plan(format!(
                    "power_fit: arguments must be numbers, not {a}"
                )));
            }
        }
        Ok(vec![DataType::Float64; args.len()])
    }
    fn accumulator(
        &self,
        args: AccumulatorArgs,
    ) -> datafusion::error::Result<Box<dyn Accumulator>> {
        let k = args.exprs.len().saturating_sub(1);
        if k == 0 {
            return Err(datafusion::error::DataFusionError::Plan(
                "power_fit(y, x1, ...): at least one regressor".into(),
            ));
        }
        Ok(Box::new(FitAcc {
            k,
            rows: Vec::new(),
        }))
    }
    fn state_fields(&self, _args: StateFieldsArgs) -> datafusion::error::Result<Vec<FieldRef>> {
        Ok(vec![Arc::new(Field::new(
            "rows",
            DataType::List(Arc::new(Field::new_list_field(DataType::Float64, true))),
            true,
        ))])
    }
}

/// The rows seen (y, x1 … xk flattened): kept whole so the fit is
/// computed centred and scaled, in one exact pass, at the end.
#[derive(Debug)]
struct FitAcc {
    k: usize,
    rows: Vec<f64>,
}

impl Accumulator for FitAcc {
    fn update_batch(&mut self, values: &[ArrayRef]) -> datafusion::error::Result<()> {
        let cols: Vec<&Float64Array> = values
            .iter()
            .map(|a| a.as_primitive::<Float64Type>())
            .collect();
        let n = values.first().map_or(0, |a| a.len());
        'row: for i in 0..n {
            for c in &cols {
                if c.is_null(i) || !c.value(i).is_finite() {
                    continue 'row;
                }
            }
            self.rows.extend(cols.iter().map(|c| c.value(i)));
        }
        Ok(())
    }

    fn evaluate(&mut self) -> datafusion::error::Result<ScalarValue> {
        let f = ols(&self.rows, self.k);
        let list = ListArray::from_iter_primitive::<Float64Type, _, _>(vec![f
            .as_ref()
            .map(|f| f.coef.iter().map(|c| Some(*c)).collect::<Vec<_>>())]);
        let s = StructArray::new(
            fit_fields(),
            vec![
                Arc::new(Float64Array::from(vec![f.as_ref().map(|f| f.intercept)])),
                Arc::new(list),
                Arc::new(Float64Array::from(vec![f.as_ref().map(|f| f.r2)])),
                Arc::new(Int64Array::from(vec![
                    (self.rows.len() / (self.k + 1)) as i64,
                ])),
            ],
            None,
        );
        Ok(ScalarValue::Struct(Arc::new(s)))
    }

    fn size(&self) -> usize {
        std::mem::size_of::<Self>() + self.rows.capacity() * 8
    }

    fn state(&mut self) -> datafusion::error::Result<Vec<ScalarValue>> {
        let list = ListArray::from_iter_primitive::<Float64Type, _, _>(vec![Some(
            self.rows.iter().map(|v| Some(*v)).collect::<Vec<_>>(),
        )]);
        Ok(vec![ScalarValue::List(Arc::new(list))])
    }

    fn merge_batch(&mut self, states: &[ArrayRef]) -> datafusion::error::Result<()> {
        let l = states[0].as_list::<i32>();
        for i in 0..l.len() {
            if l.is_null(i) {
                continue;
            }
            let v = l.value(i);
            self.rows.extend(
                v.as_primitive::<Float64Type>()
                    .iter()
                    .map(|x| x.unwrap_or(f64::NAN)),
            );
        }
        Ok(())
    }
}

/// A least-squares fit.
#[derive(Clone, Debug, PartialEq)]
pub struct Fit {
    pub intercept: f64,
    pub coef: Vec<f64>,
    pub r2: f64,
    pub n: usize,
}

/// Least squares over rows `(y, x1 … xk)` (flattened): centred and
/// scaled normal equations, Gaussian elimination with partial pivoting.
/// None with fewer rows than unknowns or a regressor that is constant or a
/// combination of the others.
pub fn ols(rows: &[f64], k: usize) -> Option<Fit> {
    let w = k + 1;
    let n = rows.len() / w;
    if n < w + 1 {
        return None;
    }
    let mut mean = vec![0.0; w];
    for r in rows.chunks_exact(w) {
        for (m, v) in mean.iter_mut().zip(r) {
            *m += v;
        }
    }
    mean.iter_mut().for_each(|m| *m /= n as f64);
    let mut sd = vec![0.0; w];
    for r in rows.chunks_exact(w) {
        for j in 0..w {
            sd[j] += (r[j] - mean[j]).powi(2);
        }
    }
    sd.iter_mut().for_each(|s| *s = (*s / n as f64).sqrt());
    if sd[1..].iter().any(|s| *s == 0.0 || !s.is_finite()) {
        return None;
    }
    // A = ZᵀZ, b = Zᵀy over z_j = (x_j - mean_j) / sd_j.
    let mut a = vec![vec![0.0; k + 1]; k];
    for r in rows.chunks_exact(w) {
        let z: Vec<f64> = (1..w).map(|j| (r[j] - mean[j]) / sd[j]).collect();
        let y = r[0] - mean[0];
        for i in 0..k {
            for j in 0..k {
                a[i][j] += z[i] * z[j];
            }
            a[i][k] += z[i] * y;
        }
    }
    for c in 0..k {
        let p = (c..k).max_by(|&x, &y| a[x][c].abs().total_cmp(&a[y][c].abs()))?;
        if a[p][c].abs() < 1e-9 * n as f64 {
            return None;
        }
        a.swap(c, p);
        for r in 0..k {
            if r != c {
                let f = a[r][c] / a[c][c];
                for j in c..=k {
                    a[r][j] -= f * a[c][j];
                }
            }
        }
    }
    let coef: Vec<f64> = (0..k).map(|i| a[i][k] / a[i][i] / sd[i + 1]).collect();
    let intercept = mean[0] - (0..k).map(|i| coef[i] * mean[i + 1]).sum::<f64>();
    let (mut sse, mut sst) = (0.0, 0.0);
    for r in rows.chunks_exact(w) {
        let pred = intercept + (0..k).map(|i| coef[i] * r[i + 1]).sum::<f64>();
        sse += (r[0] - pred).powi(2);
        sst += (r[0] - mean[0]).powi(2);
    }
    Some(Fit {
        intercept,
        coef,
        r2: if sst > 0.0 { 1.0 - sse / sst } else { 1.0 },
        n,
    })
}

/// `power_fit(...)` (registered with the session's functions).
pub(crate) fn udaf() -> AggregateUDF {
    AggregateUDF::from(PowerFit::default())
}

/// Samples' times and a value per event, in time order.
type Series = BTreeMap<String, Vec<(i64, f64)>>;

async fn series(s: &Session, q: &str, params: &[(&str, ScalarValue)]) -> Result<Series> {
    let mut out: Series = BTreeMap::new();
    for b in s.sql_with(q, params).await?.collect().await? {
        let ev = crate::rows::string_values(b.column(0));
        let t = b.column(1).as_primitive::<Int64Type>();
        let v = b.column(2).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            if t.is_null(i) || v.is_null(i) {
                continue;
            }
            out.entry(ev[i].clone().unwrap_or_default())
                .or_default()
                .push((t.value(i), v.value(i)));
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|x| x.0);
    }
    Ok(out)
}

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
    pub chain: crate::energy::Chain,
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
    let crate::energy::DomainCounter { chain, package } =
        crate::energy::domain_counter(s, &event, &input.domain, &input.zones, input.package)
            .await?;
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

/// Column `name` of the model intervals as doubles.
fn interval_column(b: &RecordBatch, name: &str) -> Result<Vec<f64>> {
    let c = b
        .column_by_name(name)
        .ok_or_else(|| Error::Usage(format!("no column {name} in the model intervals")))?;
    Ok(crate::rows::float_values(c)
        .into_iter()
        .map(|v| v.unwrap_or(f64::NAN))
        .collect())
}

/// Fits `watts = intercept + Σ c_j rate_j` over the model intervals by
/// least squares ([`ols`], the computation of the SQL aggregate
/// `power_fit`); rows with a missing or infinite value are left out.
pub fn fit(intervals: &RecordBatch, k: usize) -> Result<Fit> {
    let mut cols = vec![interval_column(intervals, "watts")?];
    for j in 1..=k {
        cols.push(interval_column(intervals, &format!("rate_{j}"))?);
    }
    let mut rows = Vec::new();
    for i in 0..intervals.num_rows() {
        if cols.iter().all(|c| c[i].is_finite()) {
            rows.extend(cols.iter().map(|c| c[i]));
        }
    }
    let n = rows.len() / (k + 1);
    if n == 0 {
        return Err(Error::Usage("no intervals to fit".into()));
    }
    ols(&rows, k).ok_or_else(|| {
        Error::Usage(format!(
            "the model cannot be fitted on {n} intervals: fewer intervals than terms, or an event whose rate is constant or a combination of the others"
        ))
    })
}

/// The fit as a table: one row per term (intercept in W, events in J per
/// event) with the mean rate, the watts it explains at that rate, the
/// sampling interval R_i = P / c_i and the samples per second it gives.
pub fn fit_table(
    intervals: &RecordBatch,
    events: &[String],
    f: &Fit,
    target_j: f64,
) -> Result<RecordBatch> {
    let k = events.len();
    // Time-weighted means: each rate over the intervals' seconds, then the
    // measured watts (joules over seconds).
    let secs = interval_column(intervals, "seconds")?;
    let total: f64 = secs.iter().sum();
    let mut mean = Vec::with_capacity(k + 1);
    for j in 1..=k {
        let r = interval_column(intervals, &format!("rate_{j}"))?;
        mean.push(r.iter().zip(&secs).map(|(r, s)| r * s).sum::<f64>() / total);
    }
    mean.push(interval_column(intervals, "joules")?.iter().sum::<f64>() / total);
    let (mut term, mut coef, mut rate, mut w, mut ri, mut sps, mut r2, mut n) = (
        StringBuilder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Int64Builder::new(),
    );
    term.append_value("intercept");
    coef.append_value(f.intercept);
    rate.append_null();
    w.append_value(f.intercept);
    ri.append_null();
    sps.append_null();
    for (j, e) in events.iter().enumerate() {
        let c = f.coef[j];
        term.append_value(e);
        coef.append_value(c);
        rate.append_value(mean[j]);
        w.append_value(c * mean[j]);
        let r = (c > 0.0).then(|| target_j / c);
        ri.append_option(r.map(f64::round));
        sps.append_option(r.map(|r| mean[j] / r));
    }
    term.append_value("measured");
    coef.append_null();
    rate.append_null();
    w.append_value(mean[k]);
    ri.append_null();
    sps.append_null();
    for _ in 0..k + 2 {
        r2.append_value(f.r2);
        n.append_value(f.n as i64);
    }
    crate::rows::batch_of(vec![
        ("term", Arc::new(term.finish())),
        ("coefficient", Arc::new(coef.finish())),
        ("mean_rate_per_s", Arc::new(rate.finish())),
        ("mean_watts", Arc::new(w.finish())),
        ("interval_events", Arc::new(ri.finish())),
        ("samples_per_s", Arc::new(sps.finish())),
        ("r2", Arc::new(r2.finish())),
        ("intervals", Arc::new(n.finish())),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ols_recovers_an_exact_plane() {
        // y = 2 + 3 x1 - 0.5 x2 on points that are not collinear.
        let mut rows = Vec::new();
        for (x1, x2) in [(0.0, 1.0), (1.0, 0.0), (2.0, 5.0), (3.0, 1.0), (4.0, 7.0)] {
            rows.extend([2.0 + 3.0 * x1 - 0.5 * x2, x1, x2]);
        }
        let f = ols(&rows, 2).unwrap();
        assert!((f.intercept - 2.0).abs() < 1e-9, "{f:?}");
        assert!((f.coef[0] - 3.0).abs() < 1e-9 && (f.coef[1] + 0.5).abs() < 1e-9);
        assert!((f.r2 - 1.0).abs() < 1e-12);
        // Collinear regressors: no fit.
        let rows: Vec<f64> = (0..6)
            .flat_map(|i| [i as f64, i as f64, 2.0 * i as f64])
            .collect();
        assert_eq!(ols(&rows, 2), None);
        // Hand-worked: y = 1, 3, 2, 4 at x = 0, 1, 2, 3: slope Sxy / Sxx =
        // 4 / 5 = 0.8, intercept 2.5 - 0.8 * 1.5 = 1.3, residuals -0.3,
        // 0.9, -0.9, 0.3: R² = 1 - SSE / SST = 1 - 1.8 / 5 = 0.64.
        let rows = [1.0, 0.0, 3.0, 1.0, 2.0, 2.0, 4.0, 3.0];
        let f = ols(&rows, 1).unwrap();
        assert!((f.coef[0] - 0.8).abs() < 1e-12 && (f.intercept - 1.3).abs() < 1e-12);
        assert!((f.r2 - 0.64).abs() < 1e-12, "{f:?}");
    }
}

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
    /// See [`ModelInput::package`].
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
    let crate::energy::DomainCounter { chain, package } = crate::energy::domain_counter(
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

/// A text list parameter.
fn text_list(v: &[String]) -> ScalarValue {
    let items: Vec<ScalarValue> = v.iter().map(|e| ScalarValue::from(e.as_str())).collect();
    ScalarValue::List(ScalarValue::new_list_nullable(
        &items,
        &datafusion::arrow::datatypes::DataType::Utf8,
    ))
}

/// `$cap`, `$src`, `$zone`: the counter of `chain`.
fn chain_params(
    chain: &crate::energy::Chain,
    package: Option<i32>,
) -> [(&'static str, ScalarValue); 4] {
    [
        ("cap", ScalarValue::from(chain.capture.as_str())),
        ("src", ScalarValue::Int32(Some(chain.source_id))),
        ("zone", ScalarValue::from(chain.zone.as_str())),
        ("package", ScalarValue::Int32(package)),
    ]
}

async fn strings(s: &Session, q: &str, params: &[(&str, ScalarValue)]) -> Result<Vec<String>> {
    let mut out = Vec::new();
    for b in s.sql_with(q, params).await?.collect().await? {
        out.extend(
            crate::rows::string_values(b.column(0))
                .into_iter()
                .flatten(),
        );
    }
    Ok(out)
}

/// Counters read at the samples (group members), power events excepted.
pub async fn read_events(s: &Session) -> Result<Vec<String>> {
    strings(
        s,
        "SELECT DISTINCT event FROM perf_sample_read WHERE event IS NOT NULL AND idx > 0 \
         AND event NOT LIKE 'power/%' ORDER BY event",
        &[],
    )
    .await
}

/// Sampled events other than `time_event`, power events excepted.
pub async fn sampled_events(s: &Session, time_event: &str) -> Result<Vec<String>> {
    strings(
        s,
        "SELECT DISTINCT CAST(event AS VARCHAR) AS e FROM perf_sample WHERE CAST(event AS VARCHAR) <> $time_event \
         AND CAST(event AS VARCHAR) NOT LIKE 'power/%' ORDER BY e",
        &[("time_event", ScalarValue::from(time_event))],
    )
    .await
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
mod run_tests {
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
