#!/usr/bin/env bash
# Archives of many captures against their peers, same files, same run.
#
# The archive: N captures (default 10,000) made of 100 recorded runs
# (bench/sysruns_workload.sh: perf record -g of ls -lR, gzip, sha256sum
# and a small C program, ~250 samples each), each linked N/100 times
# under new names (hard links: the same bytes, a new capture each time).
# Then 100 new runs of the same programs are added to it. The one-capture
# baseline is one long recording of the same four programs (perf record
# -e cpu-clock -c 20000 -g, ~1 M samples).
#
# Rows: ingest of the N captures and of 100 new runs (three batches, the
# median); count(*) and GROUP BY comm over every capture, each next to
# DuckDB reading the same segments with the documented glob; `report hotspots --no-inline` over
# every capture, in nanoseconds per sample next to the same report on the
# one long capture; DuckDB's hotspots over every capture
# (bench/hotspots_duckdb_archive.py); one capture's hotspots out of the
# archive. Seconds are whole processes, the median of 3 after a warm-up
# run (the files' pages cached for both tools).
#
# Usage: bench/archive_many.sh   (env N, BENCH_DIR, TRAWL, KEEP=1 keeps
#        the archive)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/many
N=${N:-10000}
mkdir -p "$W"
if [ -z "${TRAWL:-}" ]; then
  cargo build --release -q --bin trawl
  TRAWL=$PWD/target/release/trawl
fi
source bench/lib.sh
T_STDOUT=/dev/null
python3 -c 'import duckdb' 2>/dev/null || pip install -q duckdb
median3() { # label, command...: median "seconds maxrss_kb" of 3 runs
  local label=$1; shift
  "$@" >/dev/null 2>&1 || true
  for _ in 1 2 3; do t "$label" "$@"; done | sort -n | sed -n 2p
}
row() { printf '| %s | %.2f s, %.0f MB | %s | %s |\n' "$1" "$2" "$(mb "$3")" "$4" "$5"; }

# The runs, the new runs, and the long recording.
bench/sysruns_workload.sh "$W/runs" 100 0
bench/sysruns_workload.sh "$W/new" 100 1
BIN=$W/sysruns-bin
if [ ! -s "$W/long/perf.data" ]; then
  mkdir -p "$W/long"
  cat > "$W/long/loop.sh" <<EOF
end=\$((\$(date +%s) + 12))
while [ \$(date +%s) -lt \$end ]; do
  ls -lR /usr/share/doc >/dev/null; gzip -c $BIN/data >/dev/null
  sha256sum $BIN/data >/dev/null; $BIN/hot 1 >/dev/null
done
EOF
  perf record -q -e cpu-clock -c 20000 -g -o "$W/long/perf.data.tmp" -- \
    bash -c "bash $W/long/loop.sh & bash $W/long/loop.sh; wait" >/dev/null 2>&1
  mv "$W/long/perf.data.tmp" "$W/long/perf.data"
fi

# N captures: run i is runs/run(i mod 100), linked.
rm -rf "$W/src" "$W/arch" "$W/onecap"
python3 - "$W" "$N" <<'EOF'
import os, sys
w, n = sys.argv[1], int(sys.argv[2])
runs = sorted(os.listdir(f"{w}/runs"))
for i in range(n):
    d = f"{w}/src/c{i:06d}"
    os.makedirs(d)
    os.link(f"{w}/runs/{runs[i % len(runs)]}/perf.data", f"{d}/perf.data")
EOF
"$TRAWL" ingest "$W/long/perf.data" -o "$W/onecap" >/dev/null 2>&1

