//! The named reports (`trawl report NAME`) as data: each report's name,
//! help, options with their values and defaults, and the function that
//! answers it. A front end builds its commands from this list (the CLI's
//! subcommands and flags, their help and possible values), parses what the
//! user gave into a [`Given`] and calls [`Report::answer`]; nothing about a
//! report is written twice.
//!
//! A report lives beside its analysis: its [`Report`] value next to the
//! analysis's [`Spec`](crate::functions::Spec) in the area's module, listed
//! in that module's `REPORTS` (gathered by `registry::reports`).

use std::collections::HashMap;
use std::path::PathBuf;

use datafusion::prelude::DataFrame;
use futures::future::BoxFuture;

use crate::choice::Choice;
use crate::error::{Error, Result};
use crate::sample::{Picked, SampleFilter, StackOpts, Weight};
use crate::session::Session;

/// What an option's values are; the front end checks them before a
/// report runs.
#[derive(Clone, Copy)]
pub enum Value {
    Text,
    Int,
    /// An integer that fits 32 bits (a process, thread, package).
    Int32,
    Float,
    /// A byte count (`4096`, `4k`, `2M`, `0x1000`).
    Bytes,
    /// A duration (`10ms`, `2s`).
    Duration,
    /// Present or not (takes no value).
    Flag,
    /// One of a closed set: each name with what it means and its other
    /// names.
    Choice(fn() -> Vec<(&'static str, &'static str, &'static [&'static str])>),
}

/// One option of a report.
#[derive(Clone)]
pub struct Opt {
    /// The option's name in snake case; the CLI's flag is `--name-with-dashes`.
    pub name: &'static str,
    pub value: Value,
    /// The help text.
    pub doc: &'static str,
    /// Given several times (or comma-separated, with [`Opt::comma`]), all
    /// values kept.
    pub many: bool,
    /// Values may be given comma-separated.
    pub comma: bool,
    pub required: bool,
    pub default: Option<&'static str>,
    /// Given by position, before the captures (callers' FUNCTION).
    pub positional: bool,
    /// What the help calls its value (default: the name in capitals).
    pub value_name: Option<&'static str>,
    /// Another name of the option (a peer tool's habit: `--sort`).
    pub alias: Option<&'static str>,
}

impl Opt {
    pub fn new(name: &'static str, value: Value, doc: &'static str) -> Opt {
        Opt {
            name,
            value,
            doc,
            many: false,
            comma: false,
            required: false,
            default: None,
            positional: false,
            value_name: None,
            alias: None,
        }
    }
    pub fn text(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Text, doc)
    }
    pub fn int(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Int, doc)
    }
    pub fn int32(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Int32, doc)
    }
    pub fn float(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Float, doc)
    }
    pub fn bytes(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Bytes, doc).value_name("BYTES")
    }
    pub fn duration(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Duration, doc).value_name("DURATION")
    }
    pub fn flag(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Flag, doc)
    }
    /// One of `T`'s values (each listed with its meaning).
    pub fn choice<T: Choice>(name: &'static str, doc: &'static str) -> Opt {
        Opt::new(name, Value::Choice(choice_values::<T>), doc)
    }
    pub fn many(mut self) -> Opt {
        self.many = true;
        self
    }
    pub fn comma(mut self) -> Opt {
        self.many = true;
        self.comma = true;
        self
    }
    pub fn required(mut self) -> Opt {
        self.required = true;
        self
    }
    pub fn default(mut self, v: &'static str) -> Opt {
        self.default = Some(v);
        self
    }
    pub fn positional(mut self) -> Opt {
        self.positional = true;
        self.required = true;
        self
    }
    pub fn value_name(mut self, v: &'static str) -> Opt {
        self.value_name = Some(v);
        self
    }
    pub fn alias(mut self, a: &'static str) -> Opt {
        self.alias = Some(a);
        self
    }
}

fn choice_values<T: Choice>() -> Vec<(&'static str, &'static str, &'static [&'static str])> {
    T::ALL
        .iter()
        .map(|v| (v.name(), v.doc(), v.aliases()))
        .collect()
}

/// The captures a report reads.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Captures {
    /// One or more captures (or directories of captures).
    Many,
    /// Two sides, BASE and NEW (each a capture or a directory of captures).
    Sides,
}

/// Which of the shared selection options a report takes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Selects {
    Nothing,
    /// Processes, threads, commands, a time range, captures: `pid`, `tid`,
    /// `comm`, `time`, `capture`.
    Threads,
    /// [`Selects::Threads`] and `event`.
    Events,
    /// [`Selects::Events`] and what a sample weighs: `weight`,
    /// `no_inline`; the event is checked (by default the one with most
    /// samples) and named in the answer's heading.
    Samples,
}

