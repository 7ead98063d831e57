//! Storage I/O attribution from traced system calls (Morita et al., H/W
//! resource exhaustion analysis): bytes actually transferred (the return
//! values) by read- and write-like calls (the view `io_call`) in a time
//! window, per process, application function, actual function, application
//! source line, file and direction: `io_bytes(...)` (`analyses/syscall/io_bytes.sql`).

use datafusion::prelude::{lit, DataFrame};

use crate::error::Result;
use crate::functions::{Kind, Param, Spec};
use crate::regions::{app_of, app_opt, pid_args, pid_opt, resolve_at, At, APP, PID};
use crate::report::{Answer, Captures, Opt, Report, Selects};
use crate::session::Session;

/// `io_bytes(...)`.
/// The I/O table functions.
pub static SPECS: &[&Spec] = &[&IO_BYTES];

/// Registers `io_bytes` (after [`crate::regions::register`]: it reads the
/// attribution views).
pub async fn register(s: &Session) -> Result<()> {
    crate::functions::register(s, SPECS).await
}

pub static IO_BYTES: Spec = Spec {
    name: "io_bytes",
    doc: "I/O bytes transferred (Morita et al.) per process, application function, actual function, line, file and direction.",
    sql: include_str!("../analyses/syscall/io_bytes.sql"),
    positional: 0,
    params: &[
        Param {
            name: "from_ns",
            kind: Kind::Int,
            doc: "only calls at or after this time (syscall.time_ns's clock)",
        },
        Param {
            name: "to_ns",
            kind: Kind::Int,
            doc: "only calls before this time",
        },
        Param {
            name: "lead_ns",
            kind: Kind::Int,
            doc: "also this long before from_ns (lead time of Morita et al.; default 0)",
        },
        APP,
        PID,
    ],
    columns: None,
    inputs: None,
};

/// `io_bytes(...)` in `[from - lead_ns, to)`, sorted by usage like
/// [`crate::regions::unfreed`].
pub async fn io(
    s: &Session,
    from: Option<At>,
    to: Option<At>,
    lead_ns: i64,
    app: Option<&str>,
    pids: &[i32],
) -> Result<DataFrame> {
    let mut args = Vec::new();
    if let Some(f) = resolve_at(s, from).await? {
        args.extend([lit("from_ns"), lit(f)]);
    }
    if let Some(t) = resolve_at(s, to).await? {
        args.extend([lit("to_ns"), lit(t)]);
    }
    args.extend([lit("lead_ns"), lit(lead_ns)]);
    if let Some(a) = app {
        args.extend([lit("app"), lit(a)]);
    }
    pid_args(pids, &mut args);
    crate::functions::call(s, "io_bytes", &args).await
}

/// The I/O reports of traced calls.
pub static REPORTS: &[&Report] = &[&IO_REPORT];

/// `trawl report io`.
pub static IO_REPORT: Report = Report {
    name: "io",
    about: "Bytes read and written (return values of read/write-like calls) in a time window, from strace dumps: per process, application function, actual function, application source line and file.",
    captures: Captures::Many,
    opts: || {
        vec![
            Opt::text("from", "Start of the window: `+SECONDS` after the first traced call, or a time in ns as in `syscall.time_ns` (default: the start)."),
            Opt::text("to", "End of the window (exclusive), same forms (default: the end)."),
            Opt::float("lead", "Also count this many seconds before --from (the lead time of Morita et al.: I/O issued just before an exhaustion range feeds it).").default("0"),
            app_opt(),
            pid_opt(),
        ]
    },
    selects: Selects::Nothing,
    t0: false,
    limit: true,
    run: |s, g| {
        Box::pin(async move {
            let from = g.text("from").map(At::parse).transpose()?;
            let to = g.text("to").map(At::parse).transpose()?;
            let lead = g.float("lead")?.unwrap_or(0.0);
            if !(lead.is_finite() && lead >= 0.0) {
                return Err(crate::Error::Usage(format!(
                    "--lead {lead}: expected seconds >= 0"
                )));
            }
            let (app, line) = app_of(s, g.text("app")).await?;
            let lead_ns = (lead * 1e9).round() as i64;
            let pids = g.ints("pid")?;
            Ok(Answer::rows(io(s, from, to, lead_ns, app.as_deref(), &pids).await?).heading(line))
        })
    },
};
