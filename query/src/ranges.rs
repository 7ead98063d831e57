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

// ---------------------------------------------------------------- rules

/// A parsed rule.
#[derive(Clone, Debug, PartialEq)]
pub enum Rule {
    Num(f64),
    /// A metric, optionally of one entity (`disk_util_pct[vda]`).
    Metric {
        name: String,
        entity: Option<String>,
    },
    Neg(Box<Rule>),
    Arith(char, Box<Rule>, Box<Rule>),
    Cmp(&'static str, Box<Rule>, Box<Rule>),
    And(Box<Rule>, Box<Rule>),
    Or(Box<Rule>, Box<Rule>),
    Not(Box<Rule>),
}

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Num(f64),
    Ident(String, Option<String>),
    Op(&'static str),
    LParen,
    RParen,
}

fn lex(s: &str) -> Result<Vec<Tok>> {
    let b = s.as_bytes();
    let mut i = 0;
    let mut out = Vec::new();
    let err =
        |i: usize, what: &str| Error::Usage(format!("rule {s:?}: {what} at character {}", i + 1));
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit))
        {
            let st = i;
            while i < b.len() && (b[i].is_ascii_digit() || b[i] == b'.') {
                i += 1;
            }
            if i < b.len() && (b[i] == b'e' || b[i] == b'E') {
                i += 1;
                if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
                    i += 1;
                }
                while i < b.len() && b[i].is_ascii_digit() {
                    i += 1;
                }
            }
            let v: f64 = s[st..i].parse().map_err(|_| err(st, "bad number"))?;
            out.push(Tok::Num(v));
        } else if c.is_ascii_alphabetic() || c == b'_' || c == b'%' {
            let st = i;
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b"_%.".contains(&b[i])) {
                i += 1;
            }
            let word = &s[st..i];
            let mut entity = None;
            if i < b.len() && b[i] == b'[' {
                // The entity runs to the matching `]` (pidstat's
                // `name[pid]` has brackets of its own).
                let mut depth = 0;
                let st2 = i + 1;
                loop {
                    match b.get(i) {
                        None => return Err(err(st2 - 1, "unclosed [")),
                        Some(b'[') => depth += 1,
                        Some(b']') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                    i += 1;
                }
                entity = Some(s[st2..i].to_string());
                i += 1;
            }
            match (word.to_ascii_lowercase().as_str(), &entity) {
                ("and", None) => out.push(Tok::Op("and")),
                ("or", None) => out.push(Tok::Op("or")),
                ("not", None) => out.push(Tok::Op("not")),
                _ => out.push(Tok::Ident(word.to_string(), entity)),
            }
        } else {
            let two = s.get(i..i + 2).unwrap_or("");
            let (op, len): (&'static str, usize) = match two {
                ">=" => (">=", 2),
                "<=" => ("<=", 2),
                "!=" | "<>" => ("!=", 2),
                "==" => ("=", 2),
                "&&" => ("and", 2),
                "||" => ("or", 2),
                _ => match c {
                    b'>' => (">", 1),
                    b'<' => ("<", 1),
                    b'=' => ("=", 1),
                    b'+' => ("+", 1),
                    b'-' => ("-", 1),
                    b'*' => ("*", 1),
                    b'/' => ("/", 1),
                    b'(' => {
                        out.push(Tok::LParen);
                        i += 1;
                        continue;
                    }
                    b')' => {
                        out.push(Tok::RParen);
                        i += 1;
                        continue;
                    }
                    _ => return Err(err(i, &format!("unexpected {:?}", c as char))),
                },
            };
            i += len;
            out.push(Tok::Op(op));
        }
    }
    Ok(out)
}

struct Parser {
    toks: Vec<Tok>,
    pos: usize,
    text: String,
}

