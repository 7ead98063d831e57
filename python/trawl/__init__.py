"""trawl: performance captures (perf.data, strace, valgrind lackey and binary
memory logs, RAPL energy, monitoring metrics) as Parquet tables, answered
with SQL, in notebooks.

    import trawl
    cap = trawl.ingest(["perf.data"], "cap")       # or trawl.open("cap")
    cap.hotspots(by="function").to_pandas()
    cap.sql("SELECT comm, count(*) FROM perf_sample GROUP BY 1").to_polars()
    cap.flamegraph()                                # displays inline as SVG

Every analysis of ``trawl sql`` (``trawl functions`` lists them) is a method
of a capture with the same parameters as keyword arguments, and gives the
same rows. Results are lazy: nothing runs until they are read, and they are
read through the Arrow C stream interface (``__arrow_c_stream__``), so
pyarrow, Polars, DuckDB and pandas get the batches without a copy.
"""

from __future__ import annotations

import os
import sys
import time
import types
from typing import Any, Iterable, Optional, Sequence, Union

from . import _trawl
from ._trawl import InputError, TrawlError, __version__, parse_duration_ns

__all__ = [
    "open",
    "ingest",
    "functions",
    "Capture",
    "Result",
    "SVG",
    "PNG",
    "Heatmap",
    "TrawlError",
    "InputError",
    "parse_duration_ns",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]


class Result:
    """The rows of a query or an analysis. Lazy: each reading runs the plan.

    Read it with ``to_arrow()``, ``to_pandas()``, ``to_polars()``, or hand
    it to anything that takes Arrow streams: ``pyarrow.table(r)``,
    ``polars.DataFrame(r)``, ``duckdb.sql("SELECT * FROM r")``.
    """

    def __init__(self, relation: "_trawl.Relation"):
        self._rel = relation

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The Arrow C stream interface (PyCapsule protocol)."""
        return self._rel.__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self) -> Any:
        return self._rel.__arrow_c_schema__()

    @property
    def columns(self) -> list:
        """Column names, in order."""
        return self._rel.columns

    def to_reader(self):
        """A ``pyarrow.RecordBatchReader`` over the batches as they are computed."""
        import pyarrow as pa

        return pa.RecordBatchReader.from_stream(self)

    def to_arrow(self):
        """All rows as a ``pyarrow.Table``."""
        with _interruptible():
            return self.to_reader().read_all()

    def to_pandas(self, **kwargs):
        """All rows as a ``pandas.DataFrame`` (through pyarrow; ``kwargs`` go to
        ``pyarrow.Table.to_pandas``)."""
        return self.to_arrow().to_pandas(**kwargs)

    def to_polars(self):
        """All rows as a ``polars.DataFrame``."""
        import polars as pl

        with _interruptible():
            return pl.DataFrame(self)

    def to_pylist(self) -> list:
        """All rows as a list of dicts."""
        return self.to_arrow().to_pylist()

    def limit(self, n: int) -> "Result":
        """The first ``n`` rows."""
        return Result(self._rel.limit(n))

    def show(self, n: int = 20) -> None:
        """Prints the first ``n`` rows as a table."""
        print(self._rel.show(n))

    def explain(self, analyze: bool = False) -> str:
        """DataFusion's plan (``analyze=True``: run it, with rows and times)."""
        return self._rel.explain(analyze)

    def __repr__(self) -> str:
        return self._rel.show(10)

    def _repr_html_(self) -> str:
        import html

        return "<pre>" + html.escape(self._rel.show(10)) + "</pre>"


class _interruptible:
    """Ctrl-C while a consumer reads a result ends the stream with an
    error naming the interruption: raised as KeyboardInterrupt."""

    def __enter__(self):
        return self

    def __exit__(self, kind, value, tb):
        if value is not None and "query interrupted (Ctrl-C)" in str(value):
            raise KeyboardInterrupt from None
        return False


class SVG:
    """An SVG figure; a notebook displays it inline. ``data`` holds the bytes."""

    def __init__(self, data: bytes):
        self.data = data

    def _repr_svg_(self) -> str:
        return self.data.decode("utf-8")

    def save(self, path: PathLike) -> None:
        """Writes the figure to ``path``."""
        _write(path, self.data)

    def __repr__(self) -> str:
        return f"<SVG figure, {len(self.data)} bytes>"


