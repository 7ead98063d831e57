//! The power table functions (Ono et al. 2015, sampling-based power
//! measurement, §3.3–3.5): `power_model`, `power_intervals`,
//! `power_samples`, `power_data` and `sample_rapl`. Each is the SQL file
//! of its name under `analyses/energy/` over a table a call computes
//! in Rust from its arguments ([`crate::power`]: the interval rates, the
//! least-squares fit, the merged power samples); the registered tables
//! hold the rows for the default arguments and are computed only when read.

use std::sync::Arc;

use datafusion::arrow::array::{
    Array, ArrayRef, AsArray, Float64Builder, Int64Builder, RecordBatch, StringBuilder,
};
use datafusion::arrow::datatypes::{DataType, Field, Float64Type, Int64Type, Schema, SchemaRef};
use datafusion::catalog::TableProvider;
use datafusion::common::plan_err;
use datafusion::error::Result as DfResult;
use datafusion::logical_expr::Expr;
use datafusion::prelude::{lit, DataFrame};

use crate::error::{Error, Result};
use crate::functions::{float, int, text, texts, Bound, Kind, Param, Spec};
use crate::power::{self, ModelInput, PowerSamplesInput};
use crate::session::Session;

fn schema(cols: &[(&str, DataType)]) -> SchemaRef {
    Arc::new(Schema::new(
        cols.iter()
            .map(|(n, t)| Field::new(*n, t.clone(), true))
            .collect::<Vec<_>>(),
    ))
}

/// `_power_term`: the rows of `power_model(...)`.
pub fn term_schema() -> SchemaRef {
    use DataType::*;
    schema(&[
        ("term", Utf8),
        ("coefficient", Float64),
        ("mean_rate_per_s", Float64),
        ("mean_watts", Float64),
        ("interval_events", Float64),
        ("samples_per_s", Float64),
        ("r2", Float64),
        ("intervals", Int64),
        ("rates_from", Utf8),
        ("capture", Utf8),
        ("domain", Utf8),
        ("zone", Utf8),
        ("event", Utf8),
    ])
}

/// `_power_interval`: the rows of `power_intervals(...)`.
pub fn interval_schema() -> SchemaRef {
    use DataType::*;
    schema(&[
        ("t_ns", Int64),
        ("seconds", Float64),
        ("joules", Float64),
        ("watts", Float64),
        ("term", Int64),
        ("event", Utf8),
        ("rate_per_s", Float64),
    ])
}

/// `_power_summary`: the rows of `power_samples(...)`.
pub fn summary_schema() -> SchemaRef {
    use DataType::*;
    schema(&[
        ("method", Utf8),
        ("events", Utf8),
        ("n_events", Int64),
        ("data", Int64),
        ("mean_j", Float64),
        ("sd_j", Float64),
        ("within_5_pct", Float64),
        ("within_10_pct", Float64),
        ("mean_error_pct", Float64),
        ("mean_span_ms", Float64),
    ])
}

/// `_power_datum`: the rows of `power_data(...)`.
pub fn datum_schema() -> SchemaRef {
    use DataType::*;
    schema(&[
        ("method", Utf8),
        ("events", Utf8),
        ("n_events", Int64),
        ("datum", Int64),
        ("t_start_ns", Int64),
        ("t_end_ns", Int64),
        ("samples", Int64),
        ("predicted_j", Float64),
        ("measured_j", Float64),
    ])
}

/// `cols` (in `schema`'s order) as a batch of `schema`.
fn batch(schema: SchemaRef, cols: Vec<ArrayRef>) -> Result<RecordBatch> {
    Ok(RecordBatch::try_new(schema, cols).map_err(datafusion::error::DataFusionError::from)?)
}

/// The counter a power function models, common to all four.
macro_rules! counter_params {
    ($($p:expr),* $(,)?) => {
        &[
            Param { name: "events", kind: Kind::TextList, doc: "the events whose rates explain the power (default: every counter read at the samples for the model, every sampled event but the time event for power samples)" },
            Param { name: "domain", kind: Kind::Text, doc: "the energy domain modelled (default cores)" },
            Param { name: "zone", kind: Kind::TextList, doc: "the energy counter to read (default: the one chosen for the domain)" },
            Param { name: "package", kind: Kind::Int, doc: "the package modelled, when the domain is read per package: its counter and the samples on its CPUs" },
            Param { name: "window_ns", kind: Kind::Int, doc: "consecutive counter intervals are merged until they span this (default 10 ms; 0: raw intervals)" },
            $($p,)*
        ]
    };
}