/// A report: what the CLI's `trawl report NAME` shows and does.
pub struct Report {
    /// The name, as the command line writes it (`page-reuse`).
    pub name: &'static str,
    /// The help: its first sentence is the one-line summary.
    pub about: &'static str,
    pub captures: Captures,
    /// Its own options, in the order help lists them (the selection's
    /// options follow them).
    pub opts: fn() -> Vec<Opt>,
    pub selects: Selects,
    /// Takes `t0`, the origin of relative times.
    pub t0: bool,
    /// Takes `limit`: at most N rows.
    pub limit: bool,
    pub run: for<'a> fn(&'a Session, &'a Given) -> BoxFuture<'a, Result<Answer>>,
}

/// A report's answer: its rows and what the front end says beside them.
pub struct Answer {
    pub df: DataFrame,
    /// Lines (on standard error) that head a table shown on a terminal:
    /// the event, the application attributed to.
    pub heading: Vec<String>,
    /// Lines always said (on standard error): where the numbers come from.
    pub log: Vec<String>,
}

impl Answer {
    pub fn rows(df: DataFrame) -> Answer {
        Answer {
            df,
            heading: Vec::new(),
            log: Vec::new(),
        }
    }
    pub fn heading(mut self, line: String) -> Answer {
        self.heading.push(line);
        self
    }
}

/// What the user gave a report, as text by option name (values are
/// checked by the front end against the option's [`Value`] and read here).
#[derive(Clone, Debug, Default)]
pub struct Given {
    /// The captures; for [`Captures::Sides`], BASE then NEW.
    pub captures: Vec<PathBuf>,
    values: HashMap<String, Vec<String>>,
}

/// The options of [`Selects`] and the other shared options, as [`Given`]
/// holds them.
pub mod shared {
    pub const EVENT: &str = "event";
    pub const PID: &str = "pid";
    pub const TID: &str = "tid";
    pub const COMM: &str = "comm";
    pub const TIME: &str = "time";
    pub const CAPTURE: &str = "capture";
    pub const WEIGHT: &str = "weight";
    pub const NO_INLINE: &str = "no_inline";
    pub const T0: &str = "t0";
    pub const LIMIT: &str = "limit";
}

fn usage(name: &str, v: &str, what: impl std::fmt::Display) -> Error {
    Error::Usage(format!("--{} {v:?}: {what}", name.replace('_', "-")))
}

impl Given {
    pub fn new(captures: Vec<PathBuf>) -> Given {
        Given {
            captures,
            values: HashMap::new(),
        }
    }

    /// Sets option `name`'s values (a flag: one value, `true`).
    pub fn set(&mut self, name: &str, values: Vec<String>) {
        if !values.is_empty() {
            self.values.insert(name.to_string(), values);
        }
    }

    /// Option `name`'s values (empty: not given).
    pub fn texts(&self, name: &str) -> &[String] {
        self.values.get(name).map_or(&[], |v| v.as_slice())
    }

    /// Option `name`'s (last) value.
    pub fn text(&self, name: &str) -> Option<&str> {
        self.texts(name).last().map(|s| s.as_str())
    }

    pub fn int32(&self, name: &str) -> Result<Option<i32>> {
        self.text(name)
            .map(|v| {
                v.trim()
                    .parse()
                    .map_err(|_| usage(name, v, "not a 32-bit integer"))
            })
            .transpose()
    }

    pub fn flag(&self, name: &str) -> bool {
        self.text(name).is_some_and(|v| v != "false")
    }

    pub fn int(&self, name: &str) -> Result<Option<i64>> {
        self.text(name)
            .map(|v| v.parse().map_err(|_| usage(name, v, "not an integer")))
            .transpose()
    }

    pub fn ints(&self, name: &str) -> Result<Vec<i32>> {
        self.texts(name)
            .iter()
            .map(|v| v.parse().map_err(|_| usage(name, v, "not an integer")))
            .collect()
    }

    pub fn float(&self, name: &str) -> Result<Option<f64>> {
        self.text(name)
            .map(|v| v.parse().map_err(|_| usage(name, v, "not a number")))
            .transpose()
    }

    pub fn bytes(&self, name: &str) -> Result<Option<u64>> {
        self.text(name)
            .map(|v| trawl_capture::units::parse_size(v).map_err(|e| usage(name, v, e)))
            .transpose()
    }

    pub fn duration_ns(&self, name: &str) -> Result<Option<i64>> {
        self.text(name)
            .map(crate::time::parse_duration_ns)
            .transpose()
    }

    pub fn choice<T: Choice>(&self, name: &str) -> Result<Option<T>> {
        self.text(name).map(|v| parse_choice(name, v)).transpose()
    }

    pub fn choices<T: Choice>(&self, name: &str) -> Result<Vec<T>> {
        self.texts(name)
            .iter()
            .map(|v| parse_choice(name, v))
            .collect()
    }

    /// `limit`, when given.
    pub fn limit(&self) -> Result<Option<usize>> {
        Ok(self.int(shared::LIMIT)?.map(|n| n.max(0) as usize))
    }