class PNG:
    """A PNG figure; a notebook displays it inline. ``data`` holds the bytes."""

    def __init__(self, data: bytes):
        self.data = data

    def _repr_png_(self) -> bytes:
        return self.data

    def save(self, path: PathLike) -> None:
        """Writes the figure to ``path``."""
        _write(path, self.data)

    def __repr__(self) -> str:
        return f"<PNG figure, {len(self.data)} bytes>"


class Heatmap(PNG):
    """A memory heatmap (a PNG or SVG figure, or the bare PNG bitmap) with
    its rows: ``rows`` lists each row's (start address, end address,
    object, symbol), top row first."""

    def __init__(self, data: bytes, rows: list, format: str = "png"):
        super().__init__(data)
        self.rows = rows
        self.format = format

    def _repr_png_(self):
        return self.data if self.format == "png" else None

    def _repr_svg_(self):
        return self.data.decode("utf-8") if self.format == "svg" else None

    def __repr__(self) -> str:
        return f"<{self.format.upper()} heatmap, {len(self.rows)} rows, {len(self.data)} bytes>"

    def rows_table(self):
        """The rows as a ``pyarrow.Table`` (row, start_address, end_address,
        bytes, object, symbol), as ``trawl render heatmap``'s CSV."""
        import pyarrow as pa

        return pa.table(
            {
                "row": list(range(len(self.rows))),
                "start_address": pa.array([r[0] for r in self.rows], pa.uint64()),
                "end_address": pa.array([r[1] for r in self.rows], pa.uint64()),
                "bytes": pa.array([r[1] - r[0] for r in self.rows], pa.uint64()),
                "object": [r[2] for r in self.rows],
                "symbol": [r[3] for r in self.rows],
            }
        )


