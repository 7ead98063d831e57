#!/usr/bin/env python3
"""Notebook check: the Parquet tables of a perf, a strace, a lackey, a
monitoring and an energy capture open in pyarrow, Polars and DuckDB with
their documented schemas and the same values; a hotspot query written
directly in DuckDB over the Parquet files agrees with `trawl report
hotspots` on the same capture; an archive's Hive layout reads in DuckDB
and Polars, from a directory and from a local S3 server.

Usage: tests/notebook_check.py [TRAWL_BINARY]
"""
import csv
import io
import os
import subprocess
import sys
import tempfile

import duckdb
import polars as pl
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pyarrow.types as pa_types

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TRAWL = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "target", "release", "trawl")


def run(*args):
    return subprocess.run([TRAWL, *args], check=True, capture_output=True, text=True).stdout


PASSED = []


def passed(what):
    """A check that held: printed, and counted in the closing line."""
    print(what)
    PASSED.append(what)


def main():
    # Removed at the end, whatever happens.
    with tempfile.TemporaryDirectory(prefix="trawl-notebook-check-") as tmp:
        check(tmp)
    print(f"{len(PASSED)} passed")


def check(tmp):
    cap = os.path.join(tmp, "cap")
    run("ingest", os.path.join(ROOT, "fixtures/perf/procs.data"), "-o", cap,
        "--debug-dir", os.path.join(ROOT, "fixtures/perf/bin"), "--flat")

    tables = sorted(f[:-8] for f in os.listdir(cap) if f.endswith(".parquet"))
    assert "perf_sample" in tables and "symbol" in tables, tables
    for t in tables:
        path = os.path.join(cap, t + ".parquet")
        a = pq.read_table(path)
        for field in a.schema:
            doc = (field.metadata or {}).get(b"doc")
            assert doc, f"{t}.{field.name} has no doc metadata"
        p = pl.read_parquet(path)
        d = duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall()[0][0]
        assert a.num_rows == p.height == d, (t, a.num_rows, p.height, d)
        assert a.column_names == p.columns, t
    passed(f"pyarrow, polars, duckdb: {len(tables)} tables open with equal row counts and column docs")

    want = {}
    for r in csv.DictReader(io.StringIO(run("report", "hotspots", cap, "--no-inline", "--format", "csv"))):
        want[(r["function"], r["module"])] = r

    f = lambda t: os.path.join(cap, t + ".parquet")
    rows = duckdb.sql(f"""
        WITH s AS (
          SELECT stack_id, count(*) AS n, sum(period) AS p
          FROM '{f("perf_sample")}' WHERE event = 'cpu-clock' GROUP BY stack_id),
        tot AS (SELECT sum(p) AS p FROM s),
        fn AS (
          SELECT fr.frame_id, coalesce(m.path, '[unknown]') AS module,
                 coalesce(sy.function, printf('0x%016x', fr.rel_pc)) AS function
          FROM '{f("frame")}' fr
          LEFT JOIN '{f("module")}' m ON m.module_id = fr.module_id
          -- return addresses are symbolized at rel_pc - 1; the outermost
          -- inline level is the ELF function (perf's sym)
          LEFT JOIN '{f("symbol")}' sy ON sy.module_id = fr.module_id
            AND sy.rel_pc = fr.rel_pc - CASE WHEN fr.is_return AND fr.rel_pc > 0 THEN 1 ELSE 0 END
            AND NOT sy.inlined),
        k AS (
          SELECT st.stack_id, st.depth, fn.function, fn.module
          FROM '{f("stack")}' st JOIN fn ON fn.frame_id = st.frame_id),
        self AS (
          SELECT function, module, sum(n) AS n, sum(s.p) AS p FROM k JOIN s USING (stack_id)
          WHERE depth = 0 GROUP BY ALL),
        total AS (
          SELECT function, module, sum(n) AS n, sum(s.p) AS p
          FROM (SELECT DISTINCT stack_id, function, module FROM k) JOIN s USING (stack_id) GROUP BY ALL)
        SELECT t.function, t.module, coalesce(self.n, 0), 100.0 * coalesce(self.p, 0) / tot.p,
               t.n, 100.0 * t.p / tot.p
        FROM total t LEFT JOIN self USING (function, module), tot
    """).fetchall()
    assert len(rows) == len(want), (len(rows), len(want))
    for fnname, module, sn, sp, tn, tp in rows:
        w = want[(fnname, module)]
        assert int(w["self_samples"]) == sn and int(w["total_samples"]) == tn, (fnname, w, sn, tn)
        assert abs(float(w["self_pct"]) - sp) < 1e-3 and abs(float(w["total_pct"]) - tp) < 1e-3, (fnname, w, sp, tp)
    passed(f"duckdb hotspot query agrees with trawl report hotspots on {len(rows)} functions")

    # The same self column from the flat table, the way README shows it.
    flat = duckdb.sql(f"""
        SELECT function, module, count(*) AS samples
        FROM '{f("perf_sample_symbolized")}' WHERE event = 'cpu-clock'
        GROUP BY ALL""").fetchall()
    selfs = {k: int(w["self_samples"]) for k, w in want.items() if int(w["self_samples"])}
    assert {(fn, m): n for fn, m, n in flat} == selfs, (flat, selfs)
    by_pl = (pl.read_parquet(f("perf_sample_symbolized")).filter(pl.col("event") == "cpu-clock")
             .group_by("function", "module").len())
    assert {(r["function"], r["module"]): r["len"] for r in by_pl.to_dicts()} == selfs
    passed(f"perf_sample_symbolized: duckdb and polars count the self samples of {len(selfs)} functions as trawl report hotspots")
    every_kind_check(tmp)
    archive_check(tmp)


