"""The Python package against the CLI on the bundled fixtures.

Every analysis method gives the rows `trawl sql` gives for the same table
function call on the same capture (the CLI binary is the reference: it is
run here, on the captures this package ingested), and a few reports are
compared with `trawl report`. Figures, errors, progress and the Arrow
stream interface are checked by content.

Environment: TRAWL_BIN (default: the `trawl` command installed with this
package, else target/release/trawl), RAPL_SIM (default
target/release/examples/rapl_sim: the energy simulator's inputs).
"""

import math
import signal
import threading
import time
import os
import subprocess
import sys
import sysconfig

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import trawl

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# The console script `pip install` put beside this interpreter's scripts.
INSTALLED = os.path.join(sysconfig.get_path("scripts"), "trawl")
TRAWL = os.environ.get(
    "TRAWL_BIN", INSTALLED if os.path.exists(INSTALLED) else os.path.join(ROOT, "target", "release", "trawl")
)
RAPL_SIM = os.environ.get("RAPL_SIM", os.path.join(ROOT, "target", "release", "examples", "rapl_sim"))


def fx(*p):
    return os.path.join(ROOT, "fixtures", *p)


@pytest.fixture(scope="session")
def caps(tmp_path_factory):
    """One capture of each kind, ingested by this package."""
    tmp = tmp_path_factory.mktemp("caps")
    sim = tmp / "sim"
    subprocess.run([RAPL_SIM, str(sim), fx("perf", "bin", "lbr"), "2"], check=True, capture_output=True)
    bin_dirs = [fx("perf", "bin")]
    spec = {
        "perf": ([fx("perf", "hot-fp.data")], dict(debug_dirs=bin_dirs)),
        "offcpu": ([fx("perf", "offcpu.data")], dict(debug_dirs=bin_dirs)),
        "lbr": ([fx("perf", "lbr-fig8.data")], dict(debug_dirs=bin_dirs)),
        "phases": (
            [fx("phases", "run1", f) for f in ("perf.data", "app.strace", "vmstat.log", "sar.csv")],
            dict(debug_dirs=[fx("phases", "bin")]),
        ),
        "memlog": (
            [fx("memlog", "pages.lackey.zst"), fx("memlog", "pages.maps")],
            dict(debug_dirs=[fx("memlog", "bin")]),
        ),
        "energy": ([sim / "sim.data", sim / "sim-rapl.csv"], dict(debug_dirs=bin_dirs)),
        "tp": ([fx("perf", "tp-z.data")], dict(debug_dirs=bin_dirs)),
    }
    out = {}
    for kind, (inputs, opts) in spec.items():
        out[kind] = trawl.ingest(inputs, tmp / kind, progress=False, quiet=True, **opts)
    return out


def cli(*args):
    return subprocess.run([TRAWL, *map(str, args)], check=True, capture_output=True, text=True)


def cli_rows(tmp_path, *args):
    """A CLI command's result as rows, through its Parquet output."""
    out = tmp_path / "cli.parquet"
    cli(*args, "--format", "parquet", "-o", out)
    return pq.read_table(out).to_pylist()


def sql_literal(v):
    # Builds the reference query's text in the test: the package binds
    # values, the CLI gets them written out.
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return "'" + str(v).replace("'", "''") + "'"


def sorted_rows(rows):
    key = lambda r: tuple((v is None, str(v)) for v in r.values())
    return sorted(rows, key=key)


def assert_same_rows(got, want, what):
    got, want = sorted_rows(got), sorted_rows(want)
    assert len(got) == len(want), f"{what}: {len(got)} rows, CLI {len(want)}"
    assert len(got) > 0, f"{what}: no rows (the case checks nothing)"
    for g, w in zip(got, want):
        assert list(g) == list(w), f"{what}: columns {list(g)} vs {list(w)}"
        for k in g:
            a, b = g[k], w[k]
            if isinstance(a, float) and isinstance(b, float):
                assert math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9) or (
                    math.isnan(a) and math.isnan(b)
                ), f"{what}: {k} {a} vs {b}"
            else:
                assert a == b, f"{what}: {k} {a!r} vs {b!r}"


CPU_RULE = "cpu_user+cpu_sys > 90 and runq > 2"