impl Parser {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos)
    }
    fn eat(&mut self, op: &str) -> bool {
        if matches!(self.peek(), Some(Tok::Op(o)) if *o == op) {
            self.pos += 1;
            true
        } else {
            false
        }
    }
    fn err(&self, what: &str) -> Error {
        Error::Usage(format!("rule {:?}: {what}", self.text))
    }
    fn or(&mut self) -> Result<Rule> {
        let mut l = self.and()?;
        while self.eat("or") {
            l = Rule::Or(Box::new(l), Box::new(self.and()?));
        }
        Ok(l)
    }
    fn and(&mut self) -> Result<Rule> {
        let mut l = self.not()?;
        while self.eat("and") {
            l = Rule::And(Box::new(l), Box::new(self.not()?));
        }
        Ok(l)
    }
    fn not(&mut self) -> Result<Rule> {
        if self.eat("not") {
            return Ok(Rule::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    fn cmp(&mut self) -> Result<Rule> {
        let l = self.sum()?;
        for op in [">=", "<=", "!=", ">", "<", "="] {
            if self.eat(op) {
                let r = self.sum()?;
                return Ok(Rule::Cmp(op, Box::new(l), Box::new(r)));
            }
        }
        Ok(l)
    }
    fn sum(&mut self) -> Result<Rule> {
        let mut l = self.product()?;
        loop {
            let op = if self.eat("+") {
                '+'
            } else if self.eat("-") {
                '-'
            } else {
                return Ok(l);
            };
            l = Rule::Arith(op, Box::new(l), Box::new(self.product()?));
        }
    }
    fn product(&mut self) -> Result<Rule> {
        let mut l = self.unary()?;
        loop {
            let op = if self.eat("*") {
                '*'
            } else if self.eat("/") {
                '/'
            } else {
                return Ok(l);
            };
            l = Rule::Arith(op, Box::new(l), Box::new(self.unary()?));
        }
    }
    fn unary(&mut self) -> Result<Rule> {
        if self.eat("-") {
            return Ok(Rule::Neg(Box::new(self.unary()?)));
        }
        match self.toks.get(self.pos).cloned() {
            Some(Tok::Num(v)) => {
                self.pos += 1;
                Ok(Rule::Num(v))
            }
            Some(Tok::Ident(name, entity)) => {
                self.pos += 1;
                Ok(Rule::Metric { name, entity })
            }
            Some(Tok::LParen) => {
                self.pos += 1;
                let e = self.or()?;
                if self.toks.get(self.pos) != Some(&Tok::RParen) {
                    return Err(self.err("missing )"));
                }
                self.pos += 1;
                Ok(e)
            }
            Some(t) => Err(self.err(&format!("unexpected {t:?}"))),
            None => Err(self.err("ends early")),
        }
    }
}

impl Rule {
    /// Parses a rule: comparisons (`>`, `>=`, `<`, `<=`, `=`, `!=`) of
    /// sums, differences, products and quotients of metrics and numbers,
    /// combined with `and`, `or`, `not` and parentheses. A metric is its
    /// name as in `metric.metric`, optionally with an entity in brackets
    /// (`disk_util_pct[vda]`, `cpu_user[0]`).
    pub fn parse(text: &str) -> Result<Rule> {
        let mut p = Parser {
            toks: lex(text)?,
            pos: 0,
            text: text.to_string(),
        };
        let r = p.or()?;
        if p.pos != p.toks.len() {
            return Err(p.err(&format!("unexpected {:?}", p.toks[p.pos])));
        }
        if !r.is_bool() {
            return Err(
                p.err("is not a condition (compare a metric with a threshold, e.g. `runq > 2`)")
            );
        }
        r.check(&p)?;
        Ok(r)
    }

    fn is_bool(&self) -> bool {
        matches!(
            self,
            Rule::Cmp(..) | Rule::And(..) | Rule::Or(..) | Rule::Not(..)
        )
    }

    fn check(&self, p: &Parser) -> Result<()> {
        match self {
            Rule::Num(_) | Rule::Metric { .. } => Ok(()),
            Rule::Neg(a) | Rule::Arith(_, a, _) | Rule::Cmp(_, a, _) if a.is_bool() => {
                Err(p.err("a condition is used as a number"))
            }
            Rule::Arith(_, _, b) | Rule::Cmp(_, _, b) if b.is_bool() => {
                Err(p.err("a condition is used as a number"))
            }
            Rule::Neg(a) => a.check(p),
            Rule::Arith(_, a, b) | Rule::Cmp(_, a, b) => {
                a.check(p)?;
                b.check(p)
            }
            Rule::And(a, b) | Rule::Or(a, b) if !a.is_bool() || !b.is_bool() => {
                Err(p.err("`and`/`or` need conditions on both sides"))
            }
            Rule::Not(a) if !a.is_bool() => Err(p.err("`not` needs a condition")),
            Rule::And(a, b) | Rule::Or(a, b) => {
                a.check(p)?;
                b.check(p)
            }
            Rule::Not(a) => a.check(p),
        }
    }

    /// The metrics the rule reads: (name, entity).
    pub fn metrics(&self) -> BTreeSet<(String, Option<String>)> {
        let mut out = BTreeSet::new();
        self.collect(&mut out);
        out
    }

    fn collect(&self, out: &mut BTreeSet<(String, Option<String>)>) {
        match self {
            Rule::Num(_) => {}
            Rule::Metric { name, entity } => {
                out.insert((name.clone(), entity.clone()));
            }
            Rule::Neg(a) | Rule::Not(a) => a.collect(out),
            Rule::Arith(_, a, b) | Rule::Cmp(_, a, b) | Rule::And(a, b) | Rule::Or(a, b) => {
                a.collect(out);
                b.collect(out)
            }
        }
    }

    fn num(&self, v: &dyn Fn(&str, &Option<String>) -> Option<f64>) -> Option<f64> {
        Some(match self {
            Rule::Num(x) => *x,
            Rule::Metric { name, entity } => v(name, entity)?,
            Rule::Neg(a) => -a.num(v)?,
            Rule::Arith(op, a, b) => {
                let (x, y) = (a.num(v)?, b.num(v)?);
                match op {
                    '+' => x + y,
                    '-' => x - y,
                    '*' => x * y,
                    _ if y == 0.0 => return None,
                    _ => x / y,
                }
            }
            _ => return None,
        })
    }

    /// Three-valued: None where a metric it needs has no value.
    fn truth(&self, v: &dyn Fn(&str, &Option<String>) -> Option<f64>) -> Option<bool> {
        match self {
            Rule::Cmp(op, a, b) => {
                let (x, y) = (a.num(v)?, b.num(v)?);
                Some(match *op {
                    ">" => x > y,
                    ">=" => x >= y,
                    "<" => x < y,
                    "<=" => x <= y,
                    "=" => x == y,
                    _ => x != y,
                })
            }
            Rule::And(a, b) => match (a.truth(v), b.truth(v)) {
                (Some(false), _) | (_, Some(false)) => Some(false),
                (Some(true), Some(true)) => Some(true),
                _ => None,
            },
            Rule::Or(a, b) => match (a.truth(v), b.truth(v)) {
                (Some(true), _) | (_, Some(true)) => Some(true),
                (Some(false), Some(false)) => Some(false),
                _ => None,
            },
            Rule::Not(a) => a.truth(v).map(|x| !x),
            _ => None,
        }
    }
}

// ---------------------------------------------------------------- series

/// A step function: value on (start, end].
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub start: i64,
    pub end: i64,
    pub value: f64,
}

/// Rows of one series (times sorted) → steps: each row covers the time
/// since the previous row; the first covers one median interval.
pub fn steps(rows: &[(i64, f64)]) -> Vec<Step> {
    let mut gaps: Vec<i64> = rows
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| *d > 0)
        .collect();
    gaps.sort_unstable();
    let median = gaps.get(gaps.len() / 2).copied();
    let mut out = Vec::with_capacity(rows.len());
    for (i, &(t, v)) in rows.iter().enumerate() {
        let start = if i == 0 {
            match median {
                Some(m) => t - m,
                None => continue,
            }
        } else {
            rows[i - 1].0
        };
        if t > start {
            out.push(Step {
                start,
                end: t,
                value: v,
            });
        }
    }
    out
}