def _write(path: PathLike, data: bytes) -> None:
    # Written whole, then renamed into place.
    path = os.fspath(path)
    tmp = path + ".trawl-tmp"
    with open_file(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


open_file = open  # the builtin, before `open` below shadows it


# Keyword arguments that take what the CLI's options take and become a
# parameter of the table function: (function parameter, conversion).
def _duration(cap: "Capture", v: Any, name: str, kwargs: dict) -> int:
    if isinstance(v, str):
        return parse_duration_ns(v)
    raise TrawlError(f"give a duration as text, e.g. '10ms' (got {v!r})")


def _at(cap: "Capture", v: Any, name: str, kwargs: dict) -> Optional[int]:
    if isinstance(v, bool):
        raise TrawlError(f"at={v!r}: 'end', '+SECONDS' or a time in ns")
    if isinstance(v, int):
        return v
    return cap._c.resolve_at(str(v))


def _time(cap: "Capture", v: Any, name: str, kwargs: dict) -> tuple:
    if not isinstance(v, str):
        raise TrawlError(f"give a time range as text, e.g. '+1..+2' (got {v!r})")
    return cap._c.time_range(v, name, [str(c) for c in _list(kwargs.get("capture"))])


_CONVERSIONS = {
    "window": ("window_ns", _duration, "window width: '10ms', '1s', ... (or window_ns)"),
    "time": (
        ("from_ns", "to_ns"),
        _time,
        "'START..END' in seconds on the capture clock (as perf script prints times) or "
        "'+START..+END' since the origin (as the timeline prints them), as the CLI's --time "
        "(or from_ns/to_ns)",
    ),
    "lead": ("lead_ns", _duration, "also this long before each range: '2s', ... (or lead_ns)"),
    "at": (
        "at_ns",
        _at,
        "'end' (default), '+SECONDS' after the first traced call, or ns (or at_ns)",
    ),
}

# Methods named as the CLI's reports name them.
_ALIASES = {"energy": "energy_by"}


class Capture:
    """One or more captures (or archives) opened for queries; made by
    :func:`open` or :func:`ingest`. Opening reads no data.

    Every analysis is a method (``hotspots``, ``callers``, ``unfreed``,
    ``timeline``, ``energy_by``, ...; see :func:`functions`) with the table
    function's parameters as keyword arguments.
    """

    def __init__(self, native: "_trawl.Capture", summary: Optional[dict] = None):
        self._c = native
        #: What :func:`ingest` did (None when opened).
        self.summary = summary

    @property
    def captures(self) -> list:
        """(name, directory) of each capture."""
        return self._c.captures

    def sql(self, query: str) -> Result:
        """Runs SQL over the captures' tables (``;``-separated statements:
        the last one's result), as ``trawl sql``."""
        return Result(self._c.sql(query))

    def tables(self) -> Result:
        """Every table and column with its type and documentation (as
        ``trawl tables``)."""
        return Result(self._c.columns())

    def call(self, function: str, *args: Any, **kwargs: Any) -> Result:
        """Calls a table function as ``SELECT * FROM function(...)`` in
        ``trawl sql``: ``args`` by position, ``kwargs`` by name."""
        return Result(self._c.call(function, list(args), list(kwargs.items())))

    def flamegraph(
        self,
        *,
        title: Optional[str] = None,
        event: Optional[str] = None,
        weight: str = "period",
        pid: Union[int, Sequence[int], None] = None,
        tid: Union[int, Sequence[int], None] = None,
        comm: Union[str, Sequence[str], None] = None,
        from_ns: Optional[int] = None,
        to_ns: Optional[int] = None,
        time: Optional[str] = None,
        inline: bool = True,
        capture: Union[str, Sequence[str], None] = None,
        process_root: bool = False,
    ) -> SVG:
        """The selected samples' stacks as a flame graph (SVG), as ``trawl
        report flamegraph``; ``folded(...)`` gives its rows. ``capture``
        keeps the samples of these captures of an archive; ``time``
        (``"START..END"``, seconds on the capture clock, or ``"+START..+END"``,
        seconds since the origin, as the CLI's ``--time``) or
        ``from_ns``/``to_ns`` (ns on that clock) a time range;
        ``process_root`` puts each process (``comm-pid``) at the root, as
        ``stackcollapse-perf.pl --pid``."""
        svg, _frames = self._c.flamegraph(
            title=title,
            event=event,
            weight=weight,
            pid=_list(pid),
            tid=_list(tid),
            comm=_list(comm),
            from_ns=from_ns,
            to_ns=to_ns,
            time=time,
            inline=inline,
            capture=_list(capture),
            process_root=process_root,
        )
        return SVG(svg)

    def export(
        self,
        path: PathLike,
        to: str,
        *,
        event: Optional[str] = None,
        weight: str = "period",
        pid: Union[int, Sequence[int], None] = None,
        tid: Union[int, Sequence[int], None] = None,
        comm: Union[str, Sequence[str], None] = None,
        from_ns: Optional[int] = None,
        to_ns: Optional[int] = None,
        time: Optional[str] = None,
        inline: bool = True,
        capture: Union[str, Sequence[str], None] = None,
        interval_ns: Optional[int] = None,
        process_root: bool = False,
        pairs: Union[str, Sequence[str], None] = None,
        rule: Optional[str] = None,
        min_duration: str = "0",
        gap: str = "0",
    ) -> int:
        """Writes the selected samples to ``path`` in a format another
        viewer opens, as ``trawl export --to TO``: ``pprof`` (``go tool
        pprof``), ``firefox`` (Firefox Profiler), ``speedscope``,
        ``folded`` or ``perfetto`` (a trace for ui.perfetto.dev: samples,
        system calls, thread states, tracepoint events and counters on
        one timeline; ``pairs`` of events ``"START,END,KEY..."`` and the
        exhaustion ranges of ``rule`` as slices). The selection is
        ``flamegraph``'s. Returns the bytes written."""
        return self._c.export(
            os.fspath(path),
            to,
            event=event,
            weight=weight,
            pid=_list(pid),
            tid=_list(tid),
            comm=_list(comm),
            from_ns=from_ns,
            to_ns=to_ns,
            time=time,
            inline=inline,
            capture=_list(capture),
            interval_ns=interval_ns,
            process_root=process_root,
            pairs=_list(pairs),
            rule=rule,
            min_duration=min_duration,
            gap=gap,
        )

    def timeline_plot(
        self,
        *,
        window: str = "100ms",
        by: str = "function",
        top: int = 10,
        event: Optional[str] = None,
        lbr: Optional[str] = None,
        rule: Optional[str] = None,
        min_duration: str = "0",
        gap: str = "0",
        format: str = "png",
    ) -> Union[PNG, SVG]:
        """Shares of the top keys per window stacked over time (the first
        capture), as ``trawl report timeline --plot``; ``rule`` shades the
        ranges where an exhaustion rule holds. ``timeline(...)`` gives the rows."""
        data = self._c.timeline_plot(
            window=window,
            by=by,
            top=top,
            event=event,
            lbr=None if lbr is None else str(lbr),
            rule=rule,
            min_duration=min_duration,
            gap=gap,
            format=format,
        )
        return SVG(data) if format == "svg" else PNG(data)

    def heatmap(
        self,
        *,
        view: str = "used",
        bytes_per_row: Optional[int] = None,
        instr_per_col: Optional[int] = None,
        addr_range: Optional[tuple] = None,
        ordinals: Optional[tuple] = None,
        scale: Optional[int] = None,
        source: Optional[int] = None,
        format: str = "png",
        bare: bool = False,
    ) -> Heatmap:
        """A memory log's accesses as a heatmap figure (Mibu et al., memory
        access analysis for memory saving, Fig. 3-4; as ``trawl render
        heatmap``): x instruction order, y address
        with the rows' mappings and symbols; cyan store only, yellow load
        only, white both, black none (Table 1); a title and a legend.
        ``format``: ``png`` or ``svg``; ``bare``: only the cells, one pixel
        (times ``scale``) each, as PNG."""
        data, rows = self._c.heatmap(
            view=view,
            bytes_per_row=bytes_per_row,
            instr_per_col=instr_per_col,
            addr_range=addr_range,
            ordinals=ordinals,
            scale=scale,
            source=source,
            format=format,
            bare=bare,
        )
        return Heatmap(data, rows, "png" if bare else format)

    def __repr__(self) -> str:
        return repr(self._c)


def _list(v: Any) -> list:
    if v is None:
        return []
    if isinstance(v, (str, int)):
        return [v]
    return list(v)


def _targets(target: Any) -> tuple:
    return target if isinstance(target, tuple) else (target,)


class _Analysis:
    """A method of :class:`Capture` calling the table function ``name`` with
    keyword arguments. Its signature (for ``help()`` and completion) is built
    when first asked for: ``inspect`` costs the ``trawl`` command, which
    imports this package, several milliseconds at every start."""

    def __init__(self, name: str, doc: str, positional: int, params: list):
        self.__name__ = name
        self.__qualname__ = f"Capture.{name}"
        self._positional = positional
        self._params = params
        self._names = [p[0] for p in params]
        self._conversions = {
            k: c
            for k, c in _CONVERSIONS.items()
            if all(t in self._names for t in _targets(c[0])) and k not in self._names
        }
        lines = [doc, "", "Parameters (as in ``trawl sql``'s " + name + "(...)):"]
        lines += [f"    {p} ({kind}): {pdoc}" for p, kind, pdoc in params]
        lines += [f"    {k}: {cdoc}" for k, (_, _, cdoc) in self._conversions.items()]
        self.__doc__ = "\n".join(lines)

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        return self if obj is None else types.MethodType(self, obj)

    def __call__(self, cap: Capture, *args: Any, **kwargs: Any) -> Result:
        name, names, positional = self.__name__, self._names, self._positional
        if len(args) > positional:
            raise TypeError(
                f"{name}() takes {positional} positional argument(s); give the rest by name"
            )
        given = dict(zip(names, args))
        for k, v in kwargs.items():
            if k in self._conversions:
                target, convert, _ = self._conversions[k]
                targets = _targets(target)
                if any(t in kwargs for t in targets):
                    raise TypeError(f"{name}(): give {k} or {'/'.join(targets)}, not both")
                v = convert(cap, v, name, kwargs)
                if isinstance(target, tuple):  # one value per target; None: not given
                    pairs = [(t, x) for t, x in zip(target, v) if x is not None]
                else:
                    pairs = [(target, v)]
            elif k not in names:
                raise TypeError(
                    f"{name}() has no parameter {k!r}; it takes {', '.join(names) or 'none'}"
                )
            else:
                pairs = [(k, v)]
            for k, v in pairs:
                if k in given:
                    raise TypeError(f"{name}(): {k} given twice")
                given[k] = v
        # Parameters that go by position go by position (padded with None,
        # "not given", up to the last one given); the rest by name.
        lead = names[:positional]
        last = max([i + 1 for i, p in enumerate(lead) if given.get(p) is not None], default=0)
        args = [given.pop(p, None) for p in lead][:last]
        return Result(cap._c.call(name, args, [(k, v) for k, v in given.items()]))

    @property
    def __signature__(self) -> Any:
        import inspect

        P = inspect.Parameter
        sig = [P("self", P.POSITIONAL_ONLY)]
        for i, p in enumerate(self._names):
            how = P.POSITIONAL_OR_KEYWORD if i < self._positional else P.KEYWORD_ONLY
            sig.append(P(p, how, default=None))
        sig += [P(k, P.KEYWORD_ONLY, default=None) for k in self._conversions]
        return inspect.Signature(sig)

    def __repr__(self) -> str:
        return f"<analysis {self.__qualname__}>"


_SPECS = _trawl.functions()
for _name, _doc, _positional, _params in _SPECS:
    setattr(Capture, _name, _Analysis(_name, _doc, _positional, _params))
# `exhaustion(rule, min_s, gap_s)` is a Rust table function without a spec.
setattr(
    Capture,
    "exhaustion",
    _Analysis(
        "exhaustion",
        "Ranges where an exhaustion rule over the metrics holds (Morita et al., H/W resource exhaustion analysis, stage A), per capture.",
        3,
        [
            ("rule", "text", "the rule, e.g. 'cpu_user + cpu_sys > 90 and runq > 2'"),
            ("min_s", "float", "drop ranges shorter than this (s)"),
            ("gap_s", "float", "merge ranges separated by at most this (s)"),
        ],
    ),
)
for _alias, _target in _ALIASES.items():
    setattr(Capture, _alias, getattr(Capture, _target))


def functions():
    """Every analysis (table function) with its parameters and what it
    answers, as ``trawl functions`` (a ``pyarrow.Table``)."""
    import pyarrow as pa

    rows = []
    for name, doc, positional, params in _SPECS:
        rows.append((name, None, None, None, doc))
        for i, (p, kind, pdoc) in enumerate(params):
            how = f"position {i + 1}" if i < positional else f"'{p}', value"
            rows.append((name, p, how, kind, pdoc))
    cols = list(zip(*rows))
    return pa.table(
        {
            "function": list(cols[0]),
            "parameter": list(cols[1]),
            "given_as": list(cols[2]),
            "type": list(cols[3]),
            "description": list(cols[4]),
        }
    )


def open(paths: Union[PathLike, Iterable[PathLike]], *, t0: str = "first") -> Capture:  # noqa: A001
    """Opens a capture directory, several, or a directory of captures (an
    archive); each may be an object store URL (``s3://bucket/archive``,
    ``gs://``, ``az://``; settings from ``AWS_*``/``~/.aws``, ``GOOGLE_*``,
    ``AZURE_*``, as the ``trawl`` command reads them). ``t0`` is the origin of ``t_ns`` and of the timelines
    (``first``, ``exec``, a UTC time, ...; as ``trawl sql --t0``)."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    return Capture(_trawl.open([os.fspath(p) for p in paths], t0=t0))


def ingest(
    inputs: Union[PathLike, Iterable[PathLike]],
    output: PathLike,
    *,
    progress: Any = True,
    quiet: bool = False,
    remap: Optional[dict] = None,
    mem_ranges: Union[str, Sequence[str], None] = None,
    debug_dirs: Union[PathLike, Sequence[PathLike], None] = None,
    **options: Any,
) -> Capture:
    """Ingests capture files into the capture directory ``output`` (as
    ``trawl ingest``) and opens it.

    Options, as the CLI's: ``strict`` (fail at the first problem: an
    :class:`InputError` with its position), ``tz`` (zone of local metric
    times), ``symbolize`` / ``unwind`` (default True), ``flat`` (also write
    ``perf_sample_symbolized.parquet`` for readers without trawl; sessions
    have it as a view either way), ``mem_kinds``
    ('ILSM'), ``mem_ranges`` ('LO-HI' or 'LO+LEN'), ``fetch_rows``,
    ``page_size`` (bytes or '64k'), ``debug_dirs``, ``symfs``, ``remap``
    ({recorded prefix: local directory}), ``kallsyms``, ``debuginfod`` (a
    server URL or a list; default ``$DEBUGINFOD_URLS``, ``[]`` for none),
    ``symbol_store`` (the directory where what is learnt of each binary is
    kept for later ingests; default ``$XDG_CACHE_HOME/trawl/symbols``),
    ``no_symbol_store`` (keep nothing), ``max_expansion`` (how many times its compressed size a gzip/zstd input
    may expand; 0: no limit).

    ``progress``: True draws a progress bar (tqdm when installed, else a
    line on stderr), False none, or a callable ``f(done_bytes, total_bytes)``.
    The summary (formats, rows, diagnostics) is printed unless ``quiet`` and
    kept as the capture's ``summary``.
    """
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if isinstance(mem_ranges, str):
        mem_ranges = [mem_ranges]
    if isinstance(debug_dirs, (str, os.PathLike)):
        debug_dirs = [debug_dirs]
    if remap:
        options["remap"] = [(str(k), os.fspath(v)) for k, v in remap.items()]
    if mem_ranges:
        options["mem_ranges"] = list(mem_ranges)
    if debug_dirs:
        options["debug_dirs"] = [os.fspath(d) for d in debug_dirs]
    if isinstance(options.get("debuginfod"), str):
        options["debuginfod"] = [options["debuginfod"]]
    bar = _Progress() if progress is True else None
    callback = bar if bar is not None else (progress or None)
    try:
        summary = _trawl.ingest(
            [os.fspath(p) for p in inputs], os.fspath(output), progress=callback, **options
        )
    except BaseException:
        if bar is not None:
            bar.close(finished=False)
        raise
    if bar is not None:
        bar.close(finished=True)
    if not quiet:
        for line in _summary_lines(summary):
            print(line, file=sys.stderr)
    return Capture(_trawl.open([summary["output"]]), summary)


def _summary_lines(s: dict) -> list:
    out = []
    for i in s["inputs"]:
        out.append(
            f"{i['path']}: {i['format']} ({i['bytes']} bytes): {i['records']} records, "
            f"{i['rows']} rows, {len(i['diagnostics'])} diagnostics"
        )
        out.extend("  " + d for d in i["diagnostics"][:5])
        if len(i["diagnostics"]) > 5:
            out.append(f"  ... {len(i['diagnostics']) - 5} more in the `diagnostic` table")
    out.extend(s["symbolization"])
    out.extend(s["problems"])
    out.append(f"wrote {s['output']}")
    return out


class _Progress:
    """Input bytes read: a tqdm bar when tqdm is installed (it draws a
    widget in notebooks), else a line on stderr at most once a second."""

    def __init__(self) -> None:
        self._bar = None
        self._last = 0.0
        self._shown = False
        self._total = 0
        try:
            from tqdm.auto import tqdm

            self._tqdm = tqdm
        except ImportError:
            self._tqdm = None

    def __call__(self, done: int, total: int) -> None:
        if self._tqdm is not None:
            if self._bar is None:
                self._bar = self._tqdm(
                    total=total, unit="B", unit_scale=True, desc="ingest", leave=False
                )
            self._bar.update(done - self._bar.n)
            return
        self._total = total
        now = time.monotonic()
        if now - self._last >= 1.0 and total > 0 and done < total:
            self._last = now
            self._shown = True
            print(
                f"\ringest: {100 * done // total}% ({done:,} of {total:,} bytes)",
                end="",
                file=sys.stderr,
                flush=True,
            )

    def close(self, finished: bool) -> None:
        """Ends the bar; a finished ingest's line says 100 %."""
        if self._bar is not None:
            self._bar.close()
        elif self._shown and finished:
            print(f"\ringest: 100% ({self._total:,} bytes)", file=sys.stderr)
        elif self._shown:
            print(file=sys.stderr)