    /// The selection of [`Selects::Threads`]/[`Selects::Events`]: the
    /// event (unchecked), processes, threads, commands, time range (`time`:
    /// `START..END` in seconds on the capture clock or `+START..+END` since
    /// the origin, placed on the clock of `s`'s perf samples) and captures.
    pub async fn filter(&self, s: &Session) -> Result<SampleFilter> {
        use shared::*;
        let captures = self.texts(CAPTURE).to_vec();
        let (from, to) = match self.text(TIME) {
            Some(t) => {
                let r = crate::time::parse_seconds_range(t)?;
                crate::time::on_clock(s, r, &captures, crate::time::RowsOf::Samples).await?
            }
            None => (None, None),
        };
        Ok(SampleFilter {
            event: self.text(EVENT).map(str::to_string),
            pids: self.ints(PID)?,
            tids: self.ints(TID)?,
            comms: self.texts(COMM).to_vec(),
            time_from_ns: from,
            time_to_ns: to,
            captures,
        })
    }

    /// The selection of [`Selects::Samples`], checked against `s`'s
    /// captures.
    pub async fn picked(&self, s: &Session) -> Result<Picked> {
        let weight = Weight::parse(self.text(shared::WEIGHT).unwrap_or("period"))?;
        let opts = StackOpts {
            inline: !self.flag(shared::NO_INLINE),
            ..StackOpts::default()
        };
        Picked::resolve(s, self.filter(s).await?, weight, opts).await
    }
}

fn parse_choice<T: Choice>(name: &str, v: &str) -> Result<T> {
    T::parse(v).ok_or_else(|| {
        let names: Vec<&str> = T::ALL.iter().map(|c| c.name()).collect();
        usage(name, v, format!("one of {}", names.join(", ")))
    })
}

impl Report {
    /// The report's options, its own then the shared ones, as help lists
    /// them (without the captures and output options of the front end).
    pub fn options(&self) -> Vec<Opt> {
        use shared::*;
        let mut o = (self.opts)();
        if matches!(self.selects, Selects::Events | Selects::Samples) {
            o.push(Opt::text(
                EVENT,
                "Event to analyse (default: the one with most samples).",
            ));
        }
        if self.selects != Selects::Nothing {
            o.extend([
                Opt::int32(PID, "Only these processes (repeatable).").many(),
                Opt::int32(TID, "Only these threads (repeatable).").many(),
                Opt::text(COMM, "Only these command names (repeatable).").many(),
                Opt::text(
                    TIME,
                    "Time range START..END in seconds on the capture clock, as `perf script` prints times, or +START..+END in seconds since the origin (`--t0`), as `report timeline` prints them (either side may be omitted).",
                )
                .value_name("START..END"),
                Opt::text(
                    CAPTURE,
                    "Only these captures, by name as `trawl tables` lists them (the directory name; repeatable).",
                )
                .many()
                .value_name("NAME"),
            ]);
        }
        if self.selects == Selects::Samples {
            o.extend([
                Opt::text(
                    WEIGHT,
                    "What a sample weighs: `period` (default, perf's Overhead), `samples`, a numeric perf_sample column (e.g. `weight`), or `read:EVENT` (the increase of a group-read counter).",
                )
                .default("period"),
                Opt::flag(
                    NO_INLINE,
                    "Attribute inlined code to its enclosing (ELF symbol) function only, as `perf report` does without --inline.",
                ),
            ]);
        }
        if self.takes_t0() {
            o.push(
                Opt::text(
                    T0,
                    "Origin of relative times in each capture: `first` (the earliest event of any input), `exec:NAME` (the program's exec, from perf COMM records or strace execve), `@EPOCH_SECONDS` or an RFC 3339 time, each optionally `+SECONDS`/`-SECONDS`.",
                )
                .default("first")
                .value_name("SPEC"),
            );
        }
        if self.limit {
            o.push(Opt::int(LIMIT, "Show at most N rows.").value_name("N"));
        }
        o
    }

    /// When the answer has no rows: what of the selection matched nothing
    /// and what the captures hold instead (lines for standard error).
    pub async fn why_empty(&self, s: &Session, given: &Given) -> Result<Vec<String>> {
        if self.selects == Selects::Nothing {
            return Ok(Vec::new());
        }
        crate::sample::why_nothing(s, &given.filter(s).await?).await
    }

    /// Answers the report in `s` (opened on `given.captures`, with the
    /// origin `t0` when the report takes it): the rows, at most `limit`.
    /// Whether the report takes `--t0`: it names it, or it selects by time
    /// (`--time +A..+B` counts from the origin).
    pub fn takes_t0(&self) -> bool {
        self.t0 || self.selects != Selects::Nothing
    }

    pub async fn answer(&self, s: &Session, given: &Given) -> Result<Answer> {
        let mut a = (self.run)(s, given).await?;
        if let Some(n) = given.limit()? {
            a.df = a.df.limit(0, Some(n))?;
        }
        Ok(a)
    }
}