/// A time range [start_ns, end_ns) on a capture's relative axis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct Range {
    pub start: i64,
    pub end: i64,
}

/// Options of range finding.
#[derive(Clone, Copy, Debug, Default)]
pub struct RangeOpts {
    /// Drop ranges shorter than this (after merging).
    pub min_duration_ns: i64,
    /// Merge ranges separated by at most this.
    pub gap_ns: i64,
}

/// What a metric name means in one capture: its steps per entity.
#[derive(Default, Debug)]
pub struct CaptureSeries {
    /// (metric, entity or None) → steps; for an unqualified metric, the
    /// aggregate rows (entity null or `all`), else every entity.
    pub series: BTreeMap<(String, Option<String>), Vec<Vec<Step>>>,
    /// Which input each metric came from (when several inputs have it, the
    /// first named).
    pub sources: BTreeMap<String, i32>,
}

/// Evaluates the rule on one capture's series: the true ranges, merged
/// and filtered.
pub fn evaluate(rule: &Rule, cs: &CaptureSeries, opts: RangeOpts) -> Vec<Range> {
    let mut out: Vec<Range> = Vec::new();
    for_each_interval(cs, |a, b, value| {
        if rule.truth(value) == Some(true) {
            match out.last_mut() {
                Some(r) if r.end >= a => r.end = b,
                _ => out.push(Range { start: a, end: b }),
            }
        }
    });
    merge(out, opts)
}

