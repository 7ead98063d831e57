//! What used a resource inside exhaustion ranges (seed document 000, stage
//! B): per range, process, application function, actual function and
//! application source line, the same shape as the unfreed and I/O reports.
//!
//! - `cpu`: the CPU time of the perf samples taken in the range (period:
//!   ns for `cpu-clock`), with its share of all samples in the range;
//! - `memory`: the bytes allocated (mmap/brk/mremap, not freed) at the
//!   range's start;
//! - `io`: the bytes transferred by read/write-like calls from `lead`
//!   before the range to its end.

use std::collections::BTreeMap;

use datafusion::prelude::DataFrame;
use datafusion::scalar::ScalarValue;

use crate::memory::{quote, scalar};
use crate::ranges::Range;
use crate::{Error, Result, Session};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Cpu,
    Memory,
    Io,
}

impl Resource {
    pub fn parse(s: &str) -> Result<Resource> {
        Ok(match s {
            "cpu" => Resource::Cpu,
            "memory" | "mem" => Resource::Memory,
            "io" => Resource::Io,
            _ => {
                return Err(Error::Usage(format!(
                    "--resource {s:?}: expected cpu, memory or io"
                )))
            }
        })
    }
}

/// When, inside a range, memory is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum MemoryAt {
    /// The range's start (document 000).
    #[default]
    Start,
    /// The moment in the range when the traced processes held the most
    /// memory (mmap/brk/mremap regions), so an allocation that is still
    /// growing when the range starts is seen whole.
    Max,
}

/// The range columns every row starts with.
const SCOPE: &[&str] = &["range", "range_start_s", "range_end_s"];

fn scope_cols(i: usize, r: &Range) -> String {
    format!(
        "{} AS range, {} AS range_start_s, {} AS range_end_s",
        i + 1,
        r.start as f64 / 1e9,
        r.end as f64 / 1e9
    )
}

/// The usage of `resource` in each capture's ranges (`t_ns`).
pub async fn cause(
    s: &Session,
    resource: Resource,
    ranges: &BTreeMap<String, Vec<Range>>,
    app: &str,
    lead_ns: i64,
    event: Option<&str>,
    memory_at: MemoryAt,
    lbr: Option<crate::lbr::Method>,
) -> Result<DataFrame> {
    let mut parts = Vec::new();
    let q = match resource {
        Resource::Cpu => {
            let event = crate::analyses::choose_event(s, event).await?;
            crate::time::require_aligned_samples(s, &event).await?;
            // With `lbr`, the samples and their branch entries'
            // pseudo-samples (document 003), weighted in ns.
            let (from, cost) = match lbr {
                None => ("perf_sample_t".to_string(), "COALESCE(period, 1)"),
                Some(m) => (format!("lbr_samples({})", m.sql()), "weight_ns"),
            };
            for (cap, rs) in ranges {
                for (i, r) in rs.iter().enumerate() {
                    parts.push(format!(
                        "SELECT capture, {sc}, pid, stack_id, {cost} AS bytes FROM {from} \
                         WHERE capture = {c} AND CAST(event AS VARCHAR) = {e} AND t_ns >= {a} AND t_ns < {b}",
                        sc = scope_cols(i, r),
                        c = quote(cap),
                        e = quote(&event),
                        a = r.start,
                        b = r.end,
                    ));
                }
            }
            let inner = attribution_sql(&union(&parts), SCOPE, &[], "cpu_ns", "samples");
            // Shares of all CPU time sampled in the range.
            format!(
                "SELECT capture, range, range_start_s, range_end_s, pid, \
                   round(100.0 * process_cpu_ns / sum(cpu_ns) OVER (PARTITION BY capture, range), 2) AS process_pct, \
                   app_function, \
                   round(100.0 * app_function_cpu_ns / sum(cpu_ns) OVER (PARTITION BY capture, range), 2) AS app_function_pct, \
                   actual_function, app_line, \
                   round(100.0 * cpu_ns / sum(cpu_ns) OVER (PARTITION BY capture, range), 2) AS pct, \
                   cpu_ns, samples, app_file, app_line_number \
                 FROM ({inner}) \
                 ORDER BY capture, range, process_pct DESC, pid, app_function_pct DESC, app_function, pct DESC, actual_function, app_line"
            )
        }
        Resource::Memory => {
            for (cap, rs) in ranges {
                let off = syscall_offset(s, cap).await?;
                for (i, r) in rs.iter().enumerate() {
                    let at = match memory_at {
                        MemoryAt::Start => r.start - off,
                        MemoryAt::Max => peak(s, cap, r.start - off, r.end - off)
                            .await?
                            .unwrap_or(r.start - off),
                    };
                    parts.push(format!(
                        "SELECT capture, {sc}, {t} AS at_s, pid, stack_id, bytes FROM live_regions({at}) WHERE capture = {c}",
                        sc = scope_cols(i, r),
                        t = (at + off) as f64 / 1e9,
                        c = quote(cap),
                    ));
                }
            }
            let mut scope = SCOPE.to_vec();
            scope.push("at_s");
            attribution_sql(&union(&parts), &scope, &[], "bytes", "regions")
        }
        Resource::Io => {
            for (cap, rs) in ranges {
                for (i, r) in rs.iter().enumerate() {
                    parts.push(format!(
                        "SELECT c.capture, {sc}, c.pid, c.stack_id, c.bytes, c.file, c.direction \
                         FROM io_call c JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id \
                         WHERE c.capture = {cap} AND c.time_ns + b.offset_ns >= {a} AND c.time_ns + b.offset_ns < {z}",
                        sc = scope_cols(i, r),
                        cap = quote(cap),
                        a = r.start.saturating_sub(lead_ns),
                        z = r.end,
                    ));
                }
            }
            attribution_sql(
                &union(&parts),
                SCOPE,
                &["file", "direction"],
                "bytes",
                "calls",
            )
        }
    };
    if parts.is_empty() {
        return Err(Error::Usage("no ranges to look into".into()));
    }
    crate::functions::sql_with(s, &q, [("app", ScalarValue::from(app))]).await
}

