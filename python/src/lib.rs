//! # trawl-python
//!
//! `trawl._trawl`, the extension module behind the `trawl` Python package
//! (`python/trawl/`): captures opened as [`capture::Capture`] (a query
//! session), results as [`relation::Relation`] (a DataFusion plan that
//! speaks the Arrow C stream interface, so pyarrow, Polars, DuckDB and
//! pandas read its batches without a copy), [`ingest::ingest`], the
//! figures as bytes, and [`cli::cli`], the `trawl` command itself. The
//! pure-Python layer adds the analyses as methods (from [`functions`]),
//! notebook display and progress.
//!
//! Every entry point turns errors into Python exceptions
//! ([`TrawlError`], [`InputError`] with the diagnostic's position) and
//! catches panics, so none crosses into Python; queries run without the
//! GIL and stop at Ctrl-C.

mod capture;
mod cli;
mod ingest;
mod relation;

use std::future::Future;
use std::sync::OnceLock;
use std::time::Duration;

use pyo3::create_exception;
use pyo3::exceptions::PyException;
use pyo3::prelude::*;

create_exception!(
    trawl,
    TrawlError,
    PyException,
    "An error of trawl: a capture that cannot be opened, a query or analysis that fails, bad arguments."
);
create_exception!(
    trawl,
    InputError,
    TrawlError,
    "An input trawl cannot read (under strict=True: the first problem found). Attributes: source (the file), offset (byte) or line, kind, message."
);

/// The runtime every query runs on (32 MiB worker stacks, as the CLI:
/// deep plans recurse deeply).
pub(crate) fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .thread_stack_size(32 << 20)
            .thread_name("trawl-query")
            .build()
            .expect("starting the query runtime")
    })
}

/// Runs `fut` on the runtime without holding the GIL; every 100 ms looks
/// for a signal (Ctrl-C raises KeyboardInterrupt and drops the query).
pub(crate) fn wait<T, F>(py: Python<'_>, fut: F) -> PyResult<T>
where
    T: Send + 'static,
    F: Future<Output = anyhow::Result<T>> + Send + 'static,
{
    let rt = runtime();
    let mut task = rt.spawn(fut);
    loop {
        let r = py.detach(|| {
            rt.block_on(async { tokio::time::timeout(Duration::from_millis(100), &mut task).await })
        });
        match r {
            Ok(Ok(v)) => return v.map_err(|e| error(py, e)),
            Ok(Err(join)) => {
                return Err(TrawlError::new_err(format!(
                    "internal error (a bug in trawl, please report it): {}",
                    panic_text(join.into_panic())
                )))
            }
            Err(_elapsed) => {
                if let Err(e) = py.check_signals() {
                    task.abort();
                    return Err(e);
                }
            }
        }
    }
}

static MAIN_THREAD: OnceLock<std::thread::ThreadId> = OnceLock::new();

/// Whether this is the thread that imported the module (Python's main
/// thread: the one signal handlers run on).
pub(crate) fn on_main_thread() -> bool {
    MAIN_THREAD.get() == Some(&std::thread::current().id())
}

/// Whether Ctrl-C was pressed: runs Python's signal handlers; a
/// KeyboardInterrupt is raised again for the interpreter to see once the
/// consumer returns.
pub(crate) fn interrupted() -> bool {
    Python::attach(|py| match py.check_signals() {
        Ok(()) => false,
        Err(e) => {
            if e.is_instance_of::<pyo3::exceptions::PyKeyboardInterrupt>(py) {
                // SAFETY: PyErr_SetInterrupt only sets the interpreter's
                // pending-signal flag; the GIL is held.
                unsafe { pyo3::ffi::PyErr_SetInterrupt() };
            }
            true
        }
    })
}

/// Runs `f`, turning a panic into a [`TrawlError`].
pub(crate) fn guard<T>(py: Python<'_>, f: impl FnOnce() -> anyhow::Result<T>) -> PyResult<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
        Ok(r) => r.map_err(|e| error(py, e)),
        Err(p) => Err(TrawlError::new_err(format!(
            "internal error (a bug in trawl, please report it): {}",
            panic_text(p)
        ))),
    }
}

