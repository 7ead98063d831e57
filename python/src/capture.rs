//! Captures opened for queries: SQL, the analyses' table functions called
//! with Python values, the column documentation and the figures.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyList, PyString, PyTuple};
use trawl_query::choice::Choice;
use trawl_query::datafusion::prelude::lit;
use trawl_query::datafusion::scalar::ScalarValue;
use trawl_query::sample::{Picked, SampleFilter, StackOpts, Weight};
use trawl_query::Session;

use crate::relation::Relation;
use crate::{wait, TrawlError};

/// One or more captures (or archives of captures) opened for queries.
/// Opening reads no data.
#[pyclass(module = "trawl._trawl", frozen)]
pub struct Capture {
    s: Arc<Session>,
    t0: String,
}

/// Opens capture directories (or directories of captures, such as an
/// archive); `t0` places times on one axis (`first`, `exec`, a UTC
/// instant, ...: as `trawl sql --t0`).
#[pyfunction]
#[pyo3(signature = (paths, *, t0 = "first".to_string()))]
pub fn open(py: Python<'_>, paths: Vec<PathBuf>, t0: String) -> PyResult<Capture> {
    let spec = t0.clone();
    let s = wait(py, async move {
        let origin = trawl_query::time::Origin::parse(&spec)?;
        Ok(Session::open_at(&paths, &origin).await?)
    })?;
    // `annotate` decodes the functions it is asked for.
    s.set_code_source(trawl_enrich::instructions::standard_source());
    Ok(Capture { s: Arc::new(s), t0 })
}

/// A Python value as a SQL value: None is "not given"; a list or tuple is
/// a list (of one type).
fn scalar(o: &Bound<'_, PyAny>) -> PyResult<Option<ScalarValue>> {
    if o.is_none() {
        return Ok(None);
    }
    if o.is_instance_of::<PyBool>() {
        return Ok(Some(ScalarValue::Boolean(Some(o.extract::<bool>()?))));
    }
    if o.is_instance_of::<PyString>() {
        return Ok(Some(ScalarValue::Utf8(Some(o.extract::<String>()?))));
    }
    if o.is_instance_of::<PyInt>() {
        return Ok(Some(ScalarValue::Int64(Some(o.extract::<i64>()?))));
    }
    if o.is_instance_of::<PyFloat>() {
        return Ok(Some(ScalarValue::Float64(Some(o.extract::<f64>()?))));
    }
    if o.is_instance_of::<PyList>() || o.is_instance_of::<PyTuple>() {
        let mut items = Vec::new();
        for x in o.try_iter()? {
            if let Some(v) = scalar(&x?)? {
                if matches!(v, ScalarValue::List(_)) {
                    return Err(TrawlError::new_err("lists of lists are not arguments"));
                }
                items.push(v);
            }
        }
        let Some(first) = items.first() else {
            return Ok(None);
        };
        let ty = first.data_type();
        if items.iter().any(|v| v.data_type() != ty) {
            return Err(TrawlError::new_err(format!(
                "a list argument's values must have one type: {}",
                o.repr()?
            )));
        }
        return Ok(Some(ScalarValue::List(ScalarValue::new_list_nullable(
            &items, &ty,
        ))));
    }
    // numpy scalars and other numbers.
    if let Ok(v) = o.extract::<i64>() {
        return Ok(Some(ScalarValue::Int64(Some(v))));
    }
    if let Ok(v) = o.extract::<f64>() {
        return Ok(Some(ScalarValue::Float64(Some(v))));
    }
    Err(TrawlError::new_err(format!(
        "cannot pass {} to SQL (give a str, int, float, bool or a list of them)",
        o.repr()?
    )))
}

fn bytes<'py>(py: Python<'py>, b: &[u8]) -> Bound<'py, PyBytes> {
    PyBytes::new(py, b)
}

/// The sample selection of `flamegraph` and `export`, as their keyword
/// arguments give it (as the CLI's filter options).
struct Samples {
    event: Option<String>,
    weight: String,
    pid: Vec<i32>,
    tid: Vec<i32>,
    comm: Vec<String>,
    from_ns: Option<i64>,
    to_ns: Option<i64>,
    /// `START..END` in seconds on the capture clock or `+START..+END`
    /// since the origin, as the CLI's `--time`.
    time: Option<String>,
    capture: Vec<String>,
    inline: bool,
    /// Each process a root frame `comm-pid` (flame graphs, folded stacks).
    process_root: bool,
}

impl Samples {
    /// The filter, the event (by default the one with most samples) and
    /// the weight, checked against the session's captures.
    async fn resolve(self, s: &Session) -> anyhow::Result<Picked> {
        let (filter, weight, opts) = self.resolve_filter(s).await?;
        Ok(Picked::resolve(s, filter, weight, opts).await?)
    }

