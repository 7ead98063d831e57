#!/usr/bin/env bash
# Whole-process comparison on a >= 1 GB valgrind lackey log, in the same
# run: `trawl ingest` (lackey text -> typed Parquet: mem_access, mem_fetch,
# mem_page) against DuckDB's CSV reader writing typed Parquet (kind, address,
# size; bench/lackey_duckdb.py) and `wc -l` reading the same file. Prints
# seconds, GB/s, peak RSS and ratios.
#
# The log is generated, not committed: lackey of `ls -lR` over
# /usr/share/doc and /usr/share/zoneinfo (about 1.1 GB here).
#
# Usage: bench/lackey_ingest.sh   (env BENCH_DIR, default /tmp/trawl-bench;
# ROUNDS, alternating DuckDB and trawl ingest runs, default 5)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/lackey
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
LOG="$W/ls-lR.lackey"
python3 -c 'import duckdb' 2>/dev/null || pip install -q duckdb

if [ ! -s "$LOG" ] || [ "$(stat -c %s "$LOG")" -lt 1000000000 ]; then
  valgrind --tool=lackey --trace-mem=yes --log-file="$LOG" \
    ls -lR /usr/share/doc /usr/share/zoneinfo > /dev/null 2>&1
fi
SIZE=$(stat -c %s "$LOG")
echo "input: $LOG  $((SIZE / 1048576)) MB"

source bench/lib.sh
gbs() { python3 -c "print(f'{$SIZE / $1 / 1e9:.2f}')"; }

# Everything reads a log already in the page cache. This VM's page cache
# does not keep a 1.1 GB file for long (`fincore` showed 20 % of the log
# gone again between runs, then read from disk inside the timed run), so
# the log and the program are read into it again right before every timed
# run, for every tool alike. The machine is noisy (its speed swings by
# ~40 % within minutes): DuckDB and trawl ingest run in alternation,
# ROUNDS times (default 5), so both see the same phases; each round's
# ratio is printed and the medians are compared.
warm() { cat "$LOG" "$@" > /dev/null; }
T_STDOUT=/dev/null
warm /usr/bin/wc
read -r WC_S WC_KB < <(t wc wc -l "$LOG")
median3() { # label, command...: median "seconds maxrss_kb" of 3 runs
  local label=$1; shift
  for _ in 1 2 3; do rm -rf "$W/cap-$label"; warm "$TRAWL"; t "$label" "$@" -o "$W/cap-$label"; done | sort -n | sed -n 2p
}
median() { sort -n | awk '{ v[NR] = $0 } END { print v[int((NR + 1) / 2)] }'; }
ROUNDS=${ROUNDS:-5}
: > "$W/runs.duckdb"
: > "$W/runs.trawl"
for r in $(seq "$ROUNDS"); do
  rm -f "$W/duck.parquet"
  warm
  t duckdb python3 bench/lackey_duckdb.py "$LOG" "$W/duck.parquet" >> "$W/runs.duckdb"
  rm -rf "$W/cap-trawl"
  warm "$TRAWL"
  t trawl "$TRAWL" ingest "$LOG" --no-symbolize -o "$W/cap-trawl" >> "$W/runs.trawl"
  echo "round $r: DuckDB $(sed -n "${r}p" "$W/runs.duckdb" | cut -d' ' -f1) s, trawl ingest $(sed -n "${r}p" "$W/runs.trawl" | cut -d' ' -f1) s, ratio $(ratio "$(sed -n "${r}p" "$W/runs.duckdb" | cut -d' ' -f1)" "$(sed -n "${r}p" "$W/runs.trawl" | cut -d' ' -f1)")"
done
read -r DK_S DK_KB < <(median < "$W/runs.duckdb")
read -r TR_S TR_KB < <(median < "$W/runs.trawl")
read -r TF_S TF_KB < <(median3 trawl_rows "$TRAWL" ingest "$LOG" --no-symbolize --fetch-rows)
rm -f "$W/log.tmem"
warm "$TRAWL"
read -r CV_S CV_KB < <(t convert "$TRAWL" convert lackey "$LOG" -o "$W/log.tmem")
read -r TB_S TB_KB < <(median3 trawl_bin "$TRAWL" ingest "$W/log.tmem" --no-symbolize)

printf '%-52s %8s %7s %9s\n' "" "seconds" "GB/s" "peak MB"
row() { printf '%-52s %8.2f %7s %9.1f\n' "$1" "$2" "$(gbs "$2")" "$(mb "$3")"; }
row "wc -l" "$WC_S" "$WC_KB"
row "DuckDB CSV -> typed Parquet (kind, address, size)" "$DK_S" "$DK_KB"
row "trawl ingest (loads/stores rows, fetch summary)" "$TR_S" "$TR_KB"
row "trawl ingest --fetch-rows (every record a row)" "$TF_S" "$TF_KB"
row "trawl convert lackey (text -> binary log)" "$CV_S" "$CV_KB"
printf '%-52s %8.2f %7s %9.1f\n' "trawl ingest of the binary log (text-equivalent GB/s)" "$TB_S" "$(gbs "$TB_S")" "$(mb "$TB_KB")"
echo "rows: $(grep -o '[0-9]* mem_access rows' "$W/err.trawl") (default), $(grep -o '[0-9]* mem_access rows' "$W/err.trawl_rows") (--fetch-rows)"
echo "sizes: text $((SIZE / 1048576)) MB, binary $(( $(stat -c %s "$W/log.tmem") / 1048576 )) MB ($(ratio "$SIZE" "$(stat -c %s "$W/log.tmem")") smaller), trawl capture $(du -sm "$W/cap-trawl" | cut -f1) MB, DuckDB Parquet $(( $(stat -c %s "$W/duck.parquet") / 1048576 )) MB"
echo "ratio DuckDB / trawl ingest:              $(ratio "$DK_S" "$TR_S")"
echo "ratio DuckDB / trawl ingest --fetch-rows: $(ratio "$DK_S" "$TF_S")"
echo "ratio trawl ingest / wc -l:               $(ratio "$TR_S" "$WC_S")"