/// Calls `f(a, b, value)` for each elementary interval (a, b] between the
/// step boundaries of all the series, in time order; `value(name,
/// entity)` is the series' value there (the max over its entities), or
/// None where it has none.
fn for_each_interval(
    cs: &CaptureSeries,
    mut f: impl FnMut(i64, i64, &dyn Fn(&str, &Option<String>) -> Option<f64>),
) {
    let mut points: Vec<i64> = cs
        .series
        .values()
        .flatten()
        .flatten()
        .flat_map(|s| [s.start, s.end])
        .collect();
    points.sort_unstable();
    points.dedup();
    let keys: Vec<&(String, Option<String>)> = cs.series.keys().collect();
    // Cursor per step list (the intervals are visited in order).
    let mut cursors: Vec<Vec<usize>> = keys.iter().map(|k| vec![0; cs.series[*k].len()]).collect();
    let mut vals: Vec<Option<f64>> = vec![None; keys.len()];
    for w in points.windows(2) {
        let (a, b) = (w[0], w[1]);
        for (ki, k) in keys.iter().enumerate() {
            let mut best: Option<f64> = None;
            for (gi, st) in cs.series[*k].iter().enumerate() {
                let c = &mut cursors[ki][gi];
                while *c < st.len() && st[*c].end <= a {
                    *c += 1;
                }
                if let Some(s) = st.get(*c) {
                    if s.start <= a && s.end >= b {
                        best = Some(best.map_or(s.value, |x: f64| x.max(s.value)));
                    }
                }
            }
            vals[ki] = best;
        }
        let lookup = |name: &str, entity: &Option<String>| -> Option<f64> {
            let i = keys.iter().position(|k| k.0 == name && &k.1 == entity)?;
            vals[i]
        };
        f(a, b, &lookup);
    }
}

/// Merges ranges whose gap is at most `gap_ns`, then drops the short ones.
pub fn merge(mut v: Vec<Range>, opts: RangeOpts) -> Vec<Range> {
    v.sort();
    let mut out: Vec<Range> = Vec::new();
    for r in v {
        match out.last_mut() {
            Some(l) if r.start - l.end <= opts.gap_ns => l.end = l.end.max(r.end),
            _ => out.push(r),
        }
    }
    out.retain(|r| r.end - r.start >= opts.min_duration_ns.max(1));
    out
}

/// The parts of the time axis covered by a range of every run.
pub fn intersect(runs: &[Vec<Range>]) -> Vec<Range> {
    let Some(first) = runs.first() else {
        return Vec::new();
    };
    let mut acc = first.clone();
    for other in &runs[1..] {
        let mut next = Vec::new();
        for a in &acc {
            for b in other {
                let (s, e) = (a.start.max(b.start), a.end.min(b.end));
                if s < e {
                    next.push(Range { start: s, end: e });
                }
            }
        }
        acc = next;
    }
    acc
}

const ROWS: &str = "SELECT capture, CAST(metric AS VARCHAR) AS m, CAST(entity AS VARCHAR) AS e, CAST(source_id AS BIGINT) AS src, t_ns, value \
     FROM metric_t WHERE NOT since_boot AND t_ns IS NOT NULL ORDER BY capture, source_id, t_ns";

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

#[cfg(test)]
mod tests {
    use super::*;

    fn series(rows: &[(&str, &[(i64, f64)])]) -> CaptureSeries {
        let mut cs = CaptureSeries::default();
        for (name, r) in rows {
            cs.series.insert((name.to_string(), None), vec![steps(r)]);
        }
        cs
    }

    #[test]
    fn rules_parse_with_precedence_and_entities() {
        let r = Rule::parse("cpu_user+cpu_sys > 90 and runq > 2 or not disk_util_pct[vda] <= 50")
            .unwrap();
        let m: Vec<_> = r.metrics().into_iter().collect();
        assert_eq!(
            m,
            vec![
                ("cpu_sys".to_string(), None),
                ("cpu_user".to_string(), None),
                ("disk_util_pct".to_string(), Some("vda".to_string())),
                ("runq".to_string(), None),
            ]
        );
        assert!(matches!(r, Rule::Or(..)));
        assert!(Rule::parse("(cpu_user + cpu_sys) / 2 >= 45").is_ok());
        assert!(Rule::parse("proc_cpu_pct[phases[123]] > 50").is_ok());
        assert!(Rule::parse("cpu_user + 2").is_err());
        assert!(Rule::parse("runq > 2 and 3").is_err());
        assert!(Rule::parse("runq >").is_err());
        assert!(Rule::parse("runq > 2)").is_err());
    }

