#!/usr/bin/env bash
# The query layer against its peers, same input, same run:
#
#  1. a multi-process perf.data (bench/query_workload.sh: gcc compiles, a
#     few hundred short processes, qsort programs; ~2 M samples, a few
#     hundred thousand distinct stacks): `perf report`, `perf script`,
#     `trawl ingest`, each `trawl report` (hotspots by function, module and
#     srcline, callers, flame graph, timeline), and DuckDB answering
#     `report hotspots --no-inline` as one plain query over the same Parquet
#     (bench/hotspots_duckdb.py);
#  2. a directory of ARCHIVE_N copies of a small capture: `trawl sql DIR
#     "SELECT count(*) FROM perf_sample"` against DuckDB reading the same
#     files.
#
# Prints seconds, peak RSS and the ratios the query-layer goals name.
# Usage: bench/query.sh   (env BENCH_DIR, default /tmp/trawl-bench;
#        ARCHIVE_N, default 1000)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/query
N=${ARCHIVE_N:-1000}
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
source bench/lib.sh

IN=$W/multi.data
[ -s "$IN" ] || bench/query_workload.sh "$IN"
SAMPLES=$(perf report -i "$IN" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
COMMS=$(perf report -i "$IN" --stats 2>/dev/null | awk '/COMM events:/ {print $3; exit}')

T_STDOUT=/dev/null
row() { printf '%-52s %8.2f %10.1f\n' "$1" "$2" "$(mb "$3")"; }
read -r PR_S PR_KB < <(t perf_report perf report -i "$IN" --stdio --no-children --sort dso,sym)
read -r PS_S PS_KB < <(t perf_script perf script -i "$IN")
rm -rf "$W/cap"
read -r TI_S TI_KB < <(t ingest "$TRAWL" ingest "$IN" -o "$W/cap")
STACKS=$("$TRAWL" sql "$W/cap" "SELECT count(DISTINCT stack_id) FROM perf_sample" --format csv | tail -1)
PROCS=$("$TRAWL" sql "$W/cap" "SELECT count(DISTINCT pid) FROM perf_sample" --format csv | tail -1)
echo "input: $IN  $(( $(stat -c %s "$IN") / 1048576 )) MB, $SAMPLES samples, $COMMS COMM records, $PROCS sampled processes, $STACKS distinct stacks"

read -r HF_S HF_KB < <(t hot_function "$TRAWL" report hotspots "$W/cap")
read -r HN_S HN_KB < <(t hot_noinline "$TRAWL" report hotspots "$W/cap" --no-inline)
read -r HM_S HM_KB < <(t hot_module "$TRAWL" report hotspots "$W/cap" --by module)
read -r HS_S HS_KB < <(t hot_srcline "$TRAWL" report hotspots "$W/cap" --by srcline)
read -r CA_S CA_KB < <(t callers "$TRAWL" report callers main "$W/cap")
read -r FG_S FG_KB < <(t flamegraph "$TRAWL" report flamegraph "$W/cap" -o "$W/flame.svg")
read -r TL_S TL_KB < <(t timeline "$TRAWL" report timeline "$W/cap" --window 100ms)
read -r DD_S DD_KB < <(t duckdb python3 bench/hotspots_duckdb.py "$W/cap")

printf '%-52s %8s %10s\n' "" "seconds" "peak MB"
row "perf report --stdio --no-children --sort dso,sym" "$PR_S" "$PR_KB"
row "perf script > /dev/null" "$PS_S" "$PS_KB"
row "trawl ingest (with symbolization)" "$TI_S" "$TI_KB"
row "trawl report hotspots (by function, inline levels)" "$HF_S" "$HF_KB"
row "trawl report hotspots --no-inline" "$HN_S" "$HN_KB"
row "trawl report hotspots --by module" "$HM_S" "$HM_KB"
row "trawl report hotspots --by srcline" "$HS_S" "$HS_KB"
row "trawl report callers main" "$CA_S" "$CA_KB"
row "trawl report flamegraph" "$FG_S" "$FG_KB"
row "trawl report timeline --window 100ms" "$TL_S" "$TL_KB"
row "DuckDB: hotspots --no-inline as one query" "$DD_S" "$DD_KB"
echo "hotspots --no-inline / DuckDB:          time $(ratio "$HN_S" "$DD_S"), memory $(ratio "$HN_KB" "$DD_KB")   (goal <= 1.0x both)"
echo "flame graph:                            $FG_S s, $(printf %.0f "$(mb "$FG_KB")") MB   (goal <= 1 s, <= 300 MB)"
echo "perf report / (ingest + hotspots):      $(ratio "$PR_S" "$TI_S + $HN_S")   (goal >= 3x)"
echo "perf script / ingest:                   $(ratio "$PS_S" "$TI_S")   (goal >= 10x)"

# 2. Many captures: copies of one small capture.
A=$W/archive-$N
if [ ! -d "$A" ]; then
  rm -rf "$W/one"
  "$TRAWL" ingest fixtures/perf/hot-fp.data -o "$W/one" --no-symbolize 2>/dev/null
  mkdir -p "$A.tmp"
  for i in $(seq -w 1 "$N"); do cp -r "$W/one" "$A.tmp/c$i"; done
  mv "$A.tmp" "$A"
fi
# Both once untimed first: the files' pages cached for both (trawl also
# reads each capture's source footer for its schema version).
"$TRAWL" sql "$A" "SELECT count(*) FROM perf_sample" >/dev/null
python3 -c "import duckdb; duckdb.sql(\"SELECT count(*) FROM read_parquet('$A/*/perf_sample.parquet')\").fetchall()"
read -r AS_S AS_KB < <(t archive_trawl "$TRAWL" sql "$A" "SELECT count(*) FROM perf_sample")
read -r AD_S AD_KB < <(t archive_duckdb python3 -c "import duckdb,sys; print(duckdb.sql(\"SELECT count(*) FROM read_parquet('$A/*/perf_sample.parquet')\").fetchall())")
echo "== $N captures: SELECT count(*) FROM perf_sample"
row "trawl sql" "$AS_S" "$AS_KB"
row "DuckDB read_parquet('DIR/*/perf_sample.parquet')" "$AD_S" "$AD_KB"
echo "trawl / DuckDB:                         time $(ratio "$AS_S" "$AD_S")   (goal <= 2x)"
