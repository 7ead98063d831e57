//! The option groups several commands share (the samples a report reads,
//! what they weigh, the time origin, exhaustion rules) and what a command
//! makes of them.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;
use trawl_query::choice::Choice;
use trawl_query::sample::{self, SampleFilter};
use trawl_query::Session;

use crate::session::open_session;

#[derive(Args, Clone)]
pub(crate) struct T0Args {
    /// Origin of relative times in each capture: `first` (the earliest
    /// event of any input), `exec:NAME` (the program's exec, from perf
    /// COMM records or strace execve), `@EPOCH_SECONDS` or an RFC 3339
    /// time, each optionally `+SECONDS`/`-SECONDS`.
    #[arg(long, default_value = "first", value_name = "SPEC")]
    pub(crate) t0: String,
}

impl T0Args {
    pub(crate) async fn open(&self, captures: &[PathBuf]) -> Result<Session> {
        let origin = trawl_query::time::Origin::parse(&self.t0)?;
        open_session(captures, &origin).await
    }
}

#[derive(Args, Clone)]
pub(crate) struct RuleArgs {
    /// The rule: comparisons of metrics (as named in the `metric` table,
    /// `name[entity]` for one entity) and numbers with + - * /, combined
    /// with and/or/not, e.g. 'cpu_user+cpu_sys > 90 and runq > 2'.
    #[arg(long)]
    pub(crate) rule: Option<String>,
    /// Drop ranges shorter than this (after merging), e.g. 2s.
    #[arg(long, default_value = "0", value_name = "DURATION")]
    pub(crate) min_duration: String,
    /// Merge ranges separated by at most this, e.g. 1s.
    #[arg(long, default_value = "0", value_name = "DURATION")]
    pub(crate) gap: String,
}

impl RuleArgs {
    pub(crate) fn parse(
        &self,
    ) -> Result<Option<(trawl_query::ranges::Rule, trawl_query::ranges::RangeOpts)>> {
        Ok(match &self.rule {
            Some(r) => Some(trawl_query::ranges::rule_with(
                r,
                &self.min_duration,
                &self.gap,
            )?),
            None => None,
        })
    }
}

#[derive(Args, Clone, Default)]
pub(crate) struct MetricArgs {
    /// What a sample weighs: `period` (default, perf's Overhead),
    /// `samples`, a numeric perf_sample column (e.g. `weight`), or
    /// `read:EVENT` (the increase of a group-read counter).
    #[arg(long, default_value = "period")]
    pub(crate) weight: String,
    /// Attribute inlined code to its enclosing (ELF symbol) function only,
    /// as `perf report` does without --inline.
    #[arg(long)]
    pub(crate) no_inline: bool,
    /// Each process a root frame `comm-pid` above its stacks, as `perf
    /// script | stackcollapse-perf.pl --pid` draws them (flame graphs and
    /// folded stacks).
    #[arg(long)]
    pub(crate) process_root: bool,
}

impl MetricArgs {
    pub(crate) fn parse(&self) -> Result<(sample::Weight, sample::StackOpts)> {
        Ok((
            sample::Weight::parse(&self.weight)?,
            sample::StackOpts {
                inline: !self.no_inline,
                process_root: self.process_root,
            },
        ))
    }
}

#[derive(Args, Clone, Default)]
pub(crate) struct FilterArgs {
    /// Event to analyse (default: the one with most samples).
    #[arg(long)]
    pub(crate) event: Option<String>,
    #[command(flatten)]
    pub(crate) threads: ThreadArgs,
}

/// The processes, threads, commands, time range and captures selected.
#[derive(Args, Clone, Default)]
pub(crate) struct ThreadArgs {
    /// Only these processes (repeatable).
    #[arg(long)]
    pub(crate) pid: Vec<i32>,
    /// Only these threads (repeatable).
    #[arg(long)]
    pub(crate) tid: Vec<i32>,
    /// Only these command names (repeatable).
    #[arg(long)]
    pub(crate) comm: Vec<String>,
    /// Time range START..END in seconds on the capture clock, as `perf
    /// script` prints times, or +START..+END in seconds since the origin
    /// (`--t0`), as `report timeline` prints them (either side may be
    /// omitted).
    #[arg(long, value_name = "START..END")]
    pub(crate) time: Option<String>,
    /// Only these captures, by name as `trawl tables` lists them (the
    /// directory name; repeatable).
    #[arg(long = "capture", value_name = "NAME")]
    pub(crate) capture: Vec<String>,
}

impl FilterArgs {
    pub(crate) async fn to_filter(&self, s: &Session) -> Result<SampleFilter> {
        Ok(SampleFilter {
            event: self.event.clone(),
            ..self.threads.to_filter(s).await?
        })
    }
}

impl ThreadArgs {
    /// The selection, without an event; `--time` placed on the clock of
    /// `s`'s perf samples.
    pub(crate) async fn to_filter(&self, s: &Session) -> Result<SampleFilter> {
        let (from, to) = match &self.time {
            Some(t) => {
                let r = trawl_query::time::parse_seconds_range(t)?;
                trawl_query::time::on_clock(s, r, &self.capture, trawl_query::time::RowsOf::Samples)
                    .await?
            }
            None => (None, None),
        };
        Ok(SampleFilter {
            event: None,
            pids: self.pid.clone(),
            tids: self.tid.clone(),
            comms: self.comm.clone(),
            time_from_ns: from,
            time_to_ns: to,
            captures: self.capture.clone(),
        })
    }
}

/// A flag taking one of the library's named values ([`Choice`]), each
/// listed with its meaning in `--help`.
pub(crate) fn choice<T: Choice + Clone>() -> impl clap::builder::TypedValueParser<Value = T> {
    use clap::builder::{PossibleValue, PossibleValuesParser, TypedValueParser};
    PossibleValuesParser::new(T::ALL.iter().map(|v| {
        PossibleValue::new(v.name())
            .help(v.doc())
            .aliases(v.aliases().iter().copied())
    }))
    .map(|s| T::parse(&s).expect("a listed value"))
}

/// The samples a stack report reads: the event (checked, or the one with
/// most samples), the weight (checked), the filter and inline option.
pub(crate) async fn selection(
    s: &Session,
    filter: &FilterArgs,
    metric: &MetricArgs,
) -> Result<sample::Picked> {
    let (weight, opts) = metric.parse()?;
    Ok(sample::Picked::resolve(s, filter.to_filter(s).await?, weight, opts).await?)
}

/// [`selection`], or a selection of none when the captures hold no samples
/// and no event is named (`sample::Picked::resolve_or_none`).
pub(crate) async fn selection_or_none(
    s: &Session,
    filter: &FilterArgs,
    metric: &MetricArgs,
) -> Result<sample::Picked> {
    let (weight, opts) = metric.parse()?;
    Ok(sample::Picked::resolve_or_none(s, filter.to_filter(s).await?, weight, opts).await?)
}