read -r I_S I_KB < <(t ingest "$TRAWL" archive ingest "$W/src" -o "$W/arch" -j 2)
# Three batches of the 100 new runs (under new names), one after another:
# the median, as for the other rows (the first, right after the long
# ingest, is also printed).
A_ALL=()
for k in 1 2 3; do
  for d in "$W"/new/*; do cp -al "$d" "$W/src/new$k-$(basename "$d")"; done
  A_ALL+=("$(t add100_$k "$TRAWL" archive ingest "$W/src" -o "$W/arch" -j 2)")
done
read -r A_S A_KB < <(printf '%s\n' "${A_ALL[@]}" | sort -n | sed -n 2p)
A_EACH=$(printf '%s\n' "${A_ALL[@]}" | awk '{printf "%s%.2f", (NR > 1 ? ", " : ""), $1}')
CAPS=$("$TRAWL" sql "$W/arch" "SELECT count(*) FROM capture WHERE status = 'ok'" --format csv | tail -1)
SAMPLES=$("$TRAWL" sql "$W/arch" "SELECT count(*) FROM perf_sample" --format csv | tail -1)
FILES=$(find "$W/arch" -name '*.parquet' | wc -l)
LONG=$("$TRAWL" sql "$W/onecap" "SELECT count(*) FROM perf_sample" --format csv | tail -1)
ONE=$("$TRAWL" sql "$W/arch" "SELECT capture FROM capture ORDER BY capture LIMIT 1 OFFSET $(( N / 2 ))" --format csv | tail -1)
echo "archive: $CAPS captures, $SAMPLES samples, $FILES Parquet files, $(du -sm "$W/arch" | cut -f1) MB; long capture: $LONG samples"

G="$W/arch/segment=*/perf_sample.parquet"
DUCK="import duckdb, sys; print(duckdb.sql(sys.argv[1].replace('FROM perf_sample', \"FROM read_parquet('$G', hive_partitioning = true)\")).fetchall()[:3])"
QC="SELECT count(*) FROM perf_sample"
QG="SELECT comm, count(*) AS n FROM perf_sample GROUP BY comm ORDER BY n DESC"
read -r C_S C_KB < <(median3 count "$TRAWL" sql "$W/arch" "$QC")
read -r DC_S DC_KB < <(median3 count_duckdb python3 -c "$DUCK" "$QC")
read -r G_S G_KB < <(median3 groupby "$TRAWL" sql "$W/arch" "$QG")
read -r DG_S DG_KB < <(median3 groupby_duckdb python3 -c "$DUCK" "$QG")
read -r H_S H_KB < <(median3 hot "$TRAWL" report hotspots "$W/arch" --no-inline)
read -r DH_S DH_KB < <(median3 hot_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch")
read -r L_S L_KB < <(median3 hot_long "$TRAWL" report hotspots "$W/onecap" --no-inline)
read -r O_S O_KB < <(median3 hot_one "$TRAWL" report hotspots "$W/arch" --capture "$ONE" --no-inline)
read -r DO_S DO_KB < <(median3 hot_one_duckdb python3 bench/hotspots_duckdb_archive.py "$W/arch" "$ONE")

ns() { python3 -c "print(f'{$1 * 1e9 / $2:.0f} ns/sample')"; }
echo
echo "| $N captures | trawl | peer | goal |"
echo "|---|---|---|---|"
row "archive ingest -j 2 ($N captures)" "$I_S" "$I_KB" "" "$([ "$N" -ge 100000 ] && echo "≤ 10 min")"
row "archive ingest of 100 new runs into it (median of 3 batches: $A_EACH s)" "$A_S" "$A_KB" "" "≤ 3 s"
row "count(*) over every capture" "$C_S" "$C_KB" "DuckDB $(printf '%.2f s, %.0f MB' "$DC_S" "$(mb "$DC_KB")")" "≤ 0.2 s"
row "GROUP BY comm over every capture" "$G_S" "$G_KB" "DuckDB $(printf '%.2f s, %.0f MB' "$DG_S" "$(mb "$DG_KB")")" "≤ 1× DuckDB"
row "report hotspots --no-inline, every capture: $(ns "$H_S" "$SAMPLES")" "$H_S" "$H_KB" "one capture of $LONG samples: $(printf '%.2f s' "$L_S"), $(ns "$L_S" "$LONG"); DuckDB $(printf '%.2f s, %.0f MB' "$DH_S" "$(mb "$DH_KB")")" "≤ 2× per sample, ≤ 500 MB"
row "report hotspots --no-inline --capture ONE" "$O_S" "$O_KB" "DuckDB $(printf '%.2f s, %.0f MB' "$DO_S" "$(mb "$DO_KB")")" "≤ 0.3 s"
echo "GROUP BY comm / DuckDB: $(ratio "$G_S" "$DG_S")   hotspots per sample, archive / one capture: $(python3 -c "print(f'{($H_S / $SAMPLES) / ($L_S / $LONG):.2f}')")"
[ -n "${KEEP:-}" ] || rm -rf "$W/src" "$W/arch"
