//! Rules evaluated on step functions: each metric row covers the interval
//! since the previous row of its series; a rule holds where every value it
//! needs exists and it is true. Ranges are merged across short gaps, short
//! ones dropped, and several runs intersected.

use std::collections::BTreeMap;

use super::rule::Rule;

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