const DEFAULT_WINDOW_NS: i64 = 10_000_000;

/// The samples a model reads its rates at (power_model, power_intervals).
const EVENT: Param = Param {
    name: "event",
    kind: Kind::Text,
    doc: "the samples whose counter reads give the rates (default: the leader of the group that read the domain's counter)",
};

/// `power_model(events, ...)`.
pub static POWER_MODEL: Spec = Spec {
    name: "power_model",
    doc: "The power model of Ono et al. 2015: watts = intercept + Σ c_i · rate_i by least squares over the energy counter's intervals; per term the coefficient, mean rate and watts, and the sampling interval R_i = P / c_i.",
    sql: include_str!("../analyses/energy/power_model.sql"),
    positional: 1,
    params: counter_params!(
        EVENT,
        Param { name: "target_j", kind: Kind::Float, doc: "the energy per sample P for R_i = P / c_i (default 1 J)" },
    ),
    columns: None,
    inputs: Some(model_inputs),
};

/// `power_intervals(events, ...)`.
pub static POWER_INTERVALS: Spec = Spec {
    name: "power_intervals",
    doc: "The intervals power_model fits on: each (merged) counter interval's energy and watts, and each event's rate in it.",
    sql: include_str!("../analyses/energy/power_intervals.sql"),
    positional: 1,
    params: counter_params!(EVENT),
    columns: None,
    inputs: Some(interval_inputs),
};

macro_rules! samples_params {
    () => {
        counter_params!(
            Param {
                name: "time_event",
                kind: Kind::Text,
                doc: "the time-based event compared (default cpu-clock)"
            },
            Param {
                name: "target_j",
                kind: Kind::Float,
                doc: "the energy per power datum P (default 1 J)"
            },
            Param {
                name: "group",
                kind: Kind::Int,
                doc: "time-based runs of this many samples as well as the best count"
            },
            Param {
                name: "coef",
                kind: Kind::TextList,
                doc:
                    "the model's coefficients as EVENT=JOULES (default: fitted as power_model does)"
            },
            Param {
                name: "intercept_w",
                kind: Kind::Float,
                doc: "the model's intercept in W, with coef (default 0)"
            },
        )
    };
}

/// `power_samples(events, ...)`.
pub static POWER_SAMPLES: Spec = Spec {
    name: "power_samples",
    doc: "The power samples of Ono et al. 2015: each subset of the events merged and cut into runs of modelled energy P, against runs of N time-based samples; how close each comes to P.",
    sql: include_str!("../analyses/energy/power_samples.sql"),
    positional: 1,
    params: samples_params!(),
    columns: None,
    inputs: Some(samples_inputs),
};

/// `power_data(events, ...)`.
pub static POWER_DATA: Spec = Spec {
    name: "power_data",
    doc: "The power data behind power_samples: each run's span, samples, modelled and measured energy.",
    sql: include_str!("../analyses/energy/power_data.sql"),
    positional: 1,
    params: samples_params!(),
    columns: None,
    inputs: Some(samples_inputs),
};

/// `sample_rapl(...)`.
pub static SAMPLE_RAPL: Spec = Spec {
    name: "sample_rapl",
    doc: "Ono et al. 2015, Fig. 5/7: each sample's RAPL increase since the previous sample of its event on its CPU (J), over time.",
    sql: include_str!("../analyses/energy/sample_rapl.sql"),
    positional: 0,
    params: &[Param {
        name: "event",
        kind: Kind::Text,
        doc: "only this sampled event (default all)",
    }],
    columns: None,
    inputs: None,
};

/// The power table functions.
pub static SPECS: &[&Spec] = &[
    &POWER_MODEL,
    &POWER_INTERVALS,
    &POWER_SAMPLES,
    &POWER_DATA,
    &SAMPLE_RAPL,
];

