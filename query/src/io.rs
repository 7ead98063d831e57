//! Storage I/O attribution from traced system calls (seed document 000):
//! bytes actually transferred (the return values) by read- and write-like
//! calls in a time window, per process, application function, actual
//! function, application source line and file.

use crate::memory::{attribution_sql, quote, resolve_at, At};
use crate::{Result, Session};

/// Calls that move bytes, and their direction.
pub const IO_CALLS: &[(&str, &str)] = &[
    ("read", "read"),
    ("pread64", "read"),
    ("readv", "read"),
    ("preadv", "read"),
    ("preadv2", "read"),
    ("write", "write"),
    ("pwrite64", "write"),
    ("writev", "write"),
    ("pwritev", "write"),
    ("pwritev2", "write"),
    ("sendfile", "write"),
    ("copy_file_range", "write"),
];

/// Bytes transferred per process, application function (first frame from
/// the leaf under `app`), actual function (leaf), application source line,
/// file (`-y` path of the descriptor written to or read from) and
/// direction, in `[from - lead_ns, to)`; sorted by usage like
/// [`crate::memory::unfreed`].
pub async fn io(
    s: &Session,
    from: Option<At>,
    to: Option<At>,
    lead_ns: i64,
    app: &str,
) -> Result<datafusion::prelude::DataFrame> {
    let mut w = Vec::new();
    if let Some(f) = resolve_at(s, from).await? {
        w.push(format!("c.time_ns >= {}", f.saturating_sub(lead_ns)));
    }
    if let Some(t) = resolve_at(s, to).await? {
        w.push(format!("c.time_ns < {t}"));
    }
    let source = io_rows_sql("syscall", "", &w);
    let q = attribution_sql(&source, &[], &["file", "direction"], "bytes", "calls", app);
    Ok(s.sql(&q).await?)
}

/// Rows (capture, `extra`, pid, stack_id, bytes, file, direction) of the
/// calls of `table` (`syscall` or `syscall_t`) that moved bytes, under the
/// conditions `window` (on columns of `c`).
pub(crate) fn io_rows_sql(table: &str, extra: &str, window: &[String]) -> String {
    let cases: Vec<String> = IO_CALLS
        .iter()
        .map(|(n, d)| format!("WHEN {} THEN {}", quote(n), quote(d)))
        .collect();
    let names: Vec<String> = IO_CALLS.iter().map(|(n, _)| quote(n)).collect();
    format!(
        "SELECT c.capture{extra}, c.pid, c.stack_id, c.retval AS bytes, \
           COALESCE(c.fd_path, concat('fd ', CAST(c.fd AS VARCHAR))) AS file, \
           CASE CAST(c.name AS VARCHAR) {cases} END AS direction \
         FROM {table} c \
         WHERE CAST(c.name AS VARCHAR) IN ({names}) AND c.retval > 0 {window}",
        cases = cases.join(" "),
        names = names.join(", "),
        window = window
            .iter()
            .map(|c| format!("AND {c}"))
            .collect::<Vec<_>>()
            .join(" "),
    )
}
