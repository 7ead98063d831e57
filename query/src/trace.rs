//! What a timeline export (Perfetto's trace format) reads besides the
//! samples: the traced calls and metric readings of each capture, on the
//! trace's clock.
//!
//! The trace's clock is the one the tables use for perf samples
//! (`perf_sample.time_ns`, as `perf script` prints times): a capture with
//! perf samples keeps them as they are, and its other inputs are moved onto
//! that clock through `time_base` (`t_ns` - the perf input's offset). A
//! capture without perf samples is on its `t_ns` axis (ns since its
//! origin).

use datafusion::arrow::array::{Array, AsArray};
use datafusion::arrow::datatypes::{DataType, Int32Type, Int64Type};
use datafusion::scalar::ScalarValue;

use crate::error::Result;
use crate::session::Session;

/// One traced system call (strace, or perf's syscall tracepoints).
#[derive(Debug, Clone)]
pub struct Call {
    pub capture: String,
    /// The thread (strace's pid, perf's tid).
    pub tid: i32,
    /// Its process, where the input says it (perf).
    pub pid: Option<i32>,
    /// Entry, ns on the trace's clock.
    pub start_ns: i64,
    pub duration_ns: Option<i64>,
    pub name: String,
    pub args: String,
    /// The return value as printed.
    pub ret: Option<String>,
    /// What `-y` printed for the call's descriptor.
    pub fd_path: Option<String>,
    /// The thread's command (`process_name`: what it exec'd, or its
    /// parent's).
    pub comm: Option<String>,
}

/// Per capture: the offset of its perf samples' input (moves `t_ns` onto
/// the trace's clock); the queries below follow it.
const REF: &str = "
WITH ref AS (
  SELECT b.capture, min(b.offset_ns) AS o
  FROM time_base b
  JOIN (SELECT DISTINCT capture, source_id FROM perf_sample) p
    ON p.capture = b.capture AND p.source_id = b.source_id
  GROUP BY b.capture
)";

/// Calls with a time on a capture's axis, on the trace's clock, by capture
/// and time; only those of `captures` when some are named.
const CALLS: &str = "
SELECT c.capture, c.pid, c.tgid,
       c.time_ns + b.offset_ns - COALESCE(r.o, 0) AS ts,
       c.duration_ns, CAST(c.name AS VARCHAR) AS name, c.args, c.ret, c.fd_path, n.comm
FROM syscall c
JOIN time_base b ON b.capture = c.capture AND b.source_id = c.source_id
LEFT JOIN ref r ON r.capture = c.capture
LEFT JOIN process_name n ON n.capture = c.capture AND n.pid = c.pid
WHERE c.time_ns IS NOT NULL AND b.offset_ns IS NOT NULL AND c.pid IS NOT NULL
  AND ($capture IS NULL OR array_has($capture, c.capture))
ORDER BY c.capture, ts, c.syscall_id";

/// The traced calls of `captures` (all when empty) on the trace's clock.
/// Calls of a dump of one process without `-f` (no thread id) and of an
/// input not placed on its capture's axis are left out.
pub async fn calls(s: &Session, captures: &[String]) -> Result<Vec<Call>> {
    let list = capture_list(captures)?;
    let mut out = Vec::new();
    for b in s
        .sql_with(&[REF, CALLS].concat(), &[("capture", list)])
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_values(b.column(0));
        let tid = b.column(1).as_primitive::<Int32Type>();
        let pid = b.column(2).as_primitive::<Int32Type>();
        let ts = datafusion::arrow::compute::cast(b.column(3), &DataType::Int64)
            .map_err(datafusion::error::DataFusionError::from)?;
        let ts = ts.as_primitive::<Int64Type>();
        let dur = b.column(4).as_primitive::<Int64Type>();
        let name = crate::rows::string_values(b.column(5));
        let args = crate::rows::string_values(b.column(6));
        let ret = crate::rows::string_values(b.column(7));
        let fd = crate::rows::string_values(b.column(8));
        let comm = crate::rows::string_values(b.column(9));
        for i in 0..b.num_rows() {
            out.push(Call {
                capture: cap[i].clone().unwrap_or_default(),
                tid: tid.value(i),
                pid: (!pid.is_null(i)).then(|| pid.value(i)),
                start_ns: ts.value(i),
                duration_ns: (!dur.is_null(i)).then(|| dur.value(i)),
                name: name[i].clone().unwrap_or_default(),
                args: args[i].clone().unwrap_or_default(),
                ret: ret[i].clone(),
                fd_path: fd[i].clone(),
                comm: comm[i].clone(),
            });
        }
    }
    Ok(out)
}

