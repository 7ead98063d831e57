//! Exhaustion ranges (Morita et al., H/W resource exhaustion analysis,
//! stage A): the time ranges where monitoring metrics satisfy a rule such
//! as `cpu_user + cpu_sys > 90 and runq > 2`, per capture on its relative
//! time axis (`t_ns`, see [`crate::time`]), and the ranges common to several
//! runs.
//!
//! A metric row describes the interval since the previous row of its series
//! (vmstat, iostat, sar, mpstat and pidstat print averages over the
//! interval that ends at the row's time); the first row of a series covers
//! one median interval. A rule is evaluated on these step functions: it
//! holds on the parts of the time axis where every comparison it needs has
//! a value and the whole rule is true. Ranges closer than `gap` are merged,
//! then ranges shorter than `min_duration` dropped.

mod eval;
mod rule;

pub use eval::{evaluate, intersect, merge, sample, steps, CaptureSeries, Range, RangeOpts, Step};
pub use rule::{Comparison, Rule};

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Array, Int64Builder, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use datafusion::arrow::record_batch::RecordBatch;
use datafusion::catalog::{TableFunctionArgs, TableFunctionImpl, TableProvider};
use datafusion::common::ScalarValue;
use datafusion::prelude::Expr;

use crate::error::{Error, Result};
use crate::rows::string_values;
use crate::session::Session;

const ROWS: &str = include_str!("../../analyses/cause/inputs/metric_rows.sql");

/// A rule and its range options as a user writes them (`--rule`,
/// `--min-duration 2s`, `--gap 1s`; both fronts take these texts).
pub fn rule_with(rule: &str, min_duration: &str, gap: &str) -> Result<(Rule, RangeOpts)> {
    Ok((
        Rule::parse(rule)?,
        RangeOpts {
            min_duration_ns: crate::time::parse_duration_ns(min_duration)?,
            gap_ns: crate::time::parse_duration_ns(gap)?,
        },
    ))
}

/// Loads the series the rule reads, per capture (on `t_ns`).
pub async fn load(s: &Session, rule: &Rule) -> Result<BTreeMap<String, CaptureSeries>> {
    let rows = s.sql(ROWS).await?.collect().await?;
    let mut out = series_from_rows(&rows, rule);
    for c in s.captures() {
        out.entry(c.name.clone()).or_default();
    }
    Ok(out)
}

/// The exhaustion ranges of each capture of the session.
pub async fn ranges(
    s: &Session,
    rule: &Rule,
    opts: RangeOpts,
) -> Result<BTreeMap<String, Vec<Range>>> {
    let series = load(s, rule).await?;
    let mut missing = Vec::new();
    for (cap, cs) in &series {
        for (name, ent) in rule.metrics() {
            let found = cs
                .series
                .get(&(name.clone(), ent.clone()))
                .is_some_and(|g| !g.is_empty());
            if !found {
                missing.push(format!(
                    "{cap}: no `{name}{}` rows with times on the capture's axis",
                    ent.map(|e| format!("[{e}]")).unwrap_or_default()
                ));
            }
        }
    }
    if !missing.is_empty() {
        return Err(Error::Usage(format!(
            "the rule reads metrics a capture does not have (see `trawl sql CAP \"SELECT DISTINCT metric, entity FROM metric\"`; local times need `trawl ingest --tz`):\n  {}",
            missing.join("\n  ")
        )));
    }
    Ok(series
        .iter()
        .map(|(c, cs)| (c.clone(), evaluate(rule, cs, opts)))
        .collect())
}

/// `trawl report exhaustion` over one or more captures: the rows of
/// [`batch`] (each capture's ranges) and the ranges to shade in a plot.
pub async fn per_capture(
    s: &Session,
    per: &BTreeMap<String, Vec<Range>>,
) -> Result<(RecordBatch, Vec<Range>)> {
    let mut rows: Vec<(String, Vec<Range>, Option<i64>)> = Vec::new();
    for c in s.captures() {
        rows.push((
            c.name.clone(),
            per.get(&c.name).cloned().unwrap_or_default(),
            origin_of(s, &c.name).await?,
        ));
    }
    let bands = per.values().flatten().copied().collect();
    Ok((batch(&rows)?, bands))
}

