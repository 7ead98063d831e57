//! `trawl.ingest`: capture files into a capture directory, as `trawl
//! ingest` (the same options, symbolization and unwinding), with progress
//! reported to a Python callable.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::{error, TrawlError};

/// A page size given as bytes or as text (`64k`, `2M`).
#[derive(FromPyObject)]
pub enum Size {
    Bytes(u64),
    Text(String),
}

/// Ingests `inputs` into the capture directory `output` (replaced if it is
/// a capture). Returns a summary: the output, one entry per input
/// (format, bytes, records, rows, diagnostics) and what symbolization did.
/// `progress(done_bytes, total_bytes)` is called about ten times a second.
/// Ctrl-C stops the capture from being committed (the ingest in progress
/// runs to its end first; the old capture, if any, is left as it was).
#[pyfunction]
#[pyo3(signature = (inputs, output, *, strict = false, tz = None, symbolize = true, flat = false, unwind = true, mem_kinds = "ILSM".to_string(), mem_ranges = Vec::new(), fetch_rows = false, page_size = None, debug_dirs = Vec::new(), symfs = None, remap = Vec::new(), kallsyms = None, debuginfod = None, symbol_store = None, no_symbol_store = false, max_expansion = trawl_ingest::compressed::ExpansionLimit::DEFAULT_RATIO, progress = None))]
#[allow(clippy::too_many_arguments)]
pub fn ingest<'py>(
    py: Python<'py>,
    inputs: Vec<PathBuf>,
    output: PathBuf,
    strict: bool,
    tz: Option<String>,
    symbolize: bool,
    flat: bool,
    unwind: bool,
    mem_kinds: String,
    mem_ranges: Vec<String>,
    fetch_rows: bool,
    page_size: Option<Size>,
    debug_dirs: Vec<PathBuf>,
    symfs: Option<PathBuf>,
    remap: Vec<(String, PathBuf)>,
    kallsyms: Option<PathBuf>,
    debuginfod: Option<Vec<String>>,
    symbol_store: Option<PathBuf>,
    no_symbol_store: bool,
    max_expansion: u64,
    progress: Option<Bound<'py, PyAny>>,
) -> PyResult<Bound<'py, PyDict>> {
    use trawl_ingest::memlog::{parse_size, Filter, MemOptions};
    let usage = |m: String| TrawlError::new_err(m);
    if inputs.is_empty() {
        return Err(usage("give at least one input".into()));
    }
    let kinds = Filter::parse_kinds(&mem_kinds).map_err(usage)?;
    let ranges = mem_ranges
        .iter()
        .map(|r| Filter::parse_range(r))
        .collect::<Result<Vec<_>, _>>()
        .map_err(usage)?;
    let page_size = match page_size {
        None => None,
        Some(Size::Bytes(b)) => Some(b),
        Some(Size::Text(t)) => Some(parse_size(&t).map_err(usage)?),
    };
    for (from, _) in &remap {
        if !from.starts_with('/') {
            return Err(usage(format!(
                "remap {from:?}: the prefix must be an absolute path as recorded"
            )));
        }
    }
    let mut cfg = trawl_symbolize::Config::standard();
    cfg.debug_dirs = debug_dirs;
    cfg.symfs = symfs;
    cfg.remap = remap;
    cfg.kallsyms = kallsyms;
    // None: $DEBUGINFOD_URLS; [] : no server.
    cfg.debuginfod = match debuginfod {
        None => trawl_symbolize::debuginfod::Debuginfod::from_env(),
        Some(urls) => trawl_symbolize::debuginfod::Debuginfod::new(urls),
    };
    let store = match (symbol_store, no_symbol_store) {
        (_, true) => trawl_enrich::symbol_store::Choice::Off,
        (Some(d), false) => trawl_enrich::symbol_store::Choice::Dir(d),
        (None, false) => trawl_enrich::symbol_store::Choice::Default,
    };
    // A store that cannot be opened is reported with the problems.
    let store_problem = trawl_enrich::symbol_store::attach(&mut cfg, &store, None).err();

    let total: u64 = inputs
        .iter()
        .map(|p| std::fs::metadata(p).map_or(0, |m| m.len()))
        .sum();
    let done = Arc::new(AtomicU64::new(0));
    let interrupted = Arc::new(AtomicBool::new(false));
    let opts = trawl_ingest::IngestOptions {
        strict,
        tz,
        mem: MemOptions {
            filter: Filter {
                kinds,
                ranges,
                fetch_rows,
            },
            page_size,
        },
        staging: None,
        progress: Some(done.clone()),
        // Ctrl-C or an error of the progress callback stops the readers.
        cancel: Some(interrupted.clone()),
        hold: false,
        expansion: trawl_ingest::compressed::ExpansionLimit {
            ratio: max_expansion,
            ..Default::default()
        },
    };
    let stop = interrupted.clone();
    let work = std::thread::Builder::new()
        .name("trawl-ingest".into())
        .spawn(move || {
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
                let how = trawl_enrich::Enrichment {
                    cfg: &cfg,
                    symbolize,
                    flat,
                    unwind,
                };
                trawl_enrich::ingest(&inputs, &output, &opts, &how, |_| {
                    if stop.load(Ordering::Relaxed) {
                        return Err(trawl_ingest::Error::Usage(
                            "interrupted: the capture was not written".into(),
                        ));
                    }
                    Ok(())
                })
            }))
        })
        .map_err(|e| TrawlError::new_err(format!("starting the ingest: {e}")))?;

    let mut pending: Option<PyErr> = None;
    while !work.is_finished() {
        py.detach(|| std::thread::sleep(Duration::from_millis(100)));
        if let Some(cb) = progress.as_ref().filter(|_| pending.is_none()) {
            if let Err(e) = cb.call1((done.load(Ordering::Relaxed), total)) {
                interrupted.store(true, Ordering::Relaxed);
                pending = Some(e);
            }
        }
        if pending.is_none() {
            if let Err(e) = py.check_signals() {
                interrupted.store(true, Ordering::Relaxed);
                pending = Some(e);
            }
        }
    }
    let result = py.detach(|| work.join());
    if let Some(e) = pending {
        return Err(e);
    }
    let (summary, enriched) = match result {
        Ok(Ok(Ok(v))) => v,
        Ok(Ok(Err(e))) => return Err(error(py, e.into())),
        Ok(Err(p)) | Err(p) => {
            let text = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "panic".into());
            return Err(TrawlError::new_err(format!(
                "internal error (a bug in trawl, please report it): {text}"
            )));
        }
    };
    if let Some(cb) = &progress {
        cb.call1((total, total))?;
    }
    let out = PyDict::new(py);
    out.set_item("output", summary.out)?;
    let mut list = Vec::new();
    for s in &summary.inputs {
        let d = PyDict::new(py);
        d.set_item("path", &s.path)?;
        d.set_item("format", s.format.name())?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("records", s.records)?;
        d.set_item("rows", s.samples)?;
        d.set_item(
            "diagnostics",
            s.diagnostics
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>(),
        )?;
        d.set_item("clock", &s.clock)?;
        d.set_item("utc_offset_ns", s.utc_offset_ns)?;
        list.push(d);
    }
    out.set_item("inputs", list)?;
    out.set_item("symbolization", enriched.report)?;
    let mut problems = enriched.problems;
    problems.extend(store_problem);
    problems.extend(enriched.warnings);
    out.set_item("problems", problems)?;
    Ok(out)
}
