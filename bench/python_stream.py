#!/usr/bin/env python3
"""Results into Python: `cap.sql(...)` through the Arrow C stream interface
against DuckDB's `duckdb.sql(...).arrow()` on the same Parquet file, in
the same run, on a result of 10 M rows (the `metric` table of a generated
monitoring CSV: time, entity, metric, value), and the same result into
Polars both ways. Prints seconds (median of ROUNDS, alternating), rows/s
and ratios.

The package must be a release build (`pip install ./python`).

Usage: bench/python_stream.py [ROWS]   (env BENCH_DIR, default
/tmp/trawl-bench; ROUNDS, default 5)
"""

import os
import statistics
import sys
import time

import duckdb
import polars as pl
import pyarrow as pa

import trawl

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROWS = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000_000
ROUNDS = int(os.environ.get("ROUNDS", "5"))
W = os.path.join(os.environ.get("BENCH_DIR", "/tmp/trawl-bench"), "python")


def generate(path):
    # 50 hosts × 4 metrics, one row per second each: ROWS rows of a
    # metric CSV as `trawl ingest` reads it (time, entity, metric, value).
    metrics = ["cpu_user", "cpu_sys", "memused_pct", "blocks_out"]
    per_second = 50 * len(metrics)
    t0 = 1_700_000_000
    with open(path, "w") as f:
        f.write("time,entity,metric,value\n")
        n = 0
        s = 0
        while n < ROWS:
            ts = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0 + s))
            lines = []
            for h in range(50):
                for k, m in enumerate(metrics):
                    if n + len(lines) >= ROWS:
                        break
                    lines.append(f"{ts},host{h},{m},{(s * 7 + h * 13 + k) % 1000 / 10}\n")
            f.writelines(lines)
            n += len(lines)
            s += 1
    return per_second


def whole(t):
    return t.read_all() if isinstance(t, pa.RecordBatchReader) else t


def timed(f):
    t = time.perf_counter()
    out = f()
    return time.perf_counter() - t, out


def main():
    os.makedirs(W, exist_ok=True)
    csv = os.path.join(W, f"metrics-{ROWS}.csv")
    cap = os.path.join(W, f"cap-{ROWS}")
    if not os.path.exists(os.path.join(cap, "metric.parquet")):
        if not os.path.exists(csv):
            generate(csv)
        trawl.ingest([csv], cap, progress=False, quiet=True)
    parquet = os.path.join(cap, "metric.parquet")
    c = trawl.open(cap)
    q = "SELECT time_ns, entity, metric, value FROM metric"
    dq = f"SELECT time_ns, entity, metric, value FROM read_parquet('{parquet}')"
    con = duckdb.connect()

    # trawl's entity and metric are dictionary columns (as stored); DuckDB
    # hands out plain strings. The same as strings, for a like-for-like row.
    qs = "SELECT time_ns, CAST(entity AS VARCHAR) AS entity, CAST(metric AS VARCHAR) AS metric, value FROM metric"
    # (DuckDB 2 hands out a reader: read to its end, like to_arrow.)
    readers = {
        "trawl arrow": lambda: c.sql(q).to_arrow(),
        "trawl arrow str": lambda: c.sql(qs).to_arrow(),
        "duckdb arrow": lambda: whole(con.sql(dq).arrow()),
        "trawl polars": lambda: c.sql(q).to_polars(),
        "duckdb polars": lambda: con.sql(dq).pl(),
    }
    runs = {k: [] for k in readers}
    rows = {}
    for _ in range(ROUNDS):
        for name, read in readers.items():
            t, out = timed(read)
            runs[name].append(t)
            rows[name] = len(out)
            if name == "trawl arrow str":
                entity = out.schema.field("entity").type
                assert pa.types.is_string(entity) or pa.types.is_string_view(entity), entity
            del out
    assert len(set(rows.values())) == 1, rows
    n = rows["trawl arrow"]
    print(f"result: {n:,} rows × 4 columns from {parquet} ({os.path.getsize(parquet) >> 20} MB); median of {ROUNDS}")
    med = {k: statistics.median(v) for k, v in runs.items()}
    for k, v in med.items():
        print(f"  {k:14s} {v:7.3f} s  {n / v / 1e6:6.1f} M rows/s")
    print(f"trawl / duckdb into pyarrow: {med['trawl arrow'] / med['duckdb arrow']:.2f}x the time "
          f"(strings: {med['trawl arrow str'] / med['duckdb arrow']:.2f}x)")
    print(f"trawl / duckdb into polars:  {med['trawl polars'] / med['duckdb polars']:.2f}x the time")


if __name__ == "__main__":
    main()
