# ---
# jupyter:
#   jupytext:
#     formats: py:percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # trawl in a notebook
#
# Ingest the bundled fixtures, then: hotspots, a flame graph, a timeline,
# the memory a program never gave back, and the same Parquet files read
# directly with Polars and DuckDB (no trawl needed for that part).
#
# Install the package from the checkout first, with what the last part
# reads the files with: `pip install "./python[pandas,polars,duckdb]"`.
# Open this file with Jupytext (`jupytext --to ipynb docs/notebook.py`) or
# run it as a script; CI executes it in a Jupyter kernel
# (`python/tests/test_notebook.py`).

# %%
import os
import tempfile

import trawl

# The repository's root: $TRAWL_CHECKOUT, else above this file
# (docs/notebook.py, run as a script), else above the working directory
# (a notebook kernel started in the checkout).
try:
    HERE = os.path.dirname(os.path.abspath(__file__))
except NameError:
    HERE = os.getcwd()
ROOT = os.environ.get("TRAWL_CHECKOUT", HERE)
while not os.path.exists(os.path.join(ROOT, "fixtures", "perf")) and ROOT != "/":
    ROOT = os.path.dirname(ROOT)
if ROOT == "/":
    raise SystemExit("the trawl checkout's fixtures were not found: set TRAWL_CHECKOUT")
FIXTURES = os.path.join(ROOT, "fixtures")
work = tempfile.TemporaryDirectory(prefix="trawl-notebook-")

# %% [markdown]
# ## A CPU profile: `perf record -g` of a small program
#
# `trawl.ingest` takes what `trawl ingest` takes (here the directory with the
# program's binary, for its symbols) and returns the capture, opened.

# %%
cap = trawl.ingest(
    [os.path.join(FIXTURES, "perf", "hot-fp.data")],
    os.path.join(work.name, "hot"),
    debug_dirs=[os.path.join(FIXTURES, "perf", "bin")],
)
cap

# %% [markdown]
# Every analysis is a method with keyword arguments; results are lazy and
# become pandas, Polars or pyarrow tables on request.

# %%
cap.hotspots(by="function").to_pandas().head(8)

# %%
cap.hotspots(by="srcline", inline=False).to_polars().head(5)

# %% [markdown]
# The flame graph displays inline (SVG); `cap.folded()` has its rows.

# %%
cap.flamegraph()

# %% [markdown]
# ## Over time
#
# Shares of the hottest functions per 10 ms window: the figure, then its rows.

# %%
cap.timeline_plot(window="10ms", top=4)

# %%
cap.timeline(window="10ms", top=4).to_pandas().head()

# %% [markdown]
# ## Memory never given back
#
# A run traced with `strace -f -k` (with perf, vmstat and sar at the same
# time): `unfreed` lists what each process still held when it exited, by the
# application function and line that allocated it.

# %%
run = os.path.join(FIXTURES, "phases", "run1")
phases = trawl.ingest(
    [os.path.join(run, f) for f in ("perf.data", "app.strace", "vmstat.log", "sar.csv")],
    os.path.join(work.name, "phases"),
    debug_dirs=[os.path.join(FIXTURES, "phases", "bin")],
    flat=True,
    quiet=True,
)
phases.unfreed(at="end").to_pandas()

# %% [markdown]
# ## Any SQL, and the Parquet files themselves
#
# `cap.sql` runs DataFusion SQL over the tables (`cap.tables()` documents
# every column). The capture is a directory of Parquet files: Polars and
# DuckDB read them as they are.

# %%
cap.sql("""
    SELECT comm, count(*) AS samples, sum(period) / 1e6 AS cpu_ms
    FROM perf_sample GROUP BY comm ORDER BY samples DESC
""").to_pandas()

# %%
import duckdb
import polars as pl

samples = os.path.join(work.name, "hot", "perf_sample.parquet")
print(pl.read_parquet(samples).group_by("comm").len())
duckdb.sql(f"SELECT cpu, count(*) AS samples FROM '{samples}' GROUP BY cpu ORDER BY cpu").df()

# %% [markdown]
# Without the join: `perf_sample_symbolized` has each sample's leaf
# function, module and source line (a file because the run was ingested
# with `flat=True`; `phases.sql("SELECT * FROM perf_sample_symbolized")` is
# the same rows without it), and `time_utc` places it on the wall clock
# (the phases run was recorded with `perf record -k CLOCK_MONOTONIC`): CPU
# time per function and per 250 ms with pandas.

# %%
import pandas as pd

flat = pd.read_parquet(os.path.join(work.name, "phases", "perf_sample_symbolized.parquet"))
print(flat.groupby(["function", "module"], observed=True).period.sum().nlargest(5))
flat.set_index("time_utc").resample("250ms").period.sum().div(1e6).rename("cpu_ms").to_frame()

# %% [markdown]
# A trawl result is an Arrow stream: DuckDB queries it by its variable name.

# %%
hot = cap.hotspots(by="module")
duckdb.sql("SELECT module, self_pct FROM hot WHERE self_pct > 1 ORDER BY self_pct DESC").df()

# %%
work.cleanup()