/// `trawl report exhaustion --runs`: the ranges every run shares (each
/// run's ranges intersected, then merged), as the rows of
/// [`common_batch`], and those common ranges.
pub fn across_runs(
    s: &Session,
    per: &BTreeMap<String, Vec<Range>>,
) -> Result<(RecordBatch, Vec<Range>)> {
    let runs: Vec<(String, Vec<Range>)> = s
        .captures()
        .iter()
        .map(|c| {
            (
                c.name.clone(),
                per.get(&c.name).cloned().unwrap_or_default(),
            )
        })
        .collect();
    let all: Vec<Vec<Range>> = runs.iter().map(|r| r.1.clone()).collect();
    let common = merge(intersect(&all), Default::default());
    Ok((common_batch(&runs, &common)?, common))
}

/// A warning when the runs' metrics span lengths more than 10 % apart:
/// their ranges are compared on each run's own axis, so the runs should
/// share an origin.
pub async fn span_mismatch(s: &Session) -> Result<Option<String>> {
    let spans = spans(s).await?;
    let (Some(lo), Some(hi)) = (
        spans.iter().map(|x| x.1).min(),
        spans.iter().map(|x| x.1).max(),
    ) else {
        return Ok(None);
    };
    if lo > 0 && (hi - lo) * 10 > lo {
        let list: Vec<String> = spans
            .iter()
            .map(|(c, t)| format!("{c} {:.1} s", *t as f64 / 1e9))
            .collect();
        return Ok(Some(format!(
            "the runs' metrics span different lengths ({}): ranges are compared on each run's own axis from its t0; pick the origin with --t0 (e.g. exec:PROGRAM) so the runs line up",
            list.join(", ")
        )));
    }
    Ok(None)
}

// ---------------------------------------------------------------- tables

pub fn schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        Field::new("capture", DataType::Utf8, false),
        Field::new("range", DataType::Int64, false),
        Field::new("start_ns", DataType::Int64, false),
        Field::new("end_ns", DataType::Int64, false),
        Field::new("start_s", DataType::Float64, false),
        Field::new("end_s", DataType::Float64, false),
        Field::new("duration_s", DataType::Float64, false),
        Field::new("start_utc", DataType::Utf8, true),
        Field::new("end_utc", DataType::Utf8, true),
    ]))
}

/// Rows of [`schema`]: ranges per capture (`origin` in UTC per capture for
/// the absolute columns).
pub fn batch(per_capture: &[(String, Vec<Range>, Option<i64>)]) -> Result<RecordBatch> {
    let mut cap = StringBuilder::new();
    let mut idx = Int64Builder::new();
    let mut st = Int64Builder::new();
    let mut en = Int64Builder::new();
    let (mut ss, mut es, mut ds) = (Vec::new(), Vec::new(), Vec::new());
    let mut su = StringBuilder::new();
    let mut eu = StringBuilder::new();
    for (c, rs, origin) in per_capture {
        for (i, r) in rs.iter().enumerate() {
            cap.append_value(c);
            idx.append_value(i as i64 + 1);
            st.append_value(r.start);
            en.append_value(r.end);
            ss.push(r.start as f64 / 1e9);
            es.push(r.end as f64 / 1e9);
            ds.push((r.end - r.start) as f64 / 1e9);
            su.append_option(origin.map(|o| crate::clock::utc_text(o + r.start)));
            eu.append_option(origin.map(|o| crate::clock::utc_text(o + r.end)));
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(cap.finish()),
        Arc::new(idx.finish()),
        Arc::new(st.finish()),
        Arc::new(en.finish()),
        Arc::new(Float64Array::from(ss)),
        Arc::new(Float64Array::from(es)),
        Arc::new(Float64Array::from(ds)),
        Arc::new(su.finish()),
        Arc::new(eu.finish()),
    ];
    Ok(RecordBatch::try_new(schema(), cols).map_err(datafusion::error::DataFusionError::from)?)
}

/// The origin in UTC of a capture of the session.
pub async fn origin_of(s: &Session, capture: &str) -> Result<Option<i64>> {
    Ok(s.times()
        .await?
        .iter()
        .find(|t| t.capture == capture)
        .and_then(|t| t.origin_utc_ns))
}

/// `exhaustion(rule [, min_duration_s [, gap_s]])`: the ranges of each
/// capture, evaluated when a query first scans the call's result. The
/// timed metric rows are read once per session, by the first call
/// scanned.
pub struct ExhaustionFn {
    shared: Arc<crate::session::Shared>,
    /// (capture, metric, entity, source, t_ns, value) of every timed
    /// metric row.
    rows: Arc<tokio::sync::OnceCell<Vec<RecordBatch>>>,
}

impl std::fmt::Debug for ExhaustionFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ExhaustionFn")
    }
}

