//! Which samples a stack analysis reads and what each weighs: the
//! [`Selection`] the CLI and the Python package both build, the event chosen
//! when none is named, the weight checked against the capture.

use datafusion::logical_expr::Expr;
use datafusion::prelude::lit;
use datafusion::scalar::ScalarValue;

use crate::error::{Error, Result};
use crate::rows::string_values;
use crate::session::Session;

/// The perf_sample columns a sample can be weighed by (stack_weight.sql).
pub const WEIGHT_COLUMNS: &[&str] = &["weight", "weight_ins_lat", "weight_var3", "n_branch"];

/// What a sample weighs in the metrics.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub enum Weight {
    /// The sample period (perf's default: time for cpu-clock, events for
    /// counters).
    #[default]
    Period,
    /// Every sample weighs 1.
    Samples,
    /// A numeric column of `perf_sample` (e.g. `weight`).
    Column(String),
    /// The increase of a group-read counter (`perf_sample_read`) since the
    /// previous sample of the same counter, e.g. `read:instructions`.
    Read(String),
}

impl Weight {
    /// Parses `period`, `samples`, `read:EVENT` or a `perf_sample` column.
    pub fn parse(s: &str) -> Result<Weight> {
        Ok(match s {
            "period" => Weight::Period,
            "samples" | "count" => Weight::Samples,
            _ => match s.strip_prefix("read:") {
                Some(e) if !e.is_empty() => Weight::Read(e.to_string()),
                _ => {
                    if !WEIGHT_COLUMNS.contains(&s) {
                        return Err(Error::Usage(format!(
                            "weight {s:?}: not `period`, `samples`, `read:EVENT` or one of the perf_sample columns {}",
                            WEIGHT_COLUMNS.join(", ")
                        )));
                    }
                    Weight::Column(s.to_string())
                }
            },
        })
    }

    /// The value `stack_weight`'s `weight` parameter takes.
    pub fn arg(&self) -> String {
        match self {
            Weight::Period => "period".into(),
            Weight::Samples => "samples".into(),
            Weight::Column(c) => c.clone(),
            Weight::Read(e) => format!("read:{e}"),
        }
    }

    /// Column-name suffix for the weighted metrics (`self_period`, ...);
    /// None for plain sample counts.
    pub fn name(&self) -> Option<String> {
        match self {
            Weight::Period => Some("period".into()),
            Weight::Samples => None,
            Weight::Column(c) => Some(c.clone()),
            Weight::Read(e) => Some(
                e.chars()
                    .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                    .collect(),
            ),
        }
    }
}

/// Options shared by the stack analyses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StackOpts {
    /// Inline levels count as functions of their own (perf report --inline).
    pub inline: bool,
}

impl Default for StackOpts {
    fn default() -> Self {
        StackOpts { inline: true }
    }
}

/// Which samples an analysis looks at.
#[derive(Clone, Debug, Default)]
pub struct SampleFilter {
    pub event: Option<String>,
    pub pids: Vec<i32>,
    pub tids: Vec<i32>,
    pub comms: Vec<String>,
    /// Inclusive start and exclusive end, ns on the capture clock.
    pub time_from_ns: Option<i64>,
    pub time_to_ns: Option<i64>,
    /// Only these captures (by the names a session gives them).
    pub captures: Vec<String>,
}

impl SampleFilter {
    /// The selection as name/value arguments of a stack analysis.
    pub(crate) fn args(&self, event: &str, weight: &Weight, out: &mut Vec<Expr>) {
        out.extend([lit("event"), lit(event), lit("weight"), lit(weight.arg())]);
        self.selection_args(out);
    }

    /// The process, thread, command, time and capture selection as the
    /// name/value arguments every analysis that selects by them takes
    /// (`pid`, `tid`, `comm`, `from_ns`, `to_ns`, `capture`); the event is
    /// not among them.
    pub fn selection_args(&self, out: &mut Vec<Expr>) {
        let mut pair = |k: &str, v: ScalarValue| {
            out.push(lit(k));
            out.push(lit(v));
        };
        for &p in &self.pids {
            pair("pid", ScalarValue::Int32(Some(p)));
        }
        for &t in &self.tids {
            pair("tid", ScalarValue::Int32(Some(t)));
        }
        for c in &self.comms {
            pair("comm", ScalarValue::from(c.as_str()));
        }
        if let Some(t) = self.time_from_ns {
            pair("from_ns", ScalarValue::Int64(Some(t)));
        }
        if let Some(t) = self.time_to_ns {
            pair("to_ns", ScalarValue::Int64(Some(t)));
        }
        for c in &self.captures {
            pair("capture", ScalarValue::from(c.as_str()));
        }
    }
}

/// A stack selection: which samples, what they weigh, inline levels.
pub struct Selection<'a> {
    pub filter: &'a SampleFilter,
    pub event: &'a str,
    pub weight: &'a Weight,
    pub opts: StackOpts,
}

impl Selection<'_> {
    /// The arguments of `stack_weight(...)`.
    pub(crate) fn sample_args(&self) -> Vec<Expr> {
        let mut a = Vec::new();
        self.filter.args(self.event, self.weight, &mut a);
        a
    }

    pub(crate) fn args(&self, first: Option<Expr>) -> Vec<Expr> {
        let mut a: Vec<Expr> = first.into_iter().collect();
        self.filter.args(self.event, self.weight, &mut a);
        a.push(lit("inline"));
        a.push(lit(self.opts.inline));
        a
    }
}