RAPL_CSV = """time,zone,name,energy_uj,max_energy_range_uj
1700000000.000000000,intel-rapl:0,package-0,1000000,262143328850
1700000000.000000000,intel-rapl:0:0,core,5000000,262143328850
1700000001.000000000,intel-rapl:0,package-0,31000000,262143328850
1700000001.000000000,intel-rapl:0:0,core,25000000,262143328850
"""


def every_kind_check(tmp):
    """Every table of a strace, a lackey, a monitoring and an energy
    capture opens in pyarrow, Polars and DuckDB with the same rows and the
    same minimum, maximum and values of every integer column (the memory log's `mem_access` pages
    are written by trawl itself, not by the parquet crate's writer)."""
    f = lambda *p: os.path.join(ROOT, "fixtures", *p)
    rapl = os.path.join(tmp, "rapl.csv")
    with open(rapl, "w") as out:
        out.write(RAPL_CSV)
    kinds = {
        "strace": [f("strace", "io.strace")],
        "lackey": [f("memlog", "pages.lackey.zst"), f("memlog", "pages.maps"),
                   "--debug-dir", f("memlog", "bin")],
        "metrics": [f("metrics", "vmstat.log"), f("metrics", "sadf.csv"), f("metrics", "pidstat.log")],
        "energy": [rapl],
    }
    for kind, args in kinds.items():
        cap = os.path.join(tmp, "kind-" + kind)
        run("ingest", *args, "-o", cap)
        tables = sorted(t[:-8] for t in os.listdir(cap) if t.endswith(".parquet"))
        checked = 0
        timed = 0
        for t in tables:
            path = os.path.join(cap, t + ".parquet")
            a = pq.read_table(path)
            p = pl.read_parquet(path)
            n = duckdb.sql(f"SELECT count(*) FROM '{path}'").fetchall()[0][0]
            assert a.num_rows == p.height == n, (kind, t, a.num_rows, p.height, n)
            for field in a.schema:
                doc = (field.metadata or {}).get(b"doc")
                assert doc, f"{kind}: {t}.{field.name} has no doc metadata"
                if pa_types.is_timestamp(field.type):
                    # Times on UTC: a time with zone in each reader, the
                    # same instants (as epoch ns) in file order.
                    c = field.name
                    assert field.type == pa.timestamp("ns", tz="UTC"), (kind, t, c, field.type)
                    assert p.schema[c] == pl.Datetime("ns", "UTC"), (kind, t, c, p.schema[c])
                    dd_type = duckdb.sql(f'SELECT typeof("{c}") FROM \'{path}\' LIMIT 1').fetchall()
                    assert not dd_type or dd_type[0][0] == "TIMESTAMPTZ_NS", (kind, t, c, dd_type)
                    want = a.column(c).cast(pa.int64()).to_pylist()
                    assert p[c].dt.epoch("ns").to_list() == want, (kind, t, c)
                    got_dd = [r[0] for r in duckdb.sql(f'SELECT epoch_ns("{c}") FROM \'{path}\'').fetchall()]
                    assert got_dd == want, (kind, t, c)
                    timed += sum(v is not None for v in want)
                    continue
                if not pa_types.is_integer(field.type):
                    continue
                c = field.name
                mm = pc.min_max(a.column(c)).as_py()
                want = (mm["min"], mm["max"]) if a.num_rows else (None, None)
                got_pl = (p[c].min(), p[c].max()) if a.num_rows else (None, None)
                got_dd = duckdb.sql(f'SELECT min("{c}"), max("{c}") FROM \'{path}\'').fetchall()[0]
                assert want == got_pl == tuple(got_dd), (kind, t, c, want, got_pl, got_dd)
                # and the values themselves, in file order
                if a.num_rows:
                    assert a.column(c).to_pylist() == p[c].to_list(), (kind, t, c)
                checked += 1
        need = {"strace": "syscall", "lackey": "mem_access", "metrics": "metric", "energy": "energy"}[kind]
        assert need in tables and pq.read_metadata(os.path.join(cap, need + ".parquet")).num_rows > 0, (kind, tables)
        assert timed > 0 or kind == "lackey", (kind, "no time on UTC")
        passed(f"{kind}: {len(tables)} tables, {checked} integer columns, {timed} times on UTC: pyarrow, polars and duckdb agree")


