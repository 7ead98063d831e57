#!/usr/bin/env bash
# Whole-process comparison with `perf report`, same input, same run:
#
#  1. the large perf.data of bench/perf_ingest.sh (recorded there when
#     missing): `perf report --stdio` against `trawl ingest` (which
#     symbolizes) followed by `trawl report hotspots` on the capture;
#  2. a frame-pointer recording of a few MB (fixtures/perf/src/hot.c run
#     RUNS times, call graphs at 10 kHz): `perf report --stdio --sort
#     sym,srcline` (perf runs addr2line for the source lines) against `trawl ingest` followed by
#     `trawl report hotspots --by srcline`.
#
# Prints seconds, peak RSS and ratios.
# Usage: bench/perf_report.sh [N_PROCESSES] [RUNS_OF_HOT_IN_FP_RECORDING]
#        (env BENCH_DIR, default /tmp/trawl-bench; SKIP_BIG=1 skips part 1)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-220}
RUNS=${2:-12}
W=${BENCH_DIR:-/tmp/trawl-bench}
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl

source bench/lib.sh

if [ -z "${SKIP_BIG:-}" ]; then
  [ -s "$W/big-$N.data" ] || bench/perf_ingest.sh "$N" >/dev/null
  IN="$W/big-$N.data"
  echo "== 1. $IN: $(( $(stat -c %s "$IN") / 1048576 )) MB"
  read -r PR_S PR_KB < <(t report perf report -i "$IN" --stdio)
  rm -rf "$W/cap-r"
  read -r TI_S TI_KB < <(t ingest "$TRAWL" ingest "$IN" -o "$W/cap-r")
  read -r TH_S TH_KB < <(t hotspots "$TRAWL" report hotspots "$W/cap-r")
  printf '%-44s %8s %10s\n' "" "seconds" "peak MB"
  printf '%-44s %8.2f %10.1f\n' "perf report --stdio" "$PR_S" "$(mb "$PR_KB")"
  printf '%-44s %8.2f %10.1f\n' "trawl ingest (with symbolization)" "$TI_S" "$(mb "$TI_KB")"
  printf '%-44s %8.2f %10.1f\n' "trawl report hotspots" "$TH_S" "$(mb "$TH_KB")"
  echo "ratio perf report / (trawl ingest + hotspots): $(ratio "$PR_S" "$TI_S + $TH_S")"
fi

FP="$W/fp-$RUNS.data"
if [ ! -s "$FP" ]; then
  gcc -O1 -g -fno-omit-frame-pointer -o "$W/hot" fixtures/perf/src/hot.c
  perf record -q -e cpu-clock -F 10000 -g -o "$FP" -- \
    bash -c "for i in \$(seq 1 $RUNS); do '$W/hot' 4; done" >/dev/null 2>&1
fi
echo "== 2. $FP: $(( $(stat -c %s "$FP") / 1024 )) KB"
read -r PS_S PS_KB < <(t srcline perf report -i "$FP" --stdio --sort sym,srcline)
rm -rf "$W/cap-s"
read -r SI_S SI_KB < <(t ingest_s "$TRAWL" ingest "$FP" -o "$W/cap-s")
read -r SH_S SH_KB < <(t hotspots_s "$TRAWL" report hotspots "$W/cap-s" --by srcline)
printf '%-44s %8s %10s\n' "" "seconds" "peak MB"
printf '%-44s %8.2f %10.1f\n' "perf report --stdio --sort sym,srcline" "$PS_S" "$(mb "$PS_KB")"
printf '%-44s %8.2f %10.1f\n' "trawl ingest (with symbolization)" "$SI_S" "$(mb "$SI_KB")"
printf '%-44s %8.2f %10.1f\n' "trawl report hotspots --by srcline" "$SH_S" "$(mb "$SH_KB")"
echo "ratio perf report / (trawl ingest + hotspots): $(ratio "$PS_S" "$SI_S + $SH_S")"