/// `$capture`: the captures named, or a null list (all).
fn capture_list(captures: &[String]) -> Result<ScalarValue> {
    Ok(if captures.is_empty() {
        ScalarValue::try_from(DataType::List(std::sync::Arc::new(
            datafusion::arrow::datatypes::Field::new_list_field(DataType::Utf8, true),
        )))?
    } else {
        ScalarValue::List(ScalarValue::new_list_nullable(
            &captures
                .iter()
                .map(|c| ScalarValue::from(c.as_str()))
                .collect::<Vec<_>>(),
            &DataType::Utf8,
        ))
    })
}

/// One reading of a monitoring metric (vmstat, sar, ...), or the power of
/// a RAPL domain over the interval ending at it.
#[derive(Debug, Clone)]
pub struct Reading {
    pub capture: String,
    /// The input's file name: with the metric and entity, one series.
    pub input: String,
    pub metric: String,
    pub entity: Option<String>,
    /// ns on the trace's clock.
    pub at_ns: i64,
    pub value: f64,
}

/// Metric readings placed on their capture's axis (not vmstat's averages
/// since boot), and RAPL readings as power (W: the interval's energy over
/// its length, at the interval's end) with the metric `power_w` and the
/// domain (and package) as entity; by series and time.
const READINGS: &str = "
SELECT m.capture, regexp_replace(s.path, '^.*/', '') AS input, CAST(m.metric AS VARCHAR) AS metric,
       CAST(m.entity AS VARCHAR) AS entity, m.t_ns - COALESCE(r.o, 0) AS ts, m.value
FROM metric_t m
JOIN source s ON s.capture = m.capture AND s.source_id = m.source_id
LEFT JOIN ref r ON r.capture = m.capture
WHERE m.t_ns IS NOT NULL AND NOT m.since_boot
  AND ($capture IS NULL OR array_has($capture, m.capture))
UNION ALL
SELECT e.capture, regexp_replace(s.path, '^.*/', ''), 'power_w',
       concat(CAST(e.domain AS VARCHAR), CASE WHEN e.package IS NULL THEN '' ELSE concat(':', CAST(e.package AS VARCHAR)) END),
       e.t_ns - COALESCE(r.o, 0), e.delta_uj * 1e3 / CAST(e.interval_ns AS DOUBLE)
FROM energy_t e
JOIN source s ON s.capture = e.capture AND s.source_id = e.source_id
LEFT JOIN ref r ON r.capture = e.capture
WHERE e.t_ns IS NOT NULL AND e.delta_uj IS NOT NULL AND e.interval_ns > 0
  AND ($capture IS NULL OR array_has($capture, e.capture))
ORDER BY 1, 2, 3, 4, 5";

/// The metric readings of `captures` (all when empty) on the trace's clock.
pub async fn readings(s: &Session, captures: &[String]) -> Result<Vec<Reading>> {
    let mut out = Vec::new();
    let q = [REF, READINGS].concat();
    for b in s
        .sql_with(&q, &[("capture", capture_list(captures)?)])
        .await?
        .collect()
        .await?
    {
        let cap = crate::rows::string_values(b.column(0));
        let input = crate::rows::string_values(b.column(1));
        let metric = crate::rows::string_values(b.column(2));
        let entity = crate::rows::string_values(b.column(3));
        let ts = datafusion::arrow::compute::cast(b.column(4), &DataType::Int64)
            .map_err(datafusion::error::DataFusionError::from)?;
        let ts = ts.as_primitive::<Int64Type>();
        let value = b
            .column(5)
            .as_primitive::<datafusion::arrow::datatypes::Float64Type>();
        for i in 0..b.num_rows() {
            if value.is_null(i) || ts.is_null(i) {
                continue;
            }
            out.push(Reading {
                capture: cap[i].clone().unwrap_or_default(),
                input: input[i].clone().unwrap_or_default(),
                metric: metric[i].clone().unwrap_or_default(),
                entity: entity[i].clone(),
                at_ns: ts.value(i),
                value: value.value(i),
            });
        }
    }
    Ok(out)
}
