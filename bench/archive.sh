#!/usr/bin/env bash
# Archives against their peers, same files, same run:
#
#  1. N real recordings (bench/archive_workload.sh: the fixture programs at
#     varying frequencies, every fifth run with an strace dump; default
#     1000): `trawl archive ingest -j 2` against `trawl ingest` one capture
#     after another (on the first 100 runs, and the whole batch timed too);
#  2. over the archive: `SELECT count(*) FROM perf_sample`, hotspots by
#     function across every capture, and hotspots of one capture (a
#     partition filter), each next to DuckDB reading the same Hive layout
#     (bench/hotspots_duckdb_archive.py);
#  3. memory of count(*) over a quarter of the captures and over all.
#
# Usage: bench/archive.sh   (env BENCH_DIR, default /tmp/trawl-bench; N)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/archive
N=${N:-1000}
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
source bench/lib.sh
T_STDOUT=/dev/null
row() { printf '%-58s %8.2f %10.1f\n' "$1" "$2" "$(mb "$3")"; }

bench/archive_workload.sh "$W/runs" "$N"
BYTES=$(du -sb "$W/runs" | cut -f1)

# 1. Ingest: the first 100 runs one by one and as a batch, then all.
rm -rf "$W/sub" "$W/one" "$W/a100" "$W/arch"
mkdir -p "$W/sub" "$W/one"
for d in $(ls "$W/runs" | head -100); do cp -al "$W/runs/$d" "$W/sub/"; done
one_by_one() { for d in "$W"/sub/*; do "$TRAWL" ingest "$d"/* -o "$W/one/$(basename "$d")" >/dev/null 2>&1; done; }
export -f one_by_one; export TRAWL W
read -r O_S O_KB < <(t one_by_one bash -c one_by_one)
read -r B_S B_KB < <(t batch100 "$TRAWL" archive ingest "$W/sub" -o "$W/a100" -j 2)
read -r A_S A_KB < <(t batch "$TRAWL" archive ingest "$W/runs" -o "$W/arch" -j 2)
read -r R_S R_KB < <(t rerun "$TRAWL" archive ingest "$W/runs" -o "$W/arch" -j 2)
CAPS=$("$TRAWL" sql "$W/arch" "SELECT count(*) FROM capture WHERE status = 'ok'" --format csv | tail -1)
SAMPLES=$("$TRAWL" sql "$W/arch" "SELECT count(*) FROM perf_sample" --format csv | tail -1)
echo "input: $N runs, $(( BYTES / 1048576 )) MB; archive: $CAPS captures, $SAMPLES samples"

# 2. Queries.
ONE=$("$TRAWL" sql "$W/arch" "SELECT capture FROM capture ORDER BY capture LIMIT 1 OFFSET $(( N / 2 ))" --format csv | tail -1)
G="$W/arch/segment=*/perf_sample.parquet"
# Each query once untimed first: the files' pages cached for both tools.
"$TRAWL" sql "$W/arch" "SELECT count(*) FROM perf_sample" >/dev/null
python3 -c "import duckdb; duckdb.sql(\"SELECT count(*) FROM read_parquet('$G', hive_partitioning = true)\").fetchall()"
read -r QC_S QC_KB < <(t count "$TRAWL" sql "$W/arch" "SELECT count(*) FROM perf_sample")
read -r DC_S DC_KB < <(t count_duckdb python3 -c "import duckdb; print(duckdb.sql(\"SELECT count(*) FROM read_parquet('$G', hive_partitioning = true)\").fetchall())")
read -r QH_S QH_KB < <(t hot "$TRAWL" report hotspots "$W/arch" --no-inline)
read -r DH_S DH_KB < <(t hot_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch")
read -r Q1_S Q1_KB < <(t hot1 "$TRAWL" sql "$W/arch" "SELECT * FROM hotspots('function', 'capture', '$ONE', 'inline', false)")
read -r D1_S D1_KB < <(t hot1_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch" "$ONE")

# 3. Memory against the number of captures: an archive of a quarter of them.
rm -rf "$W/quarter" "$W/quarter-src"; mkdir -p "$W/quarter-src"
for d in $(ls "$W/runs" | head -$(( N / 4 ))); do cp -al "$W/runs/$d" "$W/quarter-src/"; done
"$TRAWL" archive ingest "$W/quarter-src" -o "$W/quarter" -j 2 >/dev/null 2>&1
read -r QQ_S QQ_KB < <(t count_quarter "$TRAWL" sql "$W/quarter" "SELECT count(*) FROM perf_sample")

printf '%-58s %8s %10s\n' "" "seconds" "peak MB"
row "trawl ingest, one capture after another (100 runs)" "$O_S" "$O_KB"
row "trawl archive ingest -j 2 (the same 100 runs)" "$B_S" "$B_KB"
row "trawl archive ingest -j 2 ($N runs)" "$A_S" "$A_KB"
row "trawl archive ingest again (nothing changed)" "$R_S" "$R_KB"
row "trawl sql: count(*) over the archive" "$QC_S" "$QC_KB"
row "DuckDB: count(*) over the Hive layout" "$DC_S" "$DC_KB"
row "trawl report hotspots --no-inline (all captures)" "$QH_S" "$QH_KB"
row "DuckDB: the same hotspots" "$DH_S" "$DH_KB"
row "trawl: hotspots of one capture (partition filter)" "$Q1_S" "$Q1_KB"
row "DuckDB: hotspots of one capture" "$D1_S" "$D1_KB"
row "trawl sql: count(*) over $(( N / 4 )) captures" "$QQ_S" "$QQ_KB"
echo "batch ingest throughput / one by one:  $(ratio "$O_S" "$B_S")   (goal >= 1.5x)"
echo "count(*) / DuckDB:                     time $(ratio "$QC_S" "$DC_S")   (goal <= 2x)"
echo "hotspots (all) / DuckDB:               time $(ratio "$QH_S" "$DH_S")   (goal <= 3x)"
echo "hotspots (one capture) / DuckDB:       time $(ratio "$Q1_S" "$D1_S")   (goal <= 2x)"
echo "count(*) memory, all / a quarter:      $(ratio "$QC_KB" "$QQ_KB")   (goal: does not grow with captures)"
