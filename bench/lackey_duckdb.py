# DuckDB baseline for bench/lackey_ingest.sh: a lackey log -> typed Parquet
# (kind, address as UBIGINT, size as INTEGER) with its CSV reader, one
# VARCHAR column per line. Usage: lackey_duckdb.py LOG OUT.parquet
import sys, duckdb
log, out = sys.argv[1], sys.argv[2]
duckdb.sql(f'''COPY (SELECT trim(substr(line,1,2)) AS kind,
   TRY_CAST('0x' || split_part(trim(substr(line,3)), ',', 1) AS UBIGINT) AS address,
   TRY_CAST(split_part(line, ',', 2) AS INTEGER) AS size
   FROM read_csv('{log}', columns={{'line':'VARCHAR'}}, delim='\x01', header=false, quote='', escape='', auto_detect=false)
   WHERE substr(line,1,1) IN ('I',' ')) TO '{out}' (FORMAT parquet)''')
