#!/usr/bin/env bash
# An archive in object storage against DuckDB, same objects, same run: N
# captures (default 1000; hard links of four fixture recordings, so the
# archive has N different captures of realistic tables) ingested by
# `trawl archive ingest -o s3://...` into a local S3 server
# (tests/s3/server.py: moto, authenticating requests), then
#
#   count:   SELECT count(*) FROM perf_sample
#   groupby: SELECT capture, count(*), sum(period) FROM perf_sample GROUP BY capture
#   one:     the same GROUP BY with WHERE capture = '<one>' (a partition filter)
#   comm:    SELECT comm, count(*) FROM perf_sample GROUP BY comm
#
# by `trawl sql s3://...` and by DuckDB 1.4.4 with its httpfs extension
# (from PyPI, in a virtual environment: DuckDB downloads extensions at run
# time otherwise) over read_parquet('s3://.../*/perf_sample.parquet',
# hive_partitioning = true); then `trawl report hotspots --no-inline`
# over every capture and over one. Each is a whole process (start, credentials,
# listing, footers, data), the median of RUNS; the requests each made are
# counted in the server's log (LIST, GET, HEAD).
#
# Usage: TRAWL=target/release/trawl bench/s3.sh   (env N, RUNS, BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/s3
N=${N:-1000}
RUNS=${RUNS:-5}
TRAWL=${TRAWL:-$PWD/target/release/trawl}
rm -rf "$W"; mkdir -p "$W"
trap 'rm -rf "$W"' EXIT

[ -x "$W/../s3-venv/bin/python" ] || python3 -m venv "$W/../s3-venv"
"$W/../s3-venv/bin/pip" install -q --disable-pip-version-check 'duckdb==1.4.4' 'duckdb-ext-httpfs==1.4.4.*'
DUCK="$W/../s3-venv/bin/python"

# The server runs while fd 3 is open (until this script ends).
exec 3> >(python3 tests/s3/server.py > "$W/server.json" 2> "$W/requests.log")
for _ in $(seq 100); do [ -s "$W/server.json" ] && break; sleep 0.1; done
eval "$(python3 -c "
import json; c = json.load(open('$W/server.json'))
print(f\"export AWS_ENDPOINT_URL={c['endpoint']} AWS_ALLOW_HTTP=true AWS_REGION=us-east-1 AWS_ACCESS_KEY_ID={c['access_key_id']} AWS_SECRET_ACCESS_KEY='{c['secret_access_key']}'\")")"

FIX=(hot-fp.data threads.data recurse.data procs.data)
for i in $(seq -w 1 "$N"); do
  mkdir -p "$W/runs/run$i"
  ln "fixtures/perf/${FIX[$((10#$i % 4))]}" "$W/runs/run$i/"
done
URL=s3://trawl/a$N
T0=$(date +%s.%N)
"$TRAWL" archive ingest "$W/runs" -o "$URL" --no-symbolize -j 2 2>"$W/ingest.err" || { cat "$W/ingest.err"; exit 1; }
T1=$(date +%s.%N)
tail -1 "$W/ingest.err"
OBJECTS=$(grep -c '"PUT /trawl/a' "$W/requests.log" || true)
printf 'ingest into %s: %.1f s, %s objects uploaded\n' "$URL" "$(echo "$T1 - $T0" | bc)" "$OBJECTS"

ONE=run$(printf "%0${#N}d" $(( N / 2 )))
declare -A Q=(
  [count]="SELECT count(*) FROM perf_sample"
  [groupby]="SELECT capture, count(*), sum(period) FROM perf_sample GROUP BY capture ORDER BY capture"
  [one]="SELECT capture, count(*), sum(period) FROM perf_sample WHERE capture = '$ONE' GROUP BY capture"
  [comm]="SELECT comm, count(*) FROM perf_sample GROUP BY comm ORDER BY comm"
)
cat > "$W/duck.py" <<'EOF'
import glob, os, sys, sysconfig
import duckdb
ext = glob.glob(os.path.join(sysconfig.get_paths()["purelib"], "duckdb_ext/extensions/*/*/httpfs.duckdb_extension"))[0]
con = duckdb.connect()
con.execute(f"LOAD '{ext}'")
con.execute(f"""CREATE SECRET s (TYPE s3, KEY_ID '{os.environ["AWS_ACCESS_KEY_ID"]}',
  SECRET '{os.environ["AWS_SECRET_ACCESS_KEY"]}', REGION 'us-east-1',
  ENDPOINT '{os.environ["AWS_ENDPOINT_URL"].split("://")[1]}', URL_STYLE 'path', USE_SSL false)""")
url, q = sys.argv[1], sys.argv[2]
rel = f"read_parquet('{url}/*/perf_sample.parquet', hive_partitioning = true)"
rows = con.sql(q.replace("FROM perf_sample", f"FROM {rel}")).fetchall()
print("\n".join(",".join(str(v) for v in r) for r in rows))
EOF
trawl_q() { "$TRAWL" sql "$URL" "$1" --format csv | tail -n +2; }
duck_q() { "$DUCK" "$W/duck.py" "$URL" "$1"; }
# Seconds of the median of RUNS runs of "$@".
median() {
  local ts=()
  for _ in $(seq "$RUNS"); do
    local a b; a=$(date +%s.%N); "$@" >/dev/null; b=$(date +%s.%N)
    ts+=("$(echo "$b - $a" | bc)")
  done
  printf '%s\n' "${ts[@]}" | sort -n | sed -n "$(( (RUNS + 1) / 2 ))p"
}
# "LIST GET HEAD" requests of one run of "$@".
requests() {
  local n; n=$(wc -l < "$W/requests.log")
  "$@" >/dev/null
  tail -n +$((n + 1)) "$W/requests.log" | python3 -c "
import sys
lines = [l.split('\"')[1] for l in sys.stdin if 'HTTP/1.1\"' in l]
print(sum('list-type=2' in l for l in lines), sum(l.startswith('GET') and 'list-type=2' not in l for l in lines), sum(l.startswith('HEAD') for l in lines))"
}

printf '\n%-8s %9s %9s %7s   %-22s %-22s\n' query "trawl s" "duckdb s" ratio "trawl LIST/GET/HEAD" "duckdb LIST/GET/HEAD"
for k in count groupby one comm; do
  a=$(trawl_q "${Q[$k]}"); b=$(duck_q "${Q[$k]}")
  [ "$(echo "$a" | tr -d '"' | sort)" = "$(echo "$b" | sort)" ] || { echo "$k: answers differ"; echo "$a" | head -3; echo "$b" | head -3; exit 1; }
  ts=$(median trawl_q "${Q[$k]}"); td=$(median duck_q "${Q[$k]}")
  rt=$(requests trawl_q "${Q[$k]}"); rd=$(requests duck_q "${Q[$k]}")
  printf '%-8s %9.2f %9.2f %6.2fx   %-22s %-22s\n' "$k" "$ts" "$td" "$(echo "$ts / $td" | bc -l)" "$(echo $rt | tr ' ' /)" "$(echo $rd | tr ' ' /)"
done
# Reports (trawl only): every capture, and one.
for args in "" "--capture $ONE"; do
  hot() { "$TRAWL" report hotspots "$URL" --no-inline $args 2>/dev/null; }
  ts=$(median hot); rt=$(requests hot)
  printf '%-22s %9.2f s   trawl LIST/GET/HEAD %s\n' "hotspots ${args:-(all)}" "$ts" "$(echo $rt | tr ' ' /)"
done