def archive_check(tmp):
    """An archive (`trawl archive ingest`) is a Hive-partitioned dataset of
    segments: DuckDB and Polars read each table across captures with the
    documented glob (`ARCHIVE/segment=*/TABLE.parquet`), `capture` a
    column, with the samples per capture perf script counts, also when
    kept to the rows the manifest at the root places (as
    docs/guide/archive.md joins them)."""
    src = os.path.join(tmp, "runs")
    fixtures = {"a": "hot-fp.data", "b": "threads.data", "c": "recurse.data"}
    for run, f in fixtures.items():
        os.makedirs(os.path.join(src, run))
        os.link(os.path.join(ROOT, "fixtures", "perf", f), os.path.join(src, run, f))
    arch = os.path.join(tmp, "archive")
    subprocess.run([TRAWL, "archive", "ingest", src, "-o", arch, "--no-symbolize"], check=True, capture_output=True)
    want = {}
    for run, f in fixtures.items():
        out = subprocess.run(["perf", "script", "-i", os.path.join(ROOT, "fixtures", "perf", f), "-F", "time"],
                             check=True, capture_output=True, text=True).stdout
        want[run] = sum(1 for line in out.splitlines() if line.rstrip().endswith(":"))
    glob = os.path.join(arch, "segment=*", "perf_sample.parquet")
    got = dict(duckdb.sql(f"SELECT capture, count(*) FROM read_parquet('{glob}', hive_partitioning = true) GROUP BY ALL").fetchall())
    assert got == want, (got, want)
    manifest = os.path.join(arch, "capture.parquet")
    got = dict(duckdb.sql(f"SELECT capture, count(*) FROM read_parquet('{glob}', hive_partitioning = true) "
                          f"JOIN '{manifest}' USING (capture, segment) GROUP BY ALL").fetchall())
    assert got == want, (got, want)
    got = dict(pl.scan_parquet(glob, hive_partitioning=True).group_by("capture").len().collect().iter_rows())
    assert got == want, (got, want)
    status = dict(duckdb.sql(f"SELECT capture, status FROM read_parquet('{os.path.join(arch, 'capture.parquet')}')").fetchall())
    assert status == {r: "ok" for r in fixtures}, status
    passed(f"duckdb and polars read the archive's hive layout: samples of {len(want)} captures as perf script counts")
    s3_check(src, want)


def s3_check(src, want):
    """The same runs ingested into an archive on a local S3 server
    (tests/s3/server.py): Polars reads it from the bucket, DuckDB through
    pyarrow's S3 file system (DuckDB's own httpfs extension is downloaded
    at run time), both with the counts perf script gives."""
    server = subprocess.Popen([sys.executable, os.path.join(ROOT, "tests", "s3", "server.py")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        import json
        c = json.loads(server.stdout.readline())
        env = dict(os.environ, AWS_ENDPOINT_URL=c["endpoint"], AWS_ALLOW_HTTP="true", AWS_REGION="us-east-1",
                   AWS_ACCESS_KEY_ID=c["access_key_id"], AWS_SECRET_ACCESS_KEY=c["secret_access_key"])
        url = "s3://trawl/runs"
        subprocess.run([TRAWL, "archive", "ingest", src, "-o", url, "--no-symbolize"], check=True,
                       capture_output=True, env=env)
        opts = {"aws_endpoint_url": c["endpoint"], "aws_allow_http": "true", "aws_region": "us-east-1",
                "aws_access_key_id": c["access_key_id"], "aws_secret_access_key": c["secret_access_key"]}
        got = dict(pl.scan_parquet(url + "/segment=*/perf_sample.parquet", hive_partitioning=True, storage_options=opts)
                   .group_by("capture").len().collect().iter_rows())
        assert got == want, (got, want)
        import pyarrow.dataset as ds
        import pyarrow.fs as pafs
        fs = pafs.S3FileSystem(endpoint_override=c["endpoint"], scheme="http", region="us-east-1",
                               access_key=c["access_key_id"], secret_key=c["secret_access_key"])
        files = [f.path for f in fs.get_file_info(pafs.FileSelector("trawl/runs", recursive=True))
                 if f.path.endswith("/perf_sample.parquet")]
        samples = ds.dataset(files, filesystem=fs, format="parquet",
                             partitioning=ds.partitioning(flavor="hive"), partition_base_dir="trawl/runs")
        got = dict(duckdb.sql("SELECT capture, count(*) FROM samples GROUP BY ALL").fetchall())
        assert got == want, (got, want)
        out = subprocess.run([TRAWL, "sql", url, "SELECT capture, count(*) AS n FROM perf_sample GROUP BY capture",
                              "--format", "csv"], check=True, capture_output=True, text=True, env=env).stdout
        got = {r["capture"]: int(r["n"]) for r in csv.DictReader(io.StringIO(out))}
        assert got == want, (got, want)
        passed(f"an archive on a local S3 server: trawl, polars and duckdb (pyarrow's S3) read {len(want)} captures as perf script counts")
    finally:
        server.kill()
        server.wait()


if __name__ == "__main__":
    main()
