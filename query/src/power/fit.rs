//! The power model's least squares: the SQL aggregate `power_fit`, the
//! same computation on the model intervals, and the fit as a table of
//! terms with each event's sampling interval R_i = P / c_i.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Float64Builder, Int64Array, Int64Builder, ListArray,
    RecordBatch, StringBuilder, StructArray,
};
use datafusion::arrow::datatypes::{DataType, Field, FieldRef, Fields, Float64Type};
use datafusion::common::ScalarValue;
use datafusion::logical_expr::function::{AccumulatorArgs, StateFieldsArgs};
use datafusion::logical_expr::{
    Accumulator, AggregateUDF, AggregateUDFImpl, Signature, Volatility,
};

use crate::error::{Error, Result};

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
