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
    /// Flame graphs and folded stacks: each process a root frame
    /// `comm-pid` (as `stackcollapse-perf.pl --pid`).
    pub process_root: bool,
}

impl Default for StackOpts {
    fn default() -> Self {
        StackOpts {
            inline: true,
            process_root: false,
        }
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
        Some(e) if !events.iter().any(|(n, _)| n == e) && unmodified(&events, e).is_some() => {
            unmodified(&events, e).expect("checked").to_string()
        }
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

/// The one sampled event that is `name` with modifiers (`cpu-clock` for
/// `cpu-clock:ppp`, perf's default event on a virtual machine), if there
/// is exactly one.
fn unmodified<'a>(events: &'a [(String, i64)], name: &str) -> Option<&'a str> {
    let mut it = events.iter().map(|(n, _)| n.as_str()).filter(|n| {
        n.split_once(':').is_some_and(|(base, m)| {
            base == name && !m.is_empty() && m.chars().all(|c| "ukhHGpPSDIWebR".contains(c))
        })
    });
    let one = it.next()?;
    it.next().is_none().then_some(one)
}

/// Why a selection matched nothing: each restriction of `f` that no
/// sample of the captures meets, with what they hold instead (their time
/// span, the processes with most samples, the closest command names).
/// Empty when every restriction alone matches samples.
pub async fn why_nothing(s: &Session, f: &SampleFilter) -> Result<Vec<String>> {
    use datafusion::arrow::array::{Array, AsArray};
    use datafusion::functions_aggregate::expr_fn::{count, max, min};
    use datafusion::prelude::col;
    let samples = || async {
        let df = s.ctx.table("perf_sample").await?;
        Ok::<_, Error>(if f.captures.is_empty() {
            df
        } else {
            let list: Vec<Expr> = f.captures.iter().map(|c| lit(c.as_str())).collect();
            df.filter(col("capture").in_list(list, false))?
        })
    };
    let mut out = Vec::new();
    if f.time_from_ns.is_some() || f.time_to_ns.is_some() {
        let b = samples()
            .await?
            .aggregate(vec![], vec![min(col("time_ns")), max(col("time_ns"))])?
            .collect()
            .await?;
        let span = b
            .first()
            .and_then(|b| Some((crate::rows::i64_at(b, 0, 0)?, crate::rows::i64_at(b, 1, 0)?)));
        if let Some((lo, hi)) = span {
            let from = f.time_from_ns.unwrap_or(i64::MIN);
            let to = f.time_to_ns.unwrap_or(i64::MAX);
            if to <= lo || from > hi {
                // As perf script prints times: microseconds, truncated.
                let secs = |t: Option<i64>| {
                    t.map(|t| {
                        let us = t.div_euclid(1000);
                        format!(
                            "{}.{:06}",
                            us.div_euclid(1_000_000),
                            us.rem_euclid(1_000_000)
                        )
                    })
                    .unwrap_or_default()
                };
                out.push(format!(
                    "no samples in --time {}..{}: the samples run from {} to {} s (as perf script prints times)",
                    secs(f.time_from_ns),
                    secs(f.time_to_ns),
                    secs(Some(lo)),
                    secs(Some(hi))
                ));
            }
        }
    }
    if !f.pids.is_empty() || !f.tids.is_empty() || !f.comms.is_empty() {
        let b = samples()
            .await?
            .aggregate(
                vec![col("pid"), col("tid"), col("comm")],
                vec![count(lit(1)).alias("n")],
            )?
            .collect()
            .await?;
        // (pid, tid, comm, samples) of every thread of the captures.
        let mut threads: Vec<(i32, i32, String, i64)> = Vec::new();
        for b in &b {
            let pid = b
                .column(0)
                .as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            let tid = b
                .column(1)
                .as_primitive::<datafusion::arrow::datatypes::Int32Type>();
            let comm = string_values(b.column(2));
            let n = b
                .column(3)
                .as_primitive::<datafusion::arrow::datatypes::Int64Type>();
            for i in 0..b.num_rows() {
                let or_none = |a: &datafusion::arrow::array::Int32Array| {
                    if a.is_null(i) {
                        -1
                    } else {
                        a.value(i)
                    }
                };
                threads.push((
                    or_none(pid),
                    or_none(tid),
                    comm[i].clone().unwrap_or_default(),
                    n.value(i),
                ));
            }
        }
        if threads.is_empty() {
            out.push("the selected captures have no samples".into());
            return Ok(out);
        }
        // Processes by samples, most first.
        let mut procs: Vec<(i32, String, i64)> = Vec::new();
        for (p, _, c, n) in &threads {
            match procs.iter_mut().find(|(q, d, _)| q == p && d == c) {
                Some(x) => x.2 += n,
                None => procs.push((*p, c.clone(), *n)),
            }
        }
        procs.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
        let top: Vec<String> = procs
            .iter()
            .take(5)
            .map(|(p, c, n)| format!("{p} ({c}, {n})"))
            .collect();
        let missing = |given: &[i32], of: fn(&(i32, i32, String, i64)) -> i32| -> Vec<String> {
            given
                .iter()
                .filter(|g| !threads.iter().any(|t| of(t) == **g))
                .map(|g| g.to_string())
                .collect()
        };
        for (option, gone) in [
            ("--pid", missing(&f.pids, |t| t.0)),
            ("--tid", missing(&f.tids, |t| t.1)),
        ] {
            if !gone.is_empty() {
                out.push(format!(
                    "no samples of {option} {}; processes with most samples: {}",
                    gone.join(", "),
                    top.join(", ")
                ));
            }
        }
        let mut names: Vec<&str> = procs.iter().map(|(_, c, _)| c.as_str()).collect();
        names.sort_unstable();
        names.dedup();
        for c in f.comms.iter().filter(|c| !names.contains(&c.as_str())) {
            let mut near: Vec<(usize, &str)> =
                names.iter().map(|n| (edit_distance(c, n), *n)).collect();
            near.sort();
            let near: Vec<&str> = near.iter().take(3).map(|(_, n)| *n).collect();
            out.push(format!(
                "no samples of --comm {c}; the closest commands: {}",
                near.join(", ")
            ));
        }
    }
    Ok(out)
}