/// Events that have samples, most samples first.
pub async fn sampled_events(s: &Session) -> Result<Vec<(String, i64)>> {
    sampled_events_in(s, &[]).await
}

/// [`sampled_events`] of the captures `captures` (all when empty). When
/// their `perf_event` tables name one event, it is the one and its
/// samples are counted from the scan's statistics (no sample read; a
/// sample of an event id the recording did not describe, which has no
/// name, counted with it).
pub async fn sampled_events_in(s: &Session, captures: &[String]) -> Result<Vec<(String, i64)>> {
    use datafusion::arrow::array::AsArray;
    use datafusion::prelude::col;
    let only = |df: datafusion::prelude::DataFrame| -> Result<datafusion::prelude::DataFrame> {
        if captures.is_empty() {
            return Ok(df);
        }
        let list: Vec<Expr> = captures.iter().map(|c| lit(c.as_str())).collect();
        Ok(df.filter(col("capture").in_list(list, false))?)
    };
    let named = only(s.ctx.table("perf_event").await?)?
        .select(vec![col("name")])?
        .distinct()?
        .collect()
        .await?;
    let names: Vec<String> = named
        .iter()
        .flat_map(|b| string_values(b.column(0)))
        .flatten()
        .collect();
    if let [name] = names.as_slice() {
        let n = only(s.ctx.table("perf_sample").await?)?.count().await?;
        return Ok(if n > 0 {
            vec![(name.clone(), n as i64)]
        } else {
            Vec::new()
        });
    }
    let event =
        datafusion::prelude::cast(col("event"), datafusion::arrow::datatypes::DataType::Utf8)
            .alias("event");
    let df = only(s.ctx.table("perf_sample").await?)?
        .aggregate(
            vec![event],
            vec![datafusion::functions_aggregate::expr_fn::count(lit(1)).alias("n")],
        )?
        .sort(vec![
            col("n").sort(false, true),
            col("event").sort(true, true),
        ])?;
    let mut out = Vec::new();
    for b in df.collect().await? {
        let e = string_values(b.column(0));
        let n = b
            .column(1)
            .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
        for (i, name) in e.into_iter().enumerate() {
            out.push((name.unwrap_or_default(), n.value(i)));
        }
    }
    Ok(out)
}

/// The event named (which must have samples), or the one with most
/// samples.
pub async fn choose_event(s: &Session, given: Option<&str>) -> Result<String> {
    choose_event_in(s, given, &[]).await
}

/// [`choose_event`] among the samples of the captures `captures` (all
/// when empty).
pub async fn choose_event_in(
    s: &Session,
    given: Option<&str>,
    captures: &[String],
) -> Result<String> {
    let events = sampled_events_in(s, captures).await?;
    Ok(match given {
        Some(e) => {
            if !events.iter().any(|(n, _)| n == e) {
                return Err(Error::Usage(format!(
                    "no samples of event {e:?}; events with samples: {}",
                    events
                        .iter()
                        .map(|(n, c)| format!("{n} ({c})"))
                        .collect::<Vec<_>>()
                        .join(", ")
                )));
            }
            e.to_string()
        }
        None => match events.first() {
            Some((e, _)) => e.clone(),
            None => return Err(Error::Usage("the capture has no samples".into())),
        },
    })
}

/// Refuses a `read:EVENT` weight when no counter of that event was read.
pub async fn check_weight(s: &Session, weight: &Weight) -> Result<()> {
    if let Weight::Read(e) = weight {
        let n = s
            .ctx
            .table("perf_sample_read")
            .await?
            .filter(datafusion::prelude::col("event").eq(lit(e.as_str())))?
            .count()
            .await?;
        if n == 0 {
            return Err(Error::Usage(format!(
                "weight read:{e}: no counter of that event in perf_sample_read"
            )));
        }
    }
    Ok(())
}

/// A selection checked against a session's captures: what a [`Selection`]
/// borrows, owned. Both fronts make their selections with
/// [`Picked::resolve`].
#[derive(Clone, Debug)]
pub struct Picked {
    pub filter: SampleFilter,
    pub event: String,
    pub weight: Weight,
    pub opts: StackOpts,
}

impl Picked {
    /// Checks `filter` and `weight` against the captures of `s`: the
    /// filter's event must have samples (by default: the event with most
    /// samples), a `read:EVENT` weight a counter read.
    pub async fn resolve(
        s: &Session,
        mut filter: SampleFilter,
        weight: Weight,
        opts: StackOpts,
    ) -> Result<Picked> {
        let event = choose_event_in(s, filter.event.as_deref(), &filter.captures).await?;
        check_weight(s, &weight).await?;
        filter.event = Some(event.clone());
        Ok(Picked {
            filter,
            event,
            weight,
            opts,
        })
    }

    /// The selection, borrowing from `self`.
    pub fn selection(&self) -> Selection<'_> {
        Selection {
            filter: &self.filter,
            event: &self.event,
            weight: &self.weight,
            opts: self.opts,
        }
    }
}