/// A model's input from a call's arguments (events still to default).
fn model_args(b: &Bound) -> DfResult<(ModelInput, f64)> {
    let window_ns = int(b, "window_ns").unwrap_or(DEFAULT_WINDOW_NS);
    if window_ns < 0 {
        return plan_err!("power: window_ns {window_ns}: expected >= 0");
    }
    let target_j = float(b, "target_j").unwrap_or(1.0);
    if !(target_j.is_finite() && target_j > 0.0) {
        return plan_err!("power: target_j {target_j}: expected a positive energy in joules");
    }
    let package = match int(b, "package") {
        Some(p) => Some(i32::try_from(p).or_else(|_| plan_err!("power: package {p}"))?),
        None => None,
    };
    Ok((
        ModelInput {
            events: texts(b, "events")?,
            domain: text(b, "domain").unwrap_or_else(|| "cores".into()),
            zones: texts(b, "zone")?,
            event: text(b, "event"),
            window_ns,
            package,
        },
        target_j,
    ))
}

/// The model's events: `events`, or every counter read at the samples.
pub async fn model_events(s: &Session, events: &[String]) -> Result<Vec<String>> {
    if !events.is_empty() {
        return Ok(events.to_vec());
    }
    let read = power::read_events(s).await?;
    if read.is_empty() {
        return Err(Error::Usage(
            "no counters read at the samples: name the events (sampled events count by their periods)"
                .into(),
        ));
    }
    Ok(read)
}

/// The terms of the fitted model with where its rates came from.
pub async fn model_terms(s: &Session, input: &ModelInput, target_j: f64) -> Result<RecordBatch> {
    let mut input = input.clone();
    input.events = model_events(s, &input.events).await?;
    let (src, intervals) = power::model_intervals(s, &input).await?;
    let fit = power::fit(&intervals, input.events.len())?;
    let table = power::fit_table(&intervals, &input.events, &fit, target_j)?;
    let n = table.num_rows();
    let mut from = StringBuilder::new();
    from.append_null();
    for (_, how) in &src.how {
        from.append_value(how);
    }
    from.append_null();
    let repeat = |v: &str| -> ArrayRef {
        let mut b = StringBuilder::new();
        for _ in 0..n {
            b.append_value(v);
        }
        Arc::new(b.finish())
    };
    let mut cols = table.columns().to_vec();
    cols.push(Arc::new(from.finish()));
    cols.push(repeat(&src.chain.capture));
    cols.push(repeat(&src.chain.domain));
    cols.push(repeat(&src.chain.zone));
    cols.push(repeat(&src.event));
    batch(term_schema(), cols)
}

/// The model's intervals, one row per interval and event.
pub async fn interval_rows(s: &Session, input: &ModelInput) -> Result<RecordBatch> {
    let mut input = input.clone();
    input.events = model_events(s, &input.events).await?;
    let (_, wide) = power::model_intervals(s, &input).await?;
    let col = |i: usize| wide.column(i).as_primitive::<Float64Type>().clone();
    let t = wide.column(0).as_primitive::<Int64Type>().clone();
    let (secs, joules, watts) = (col(1), col(2), col(3));
    let rates: Vec<_> = (0..input.events.len()).map(|j| col(4 + j)).collect();
    let (mut tb, mut sb, mut jb, mut wb, mut kb, mut eb, mut rb) = (
        Int64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Float64Builder::new(),
        Int64Builder::new(),
        StringBuilder::new(),
        Float64Builder::new(),
    );
    for i in 0..wide.num_rows() {
        for (j, (e, r)) in input.events.iter().zip(&rates).enumerate() {
            tb.append_value(t.value(i));
            sb.append_value(secs.value(i));
            jb.append_value(joules.value(i));
            wb.append_value(watts.value(i));
            kb.append_value(j as i64 + 1);
            eb.append_value(e);
            rb.append_option((!r.is_null(i)).then(|| r.value(i)));
        }
    }
    let cols: Vec<ArrayRef> = vec![
        Arc::new(tb.finish()),
        Arc::new(sb.finish()),
        Arc::new(jb.finish()),
        Arc::new(wb.finish()),
        Arc::new(kb.finish()),
        Arc::new(eb.finish()),
        Arc::new(rb.finish()),
    ];
    batch(interval_schema(), cols)
}

/// What a power-samples call asks for, before its defaults are looked up.
#[derive(Clone, Debug)]
pub struct SamplesArgs {
    pub counter: ModelInput,
    pub time_event: String,
    pub target_j: f64,
    pub group: Option<usize>,
    /// The model weighing the samples; None: fitted on the capture.
    pub model: Option<power::Model>,
}

