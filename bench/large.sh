#!/usr/bin/env bash
# Ingest of inputs of GB gigabytes (default 8), to check that time grows
# with the input and memory does not: prints, per input, seconds,
# throughput and peak RSS (GNU time), and for the perf.data the peer
# `perf script > /dev/null` in the same run.
#
# - perf.data: recorded here system-wide (`perf record -a -g`, cpu-clock
#   every 20 µs, frame-pointer call graphs) while short processes of
#   fixtures/perf/src/hot.c run two at a time, until the file passes GB
#   gigabytes (whatever else runs on the machine is in it too).
# - lackey log: bench/gen_lackey.py, the fixture's real log repeated with
#   its data addresses moved (64 times its pages).
# Both are ingested as files (mapped), trawl ingest with and without
# symbolization. Peak RSS should stay under 500 MB: what grows is per
# distinct stack and frame, not per byte (docs/guide/performance.md).
#
# Usage: bench/large.sh [GB]   (env BENCH_DIR, default /tmp/trawl-bench;
#        KEEP=1 keeps the inputs; PEER=0 skips perf script)
set -euo pipefail
cd "$(dirname "$0")/.."
GB=${1:-8}
W=${BENCH_DIR:-/tmp/trawl-bench}/large
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
source bench/lib.sh
LIMIT=$((GB * 1000000000))

PD=$W/big.data
if [ ! -s "$PD" ] || [ "$(stat -c %s "$PD")" -lt "$LIMIT" ]; then
  gcc -O1 -g -fno-omit-frame-pointer -o "$W/hot" fixtures/perf/src/hot.c
  rm -f "$PD"
  perf record -q -e cpu-clock -c 20000 -g -a -o "$PD" -- bash -c \
    "while [ \$(stat -c %s '$PD' 2>/dev/null || echo 0) -lt $LIMIT ]; do '$W/hot' 1 >/dev/null & '$W/hot' 1 >/dev/null; wait; done" \
    >/dev/null 2>&1
fi
LK=$W/big.lackey
if [ ! -s "$LK" ] || [ "$(stat -c %s "$LK")" -lt "$LIMIT" ]; then
  python3 bench/gen_lackey.py "$LK" "$LIMIT" >/dev/null
fi

row() { # row LABEL BYTES SECONDS KB
  printf '%-44s %9.1f %8.1f %10.1f %9.1f\n' "$1" "$(echo "$2/1000000000" | bc -l)" "$3" \
    "$(echo "$2/1000000/$3" | bc -l)" "$(mb "$4")"
}
printf '%-44s %9s %8s %10s %9s\n' "" "GB" "seconds" "MB/s" "peak MB"
PSIZE=$(stat -c %s "$PD")
if [ "${PEER:-1}" = 1 ]; then
  T_STDOUT=/dev/null
  read -r S KB < <(t perf_script perf script -i "$PD")
  unset T_STDOUT
  row "perf script > /dev/null" "$PSIZE" "$S" "$KB"
fi
rm -rf "$W/cap-perf"
read -r S KB < <(t perf_nosym "$TRAWL" ingest "$PD" -o "$W/cap-perf" --no-symbolize)
row "trawl ingest perf.data --no-symbolize" "$PSIZE" "$S" "$KB"
rm -rf "$W/cap-perf"
read -r S KB < <(t perf_sym "$TRAWL" ingest "$PD" -o "$W/cap-perf")
row "trawl ingest perf.data" "$PSIZE" "$S" "$KB"
echo "  $(tail -2 "$W/err.perf_sym" | head -1)"
echo "  samples: $("$TRAWL" sql "$W/cap-perf" 'SELECT count(*) FROM perf_sample' --format csv | tail -1)," \
  "distinct stacks: $("$TRAWL" sql "$W/cap-perf" 'SELECT count(DISTINCT stack_id) FROM perf_sample' --format csv | tail -1)," \
  "processes: $("$TRAWL" sql "$W/cap-perf" 'SELECT count(DISTINCT pid) FROM perf_sample' --format csv | tail -1)," \
  "capture: $(du -sm "$W/cap-perf" | cut -f1) MB"
LSIZE=$(stat -c %s "$LK")
rm -rf "$W/cap-lackey"
read -r S KB < <(t lackey "$TRAWL" ingest "$LK" -o "$W/cap-lackey" --no-symbolize)
row "trawl ingest lackey" "$LSIZE" "$S" "$KB"
echo "  $(tail -2 "$W/err.lackey" | head -1)"
rm -rf "$W/cap-perf" "$W/cap-lackey"
[ "${KEEP:-0}" = 1 ] || rm -f "$PD" "$LK"