fn lit_f64(e: Option<&Expr>, what: &str) -> datafusion::error::Result<f64> {
    match e {
        None => Ok(0.0),
        // NULL is "not given", as for the SQL analyses.
        Some(Expr::Literal(v, _)) if v.is_null() => Ok(0.0),
        Some(Expr::Literal(v, _)) => match v {
            ScalarValue::Int64(Some(n)) => Ok(*n as f64),
            ScalarValue::Int32(Some(n)) => Ok(f64::from(*n)),
            ScalarValue::Float64(Some(x)) if x.is_finite() && *x >= 0.0 => Ok(*x),
            other => datafusion::common::plan_err!(
                "exhaustion: {what} must be seconds >= 0, got {other}"
            ),
        },
        Some(e) => datafusion::common::plan_err!(
            "exhaustion: {what} must be a literal number of seconds, got {e}"
        ),
    }
}

impl TableFunctionImpl for ExhaustionFn {
    fn call_with_args(
        &self,
        args: TableFunctionArgs,
    ) -> datafusion::error::Result<Arc<dyn TableProvider>> {
        let ex = args.exprs();
        let text = match ex.first() {
            Some(Expr::Literal(ScalarValue::Utf8(Some(s)), _)) => s.clone(),
            _ => return datafusion::common::plan_err!("exhaustion: the first argument must be the rule as a string literal, e.g. exhaustion('runq > 2', 1, 0)"),
        };
        let rule = Rule::parse(&text)
            .map_err(|e| datafusion::error::DataFusionError::Plan(e.to_string()))?;
        let opts = RangeOpts {
            min_duration_ns: (lit_f64(ex.get(1), "min_duration_s")? * 1e9).round() as i64,
            gap_ns: (lit_f64(ex.get(2), "gap_s")? * 1e9).round() as i64,
        };
        let rows = self.rows.clone();
        let compute = move |s: Session| {
            let (rows, rule) = (rows.clone(), rule.clone());
            async move {
                let rows = rows
                    .get_or_try_init(|| async {
                        s.sql(ROWS).await?.collect().await.map_err(Error::from)
                    })
                    .await?;
                let series = series_from_rows(rows, &rule);
                let mut per: Vec<(String, Vec<Range>, Option<i64>)> = Vec::new();
                for t in s.times().await? {
                    let rs = series
                        .get(&t.capture)
                        .map(|cs| evaluate(&rule, cs, opts))
                        .unwrap_or_default();
                    per.push((t.capture.clone(), rs, t.origin_utc_ns));
                }
                per.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(vec![batch(&per)?])
            }
        };
        Ok(Arc::new(crate::tables::LazyTable::new(
            "exhaustion",
            schema(),
            self.shared.clone(),
            compute,
        )))
    }
}

/// [`load`] over rows already in memory.
fn series_from_rows(rows: &[RecordBatch], rule: &Rule) -> BTreeMap<String, CaptureSeries> {
    let wanted = rule.metrics();
    type Rows = BTreeMap<Option<String>, Vec<(i64, f64)>>;
    let mut raw: BTreeMap<(String, String), BTreeMap<i32, Rows>> = BTreeMap::new();
    for b in rows {
        let cap = string_values(b.column(0));
        let met = string_values(b.column(1));
        let ent = string_values(b.column(2));
        let src = b.column(3).as_primitive::<Int64Type>();
        let t = b.column(4).as_primitive::<Int64Type>();
        let v = b.column(5).as_primitive::<Float64Type>();
        for i in 0..b.num_rows() {
            let (Some(c), Some(m)) = (cap[i].clone(), met[i].clone()) else {
                continue;
            };
            if !wanted.iter().any(|(n, _)| *n == m) || t.is_null(i) {
                continue;
            }
            raw.entry((c, m))
                .or_default()
                .entry(src.value(i) as i32)
                .or_default()
                .entry(ent[i].clone())
                .or_default()
                .push((t.value(i), v.value(i)));
        }
    }
    build_series(raw, &wanted)
}