/// Document 000's attribution (Fig. 8 / Table 4) of a measure over rows of
/// `source` (columns capture, `scope`, pid, stack_id, bytes, and `keys`):
/// per `scope` (a range), process, application function, actual function
/// and application source line (the view `_stack_attribution`, whose `$app`
/// the caller binds) and `keys`: the summed `bytes` (output as `measure`,
/// with the process and application-function totals `process_MEASURE`,
/// `app_function_MEASURE`) and the number of rows (named `count_name`);
/// sorted by usage.
fn attribution_sql(
    source: &str,
    scope: &[&str],
    keys: &[&str],
    measure: &str,
    count_name: &str,
) -> String {
    let k = |prefix: &str, cols: &[&str]| -> String {
        cols.iter().map(|c| format!(", {prefix}{c}")).collect()
    };
    format!(
        "WITH src AS ({source}), \
         attributed AS ( \
           SELECT r.capture{rs}, r.pid, r.bytes{rk}, \
             COALESCE(a.app_function, '[outside the application]') AS app_function, \
             COALESCE(a.actual_function, '[no stack]') AS actual_function, \
             a.app_line, a.app_file, a.app_line_number \
           FROM src r \
           LEFT JOIN _stack_attribution a ON a.capture = r.capture AND a.stack_id = r.stack_id), \
         g AS ( \
           SELECT capture{gs}, pid, app_function, actual_function, app_line{gk}, app_file, app_line_number, \
             CAST(sum(bytes) AS BIGINT) AS bytes, count(*) AS {count_name} \
           FROM attributed \
           GROUP BY capture{gs}, pid, app_function, actual_function, app_line{gk}, app_file, app_line_number) \
         SELECT capture{gs}, pid, \
           sum(bytes) OVER (PARTITION BY capture{gs}, pid) AS process_{measure}, \
           app_function, \
           sum(bytes) OVER (PARTITION BY capture{gs}, pid, app_function) AS app_function_{measure}, \
           actual_function, app_line{gk}, bytes AS {measure}, {count_name}, app_file, app_line_number \
         FROM g \
         ORDER BY capture{gs}, process_{measure} DESC, pid, app_function_{measure} DESC, app_function, {measure} DESC, \
           actual_function, app_line{gk}",
        rs = k("r.", scope),
        rk = k("r.", keys),
        gs = k("", scope),
        gk = k("", keys),
    )
}

/// The time in [from, to) (native syscall clock) when the capture's live
/// regions summed to the most, if any region starts or ends in it.
async fn peak(s: &Session, cap: &str, from: i64, to: i64) -> Result<Option<i64>> {
    let q = format!(
        "WITH ev AS ( \
           SELECT from_ns AS t, CAST(bytes AS BIGINT) AS d FROM memory_region WHERE capture = {c} AND from_ns IS NOT NULL \
           UNION ALL SELECT to_ns, -CAST(bytes AS BIGINT) FROM memory_region WHERE capture = {c} AND to_ns IS NOT NULL), \
         per_t AS (SELECT t, sum(d) AS d FROM ev GROUP BY t), \
         live AS (SELECT t, sum(d) OVER (ORDER BY t ROWS UNBOUNDED PRECEDING) AS live FROM per_t) \
         SELECT CAST(t AS VARCHAR) AS peak_t FROM live WHERE t >= {from} AND t < {to} ORDER BY live DESC, t LIMIT 1",
        c = quote(cap)
    );
    Ok(scalar(s, &q).await?.and_then(|v| v.parse().ok()))
}

fn union(parts: &[String]) -> String {
    parts.join(" UNION ALL ")
}

/// native `syscall.time_ns` = t_ns − offset, for the capture's calls.
async fn syscall_offset(s: &Session, cap: &str) -> Result<i64> {
    let q = format!(
        "SELECT CAST(min(b.offset_ns) AS VARCHAR), CAST(count(DISTINCT c.source_id) AS VARCHAR) \
         FROM (SELECT DISTINCT capture, source_id FROM syscall) c \
         JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id \
         WHERE c.capture = {}",
        quote(cap)
    );
    let b = s.sql(&q).await?.collect().await?;
    let row = b.iter().find(|b| b.num_rows() > 0);
    let (off, n) = match row {
        Some(b) => (
            crate::string_values(b.column(0))[0].clone(),
            crate::string_values(b.column(1))[0].clone(),
        ),
        None => (None, None),
    };
    match (off.and_then(|v| v.parse::<i64>().ok()), n.as_deref()) {
        (_, Some("0")) | (_, None) => Err(Error::Usage(format!(
            "{cap}: no traced system calls (strace -k -ttt, or perf syscall tracepoints) to find allocations in"
        ))),
        (Some(o), Some("1")) => Ok(o),
        (Some(_), _) => Err(Error::Usage(format!(
            "{cap}: system calls from several inputs; ingest one trace of the run per capture"
        ))),
        (None, _) => Err(Error::Usage(format!(
            "{cap}: its system calls cannot be placed on the capture's time axis (strace needs -ttt; perf needs -k CLOCK_MONOTONIC)"
        ))),
    }
}