fn samples_args(b: &Bound) -> DfResult<SamplesArgs> {
    let (mut counter, target_j) = model_args(b)?;
    counter.event = None;
    let group = match int(b, "group") {
        Some(g) if g > 0 => Some(g as usize),
        Some(g) => {
            return plan_err!("power_samples: group {g}: expected a positive number of samples")
        }
        None => None,
    };
    let intercept_w = float(b, "intercept_w").unwrap_or(0.0);
    if !intercept_w.is_finite() {
        return plan_err!("power_samples: intercept_w {intercept_w}: expected a number");
    }
    Ok(SamplesArgs {
        counter,
        time_event: text(b, "time_event").unwrap_or_else(|| "cpu-clock".into()),
        target_j,
        group,
        model: power::Model::given(&texts(b, "coef")?, intercept_w)
            .map_err(|e| datafusion::error::DataFusionError::Plan(format!("power_samples: {e}")))?,
    })
}

/// The model of a power-samples call: its coefficients as given, or
/// fitted over its events (then also the fit).
pub async fn samples_model(
    s: &Session,
    a: &SamplesArgs,
    events: &[String],
) -> Result<(power::Model, Option<power::Fit>)> {
    if let Some(m) = &a.model {
        return Ok((m.clone(), None));
    }
    let mut input = a.counter.clone();
    input.events = events.to_vec();
    let (_, intervals) = power::model_intervals(s, &input).await.map_err(|e| {
        Error::Usage(format!(
            "fitting the power model (or give it with coef and intercept_w): {e}"
        ))
    })?;
    let f = power::fit(&intervals, events.len())?;
    let model = power::Model {
        intercept_w: f.intercept,
        coef: events.iter().cloned().zip(f.coef.iter().copied()).collect(),
    };
    Ok((model, Some(f)))
}

/// The events merged: the call's, or every sampled event but the time
/// event (at most 8: every subset is tried).
pub async fn samples_events(s: &Session, a: &SamplesArgs) -> Result<Vec<String>> {
    let events = if a.counter.events.is_empty() {
        power::sampled_events(s, &a.time_event).await?
    } else {
        a.counter.events.clone()
    };
    if events.is_empty() {
        return Err(Error::Usage(format!(
            "no sampled events besides {}: name them with events",
            a.time_event
        )));
    }
    if events.len() > 8 {
        return Err(Error::Usage(format!(
            "{} events: at most 8 (every subset is tried)",
            events.len()
        )));
    }
    Ok(events)
}

/// The summary and the data of a power-samples call.
pub async fn samples_rows(s: &Session, a: &SamplesArgs) -> Result<(RecordBatch, RecordBatch)> {
    let events = samples_events(s, a).await?;
    let (model, _) = samples_model(s, a, &events).await?;
    let input = PowerSamplesInput {
        events,
        time_event: a.time_event.clone(),
        target_j: a.target_j,
        group: a.group,
        model,
        domain: a.counter.domain.clone(),
        zones: a.counter.zones.clone(),
        package: a.counter.package,
    };
    let (summary, data) = power::power_samples(s, &input).await?;
    Ok((
        batch(summary_schema(), summary.columns().to_vec())?,
        batch(datum_schema(), data.columns().to_vec())?,
    ))
}