    // Hand-worked: rows at 1..=6 s; row k covers (k-1, k].
    #[test]
    fn ranges_follow_the_intervals_rows_describe() {
        let s = 1_000_000_000;
        let cs = series(&[
            (
                "u",
                &[
                    (s, 10.0),
                    (2 * s, 95.0),
                    (3 * s, 99.0),
                    (4 * s, 20.0),
                    (5 * s, 97.0),
                    (6 * s, 10.0),
                ],
            ),
            (
                "q",
                &[
                    (s, 1.0),
                    (2 * s, 3.0),
                    (3 * s, 3.0),
                    (4 * s, 3.0),
                    (5 * s, 4.0),
                    (6 * s, 1.0),
                ],
            ),
        ]);
        let r = Rule::parse("u > 90 and q > 2").unwrap();
        // (1,3] and (4,5].
        assert_eq!(
            evaluate(&r, &cs, RangeOpts::default()),
            vec![
                Range {
                    start: s,
                    end: 3 * s
                },
                Range {
                    start: 4 * s,
                    end: 5 * s
                }
            ]
        );
        // A gap of 1 s merges them; a minimum of 1.5 s drops the second.
        assert_eq!(
            evaluate(
                &r,
                &cs,
                RangeOpts {
                    gap_ns: s,
                    min_duration_ns: 0
                }
            ),
            vec![Range {
                start: s,
                end: 5 * s
            }]
        );
        assert_eq!(
            evaluate(
                &r,
                &cs,
                RangeOpts {
                    gap_ns: 0,
                    min_duration_ns: 3 * s / 2
                }
            ),
            vec![Range {
                start: s,
                end: 3 * s
            }]
        );
        // `or` with a series that has no value there: true where u is.
        let r = Rule::parse("u > 90 or missing > 1").unwrap();
        assert_eq!(evaluate(&r, &cs, RangeOpts::default()).len(), 2);
    }

    #[test]
    fn runs_intersect() {
        let r = |a, b| Range { start: a, end: b };
        assert_eq!(
            intersect(&[
                vec![r(10, 15), r(30, 40)],
                vec![r(11, 16), r(35, 45)],
                vec![r(9, 14), r(50, 60)]
            ]),
            vec![r(11, 14)]
        );
    }
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

impl std::fmt::Display for Rule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Rule::Num(x) => write!(f, "{x}"),
            Rule::Metric { name, entity: None } => write!(f, "{name}"),
            Rule::Metric {
                name,
                entity: Some(e),
            } => write!(f, "{name}[{e}]"),
            Rule::Neg(a) => write!(f, "-({a})"),
            Rule::Arith(op, a, b) => write!(f, "{a} {op} {b}"),
            Rule::Cmp(op, a, b) => write!(f, "{a} {op} {b}"),
            Rule::And(a, b) => write!(f, "({a}) and ({b})"),
            Rule::Or(a, b) => write!(f, "({a}) or ({b})"),
            Rule::Not(a) => write!(f, "not ({a})"),
        }
    }
}

/// One comparison of a rule, for plotting: the compared expression and
/// the threshold, when one side is a number.
#[derive(Clone, Debug)]
pub struct Comparison {
    pub expr: Rule,
    pub op: &'static str,
    pub threshold: f64,
}

impl Rule {
    /// The comparisons with a number on one side.
    pub fn comparisons(&self) -> Vec<Comparison> {
        let mut out = Vec::new();
        self.cmps(&mut out);
        out
    }

    fn cmps(&self, out: &mut Vec<Comparison>) {
        match self {
            Rule::Cmp(op, a, b) => match (a.as_ref(), b.as_ref()) {
                (e, Rule::Num(x)) => out.push(Comparison {
                    expr: e.clone(),
                    op,
                    threshold: *x,
                }),
                (Rule::Num(x), e) => out.push(Comparison {
                    expr: e.clone(),
                    op,
                    threshold: *x,
                }),
                _ => {}
            },
            Rule::And(a, b) | Rule::Or(a, b) => {
                a.cmps(out);
                b.cmps(out)
            }
            Rule::Not(a) => a.cmps(out),
            _ => {}
        }
    }
}

/// The value of `expr` (a numeric rule expression) on each part of the
/// time axis where it has one: (start, end, value), for plots.
pub fn sample(expr: &Rule, cs: &CaptureSeries) -> Vec<(i64, i64, f64)> {
    let mut out: Vec<(i64, i64, f64)> = Vec::new();
    for_each_interval(cs, |a, b, value| {
        if let Some(v) = expr.num(value) {
            match out.last_mut() {
                Some(l) if l.1 == a && l.2 == v => l.1 = b,
                _ => out.push((a, b, v)),
            }
        }
    });
    out
}