fn panic_text(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

/// An error as the CLI prints it (each cause once), as a Python exception:
/// an [`InputError`] with the position when an input was at fault.
pub(crate) fn error(py: Python<'_>, e: anyhow::Error) -> PyErr {
    let msg = trawl_query::error::message(e.as_ref());
    let input = e
        .chain()
        .find_map(|c| c.downcast_ref::<trawl_ingest::Error>());
    let (source, offset, line, kind, message) = match input {
        Some(trawl_ingest::Error::Diagnostic(d)) => {
            let (offset, line) = match d.position {
                trawl_ingest::Position::Byte(b) => (Some(b), None),
                trawl_ingest::Position::Compressed { record, .. } => (Some(record), None),
                trawl_ingest::Position::Line(l) => (None, Some(l)),
                trawl_ingest::Position::None => (None, None),
            };
            (d.source.clone(), offset, line, d.kind, d.message.clone())
        }
        Some(trawl_ingest::Error::BadInput {
            path,
            offset,
            message,
        }) => (
            path.display().to_string(),
            Some(*offset),
            None,
            "bad_input",
            message.clone(),
        ),
        Some(trawl_ingest::Error::UnknownFormat { path, .. }) => (
            path.display().to_string(),
            None,
            None,
            "unknown_format",
            msg.clone(),
        ),
        _ => return TrawlError::new_err(msg),
    };
    let err = InputError::new_err(msg);
    let v = err.value(py);
    let set = |k: &str, o: Bound<'_, PyAny>| {
        let _ = v.setattr(k, o);
    };
    set("source", source.into_pyobject(py).unwrap().into_any());
    set("offset", offset.into_pyobject(py).unwrap().into_any());
    set("line", line.into_pyobject(py).unwrap().into_any());
    set("kind", kind.into_pyobject(py).unwrap().into_any());
    set("message", message.into_pyobject(py).unwrap().into_any());
    err
}

/// Every analysis callable as a table function: (name, what it answers,
/// how many leading parameters go by position, [(parameter, type, doc)]).
#[pyfunction]
#[allow(clippy::type_complexity)]
fn functions() -> Vec<(
    &'static str,
    &'static str,
    usize,
    Vec<(&'static str, String, &'static str)>,
)> {
    trawl_query::specs()
        .into_iter()
        .map(|s| {
            (
                s.name,
                s.doc,
                s.positional,
                s.params
                    .iter()
                    .map(|p| (p.name, format!("{:?}", p.kind).to_lowercase(), p.doc))
                    .collect(),
            )
        })
        .collect()
}

/// A duration (`10ms`, `1.5s`, `500us`, `2m`) in nanoseconds.
#[pyfunction]
fn parse_duration_ns(py: Python<'_>, text: &str) -> PyResult<i64> {
    guard(py, || Ok(trawl_query::time::parse_duration_ns(text)?))
}

#[pymodule]
fn _trawl(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    let _ = MAIN_THREAD.set(std::thread::current().id());
    m.add("TrawlError", py.get_type::<TrawlError>())?;
    m.add("InputError", py.get_type::<InputError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The build id `trawl --version` prints (a hash of the sources).
    m.add("__build__", trawl_cli::BUILD_ID)?;
    m.add_class::<capture::Capture>()?;
    m.add_class::<relation::Relation>()?;
    m.add_function(wrap_pyfunction!(capture::open, m)?)?;
    m.add_function(wrap_pyfunction!(ingest::ingest, m)?)?;
    m.add_function(wrap_pyfunction!(functions, m)?)?;
    m.add_function(wrap_pyfunction!(parse_duration_ns, m)?)?;
    m.add_function(wrap_pyfunction!(cli::cli, m)?)?;
    Ok(())
}
