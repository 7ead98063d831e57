//! `mpstat [-A | -P ALL | -I ... | -N ...] N` and `pidstat [-u -r -d -w -t]
//! [-h] [-H] N` text output: a banner with the date, then blocks of a header
//! line (a time, then column names) and rows (a time, then values);
//! `Average:` lines are skipped.
//!
//! Every block is read by its own header: a line of a time followed by words
//! only is a header and starts a new table; the rows of a table whose header
//! is not known (a `sar` report, a future mpstat table) are skipped with one
//! `unknown_table` diagnostic, never stored under another table's names.
//!
//! Rows carry the time of day only: the date is the banner's, a day is
//! added when the clock of day wraps past midnight, and the clock is the
//! machine's `local` one (sysstat prints local times). With `pidstat -H`
//! the time is seconds since the epoch (clock `utc`).
//!
//! mpstat tables (`mpstat -A` prints them all):
//! - CPU utilisation (`CPU %usr ...`): entity the CPU (`all`, `0`, `1`, ...),
//!   metrics `cpu_user`, `cpu_nice`, `cpu_sys`, `cpu_iowait`, `cpu_irq`,
//!   `cpu_soft`, `cpu_steal`, `cpu_guest`, `cpu_gnice`, `cpu_idle`;
//! - the same per NUMA node (`NODE %usr ...`): entity `node:N` / `node:all`;
//! - interrupts in total (`CPU intr/s`): `cpu_intr_per_s`;
//! - each interrupt (`CPU 0/s 1/s ... NMI/s LOC/s`): `irq_<name>_per_s`;
//! - each softirq (`CPU HI/s TIMER/s ... RCU/s`): `softirq_<name>_per_s`.
//!
//! pidstat: one entity per process (`COMMAND[PID]`; with `-t` the process
//! line is `COMMAND[TGID]` and each thread's `COMMAND[TGID/TID]`, its `|__`
//! marker dropped), metrics `proc_` + the column (`%CPU` → `proc_cpu_pct`,
//! `RSS` → `proc_rss`, `kB_rd/s` → `proc_kB_rd_per_s`, `CPU` →
//! `proc_cpu_number`).

use super::iostat::is_sysstat_banner;
use super::{MetricSink, Point};
use crate::diag::{Diagnostics, Position, Severity};

/// What a block's header says its rows are.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Table {
    /// mpstat, rows per CPU; `Cpu` the utilisation, `Intr` the interrupts
    /// in total, `Irq` each interrupt, `Softirq` each softirq.
    Cpu,
    Node,
    Intr,
    Irq,
    Softirq,
    Pidstat,
}

/// The softirq names of the kernel's `/proc/softirqs` (`BLOCK_IOPOLL` of
/// kernels before 4.4).
const SOFTIRQS: &[&str] = &[
    "HI",
    "TIMER",
    "NET_TX",
    "NET_RX",
    "BLOCK",
    "BLOCK_IOPOLL",
    "IRQ_POLL",
    "TASKLET",
    "SCHED",
    "HRTIMER",
    "RCU",
];

/// The table of a header's columns (after its time), if trawl knows it.
fn table_of(header: &[&str]) -> Option<Table> {
    if header.iter().any(|c| matches!(*c, "PID" | "TGID" | "TID")) {
        return Some(Table::Pidstat);
    }
    let (first, rest) = header.split_first()?;
    if rest.is_empty() {
        return None;
    }
    let all = |f: fn(&str) -> bool| rest.iter().all(|c| f(c));
    match *first {
        "CPU" | "NODE" if all(|c| c.starts_with('%')) => Some(if *first == "CPU" {
            Table::Cpu
        } else {
            Table::Node
        }),
        "CPU" if rest == ["intr/s"] => Some(Table::Intr),
        "CPU" if all(|c| c.strip_suffix("/s").is_some_and(|n| SOFTIRQS.contains(&n))) => {
            Some(Table::Softirq)
        }
        "CPU" if all(|c| c.strip_suffix("/s").is_some_and(|n| !n.is_empty())) => Some(Table::Irq),
        _ => None,
    }
}

/// Column name → metric name (None: an entity column).
fn metric(table: Table, col: &str) -> Option<String> {
    match (table, col) {
        // Words, not numbers: the scheduling policy (`-R`: `NORMAL`, `FIFO`).
        (Table::Pidstat, "UID" | "USER" | "PID" | "TGID" | "TID" | "Command" | "policy") => None,
        (Table::Pidstat, "CPU") => Some("proc_cpu_number".into()),
        (Table::Pidstat, c) => {
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
        (_, "CPU" | "NODE") => None,
        (Table::Cpu | Table::Node, c) => Some(match c.trim_start_matches('%') {
            "usr" => "cpu_user".into(),
            "sys" => "cpu_sys".into(),
            other => format!("cpu_{other}"),
        }),
        (Table::Intr, _) => Some("cpu_intr_per_s".into()),
        (Table::Irq, c) => Some(format!("irq_{}_per_s", c.trim_end_matches("/s"))),
        (Table::Softirq, c) => Some(format!("softirq_{}_per_s", c.trim_end_matches("/s"))),
    }
}

/// A row's time: of the day (ns since midnight), or since the epoch
/// (`pidstat -H`, ns).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Stamp {
    OfDay(i64),
    Epoch(i64),
}

