#!/usr/bin/env bash
# The same queries on one machine and on a Ballista cluster (a `trawl
# cluster scheduler` and two `trawl cluster executor`s on this machine,
# reading the archive at the same path), same archive, same run:
# count(*), hotspots across every capture, hotspots of one capture; each
# answer compared, each time next to DuckDB on the same files. On one
# machine a cluster only adds its overheads (plans sent over gRPC, results
# and shuffles through Arrow Flight, stages one after another): this
# measures them, it does not claim a speed-up.
#
# Usage: bench/cluster.sh   (env BENCH_DIR, default /tmp/trawl-bench; N
# runs, default 200, recorded by bench/archive_workload.sh)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/cluster
N=${N:-200}
mkdir -p "$W"
cargo build --release -q -p trawl
TRAWL=$PWD/target/release/trawl
source bench/lib.sh
row() { printf '%-58s %8.2f %10.1f\n' "$1" "$2" "$(mb "$3")"; }

bench/archive_workload.sh "$W/runs" "$N"
[ -d "$W/arch" ] || "$TRAWL" archive ingest "$W/runs" -o "$W/arch" -j 2 >/dev/null 2>&1

PORT=${PORT:-50950}
PIDS=()
cleanup() { for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
"$TRAWL" cluster scheduler --bind 127.0.0.1:$PORT >"$W/scheduler.log" 2>&1 & PIDS+=($!)
mkdir -p "$W/work1" "$W/work2"
"$TRAWL" cluster executor --scheduler localhost:$PORT --port $((PORT + 1)) --grpc-port $((PORT + 2)) -j 1 --work-dir "$W/work1" >"$W/executor1.log" 2>&1 & PIDS+=($!)
"$TRAWL" cluster executor --scheduler localhost:$PORT --port $((PORT + 3)) --grpc-port $((PORT + 4)) -j 1 --work-dir "$W/work2" >"$W/executor2.log" 2>&1 & PIDS+=($!)
for _ in $(seq 100); do
  [ "$(grep -c 'Received register executor request' "$W/scheduler.log" || true)" -ge 2 ] && break
  sleep 0.1
done
C="--cluster df://localhost:$PORT"
ONE=$("$TRAWL" sql "$W/arch" "SELECT capture FROM capture ORDER BY capture LIMIT 1 OFFSET $(( N / 2 ))" --format csv | tail -1)
G="$W/arch/segment=*/perf_sample.parquet"
SAMPLES=$("$TRAWL" sql "$W/arch" "SELECT count(*) FROM perf_sample" --format csv | tail -1)
echo "archive: $N captures, $SAMPLES samples"

COUNT="SELECT count(*) FROM perf_sample"
HOT1="SELECT * FROM hotspots('function', 'capture', '$ONE', 'inline', false)"
# Once untimed: pages cached, and the answers compared.
for q in "$COUNT" "$HOT1"; do
  "$TRAWL" sql "$W/arch" "$q" --format csv | sort >"$W/local.csv"
  "$TRAWL" $C sql "$W/arch" "$q" --format csv | sort >"$W/cluster.csv"
  cmp -s "$W/local.csv" "$W/cluster.csv" || { echo "different answers: $q" >&2; exit 1; }
done
"$TRAWL" report hotspots "$W/arch" --no-inline >"$W/local.txt"
"$TRAWL" $C report hotspots "$W/arch" --no-inline >"$W/cluster.txt"
cmp -s "$W/local.txt" "$W/cluster.txt" || { echo "different answers: report hotspots" >&2; exit 1; }

T_STDOUT=/dev/null
read -r LC_S LC_KB < <(t count "$TRAWL" sql "$W/arch" "$COUNT")
read -r CC_S CC_KB < <(t count_cluster "$TRAWL" $C sql "$W/arch" "$COUNT")
read -r DC_S DC_KB < <(t count_duckdb python3 -c "import duckdb; print(duckdb.sql(\"SELECT count(*) FROM read_parquet('$G', hive_partitioning = true)\").fetchall())")
read -r LH_S LH_KB < <(t hot "$TRAWL" report hotspots "$W/arch" --no-inline)
read -r CH_S CH_KB < <(t hot_cluster "$TRAWL" $C report hotspots "$W/arch" --no-inline)
read -r DH_S DH_KB < <(t hot_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch")
read -r L1_S L1_KB < <(t hot1 "$TRAWL" sql "$W/arch" "$HOT1")
read -r C1_S C1_KB < <(t hot1_cluster "$TRAWL" $C sql "$W/arch" "$HOT1")
read -r D1_S D1_KB < <(t hot1_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch" "$ONE")

printf '%-58s %8s %10s\n' "" "seconds" "peak MB"
row "trawl sql: count(*), one machine" "$LC_S" "$LC_KB"
row "trawl --cluster sql: count(*) (client)" "$CC_S" "$CC_KB"
row "DuckDB: count(*)" "$DC_S" "$DC_KB"
row "trawl report hotspots --no-inline, one machine" "$LH_S" "$LH_KB"
row "trawl --cluster report hotspots --no-inline (client)" "$CH_S" "$CH_KB"
row "DuckDB: the same hotspots" "$DH_S" "$DH_KB"
row "trawl: hotspots of one capture, one machine" "$L1_S" "$L1_KB"
row "trawl --cluster: hotspots of one capture (client)" "$C1_S" "$C1_KB"
row "DuckDB: hotspots of one capture" "$D1_S" "$D1_KB"
echo "cluster / one machine: count $(ratio "$CC_S" "$LC_S"), hotspots $(ratio "$CH_S" "$LH_S"), one capture $(ratio "$C1_S" "$L1_S")"
echo "cluster / DuckDB:      count $(ratio "$CC_S" "$DC_S"), hotspots $(ratio "$CH_S" "$DH_S"), one capture $(ratio "$C1_S" "$D1_S")"
echo "executor RSS (MB): $(ps -o rss= -p "${PIDS[1]}" | awk '{print $1/1024}') and $(ps -o rss= -p "${PIDS[2]}" | awk '{print $1/1024}') (current, after the runs)"