# (capture, method, method keyword arguments, the same call in SQL).
CASES = [
    ("perf", "stack_weight", {}, "stack_weight()"),
    ("perf", "stack_weight", {"weight": "samples", "comm": ["hot"]}, "stack_weight('weight', 'samples', 'comm', 'hot')"),
    ("perf", "hotspot_key", {"by": "function"}, "hotspot_key('function')"),
    ("perf", "hotspot_key", {"by": "line", "inline": False}, "hotspot_key('line', 'inline', false)"),
    ("perf", "hotspots", {"by": "function"}, "hotspots('function')"),
    ("perf", "hotspots", {"by": "srcline", "inline": False}, "hotspots('srcline', 'inline', false)"),
    ("perf", "callers", {"function": "spin_a"}, "callers('spin_a')"),
    ("perf", "callees", {"function": "main"}, "callees('main')"),
    ("perf", "folded", {}, "folded()"),
    ("perf", "selected_sample", {"weight": "samples", "comm": ["hot"]}, "selected_sample('weight', 'samples', 'comm', 'hot')"),
    # One capture on both sides: every key is the base's (two runs: below).
    ("perf", "diff", {"by": "module", "base": "perf", "new": "perf"}, "diff('module', 'base', 'perf', 'new', 'perf')"),
    ("perf", "timeline", {"window": "10ms", "top": 3}, "timeline(10000000, 'top', 3)"),
    ("offcpu", "offcpu", {"by": "function"}, "offcpu('function')"),
    ("offcpu", "offcpu", {"by": "thread", "state": ["S", "R"]}, "offcpu('thread', 'state', 'S', 'state', 'R')"),
    ("offcpu", "thread_timeline", {"window": "100ms"}, "thread_timeline(100000000)"),
    ("perf", "annotate", {"function": "spin_a"}, "annotate('spin_a')"),
    ("lbr", "lbr_samples", {"method": 3}, "lbr_samples('3')"),
    ("lbr", "lbr_functions", {"method": 1}, "lbr_functions('1')"),
    ("lbr", "lbr_summary", {"method": 2}, "lbr_summary('2')"),
    ("lbr", "lbr_points", {"method": "cycles", "ghz": 2.0}, "lbr_points('cycles', 2.0)"),
    ("lbr", "lbr_sequence", {}, "lbr_sequence()"),
    ("lbr", "lbr_timeline", {"window": "1ms", "method": 3}, "lbr_timeline(1000000, '3')"),
    ("phases", "live_regions", {}, "live_regions()"),
    ("phases", "unfreed", {"at": "end"}, "unfreed()"),
    ("phases", "unfreed", {"at": "+9"}, None),  # '+9' → at_ns: checked below
    ("phases", "io_bytes", {"lead": "1s"}, "io_bytes('lead_ns', 1000000000)"),
    ("phases", "exhaustion", {"rule": CPU_RULE}, f"exhaustion('{CPU_RULE}')"),
    ("phases", "cause_cpu", {"rule": CPU_RULE}, f"cause_cpu('{CPU_RULE}')"),
    ("phases", "cause_memory", {"rule": "memused_pct > 5", "at": "max"}, "cause_memory('memused_pct > 5', 'at', 'max')"),
    ("phases", "cause_io", {"rule": "blocks_out > 100000", "lead_ns": 10**9}, "cause_io('blocks_out > 100000', 'lead_ns', 1000000000)"),
    ("memlog", "pages", {}, "pages()"),
    ("memlog", "pages", {"page_size": 8192}, "pages(8192)"),
    ("memlog", "page_reuse_pairs", {}, "page_reuse_pairs()"),
    ("memlog", "page_reuse", {}, "page_reuse()"),
    ("memlog", "page_reuse_plan", {}, "page_reuse_plan()"),
    ("memlog", "mem_symbols", {"kind": "function"}, "mem_symbols('kind', 'function')"),
    ("energy", "energy", {"by": "function"}, "energy_by('function')"),
    ("energy", "energy_by", {"by": ["process", "cpu"]}, "energy_by(['process', 'cpu'])"),
    ("energy", "power_model", {}, "power_model()"),
    ("energy", "power_intervals", {}, "power_intervals()"),
    ("energy", "power_samples", {}, "power_samples()"),
    ("energy", "power_data", {}, "power_data()"),
    ("energy", "sample_rapl", {}, "sample_rapl()"),
    ("tp", "tracepoint_events", {}, "tracepoint_events()"),
    ("tp", "tracepoint", {"event": "probe_tp:checksum"}, "tracepoint('probe_tp:checksum')"),
    ("tp", "tracepoint", {"event": "sched:sched_wakeup", "comm": ["tp"]}, "tracepoint('sched:sched_wakeup', 'comm', 'tp')"),
    (
        "tp",
        "tracepoint_pairs",
        {"start": "block:block_rq_issue", "end": "block:block_rq_complete", "key": ["dev", "sector"]},
        "tracepoint_pairs('block:block_rq_issue', 'block:block_rq_complete', ['dev', 'sector'])",
    ),
    (
        "tp",
        "latency",
        {"start": "sched:sched_waking", "end": "sched:sched_switch", "key": ["pid"], "end_key": ["next_pid"], "by": "key"},
        "latency('sched:sched_waking', 'sched:sched_switch', 'pid', 'end_key', 'next_pid', 'by', 'key')",
    ),
]