/// `HH:MM:SS`, `HH:MM:SS AM` or epoch seconds at the start of a line: (the
/// time, tokens used).
fn stamp(tokens: &[&str]) -> Option<(Stamp, usize)> {
    let first = tokens.first()?;
    if first.len() >= 9 && first.bytes().all(|b| b.is_ascii_digit()) {
        let s: i64 = first.parse().ok()?;
        return Some((Stamp::Epoch(s.checked_mul(1_000_000_000)?), 1));
    }
    let t = chrono::NaiveTime::parse_from_str(first, "%H:%M:%S").ok()?;
    let mut ns = i64::from(chrono::Timelike::num_seconds_from_midnight(&t)) * 1_000_000_000;
    match tokens.get(1) {
        Some(&"AM") => {
            if ns >= 12 * 3_600_000_000_000 {
                ns -= 12 * 3_600_000_000_000;
            }
            Some((Stamp::OfDay(ns), 2))
        }
        Some(&"PM") => {
            if ns < 12 * 3_600_000_000_000 {
                ns += 12 * 3_600_000_000_000;
            }
            Some((Stamp::OfDay(ns), 2))
        }
        _ => Some((Stamp::OfDay(ns), 1)),
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

fn is_number(t: &str) -> bool {
    t.parse::<f64>().is_ok()
}

/// The columns of a header line (after its time, or `# Time` of `pidstat
/// -h`), if it is one: words only, no numbers.
fn header_columns<'a>(tokens: &[&'a str]) -> Option<Vec<&'a str>> {
    let rest: Vec<&str> = if tokens.first() == Some(&"#") {
        tokens.get(2..)?.to_vec()
    } else {
        let (_, k) = stamp(tokens)?;
        tokens[k..].to_vec()
    };
    (!rest.is_empty() && !rest.iter().any(|t| is_number(t))).then_some(rest)
}

pub fn sniff(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let mut lines = text.lines();
    lines.next().is_some_and(is_sysstat_banner)
        && lines.any(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            header_columns(&t).is_some_and(|h| table_of(&h).is_some())
        })
}

/// pidstat's command as a name: the `|__` of a thread line and the
/// `(process)__` of a thread whose process line is not shown dropped.
fn command_name(command: &str) -> &str {
    if let Some(c) = command.strip_prefix("|__") {
        return c;
    }
    if command.starts_with('(') {
        if let Some(k) = command.find(")__") {
            return &command[k + 3..];
        }
    }
    command
}

pub fn read(
    text: &str,
    diags: &mut Diagnostics,
    sink: &mut dyn MetricSink,
) -> crate::error::Result<u64> {
    let mut date: Option<i64> = None;
    let mut cols: Vec<&str> = Vec::new();
    // The table of the current block: None before any header and after a
    // header trawl does not know (its rows are skipped).
    let mut table = None;
    let mut day = 0i64;
    let mut last: Option<i64> = None;
    let mut samples = 0i64;
    let mut last_row_time: Option<i64> = None;
    // pidstat -t: the TGID of the last process line, for its threads.
    let mut tgid: Option<String> = None;
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
            table = table_of(&h);
            if table.is_none() {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "unknown_table",
                    format!(
                        "a table trawl does not read (columns {:?}): its rows are skipped",
                        h.join(" ").chars().take(80).collect::<String>()
                    ),
                )?;
            }
            cols = h;
            tgid = None;
            // A header's time counts for the midnight wrap (rows after
            // `23:59:59 CPU ...` may start at 00:00:00 of the next day).
            if let Some((Stamp::OfDay(tod), _)) = stamp(&tokens) {
                let mut t = tod + day;
                if last.is_some_and(|prev| t + 12 * 3_600_000_000_000 < prev) {
                    day += 86_400_000_000_000;
                    t += 86_400_000_000_000;
                }
                last = Some(t);
            }
            continue;
        }
        let Some((when, k)) = stamp(&tokens) else {
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
        let Some(table) = table else {
            if cols.is_empty() {
                diags.report(
                    Position::Line(n),
                    Severity::Warning,
                    "missing_header",
                    "a row before any header: skipped",
                )?;
            }
            continue;
        };
        let values = &tokens[k..];
        // pidstat's command may contain spaces: the rest of the line.
        let fits = values.len() == cols.len()
            || (table == Table::Pidstat
                && cols.last() == Some(&"Command")
                && values.len() > cols.len());
        if !fits {
            super::bad_width(diags, n, values.len(), cols.len())?;
            continue;
        }
        let (t, time_ns, clock) = match when {
            Stamp::Epoch(ns) => (ns, Some(ns), "utc"),
            Stamp::OfDay(tod) => {
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
                let clock = if date.is_some() { "local" } else { "none" };
                (t, date.map(|d| d + t), clock)
            }
        };
        if last_row_time != Some(t) {
            if last_row_time.is_some() {
                samples += 1;
            }
            last_row_time = Some(t);
        }
        let field = |name: &str| cols.iter().position(|c| *c == name).map(|i| values[i]);
        let entity = match table {
            Table::Pidstat => {
                let command = values[cols.len() - 1..].join(" ");
                let id = match (field("TGID"), field("TID"), field("PID")) {
                    (Some(g), Some("-"), _) => {
                        tgid = Some(g.to_string());
                        g.to_string()
                    }
                    (Some("-"), Some(t), _) => match &tgid {
                        Some(g) => format!("{g}/{t}"),
                        None => format!("?/{t}"),
                    },
                    (Some(g), Some(t), _) => format!("{g}/{t}"),
                    (_, _, Some(p)) => p.to_string(),
                    (Some(g), None, None) => g.to_string(),
                    _ => "?".to_string(),
                };
                format!("{}[{id}]", command_name(&command))
            }
            Table::Node => format!("node:{}", field("NODE").unwrap_or("?")),
            _ => field("CPU").unwrap_or("?").to_string(),
        };
        for (c, v) in cols.iter().zip(values) {
            let Some(m) = metric(table, c) else { continue };
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
                entity: Some(&entity),
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
