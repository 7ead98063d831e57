//! RAPL energy readings (Ono et al. 2015, sampling-based power
//! measurement) → typed [`Reading`]s (no Arrow here; [`convert`] makes
//! the `energy` table).
//!
//! - [`read_powercap`]: a CSV of powercap counter readings, header naming
//!   `time`, `zone`, `energy_uj` and optionally `name` (the zone's
//!   `name` file: `package-0`, `core`, `uncore`, `dram`, `psys`) and
//!   `max_energy_range_uj` (where the counter wraps), as
//!   `scripts/rapl-sample.py` writes it from
//!   `/sys/class/powercap/intel-rapl:*`. Cumulative: deltas come from
//!   consecutive readings, wrap-arounds through `max_energy_range_uj`.
//! - [`read_perf_stat`]: `perf stat -I MS -x, -e power/energy-pkg/,...`
//!   output: joules per interval (deltas), times relative to perf stat's
//!   start.
//! - [`read_turbostat`]: turbostat blocks, watts or joules per block, per
//!   package when it prints them.
//! - Power events read at perf samples (`perf record -e
//!   '{cpu-clock,power/energy-cores/}:S'`) become readings too, one counter
//!   per group, placed on the package of the CPU that read when the CPU
//!   topology (`perf_cpu`) has several
//!   (`PerfConverter::take_power_readings`).

pub mod convert;

use crate::diag::{Diagnostics, Position, Severity};

/// A RAPL domain.
pub fn domain_of_name(name: &str) -> Option<&'static str> {
    let n = name.trim().to_ascii_lowercase();
    let n = n.trim_start_matches("power/").trim_end_matches('/');
    Some(match n {
        _ if n.starts_with("package") || n == "energy-pkg" || n == "pkg" => "package",
        "core" | "cores" | "energy-cores" => "cores",
        "dram" | "ram" | "energy-ram" => "dram",
        "uncore" | "gpu" | "energy-gpu" => "gpu",
        "psys" | "energy-psys" => "psys",
        _ => return None,
    })
}

/// One reading of one domain's counter.
#[derive(Clone, Debug, PartialEq)]
pub struct Reading {
    /// Line of the input (1-based).
    pub line: u64,
    /// ns on the input's clock.
    pub time_ns: i64,
    /// Package (socket) number, when the input says.
    pub package: Option<i32>,
    pub domain: &'static str,
    /// The zone as the input names it (`intel-rapl:0:1`, `power/energy-pkg/`).
    pub zone: String,
    /// What was read.
    pub value: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// A cumulative counter in µJ that wraps at `max` µJ (when known).
    /// `from_zero`: it counted from 0 when the run started (perf's
    /// counters), so its first reading is the energy since then.
    Cumulative {
        uj: f64,
        max: Option<f64>,
        from_zero: bool,
    },
    /// The energy of the interval ending at the reading, in µJ.
    Delta { uj: f64, interval_ns: Option<i64> },
}

pub trait ReadingSink {
    fn reading(&mut self, r: Reading);
}

/// What a file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Powercap,
    PerfStat,
    Turbostat,
}

fn powercap_header(
    line: &str,
) -> Option<(usize, usize, usize, Option<usize>, Option<usize>, usize)> {
    let names: Vec<String> = line
        .split(',')
        .map(|c| c.trim().trim_matches('"').to_ascii_lowercase())
        .collect();
    let at = |n: &str| names.iter().position(|c| c == n);
    Some((
        at("time")?,
        at("zone")?,
        at("energy_uj")?,
        at("name"),
        at("max_energy_range_uj"),
        names.len(),
    ))
}

/// A perf stat CSV line: (time s, socket, value, unit, event).
fn perf_stat_fields(line: &str) -> Option<(f64, Option<i32>, &str, &str, &str)> {
    let f: Vec<&str> = line.split(',').map(str::trim).collect();
    let time: f64 = f.first()?.parse().ok()?;
    // `--per-socket`: time,S0,CPUS,value,unit,event,...
    let (socket, rest) = match f.get(1) {
        Some(s) if s.starts_with('S') && s[1..].parse::<i32>().is_ok() => {
            (Some(s[1..].parse().ok()?), f.get(3..).unwrap_or(&[]))
        }
        _ => (None, &f[1..]),
    };
    if rest.len() < 3 {
        return None;
    }
    Some((time, socket, rest[0], rest[1], rest[2]))
}

/// turbostat's energy columns: (column, domain, joules (true) or watts).
fn turbostat_column(name: &str) -> Option<(&'static str, bool)> {
    Some(match name {
        "PkgWatt" => ("package", false),
        "CorWatt" => ("cores", false),
        "GFXWatt" => ("gpu", false),
        "RAMWatt" => ("dram", false),
        "SysWatt" | "SYSWatt" => ("psys", false),
        "Pkg_J" => ("package", true),
        "Cor_J" => ("cores", true),
        "GFX_J" => ("gpu", true),
        "RAM_J" => ("dram", true),
        "Sys_J" | "SYS_J" => ("psys", true),
        _ => return None,
    })
}