/// Levenshtein's distance between two names (characters inserted,
/// removed or changed).
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diag = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let up = row[j + 1];
            row[j + 1] = (up + 1).min(row[j] + 1).min(diag + usize::from(ca != *cb));
            diag = up;
        }
    }
    row[b.len()]
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
    /// [`Picked::resolve`], or, when no event is named and the captures
    /// hold no samples, a selection of none (an event of no sample): for
    /// exports that carry more than samples (a Perfetto trace of strace
    /// dumps).
    pub async fn resolve_or_none(
        s: &Session,
        filter: SampleFilter,
        weight: Weight,
        opts: StackOpts,
    ) -> Result<Picked> {
        if filter.event.is_none() && sampled_events_in(s, &filter.captures).await?.is_empty() {
            return Ok(Picked {
                filter: SampleFilter {
                    event: Some(String::new()),
                    ..filter
                },
                event: String::new(),
                weight,
                opts,
            });
        }
        Self::resolve(s, filter, weight, opts).await
    }

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

#[cfg(test)]
mod tests {
    use super::unmodified;

    #[test]
    fn an_event_is_named_without_its_modifiers_when_one_matches() {
        let ev = |names: &[&str]| -> Vec<(String, i64)> {
            names.iter().map(|n| (n.to_string(), 1)).collect()
        };
        assert_eq!(
            unmodified(&ev(&["cpu-clock:ppp"]), "cpu-clock"),
            Some("cpu-clock:ppp")
        );
        assert_eq!(unmodified(&ev(&["cycles:u", "cycles:k"]), "cycles"), None);
        assert_eq!(unmodified(&ev(&["sched:sched_switch"]), "sched"), None);
        assert_eq!(unmodified(&ev(&["cpu-clock"]), "cpu"), None);
    }

    #[test]
    fn edit_distances_as_worked_by_hand() {
        use super::edit_distance;
        assert_eq!(edit_distance("gzp", "gzip"), 1);
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "ls"), 2);
        assert_eq!(edit_distance("same", "same"), 0);
    }
}