    /// The filter, weight and stack options, unchecked.
    async fn resolve_filter(
        self,
        s: &Session,
    ) -> anyhow::Result<(SampleFilter, Weight, StackOpts)> {
        let (from_ns, to_ns) = match &self.time {
            Some(_) if self.from_ns.is_some() || self.to_ns.is_some() => {
                anyhow::bail!("give time= or from_ns=/to_ns=, not both")
            }
            Some(t) => {
                let r = trawl_query::time::parse_seconds_range_of("time=", t)?;
                trawl_query::time::on_clock(s, r, &self.capture, trawl_query::time::RowsOf::Samples)
                    .await?
            }
            None => (self.from_ns, self.to_ns),
        };
        let filter = SampleFilter {
            event: self.event,
            pids: self.pid,
            tids: self.tid,
            comms: self.comm,
            time_from_ns: from_ns,
            time_to_ns: to_ns,
            captures: self.capture,
        };
        let weight = Weight::parse(&self.weight)?;
        let opts = StackOpts {
            inline: self.inline,
            process_root: self.process_root,
        };
        Ok((filter, weight, opts))
    }

    /// [`Samples::resolve`], or a selection of none when the captures hold
    /// no samples (a Perfetto trace of strace dumps).
    async fn resolve_or_none(self, s: &Session) -> anyhow::Result<Picked> {
        let (filter, weight, opts) = self.resolve_filter(s).await?;
        Ok(Picked::resolve_or_none(s, filter, weight, opts).await?)
    }
}

#[pymethods]
impl Capture {
    /// Runs SQL (`;`-separated statements: the last one's result).
    fn sql(&self, py: Python<'_>, query: String) -> PyResult<Relation> {
        let s = self.s.clone();
        let df = wait(py, async move {
            s.run_script(&query)
                .await?
                .ok_or_else(|| anyhow::anyhow!("no SQL statement given"))
        })?;
        Ok(Relation::new(df, self.s.clone()))
    }

