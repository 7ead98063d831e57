//! `mpstat [-P ALL] N` and `pidstat [-u -r -d -w] [-h] N` text output: a
//! banner with the date, then blocks of a header line (a time, then column
//! names) and rows (a time, then values); `Average:` lines are skipped.
//!
//! Rows carry the time of day only: the date is the banner's, a day is
//! added when the clock of day wraps past midnight, and the clock is the
//! machine's `local` one (sysstat prints local times).
//!
//! mpstat: one entity per CPU (`all`, `0`, `1`, ...), metrics `cpu_user`,
//! `cpu_nice`, `cpu_sys`, `cpu_iowait`, `cpu_irq`, `cpu_soft`, `cpu_steal`,
//! `cpu_guest`, `cpu_gnice`, `cpu_idle`. pidstat: one entity per process
//! (`COMMAND[PID]`, or `COMMAND[TGID/TID]` with `-t`), metrics `proc_` +
//! the column (`%CPU` → `proc_cpu_pct`, `RSS` → `proc_rss`, `kB_rd/s` →
//! `proc_kB_rd_per_s`, `CPU` → `proc_cpu_number`).

use super::iostat::is_sysstat_banner;
use super::{MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tool {
    Mpstat,
    Pidstat,
}

/// Column name → metric name (None: an entity column).
fn metric(tool: Tool, col: &str) -> Option<String> {
    match (tool, col) {
        (Tool::Mpstat, "CPU") => None,
        (Tool::Pidstat, "UID" | "USER" | "PID" | "TGID" | "TID" | "Command") => None,
        (Tool::Mpstat, c) => Some(match c.trim_start_matches('%') {
            "usr" => "cpu_user".into(),
            "sys" => "cpu_sys".into(),
            other => format!("cpu_{other}"),
        }),
        (Tool::Pidstat, "CPU") => Some("proc_cpu_number".into()),
        (Tool::Pidstat, c) => {
            let (pct, c) = match c.strip_prefix('%') {
                Some(c) => (true, c),
                None => (false, c),
            };
            let c = match c {
                "usr" => "cpu_user".to_string(),
                "system" => "cpu_sys".to_string(),
                "guest" => "cpu_guest".to_string(),
                "wait" => "cpu_wait".to_string(),
                "CPU" => "cpu".to_string(),
                "MEM" => "mem".to_string(),
                c => c.replace("/s", "_per_s").replace('-', "_"),
            };
            Some(format!("proc_{}{}", c, if pct { "_pct" } else { "" }))
        }
    }
}

/// `HH:MM:SS` or `HH:MM:SS AM` at the start of a line: (ns of the day,
/// tokens used).
fn time_of_day(tokens: &[&str]) -> Option<(i64, usize)> {
    let t = chrono::NaiveTime::parse_from_str(tokens.first()?, "%H:%M:%S").ok()?;
    let mut ns = i64::from(chrono::Timelike::num_seconds_from_midnight(&t)) * 1_000_000_000;
    match tokens.get(1) {
        Some(&"AM") => {
            if ns >= 12 * 3_600_000_000_000 {
                ns -= 12 * 3_600_000_000_000;
            }
            Some((ns, 2))
        }
        Some(&"PM") => {
            if ns < 12 * 3_600_000_000_000 {
                ns += 12 * 3_600_000_000_000;
            }
            Some((ns, 2))
        }
        _ => Some((ns, 1)),
    }
}

/// The banner's date → ns of its midnight (as if UTC).
fn banner_date(line: &str) -> Option<i64> {
    line.split('\t').map(str::trim).find_map(|f| {
        ["%m/%d/%y", "%Y-%m-%d", "%m/%d/%Y", "%d/%m/%y"]
            .iter()
            .find_map(|fmt| chrono::NaiveDate::parse_from_str(f, fmt).ok())
            .and_then(|d| d.and_hms_opt(0, 0, 0))
            .and_then(|d| d.and_utc().timestamp_nanos_opt())
    })
}

fn tool_of(header: &[&str]) -> Option<Tool> {
    if header.contains(&"PID") || header.contains(&"TGID") {
        Some(Tool::Pidstat)
    } else if header.first() == Some(&"CPU") && header.iter().any(|c| c.starts_with('%')) {
        Some(Tool::Mpstat)
    } else {
        None
    }
}

fn is_number(t: &str) -> bool {
    t.parse::<f64>().is_ok()
}

/// The columns of a header line (after its time or `#`), if it is one.
fn header_columns<'a>(tokens: &[&'a str]) -> Option<Vec<&'a str>> {
    let rest: Vec<&str> = if tokens.first() == Some(&"#") {
        tokens.get(2..)?.to_vec() // `# Time ...` (pidstat -h)
    } else {
        let (_, k) = time_of_day(tokens)?;
        tokens[k..].to_vec()
    };
    (!rest.is_empty() && !rest.iter().any(|t| is_number(t)) && tool_of(&rest).is_some())
        .then_some(rest)
}

pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    lines.next().is_some_and(is_sysstat_banner)
        && lines.any(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            header_columns(&t).is_some()
        })
}

pub fn read(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut date: Option<i64> = None;
    let mut cols: Vec<&str> = Vec::new();
    let mut tool = None;
    let mut day = 0i64;
    let mut last: Option<i64> = None;
    let mut samples = 0i64;
    let mut last_row_time: Option<i64> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i as u64 + 1;
        if i == 0 && is_sysstat_banner(line) {
            date = banner_date(line);
            if date.is_none() {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "bad_time",
                    "no date in the banner: rows have times of day only",
                )?;
            }
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        if tokens.is_empty() || tokens[0] == "Average:" {
            continue;
        }
        if let Some(h) = header_columns(&tokens) {
            tool = tool_of(&h);
            cols = h;
            // A header's time counts for the midnight wrap (rows after
            // `23:59:59 CPU ...` may start at 00:00:00 of the next day).
            if let Some((tod, _)) = time_of_day(&tokens) {
                let mut t = tod + day;
                if last.is_some_and(|prev| t + 12 * 3_600_000_000_000 < prev) {
                    day += 86_400_000_000_000;
                    t += 86_400_000_000_000;
                }
                last = Some(t);
            }
            continue;
        }
        let (Some(tool), Some((tod, k))) = (tool, time_of_day(&tokens)) else {
            diags.report(
                Position::Line(n),
                Severity::Warning,
                "unparsed_line",
                format!(
                    "not a header or a row: {:?}",
                    line.chars().take(80).collect::<String>()
                ),
            )?;
            continue;
        };
        let values = &tokens[k..];
        // pidstat's command may contain spaces: the rest of the line.
        let fits = values.len() == cols.len()
            || (tool == Tool::Pidstat
                && cols.last() == Some(&"Command")
                && values.len() > cols.len());
        if !fits {
            super::bad_width(diags, n, values.len(), cols.len())?;
            continue;
        }
        // The clock of day wraps at midnight.
        let mut t = tod + day;
        if let Some(prev) = last {
            if t + 12 * 3_600_000_000_000 < prev {
                day += 86_400_000_000_000;
                t += 86_400_000_000_000;
            } else if t < prev {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "time_went_back",
                    format!(
                        "the local clock went back {} s (a daylight saving change or a clock adjustment?)",
                        (prev - t) / 1_000_000_000
                    ),
                )?;
            }
        }
        last = Some(t);
        if last_row_time != Some(t) {
            if last_row_time.is_some() {
                samples += 1;
            }
            last_row_time = Some(t);
        }
        let time_ns = date.map(|d| d + t);
        let clock = if date.is_some() { "local" } else { "none" };
        let field = |name: &str| cols.iter().position(|c| *c == name).map(|i| values[i]);
        let entity = match tool {
            Tool::Mpstat => field("CPU").map(str::to_string),
            Tool::Pidstat => {
                let command = values[cols.len() - 1..].join(" ");
                let id = match (field("TGID"), field("TID"), field("PID")) {
                    (Some(g), Some(t), _) => format!("{g}/{t}"),
                    (_, _, Some(p)) => p.to_string(),
                    (Some(g), None, None) => g.to_string(),
                    _ => "?".to_string(),
                };
                Some(format!("{command}[{id}]"))
            }
        };
        for (c, v) in cols.iter().zip(values) {
            let Some(m) = metric(tool, c) else { continue };
            let Ok(value) = v.replace(',', ".").parse::<f64>() else {
                // pidstat -t prints `-` for the process line's TID.
                if *v != "-" {
                    super::bad_value(diags, n, c, v)?;
                }
                continue;
            };
            sink.point(&Point {
                line: n,
                sample: samples,
                time_ns,
                clock,
                entity: entity.as_deref(),
                metric: &m,
                value,
                since_boot: false,
            });
        }
    }
    Ok(if last_row_time.is_some() {
        samples as u64 + 1
    } else {
        0
    })
}