type Inputs = DfResult<Vec<(&'static str, Arc<dyn TableProvider>)>>;

/// A table computed when first read, by `rows` in a session over the
/// catalog of the scan.
fn lazy<F, Fut>(
    name: &'static str,
    schema: SchemaRef,
    shared: &Arc<crate::session::Shared>,
    rows: F,
) -> (&'static str, Arc<dyn TableProvider>)
where
    F: Fn(Session) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<RecordBatch>> + Send + 'static,
{
    let table = crate::tables::LazyTable::new(name, schema, shared.clone(), move |s| {
        let rows = rows(s);
        async move { Ok(vec![rows.await?]) }
    });
    (name, Arc::new(table))
}

/// `_power_term` of a `power_model` call.
fn model_inputs(b: &Bound, shared: &Arc<crate::session::Shared>) -> Inputs {
    let (input, target_j) = model_args(b)?;
    Ok(vec![lazy("_power_term", term_schema(), shared, move |s| {
        let input = input.clone();
        async move { model_terms(&s, &input, target_j).await }
    })])
}

/// `_power_interval` of a `power_intervals` call.
fn interval_inputs(b: &Bound, shared: &Arc<crate::session::Shared>) -> Inputs {
    let (input, _) = model_args(b)?;
    Ok(vec![lazy(
        "_power_interval",
        interval_schema(),
        shared,
        move |s| {
            let input = input.clone();
            async move { interval_rows(&s, &input).await }
        },
    )])
}

/// `_power_summary` and `_power_datum` of a `power_samples` or
/// `power_data` call (each function reads one of them).
fn samples_inputs(b: &Bound, shared: &Arc<crate::session::Shared>) -> Inputs {
    let a = samples_args(b)?;
    let a2 = a.clone();
    Ok(vec![
        lazy("_power_summary", summary_schema(), shared, move |s| {
            let a = a.clone();
            async move { Ok(samples_rows(&s, &a).await?.0) }
        }),
        lazy("_power_datum", datum_schema(), shared, move |s| {
            let a = a2.clone();
            async move { Ok(samples_rows(&s, &a).await?.1) }
        }),
    ])
}

/// Registers the tables of the default arguments (computed when read)
/// and the power table functions.
pub async fn register(s: &Session) -> Result<()> {
    let none = Bound::new();
    for inputs in [model_inputs, interval_inputs, samples_inputs] {
        for (name, table) in inputs(&none, &s.shared)? {
            s.register_provider(name, table)?;
        }
    }
    crate::functions::register(s, SPECS).await
}

/// The arguments naming `input`'s counter and events.
fn counter_args(input: &ModelInput) -> Vec<Expr> {
    let mut args = Vec::new();
    for e in &input.events {
        args.extend([lit("events"), lit(e.as_str())]);
    }
    args.extend([lit("domain"), lit(input.domain.as_str())]);
    for z in &input.zones {
        args.extend([lit("zone"), lit(z.as_str())]);
    }
    if let Some(p) = input.package {
        args.extend([lit("package"), lit(p as i64)]);
    }
    args.extend([lit("window_ns"), lit(input.window_ns)]);
    args
}

/// `power_model(...)` for `input` (events empty: the default).
pub async fn model(s: &Session, input: &ModelInput, target_j: f64) -> Result<DataFrame> {
    let mut args = counter_args(input);
    if let Some(e) = &input.event {
        args.extend([lit("event"), lit(e.as_str())]);
    }
    args.extend([lit("target_j"), lit(target_j)]);
    crate::functions::call(s, "power_model", &args).await
}

/// `power_intervals(...)` for `input`.
pub async fn intervals(s: &Session, input: &ModelInput) -> Result<DataFrame> {
    let mut args = counter_args(input);
    if let Some(e) = &input.event {
        args.extend([lit("event"), lit(e.as_str())]);
    }
    crate::functions::call(s, "power_intervals", &args).await
}

fn samples_call_args(a: &SamplesArgs) -> Vec<Expr> {
    let mut args = counter_args(&a.counter);
    args.extend([lit("time_event"), lit(a.time_event.as_str())]);
    args.extend([lit("target_j"), lit(a.target_j)]);
    if let Some(g) = a.group {
        args.extend([lit("group"), lit(g as i64)]);
    }
    if let Some(m) = &a.model {
        // The SQL functions take the model as their text arguments.
        for (e, c) in &m.coef {
            args.extend([lit("coef"), lit(format!("{e}={c:?}"))]);
        }
        args.extend([lit("intercept_w"), lit(m.intercept_w)]);
    }
    args
}

/// `power_samples(...)` for `a`.
pub async fn samples(s: &Session, a: &SamplesArgs) -> Result<DataFrame> {
    crate::functions::call(s, "power_samples", &samples_call_args(a)).await
}

/// `power_data(...)` for `a`.
pub async fn data(s: &Session, a: &SamplesArgs) -> Result<DataFrame> {
    crate::functions::call(s, "power_data", &samples_call_args(a)).await
}

/// The options naming the energy counter a power report models (`domain`,
/// `zone`, `package`).
pub fn counter_opts() -> Vec<crate::report::Opt> {
    use crate::report::Opt;
    vec![
        Opt::text("domain", "The energy domain modelled.").default("cores"),
        Opt::text(
            "zone",
            "The energy counter to read (see `report energy --zone`).",
        )
        .many(),
        Opt::int32("package", "The package (socket) modelled, when the domain is read per package: its counter, and the samples on its CPUs (perf_cpu)."),
    ]
}

/// The power reports served from the registry.
pub static REPORTS: &[&crate::report::Report] = &[&POWER_MODEL_REPORT];

/// `trawl report power-model`.
pub static POWER_MODEL_REPORT: crate::report::Report = crate::report::Report {
    name: "power-model",
    about: "Power model (Ono et al. 2015, §3.2–3.3): watts = a + Σ c_i · rate_i fitted by least squares over the intervals of a domain's energy counter (rates from counters read at the samples, or sampled periods); coefficients, R², and the sampling interval R_i = P / c_i that makes each sample of event i worth P joules.",
    captures: crate::report::Captures::Many,
    opts: || {
        use crate::report::Opt;
        let mut o = vec![Opt::text("events", "The events whose rates explain the power (comma-separated; default: every counter read at the samples, power events excepted).").comma()];
        o.extend(counter_opts());
        o.extend([
            Opt::text("event", "The samples whose counter reads give the rates (default: the leader of the group that read the domain's counter)."),
            Opt::float("target", "Target energy per sample P (J) for R_i = P / c_i.").default("1"),
            Opt::duration("window", "Consecutive counter intervals are merged until they span this (RAPL counters step about every millisecond: 1 ms intervals carry one step whatever their length); `0` fits the raw intervals.").default("10ms"),
            Opt::flag("intervals", "Print the intervals fitted on instead, one row per interval and event (`power_intervals(...)`: t_ns, seconds, joules, watts, term, event, rate_per_s)."),
        ]);
        o
    },
    selects: crate::report::Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| Box::pin(run_power_model(s, g)),
};

/// The energy counter and events a power report reads, as given.
pub fn model_input(g: &crate::report::Given) -> Result<ModelInput> {
    Ok(ModelInput {
        events: g.texts("events").to_vec(),
        domain: g.text("domain").unwrap_or("cores").to_string(),
        zones: g.texts("zone").to_vec(),
        event: g.text("event").map(str::to_string),
        window_ns: g.duration_ns("window")?.unwrap_or(10_000_000),
        package: g.int32("package")?,
    })
}

async fn run_power_model(s: &Session, g: &crate::report::Given) -> Result<crate::report::Answer> {
    use crate::report::Answer;
    let input = model_input(g)?;
    if g.flag("intervals") {
        return Ok(Answer::rows(intervals(s, &input).await?));
    }
    let target = g.float("target")?.unwrap_or(1.0);
    let rows = model(s, &input, target).await?.collect().await?;
    let note = model_note(&rows, input.package);
    // The terms; where the model came from is the note.
    let shown = rows
        .iter()
        .map(|b| b.project(&(0..8).collect::<Vec<_>>()))
        .collect::<std::result::Result<Vec<_>, _>>()
        .map_err(datafusion::error::DataFusionError::from)?;
    let mut a = Answer::rows(s.ctx.read_batches(shown)?);
    a.log.push(note);
    Ok(a)
}

/// "capture: domain from zone; rates from E1 (read), ... at the E samples".
fn model_note(rows: &[RecordBatch], package: Option<i32>) -> String {
    let col = |name: &str| -> Vec<Option<String>> {
        rows.iter()
            .flat_map(|b| {
                b.column_by_name(name)
                    .map(|c| crate::rows::string_values(c))
                    .unwrap_or_default()
            })
            .collect()
    };
    let (term, from) = (col("term"), col("rates_from"));
    let first = |name: &str| col(name).into_iter().flatten().next().unwrap_or_default();
    let how: Vec<String> = term
        .iter()
        .zip(&from)
        .filter_map(|(t, f)| Some(format!("{} ({})", t.as_ref()?, f.as_ref()?)))
        .collect();
    format!(
        "{}: {}{} from {}; rates from {} at the {} samples{}",
        first("capture"),
        first("domain"),
        package
            .map(|p| format!(" of package {p}"))
            .unwrap_or_default(),
        first("zone"),
        how.join(", "),
        first("event"),
        package.map(|_| " on its CPUs").unwrap_or_default()
    )
}

/// What `trawl report power-samples` shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PowerView {
    Summary,
    Data,
}

impl crate::choice::Choice for PowerView {
    const ALL: &'static [Self] = &[PowerView::Summary, PowerView::Data];
    fn name(self) -> &'static str {
        match self {
            PowerView::Summary => "summary",
            PowerView::Data => "data",
        }
    }
    fn doc(self) -> &'static str {
        match self {
            PowerView::Summary => {
                "per subset of the events: mean, spread, share within ±5 %/±10 % of P"
            }
            PowerView::Data => "every power datum",
        }
    }
}