    /// Calls the table function `name` as `trawl sql`'s
    /// `SELECT * FROM name(args..., 'key', value, ...)` would: `args` by
    /// position, then `kwargs` as name/value pairs. Values are bound, never
    /// written into SQL text.
    fn call(
        &self,
        py: Python<'_>,
        name: String,
        args: Vec<Bound<'_, PyAny>>,
        kwargs: Vec<(String, Bound<'_, PyAny>)>,
    ) -> PyResult<Relation> {
        let mut exprs = Vec::new();
        for a in &args {
            exprs.push(lit(scalar(a)?.unwrap_or(ScalarValue::Null)));
        }
        for (k, v) in &kwargs {
            if let Some(v) = scalar(v)? {
                exprs.push(lit(k.as_str()));
                exprs.push(lit(v));
            }
        }
        let s = self.s.clone();
        let df = wait(py, async move {
            let f = s.ctx.table_function(&name)?;
            let state = s.ctx.state();
            let provider = f.create_table_provider_with_args(
                trawl_query::datafusion::catalog::TableFunctionArgs::new(&exprs, &state),
            )?;
            Ok(s.ctx.read_table(provider)?)
        })?;
        Ok(Relation::new(df, self.s.clone()))
    }

    /// Every table and column with its type and documentation.
    fn columns(&self, py: Python<'_>) -> PyResult<Relation> {
        let s = self.s.clone();
        let df = wait(py, async move {
            let batches = s.columns().await?;
            Ok(s.ctx.read_batches(batches)?)
        })?;
        Ok(Relation::new(df, self.s.clone()))
    }

    /// The captures: (name, directory) each.
    #[getter]
    fn captures(&self) -> Vec<(String, PathBuf)> {
        self.s
            .captures()
            .iter()
            .map(|c| (c.name.clone(), c.dir.clone()))
            .collect()
    }

    /// The time `at` names for `unfreed`/`live_regions` (`end`, `+SECONDS`
    /// after the first traced call, or ns on `syscall.time_ns`'s clock),
    /// in ns (None: each process's end).
    fn resolve_at(&self, py: Python<'_>, at: String) -> PyResult<Option<i64>> {
        let s = self.s.clone();
        wait(py, async move {
            let at = trawl_query::regions::At::parse(&at)?;
            Ok(trawl_query::regions::resolve_at(&s, Some(at)).await?)
        })
    }

    /// A time range as the CLI's `--time` takes it (`START..END` on the
    /// capture clock, `+START..+END` since the origin) as the `from_ns` and
    /// `to_ns` of the table function `function` over `capture` (all when
    /// empty): on the clock of the perf samples, of the traced calls
    /// (`io_bytes`), or since the origin (`cause_*`: one capture for
    /// `START..END`).
    fn time_range(
        &self,
        py: Python<'_>,
        text: String,
        function: String,
        capture: Vec<String>,
    ) -> PyResult<(Option<i64>, Option<i64>)> {
        use trawl_query::time::RowsOf;
        let s = self.s.clone();
        wait(py, async move {
            let r = trawl_query::time::parse_seconds_range_of("time=", &text)?;
            if let Some(resource) = function.strip_prefix("cause_") {
                let rows = if resource == "cpu" {
                    RowsOf::Samples
                } else {
                    RowsOf::Calls
                };
                let names: Vec<String> = if capture.is_empty() {
                    s.captures().iter().map(|c| c.name.clone()).collect()
                } else {
                    capture
                };
                return match names.as_slice() {
                    [one] => Ok(trawl_query::time::since_origin(&s, r, one, rows, "time=").await?),
                    _ if r.since_origin => Ok((r.from_ns, r.to_ns)),
                    _ => anyhow::bail!(
                        "time={text:?}: {function} takes one range for every capture: write it since the origin (+START..+END)"
                    ),
                };
            }
            let rows = if function == "io_bytes" {
                RowsOf::Calls
            } else {
                RowsOf::Samples
            };
            Ok(trawl_query::time::on_clock(&s, r, &capture, rows).await?)
        })
    }

    /// The flame graph of the selected samples, as SVG, and how many frames
    /// were wide enough to draw (as `trawl report flamegraph`).
    #[pyo3(signature = (*, title = None, event = None, weight = "period".to_string(), pid = Vec::new(), tid = Vec::new(), comm = Vec::new(), from_ns = None, to_ns = None, time = None, inline = true, capture = Vec::new(), process_root = false))]
    #[allow(clippy::too_many_arguments)]
    fn flamegraph<'py>(
        &self,
        py: Python<'py>,
        title: Option<String>,
        event: Option<String>,
        weight: String,
        pid: Vec<i32>,
        tid: Vec<i32>,
        comm: Vec<String>,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
        time: Option<String>,
        inline: bool,
        capture: Vec<String>,
        process_root: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, usize)> {
        let s = self.s.clone();
        let samples = Samples {
            event,
            weight,
            pid,
            tid,
            comm,
            from_ns,
            to_ns,
            time,
            capture,
            inline,
            process_root,
        };
        let (svg, frames) = wait(py, async move {
            let picked = samples.resolve(&s).await?;
            let sel = picked.selection();
            let tree = trawl_query::flame::frame_tree(&s, &sel).await?;
            let title = title.unwrap_or_else(|| trawl_plot::flame_title(&s, &picked.event));
            trawl_plot::flame_svg(&tree, &title, &trawl_plot::count_name(&picked.weight))
        })?;
        Ok((bytes(py, &svg), frames))
    }

    /// The selected samples written to `path` (atomically) as a file
    /// another viewer opens; returns the bytes written (as `trawl export
    /// --to FORMAT -o PATH`): `pprof` (gzip-compressed
    /// profile.proto), `firefox` (Firefox Profiler, JSON), `speedscope`
    /// (JSON), `folded` or `perfetto` (a Perfetto trace: samples, calls,
    /// thread states, events, counters; `pairs` of events
    /// `"START,END,KEY..."` and a `rule`'s exhaustion ranges as slices).
    #[pyo3(signature = (path, to, *, event = None, weight = "period".to_string(), pid = Vec::new(), tid = Vec::new(), comm = Vec::new(), from_ns = None, to_ns = None, time = None, inline = true, capture = Vec::new(), interval_ns = None, process_root = false, pairs = Vec::new(), rule = None, min_duration = "0".to_string(), gap = "0".to_string()))]
    #[allow(clippy::too_many_arguments)]
    fn export(
        &self,
        py: Python<'_>,
        path: std::path::PathBuf,
        to: String,
        event: Option<String>,
        weight: String,
        pid: Vec<i32>,
        tid: Vec<i32>,
        comm: Vec<String>,
        from_ns: Option<i64>,
        to_ns: Option<i64>,
        time: Option<String>,
        inline: bool,
        capture: Vec<String>,
        interval_ns: Option<u64>,
        process_root: bool,
        pairs: Vec<String>,
        rule: Option<String>,
        min_duration: String,
        gap: String,
    ) -> PyResult<u64> {
        let s = self.s.clone();
        let samples = Samples {
            event,
            weight,
            pid,
            tid,
            comm,
            from_ns,
            to_ns,
            time,
            capture,
            inline,
            process_root,
        };
        let out = wait(py, async move {
            let Some(format) = trawl_export::Format::parse(&to) else {
                anyhow::bail!("to={to:?}: pprof, firefox, speedscope, folded or perfetto");
            };
            let picked = if format == trawl_export::Format::Perfetto {
                samples.resolve_or_none(&s).await?
            } else {
                samples.resolve(&s).await?
            };
            let sel = picked.selection();
            let opts = trawl_export::ExportOpts {
                interval_ns,
                pairs,
                rule: rule.map(|r| (r, min_duration, gap)),
            };
            trawl_export::export_file(&s, &sel, format, &opts, &path).await
        })?;
        Ok(out)
    }