type RawRows = BTreeMap<(String, String), BTreeMap<i32, BTreeMap<Option<String>, Vec<(i64, f64)>>>>;

fn build_series(
    raw: RawRows,
    wanted: &BTreeSet<(String, Option<String>)>,
) -> BTreeMap<String, CaptureSeries> {
    let mut out: BTreeMap<String, CaptureSeries> = BTreeMap::new();
    for ((cap, metric), by_source) in raw {
        let Some((&source, entities)) = by_source.iter().next() else {
            continue;
        };
        let cs = out.entry(cap).or_default();
        cs.sources.insert(metric.clone(), source);
        for (name, want) in wanted.iter().filter(|(n, _)| *n == metric) {
            let pick = |r: &Vec<(i64, f64)>| {
                let mut r = r.clone();
                r.sort_by_key(|x| x.0);
                steps(&r)
            };
            let groups: Vec<Vec<Step>> = match want {
                Some(e) => entities
                    .get(&Some(e.clone()))
                    .map(|r| vec![pick(r)])
                    .unwrap_or_default(),
                None => {
                    let agg: Vec<&Vec<(i64, f64)>> = entities
                        .iter()
                        .filter(|(e, _)| e.is_none() || e.as_deref() == Some("all"))
                        .map(|(_, r)| r)
                        .collect();
                    if agg.is_empty() {
                        entities.values().map(pick).collect()
                    } else {
                        agg.into_iter().map(pick).collect()
                    }
                }
            };
            cs.series.insert((name.clone(), want.clone()), groups);
        }
    }
    out
}

/// Registers `exhaustion(...)`.
pub async fn register(s: &Session) -> Result<()> {
    s.ctx.register_udtf(
        "exhaustion",
        Arc::new(ExhaustionFn {
            shared: s.shared.clone(),
            rows: Arc::default(),
        }),
    );
    Ok(())
}

/// Common ranges of several runs, each with the run's own range it lies
/// in: columns range, start_s, end_s, duration_s, then one `start..end`
/// text column per run.
pub fn common_batch(runs: &[(String, Vec<Range>)], common: &[Range]) -> Result<RecordBatch> {
    let mut fields = vec![
        Field::new("range", DataType::Int64, false),
        Field::new("start_s", DataType::Float64, false),
        Field::new("end_s", DataType::Float64, false),
        Field::new("duration_s", DataType::Float64, false),
    ];
    let mut cols: Vec<ArrayRef> = vec![
        Arc::new(datafusion::arrow::array::Int64Array::from_iter_values(
            1..=common.len() as i64,
        )),
        Arc::new(Float64Array::from_iter_values(
            common.iter().map(|r| r.start as f64 / 1e9),
        )),
        Arc::new(Float64Array::from_iter_values(
            common.iter().map(|r| r.end as f64 / 1e9),
        )),
        Arc::new(Float64Array::from_iter_values(
            common.iter().map(|r| (r.end - r.start) as f64 / 1e9),
        )),
    ];
    for (name, rs) in runs {
        fields.push(Field::new(name.as_str(), DataType::Utf8, true));
        let mut b = StringBuilder::new();
        for c in common {
            let own = rs.iter().find(|r| r.start <= c.start && r.end >= c.end);
            b.append_option(
                own.map(|r| format!("{}..{}", r.start as f64 / 1e9, r.end as f64 / 1e9)),
            );
        }
        cols.push(Arc::new(b.finish()));
    }
    Ok(RecordBatch::try_new(Arc::new(Schema::new(fields)), cols)
        .map_err(datafusion::error::DataFusionError::from)?)
}

/// Each capture's last metric time (`t_ns`), to warn about runs of
/// different lengths.
pub async fn spans(s: &Session) -> Result<Vec<(String, i64)>> {
    let b = s
        .sql("SELECT capture, max(t_ns) FROM metric_t GROUP BY capture ORDER BY capture")
        .await?
        .collect()
        .await?;
    let mut out = Vec::new();
    for b in &b {
        let c = string_values(b.column(0));
        let t = b.column(1).as_primitive::<Int64Type>();
        for i in 0..b.num_rows() {
            if let (Some(c), false) = (c[i].clone(), t.is_null(i)) {
                out.push((c, t.value(i)));
            }
        }
    }
    Ok(out)
}