fn turbostat_header(line: &str) -> bool {
    let f: Vec<&str> = line.split_whitespace().collect();
    f.iter().any(|c| turbostat_column(c).is_some())
        && f.iter().all(|c| c.parse::<f64>().is_err() && *c != "-")
}

pub fn sniff(head: &[u8]) -> Option<Kind> {
    let text = String::from_utf8_lossy(head);
    if text
        .lines()
        .take(5)
        .any(|l| turbostat_header(l) && !l.contains(','))
    {
        return Some(Kind::Turbostat);
    }
    let mut lines = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'));
    let first = lines.next()?;
    if powercap_header(first).is_some() {
        return Some(Kind::Powercap);
    }
    let power = |l: &str| {
        perf_stat_fields(l).is_some_and(|(_, _, _, _, ev)| ev.starts_with("power/energy-"))
    };
    if power(first) {
        return Some(Kind::PerfStat);
    }
    None
}

/// A time field: epoch seconds or RFC 3339 → ns since the epoch (local
/// wall-clock times are refused: readings are placed on UTC).
fn utc_time(s: &str) -> Option<i64> {
    match crate::fields::parse_time(s)? {
        (t, "utc") => Some(t),
        _ => None,
    }
}

/// `intel-rapl:P[:S]` → P.
fn zone_package(zone: &str) -> Option<i32> {
    let rest = zone.split(':').nth(1)?;
    rest.parse().ok()
}

pub fn read_powercap(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn ReadingSink,
) -> crate::error::Result<u64> {
    let mut lines = text.lines().enumerate();
    let Some((_, first)) = lines.next() else {
        return Ok(0);
    };
    let Some((t, z, e, name, max, width)) = powercap_header(first) else {
        diags.report(
            Position::Line(1),
            Severity::Error,
            "missing_columns",
            "the header names no time, zone and energy_uj columns: nothing read",
        )?;
        return Ok(0);
    };
    let mut rows = 0;
    for (i, line) in lines {
        let n = i as u64 + 1;
        let Some(f) = crate::fields::csv_fields(diags, n, line, width)? else {
            continue;
        };
        let Some(time_ns) = utc_time(f[t]) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_time",
                format!("unreadable time {:?}: reading skipped", f[t]),
            )?;
            continue;
        };
        let Ok(uj) = f[e].parse::<f64>() else {
            crate::fields::bad_value(diags, n, "energy_uj", f[e])?;
            continue;
        };
        let zone = f[z];
        let domain = name
            .and_then(|k| domain_of_name(f[k]))
            .or_else(|| (zone.matches(':').count() == 1).then_some("package"));
        let Some(domain) = domain else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "unknown_domain",
                format!(
                    "zone {zone:?}{}: not a RAPL domain trawl knows (package, core, uncore, dram, psys): reading skipped",
                    name.map(|k| format!(" named {:?}", f[k])).unwrap_or_default()
                ),
            )?;
            continue;
        };
        let max = max
            .and_then(|k| f[k].parse::<f64>().ok())
            .filter(|m| *m > 0.0);
        sink.reading(Reading {
            line: n,
            time_ns,
            package: zone_package(zone),
            domain,
            zone: zone.to_string(),
            value: Value::Cumulative {
                uj,
                max,
                from_zero: false,
            },
        });
        rows += 1;
    }
    Ok(rows)
}

pub fn read_perf_stat(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn ReadingSink,
) -> crate::error::Result<u64> {
    let mut rows = 0;
    // The interval: the time since the previous line of the same event.
    let mut last: std::collections::HashMap<(Option<i32>, String), i64> = Default::default();
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let l = line.trim();
        if l.is_empty() || l.starts_with('#') {
            continue;
        }
        let Some((secs, socket, value, unit, event)) = perf_stat_fields(l) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_row",
                format!(
                    "not a `perf stat -I -x,` line: {:?}: skipped",
                    crate::diag::clip(l)
                ),
            )?;
            continue;
        };
        let time_ns = (secs * 1e9).round() as i64;
        let Some(domain) = domain_of_name(event) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "unknown_domain",
                format!("event {event:?} is not a RAPL energy event: skipped"),
            )?;
            continue;
        };
        let Ok(j) = value.parse::<f64>() else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "not_counted",
                format!("{event} at {secs} s: {value:?}: no reading"),
            )?;
            continue;
        };
        let scale = match unit {
            "Joules" | "J" => 1e6,
            "mJ" => 1e3,
            "uJ" | "µJ" => 1.0,
            other => {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "bad_unit",
                    format!("{event}: unit {other:?} (expected Joules): skipped"),
                )?;
                continue;
            }
        };
        let key = (socket, event.to_string());
        let interval_ns = match last.insert(key, time_ns) {
            Some(prev) => Some(time_ns - prev),
            // The first interval starts when perf stat started.
            None => Some(time_ns),
        };
        sink.reading(Reading {
            line: n,
            time_ns,
            package: socket,
            domain,
            zone: event.to_string(),
            value: Value::Delta {
                uj: j * scale,
                interval_ns,
            },
        });
        rows += 1;
    }
    Ok(rows)
}

