"""The floor of an ingest: encoding the rows it wrote to Parquet again,
alone. Every table of the capture CAP is loaded into DuckDB's memory (not
timed), then written to Parquet with zstd (timed, DuckDB's own threads);
prints the seconds, and the peak memory of this process in KB, as
bench/lib.sh's t() does ("SECONDS KB").

Usage: python3 bench/encode_floor.py CAP"""
import glob, os, resource, sys, tempfile, time

import duckdb

cap = sys.argv[1]
con = duckdb.connect()
tables = []
for path in sorted(glob.glob(os.path.join(cap, "*.parquet"))):
    name = os.path.basename(path)[: -len(".parquet")]
    con.execute(f"CREATE TABLE \"{name}\" AS SELECT * FROM read_parquet('{path}')")
    tables.append(name)
with tempfile.TemporaryDirectory() as out:
    start = time.perf_counter()
    for name in tables:
        con.execute(f"COPY \"{name}\" TO '{out}/{name}.parquet' (FORMAT parquet, COMPRESSION zstd)")
    took = time.perf_counter() - start
print(f"{took:.3f} {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss}")