    /// The shares of the top keys per window, stacked over time, as PNG or
    /// SVG (as `trawl report timeline --plot`; the first capture), with the
    /// ranges where `rule` holds shaded.
    #[pyo3(signature = (*, window = "100ms".to_string(), by = "function".to_string(), top = 10, event = None, lbr = None, rule = None, min_duration = "0".to_string(), gap = "0".to_string(), format = "png".to_string()))]
    #[allow(clippy::too_many_arguments)]
    fn timeline_plot<'py>(
        &self,
        py: Python<'py>,
        window: String,
        by: String,
        top: usize,
        event: Option<String>,
        lbr: Option<String>,
        rule: Option<String>,
        min_duration: String,
        gap: String,
        format: String,
    ) -> PyResult<Bound<'py, PyBytes>> {
        use trawl_query::timeline::TimelineKey;
        let s = self.s.clone();
        let t0 = self.t0.clone();
        let img = wait(py, async move {
            let image = trawl_plot::Image::named(&format)?;
            let key = TimelineKey::parse(&by).ok_or_else(|| {
                let names: Vec<&str> = TimelineKey::ALL.iter().map(|k| k.name()).collect();
                anyhow::anyhow!("by={by:?}: one of {}", names.join(", "))
            })?;
            let ask = trawl_plot::TimelineAsk {
                window: &window,
                by: key,
                top,
                event: event.as_deref(),
                lbr: lbr.as_deref(),
                t0: &t0,
                only: Default::default(),
            };
            let rows = trawl_plot::timeline_rows(&s, &ask).await?;
            let rule = rule
                .map(|r| trawl_query::ranges::rule_with(&r, &min_duration, &gap))
                .transpose()?;
            trawl_plot::timeline_plot(&s, image, &ask, &rows, rule).await
        })?;
        Ok(bytes(py, &img))
    }

    /// A memory log's accesses as a heatmap figure, PNG or SVG, or the
    /// bare PNG bitmap (as `trawl render heatmap`), and each row's address
    /// range, object and symbol.
    #[pyo3(signature = (*, view = "used".to_string(), bytes_per_row = None, instr_per_col = None, addr_range = None, ordinals = None, scale = None, source = None, format = "png".to_string(), bare = false))]
    #[allow(clippy::too_many_arguments, clippy::type_complexity)]
    fn heatmap<'py>(
        &self,
        py: Python<'py>,
        view: String,
        bytes_per_row: Option<u64>,
        instr_per_col: Option<u64>,
        addr_range: Option<(u64, u64)>,
        ordinals: Option<(i64, i64)>,
        scale: Option<u32>,
        source: Option<i32>,
        format: String,
        bare: bool,
    ) -> PyResult<(Bound<'py, PyBytes>, Vec<(u64, u64, String, String)>)> {
        use trawl_query::memlog::{HeatOpts, View};
        let s = self.s.clone();
        let (png, rows) = wait(py, async move {
            let view =
                View::parse(&view).ok_or_else(|| anyhow::anyhow!("view={view:?}: used or full"))?;
            let o = HeatOpts {
                view,
                bytes_per_row,
                instr_per_col,
                addr: addr_range,
                ordinals,
                source_id: source,
                ..Default::default()
            };
            // A bare heatmap is a PNG whatever `format` says.
            let image = match bare {
                true => trawl_plot::Image::Png,
                false => trawl_plot::Image::named(&format)?,
            };
            let (png, hm, labels) = trawl_plot::heatmap_image(&s, &o, image, bare, scale).await?;
            let rows = hm
                .rows
                .iter()
                .zip(labels)
                .map(|(&(lo, hi), (obj, sym))| (lo, hi, obj, sym))
                .collect::<Vec<_>>();
            Ok((png, rows))
        })?;
        Ok((bytes(py, &png), rows))
    }

    fn __repr__(&self) -> String {
        let names: Vec<String> = self.s.captures().iter().map(|c| c.name.clone()).collect();
        format!("<trawl captures: {}>", names.join(", "))
    }
}