@pytest.mark.parametrize("kind,method,kwargs,sql", CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_analysis_equals_trawl_sql(caps, tmp_path, kind, method, kwargs, sql):
    cap = caps[kind]
    got = getattr(cap, method)(**kwargs).to_arrow().to_pylist()
    if sql is None:
        at = cap._c.resolve_at(kwargs["at"])
        first = cli_rows(tmp_path, "sql", cap.captures[0][1], "SELECT min(time_ns) AS t FROM syscall")[0]["t"]
        assert at == first + 9 * 10**9, "+9 is nine seconds after the first traced call"
        sql = f"{method}({at})"
    want = cli_rows(tmp_path, "sql", cap.captures[0][1], f"SELECT * FROM {sql}")
    assert_same_rows(got, want, f"{method}({kwargs}) vs trawl sql {sql}")


def test_every_analysis_is_a_method_and_is_tested():
    names = {f[0] for f in trawl._trawl.functions()} | {"exhaustion"}
    tested = {trawl._ALIASES.get(c[1], c[1]) for c in CASES}
    assert names <= tested, f"analyses without a test: {sorted(names - tested)}"
    for n in names:
        assert callable(getattr(trawl.Capture, n)), n
    listed = trawl.functions()
    assert set(listed.column("function").to_pylist()) == names - {"exhaustion"}


def test_a_result_outlives_its_capture(caps):
    # The Capture is gone before the result is read: the energy of each
    # function is computed then (sample_energy, a derived table, reads the
    # views of samples on the time axis), in the result's own session.
    # Expected: the rows of the same call on a capture kept open.
    import gc

    (_, directory), = caps["energy"].captures
    r = trawl.open(directory).energy(by="function")
    gc.collect()
    got = r.to_arrow().to_pylist()
    want = caps["energy"].energy(by="function").to_arrow().to_pylist()
    assert len(got) > 0
    assert_same_rows(got, want, "energy by function")


def test_analysis_methods_have_signatures_and_help(caps):
    # What help() and a notebook's completion show: each analysis's
    # parameters (the positional ones first, as `trawl functions` lists
    # them), the keyword conversions, and the parameters' documentation.
    import inspect
    import pydoc

    sig = inspect.signature(caps["perf"].hotspots)
    params = list(sig.parameters.values())
    assert params[0].name == "by" and params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert "inline" in sig.parameters
    tl = inspect.signature(trawl.Capture.timeline).parameters
    assert tl["window"].kind is inspect.Parameter.KEYWORD_ONLY and "window_ns" in tl
    text = pydoc.render_doc(caps["perf"].hotspots)
    assert "by=None" in text and "Parameters (as in ``trawl sql``'s hotspots(...))" in text


@pytest.mark.parametrize(
    "kind,method,kwargs,report",
    [
        ("perf", "hotspots", {"by": "module"}, ["report", "hotspots", "--by", "module"]),
        ("perf", "callers", {"function": "spin_b"}, ["report", "callers", "spin_b", "CAP"]),
        ("phases", "unfreed", {"at": "end"}, ["report", "unfreed", "--at", "end"]),
        ("perf", "timeline", {"window": "20ms"}, ["report", "timeline", "--window", "20ms"]),
        ("memlog", "pages", {}, ["report", "pages"]),
        (
            "tp",
            "latency",
            {"start": "block:block_rq_issue", "end": "block:block_rq_complete", "key": ["dev", "sector"]},
            ["report", "latency", "--start", "block:block_rq_issue", "--end", "block:block_rq_complete", "--key", "dev", "--key", "sector"],
        ),
        ("tp", "tracepoint", {"event": "probe_tp:checksum"}, ["report", "tracepoints", "--event", "probe_tp:checksum"]),
    ],
)
def test_analysis_equals_cli_report(caps, tmp_path, kind, method, kwargs, report):
    cap = caps[kind]
    got = getattr(cap, method)(**kwargs).to_arrow().to_pylist()
    if "CAP" not in report:
        report = report[:2] + ["CAP"] + report[2:]
    args = [cap.captures[0][1] if a == "CAP" else a for a in report]
    want = cli_rows(tmp_path, *args)
    # A report names some columns after its options (the weight: `self_period`;
    # the key: `function`) and may leave out trailing ones; the values are
    # the table function's, column for column.
    cols = list(want[0])
    assert len(cols) <= len(got[0])
    got = [dict(zip(cols, list(r.values())[: len(cols)])) for r in got]
    assert_same_rows(got, want, f"{method}({kwargs}) vs trawl {' '.join(report)}")


def test_diff_of_two_runs_equals_the_cli(tmp_path):
    base = trawl.ingest([fx("perf", "diff-base.data")], tmp_path / "base", debug_dirs=[fx("perf", "bin")], progress=False, quiet=True)
    new = trawl.ingest([fx("perf", "diff-new.data")], tmp_path / "new", debug_dirs=[fx("perf", "bin")], progress=False, quiet=True)
    both = trawl.open([tmp_path / "base", tmp_path / "new"])
    got = both.diff("function", base="base", new="new", inline=False).to_arrow().to_pylist()
    want = cli_rows(tmp_path, "report", "diff", tmp_path / "base", tmp_path / "new", "--no-inline")
    assert_same_rows(got, want, "diff() vs trawl report diff")
    status = {r["function"]: r["status"] for r in got}
    assert status["validate"] == "new only" and status["legacy_check"] == "base only"
    # One capture's flame graph out of the two (fixtures/perf/src/regress.c:
    # only the new build calls validate, only the old one legacy_check).
    new_svg = both.flamegraph(capture="new", inline=False)._repr_svg_()
    base_svg = both.flamegraph(capture="base", inline=False)._repr_svg_()
    assert "validate" in new_svg and "legacy_check" not in new_svg
    assert "legacy_check" in base_svg and "validate" not in base_svg


@pytest.mark.parametrize("to", ["pprof", "firefox", "speedscope", "folded"])
def test_export_writes_what_the_cli_writes(caps, tmp_path, to):
    cap = caps["perf"]
    n = cap.export(tmp_path / "py.out", to, weight="samples", comm="hot")
    cli("export", cap.captures[0][1], "--to", to, "-o", tmp_path / "cli.out", "--weight", "samples", "--comm", "hot")
    got = (tmp_path / "py.out").read_bytes()
    assert n == len(got) > 100
    assert got == (tmp_path / "cli.out").read_bytes()


def test_time_ranges_are_given_as_the_cli_gives_them(caps, tmp_path):
    # hot-fp.data's samples run from 640.393746 to 640.664369 s (perf script).
    cap = caps["perf"]
    n = cap.export(tmp_path / "py.folded", "folded", weight="samples", time="640.45..640.55")
    cli("export", cap.captures[0][1], "--to", "folded", "-o", tmp_path / "cli.folded", "--weight", "samples", "--time", "640.45..640.55")
    got = (tmp_path / "py.folded").read_bytes()
    assert got == (tmp_path / "cli.folded").read_bytes()
    whole = cap.export(tmp_path / "all.folded", "folded", weight="samples")
    assert 0 < n < whole
    ns = cap.export(tmp_path / "ns.folded", "folded", weight="samples", from_ns=640_450_000_000, to_ns=640_550_000_000)
    assert (tmp_path / "ns.folded").read_bytes() == got and ns == n
    with pytest.raises(trawl.TrawlError, match="not both"):
        cap.flamegraph(time="640.45..", from_ns=1)
    # Since the origin (+A..+B, as the timeline prints times), in the
    # figures and in the table functions, as the CLI's --time; the CLI's
    # own is checked against perf script (tests/e2e/front.rs).
    cap.export(tmp_path / "rel.folded", "folded", weight="samples", time="+0.05..+0.15", process_root=True)
    cli("export", cap.captures[0][1], "--to", "folded", "-o", tmp_path / "rel-cli.folded", "--weight", "samples",
        "--time", "+0.05..+0.15", "--process-root")
    rel = (tmp_path / "rel.folded").read_bytes()
    assert rel == (tmp_path / "rel-cli.folded").read_bytes() and rel.startswith(b"hot-")
    got = cap.hotspots(by="function", time="+0.05..+0.15").to_pandas()
    out = cli("report", "hotspots", cap.captures[0][1], "--time", "+0.05..+0.15", "--format", "csv").stdout
    want = sum(int(l.split(",")[2]) for l in out.splitlines()[1:])
    assert got["self_samples"].sum() == want > 0
    with pytest.raises(TypeError, match="not both"):
        cap.hotspots(time="+0..+1", from_ns=1)


def test_a_perfetto_trace_is_the_clis(caps, tmp_path):
    # The trace's content is checked against perf script and the strace
    # dump in tests/e2e/perfetto.rs; here the package writes the same bytes.
    cap = caps["perf"]
    n = cap.export(tmp_path / "py.pftrace", "perfetto")
    cli("export", cap.captures[0][1], "--to", "perfetto", "-o", tmp_path / "cli.pftrace")
    assert n > 0 and (tmp_path / "py.pftrace").read_bytes() == (tmp_path / "cli.pftrace").read_bytes()
    # Paired events, a thread selection.
    tp = caps["tp"]
    pair = "block:block_rq_issue,block:block_rq_complete,dev,sector"
    n = tp.export(tmp_path / "tp.pftrace", "perfetto", pairs=pair, tid=[0])
    cli("export", tp.captures[0][1], "--to", "perfetto", "-o", tmp_path / "tp-cli.pftrace", "--pair", pair, "--tid", "0")
    assert n > 0 and (tmp_path / "tp.pftrace").read_bytes() == (tmp_path / "tp-cli.pftrace").read_bytes()
    with pytest.raises(trawl.TrawlError, match="START,END,KEY"):
        tp.export(tmp_path / "bad.pftrace", "perfetto", pairs="block:block_rq_issue")
    # Nothing is left of a failed export, not even its temporary file.
    assert not [p for p in tmp_path.iterdir() if p.name.startswith("bad")]


def test_results_speak_the_arrow_stream_interface(caps):
    cap = caps["perf"]
    r = cap.sql("SELECT comm, event, count(*) AS n FROM perf_sample GROUP BY comm, event ORDER BY n DESC")
    want = cli(
        "sql", cap.captures[0][1], "SELECT count(*) FROM perf_sample", "--format", "csv"
    ).stdout.split()[1]
    t = pa.table(r)
    assert sum(t.column("n").to_pylist()) == int(want)
    assert pl.DataFrame(r)["n"].sum() == int(want)
    assert duckdb.sql("SELECT sum(n) FROM r").fetchall()[0][0] == int(want)
    assert r.to_pandas()["n"].sum() == int(want)
    assert r.columns == ["comm", "event", "n"]
    # Stored dictionary columns stay dictionaries across the interface.
    raw = pa.table(cap.sql("SELECT event FROM perf_sample"))
    assert pa.types.is_dictionary(raw.schema.field("event").type), raw.schema
    # A reader streams batches: 1,078 samples in batches of at most 8192 rows.
    assert sum(b.num_rows for b in r.to_reader()) == t.num_rows


def test_utc_and_notebook_display(caps, tmp_path):
    cap = caps["perf"]
    svg = cap.flamegraph()
    text = svg._repr_svg_()
    assert text.startswith("<?xml") and "<svg" in text
    assert "spin_a" in text and "spin_b" in text, "the hot functions are drawn"
    # The figures are the CLI's, byte for byte (their content is checked
    # in tests/e2e: phases.rs, memlog.rs).
    png = cap.timeline_plot(window="10ms")
    cli("report", "timeline", cap.captures[0][1], "--window", "10ms", "--plot", tmp_path / "t.png")
    assert png._repr_png_() == (tmp_path / "t.png").read_bytes()
    svg = cap.timeline_plot(window="10ms", format="svg")._repr_svg_()
    cli("report", "timeline", cap.captures[0][1], "--window", "10ms", "--plot", tmp_path / "t.svg")
    assert svg == (tmp_path / "t.svg").read_text()
    assert "spin_a" in svg
    hm = caps["memlog"].heatmap()
    cli("render", "heatmap", caps["memlog"].captures[0][1], "-o", tmp_path / "h.png")
    assert hm.data == (tmp_path / "h.png").read_bytes()
    bare = caps["memlog"].heatmap(bare=True)
    cli("render", "heatmap", caps["memlog"].captures[0][1], "-o", tmp_path / "b.png", "--bare")
    assert bare.data == (tmp_path / "b.png").read_bytes() and bare.data != hm.data
    svg = caps["memlog"].heatmap(format="svg")
    assert "store only" in svg._repr_svg_() and svg._repr_png_() is None
    rows = hm.rows_table()
    assert rows.num_rows == len(hm.rows) > 0
    assert any(o for o in rows.column("object").to_pylist()), "rows are labelled with their objects"


def test_times_on_utc_and_the_flat_table(caps, tmp_path):
    # Expected: perf script -F tod (TZ=UTC) for the samples of the phases
    # run (recorded with -k CLOCK_MONOTONIC); the flat table's leaves
    # against trawl report hotspots --no-inline (self samples).
    cap = caps["phases"]
    df = cap.sql("SELECT time_utc FROM perf_sample ORDER BY sample_id LIMIT 5").to_pandas()
    assert str(df.time_utc.dtype) == "datetime64[ns, UTC]"
    out = subprocess.run(
        ["perf", "script", "-i", fx("phases", "run1", "perf.data"), "-F", "tod", "--ns"],
        env={**os.environ, "TZ": "UTC"}, capture_output=True, text=True, check=True,
    ).stdout
    tods = [l.strip() for l in out.splitlines() if l.strip()[:4].isdigit()][:5]
    got = [t.strftime("%Y-%m-%d %H:%M:%S.") + f"{t.microsecond:06d}{t.nanosecond:03d}" for t in df.time_utc]
    assert got == tods
    p = pl.from_arrow(cap.sql("SELECT * FROM perf_sample_symbolized").to_arrow())
    assert p.schema["time_utc"] == pl.Datetime("ns", "UTC")
    want = {
        (r["function"], r["module"]): r["self_samples"]
        for r in cli_rows(tmp_path, "report", "hotspots", cap.captures[0][1], "--no-inline")
        if r["self_samples"]
    }
    got = {(r["function"], r["module"]): r["len"] for r in p.group_by("function", "module").len().to_dicts()}
    assert got == want


def test_tables_carry_the_column_docs(caps):
    t = caps["perf"].tables().to_arrow().to_pylist()
    doc = {(r["table_name"], r["column_name"]): r["description"] for r in t}
    assert "perf" in doc[("perf_sample", "event")].lower()
    assert doc[("perf_sample", "capture")].startswith("Name of the capture")


def test_errors_are_exceptions_with_positions(caps, tmp_path):
    with pytest.raises(trawl.TrawlError, match="not a trawl capture"):
        trawl.open(tmp_path)
    with pytest.raises(trawl.TrawlError, match="nope"):
        caps["perf"].sql("SELECT * FROM nope").to_arrow()
    with pytest.raises(TypeError, match="no parameter 'bogus'"):
        caps["perf"].hotspots(bogus=1)
    with pytest.raises(trawl.TrawlError, match="by"):
        caps["perf"].hotspots(by="nonsense").to_arrow()
    # A truncated perf.data under strict=True: the first diagnostic, with
    # its byte offset, and the old capture left as it was.
    data = open(fx("perf", "hot-fp.data"), "rb").read()[:50_000]
    cut = tmp_path / "cut.data"
    cut.write_bytes(data)
    with pytest.raises(trawl.InputError) as e:
        trawl.ingest([cut], tmp_path / "strict", strict=True, progress=False, quiet=True)
    assert e.value.source == str(cut) and e.value.kind == "truncated"
    assert isinstance(e.value.offset, int) and 0 < e.value.offset <= 50_000
    assert not (tmp_path / "strict").exists()
    # Without strict the readable records are kept and the problem recorded.
    cap = trawl.ingest([cut], tmp_path / "lenient", progress=False, quiet=True)
    assert cap.summary["inputs"][0]["diagnostics"]
    n = cap.sql("SELECT count(*) AS n FROM diagnostic").to_pylist()[0]["n"]
    assert n >= 1


def test_ingest_bounds_decompression(tmp_path):
    # A gzip bomb of lackey lines (80 MiB of text in well under 1 MB):
    # stopped after the first 64 MiB by default (a decompression_limit
    # diagnostic, the records before it kept), read whole with
    # max_expansion=0.
    import gzip

    head = subprocess.run(["zstd", "-q", "-d", "-c", fx("memlog", "pages.lackey.zst")],
                          check=True, capture_output=True).stdout[:20_000]
    head = head[: head.rindex(b"\n") + 1]
    body = b" L 1ffefff000,8\n" * (1 << 20)
    bomb = tmp_path / "bomb.lackey.gz"
    with gzip.open(bomb, "wb", compresslevel=9) as f:
        f.write(head)
        for _ in range(5):
            f.write(body)
    assert bomb.stat().st_size < 1 << 20
    cap = trawl.ingest(bomb, tmp_path / "limited", mem_kinds="I", progress=False, quiet=True)
    diags = cap.summary["inputs"][0]["diagnostics"]
    assert any("[decompression_limit]" in d for d in diags), diags
    cap = trawl.ingest(bomb, tmp_path / "whole", mem_kinds="I", max_expansion=0,
                       progress=False, quiet=True)
    assert not any("decompression_limit" in d for d in cap.summary["inputs"][0]["diagnostics"])
    size = cap.sql("SELECT size_bytes FROM source").to_pylist()[0]["size_bytes"]
    assert size == len(head) + 5 * len(body)


def test_ingest_reports_progress(tmp_path):
    seen = []
    trawl.ingest(
        [fx("perf", "hot-fp.data")],
        tmp_path / "cap",
        progress=lambda done, total: seen.append((done, total)),
        quiet=True,
        symbolize=False,
    )
    size = os.path.getsize(fx("perf", "hot-fp.data"))
    assert seen and seen[-1] == (size, size)
    assert all(d <= t for d, t in seen)


def test_progress_line_without_tqdm_ends_at_100_percent(capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm.auto", None)  # as if tqdm were not installed
    bar = trawl._Progress()
    bar(12, 100)
    bar.close(finished=True)
    err = capsys.readouterr().err
    assert err == "\ringest: 12% (12 of 100 bytes)\ringest: 100% (100 bytes)\n"


def test_ctrl_c_stops_a_running_query(caps):
    # A query that would run for hours; SIGINT (Ctrl-C) after 1 s.
    query = "SELECT sum(value) FROM range(100000000000)"
    for read in (lambda r: r.to_arrow(), lambda r: r.to_polars()):
        timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        t = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            read(caps["perf"].sql(query))
        timer.join()
        assert time.monotonic() - t < 30


def test_ctrl_c_stops_a_running_ingest(tmp_path):
    # An strace dump of ~3 M lines (io.strace repeated): SIGINT (Ctrl-C)
    # at the ingest's first progress report stops the reader before the
    # end of the input (the progress it reported), and nothing is written.
    text = open(fx("strace", "io.strace")).read()
    big = tmp_path / "big.strace"
    with open(big, "w") as out:
        for _ in range(max(1, 3_000_000 // text.count("\n"))):
            out.write(text)
    seen = []

    def progress(done, total):
        seen.append((done, total))
        if len(seen) == 1:
            os.kill(os.getpid(), signal.SIGINT)

    with pytest.raises(KeyboardInterrupt):
        trawl.ingest([big], tmp_path / "cap", progress=progress, quiet=True, symbolize=False)
    assert not (tmp_path / "cap").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["big.strace"], "no staging directory left"
    assert seen and seen[-1][0] < seen[-1][1], f"stopped at the end of the input: {seen[-3:]}"


def test_io_without_stacks_attributes_by_file(tmp_path):
    # A dump without -k: io_bytes needs no app and gives the bytes per file
    # that `trawl report io` gives (the CLI is the reference).
    cap = trawl.ingest([fx("strace", "io-r.strace")], tmp_path / "cap", progress=False, quiet=True)
    got = cap.io_bytes().to_pandas()
    out = subprocess.run(
        [TRAWL, "report", "io", str(tmp_path / "cap"), "--format", "csv"],
        check=True, capture_output=True, text=True,
    )
    import csv, io as _io
    rows = list(csv.DictReader(_io.StringIO(out.stdout)))
    want = sorted((r["file"], r["direction"], int(r["bytes"])) for r in rows)
    have = sorted((f, d, int(b)) for f, d, b in zip(got["file"], got["direction"], got["bytes"]))
    assert have == want
    assert ("/tmp/iot/out.bin", "write", 409600) in have


def test_the_package_installs_the_trawl_command():
    """`pip install ./python` gives the `trawl` command: the CLI's program run
    from this package's extension (`python -m trawl` is the same), with the
    binary's exit statuses."""
    assert os.path.exists(INSTALLED), f"no trawl command in {sysconfig.get_path('scripts')}"
    for cmd in ([INSTALLED], [sys.executable, "-m", "trawl"]):
        v = subprocess.run([*cmd, "--version"], capture_output=True, text=True)
        assert (v.returncode, v.stdout) == (0, f"trawl {trawl.__version__} (build {trawl._trawl.__build__})\n")
        # The build of this tree (tests/run.sh passes the id of the command
        # cargo built from it), not an older install.
        if os.environ.get("TRAWL_BUILD"):
            assert v.stdout.strip() == os.environ["TRAWL_BUILD"]
        bad = subprocess.run([*cmd, "report", "--no-such-flag"], capture_output=True, text=True)
        assert bad.returncode == 2 and "--no-such-flag" in bad.stderr
        failed = subprocess.run([*cmd, "sql", "/nonexistent/capture", "SELECT 1"], capture_output=True, text=True)
        assert failed.returncode == 1 and failed.stderr.startswith("trawl: ")
    # The command runs the package's own extension: `trawl functions`
    # lists what trawl.functions() lists.
    out = subprocess.run([INSTALLED, "functions"], capture_output=True, text=True, check=True).stdout
    names = {f[0] for f in trawl._trawl.functions()}
    assert len(names) > 20 and all(n in out for n in names)



@pytest.fixture
def s3_server():
    """A local S3 server (tests/s3/server.py: moto, authenticating as AWS
    does) with a bucket `trawl`; the environment that reaches it is set in
    this process (the package reads it as the CLI does) and returned."""
    import json

    server = subprocess.Popen(
        [sys.executable, os.path.join(ROOT, "tests", "s3", "server.py")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    c = json.loads(server.stdout.readline())
    env = dict(
        AWS_ENDPOINT_URL=c["endpoint"],
        AWS_ALLOW_HTTP="true",
        AWS_REGION="us-east-1",
        AWS_ACCESS_KEY_ID=c["access_key_id"],
        AWS_SECRET_ACCESS_KEY=c["secret_access_key"],
    )
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield env
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        server.kill()
        server.wait()


def perf_script_samples(path, home):
    """Samples in a perf.data file: the lines of `perf script -F time`
    (perf's HOME an empty directory: no user's build-id cache)."""
    out = subprocess.run(["perf", "script", "-F", "time", "-i", str(path)], check=True,
                         capture_output=True, text=True, env={**os.environ, "HOME": str(home)}).stdout
    return sum(1 for line in out.splitlines() if line.strip().endswith(":"))


def test_an_archive_in_object_storage(s3_server, tmp_path):
    """`trawl.open("s3://...")` reads an archive the CLI wrote to the S3
    server: the samples per capture perf script counts (through
    `trawl sql` on the same URL), the manifest, and Polars reading the
    same objects; a URL with nothing there is an error naming it."""
    src = tmp_path / "runs"
    for run, f in {"a": "hot-fp.data", "b": "threads.data"}.items():
        (src / run).mkdir(parents=True)
        os.link(fx("perf", f), src / run / f)
    url = "s3://trawl/runs"
    subprocess.run([TRAWL, "archive", "ingest", str(src), "-o", url, "--no-symbolize"], check=True, capture_output=True)
    q = "SELECT capture, count(*) AS n FROM perf_sample GROUP BY capture ORDER BY capture"
    got = trawl.open(url).sql(q).to_pylist()
    # Expected: perf script's sample count of each run's file.
    want = [dict(capture=run, n=perf_script_samples(src / run / f, tmp_path))
            for run, f in [("a", "hot-fp.data"), ("b", "threads.data")]]
    assert got == want, (got, want)
    cli = subprocess.run([TRAWL, "sql", url, q, "--format", "csv"], check=True, capture_output=True, text=True).stdout
    assert cli.split()[1:] == [f"{r['capture']},{r['n']}" for r in want], cli
    status = trawl.open(url).sql("SELECT capture, status FROM capture ORDER BY capture").to_pylist()
    assert status == [dict(capture="a", status="ok"), dict(capture="b", status="ok")]
    opts = {k.lower(): v for k, v in s3_server.items()}
    lazy = pl.scan_parquet(url + "/*/perf_sample.parquet", hive_partitioning=True, storage_options=opts)
    by = dict(lazy.group_by("capture").len().collect().iter_rows())
    assert by == {r["capture"]: r["n"] for r in want}
    with pytest.raises(trawl.TrawlError, match="s3://trawl/nothing"):
        trawl.open("s3://trawl/nothing")