/// turbostat output (`turbostat --quiet --show
/// Time_Of_Day_Seconds,Package,CPU,PkgWatt,CorWatt,RAMWatt --interval S`,
/// or the `_J` columns with `--Joules`): a header before each block, a
/// summary row (`-` for Package/CPU), then rows per CPU whose package
/// columns are filled on each package's first CPU. Per-package rows are
/// read when there are any, else the summary rows. Watts are energy per
/// interval times the time since the previous block: the first block, of
/// unknown length, is skipped. Times: `Time_Of_Day_Seconds` (UTC).
pub fn read_turbostat(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn ReadingSink,
) -> crate::error::Result<u64> {
    struct Row {
        line: u64,
        time: i64,
        package: Option<i32>,
        summary: bool,
        values: Vec<(&'static str, bool, String, f64)>,
    }
    let mut header: Vec<String> = Vec::new();
    let mut rows: Vec<Row> = Vec::new();
    let mut no_time = false;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        let l = line.trim();
        if l.is_empty() {
            continue;
        }
        if turbostat_header(l) {
            header = l.split_whitespace().map(str::to_string).collect();
            continue;
        }
        let f: Vec<&str> = l.split_whitespace().collect();
        if header.is_empty()
            || f.len() > header.len()
            || f[0].parse::<f64>().is_err() && f[0] != "-"
        {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "bad_row",
                format!("not a turbostat row: {:?}: skipped", crate::diag::clip(l)),
            )?;
            continue;
        }
        let col = |name: &str| {
            header
                .iter()
                .position(|h| h == name)
                .and_then(|k| f.get(k).copied())
        };
        let Some(t) = col("Time_Of_Day_Seconds").and_then(utc_time) else {
            no_time = true;
            continue;
        };
        let pkg = col("Package");
        let summary = matches!(pkg, Some("-") | None) && matches!(col("CPU"), Some("-") | None);
        let mut values = Vec::new();
        for (k, h) in header.iter().enumerate() {
            let Some((domain, joules)) = turbostat_column(h) else {
                continue;
            };
            match f.get(k).map(|v| v.parse::<f64>()) {
                Some(Ok(v)) if v.is_finite() && v >= 0.0 => {
                    values.push((domain, joules, h.clone(), v))
                }
                Some(_) => {
                    diags.report(
                        Position::Line(n),
                        Severity::Warning,
                        "bad_value",
                        format!("{h} {:?} is not a number of watts or joules: skipped", f[k]),
                    )?;
                }
                None => {}
            }
        }
        if values.is_empty() {
            continue;
        }
        rows.push(Row {
            line: n,
            time: t,
            package: pkg.and_then(|p| p.parse().ok()),
            summary,
            values,
        });
    }
    if no_time {
        diags.report(
            Position::Line(1),
            Severity::Error,
            "missing_time",
            "rows without Time_Of_Day_Seconds cannot be placed in time: run turbostat with --show Time_Of_Day_Seconds,...",
        )?;
    }
    let per_package = rows.iter().any(|r| !r.summary && r.package.is_some());
    let mut last: std::collections::HashMap<(Option<i32>, String), i64> = Default::default();
    let mut out = 0;
    for r in rows.iter().filter(|r| r.summary != per_package) {
        let package = if per_package { r.package } else { None };
        for (domain, joules, name, v) in &r.values {
            let prev = last.insert((package, name.clone()), r.time);
            let Some(t0) = prev else {
                continue;
            };
            let interval = r.time - t0;
            if interval <= 0 {
                diags.report(
                    Position::Line(r.line),
                    Severity::Warning,
                    "out_of_order",
                    format!(
                        "{name} at {} s is not after the previous block: skipped",
                        r.time as f64 / 1e9
                    ),
                )?;
                continue;
            }
            let uj = if *joules {
                v * 1e6
            } else {
                v * interval as f64 * 1e-3
            };
            sink.reading(Reading {
                line: r.line,
                time_ns: r.time,
                package,
                domain,
                zone: format!("turbostat:{name}"),
                value: Value::Delta {
                    uj,
                    interval_ns: Some(interval),
                },
            });
            out += 1;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn perf_stat_lines_cut_short_are_not_records() {
        for l in [
            "1.0,S0",
            "1.0,S0,2",
            "1.0",
            "1.0,2.5",
            "x,1,Joules,power/energy-pkg/",
        ] {
            assert!(perf_stat_fields(l).is_none(), "{l}");
        }
        assert_eq!(
            perf_stat_fields("1.5,S1,4,2.25,Joules,power/energy-pkg/,1,100.00,,"),
            Some((1.5, Some(1), "2.25", "Joules", "power/energy-pkg/"))
        );
        assert_eq!(domain_of_name("power/energy-ram/"), Some("dram"));
        assert_eq!(domain_of_name("uncore"), Some("gpu"));
        assert_eq!(utc_time("2026-11-22 10:00:00"), None);
        assert_eq!(utc_time("1700000000.5"), Some(1_700_000_000_500_000_000));
    }
}
