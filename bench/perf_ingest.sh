#!/usr/bin/env bash
# Whole-process comparison: `trawl ingest` against `perf script > /dev/null`
# on the same large perf.data, in the same run, printing times, peak
# memories (max RSS) and ratios.
#
# The input is recorded here, not committed: many short processes (a
# frame-pointer build of fixtures/perf/src/hot.c run N times, two at a
# time) sampled system-wide with call graphs at a 20 µs cpu-clock period,
# which gives about 1 M samples for the default N=220.
#
# Usage: bench/perf_ingest.sh [N_PROCESSES]   (env BENCH_DIR, default /tmp/trawl-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-220}
W=${BENCH_DIR:-/tmp/trawl-bench}
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl

if [ ! -s "$W/big-$N.data" ]; then
  gcc -O1 -g -fno-omit-frame-pointer -o "$W/hot" fixtures/perf/src/hot.c
  perf record -q -e cpu-clock -c 20000 -g -a -o "$W/big-$N.data" -- \
    bash -c "for i in \$(seq 1 $N); do '$W/hot' 1 >/dev/null & if (( i % 2 == 0 )); then wait; fi; done; wait" \
    >/dev/null 2>&1
fi
IN="$W/big-$N.data"
SIZE=$(stat -c %s "$IN")
SAMPLES=$(perf report -i "$IN" --stats 2>/dev/null | awk '/SAMPLE events:/ {print $3; exit}')
PROCS=$(perf report -i "$IN" --stats 2>/dev/null | awk '/COMM events:/ {print $3; exit}')
echo "input: $IN  $((SIZE / 1048576)) MB, $SAMPLES samples, $PROCS COMM records"

source bench/lib.sh
# perf script's text is not kept (it is as large as the recording).
T_STDOUT=/dev/null

read -r PS_S PS_KB < <(t perf_script perf script -i "$IN")
rm -rf "$W/cap"
read -r TR_S TR_KB < <(t trawl_ingest "$TRAWL" ingest "$IN" -o "$W/cap")
rm -rf "$W/cap-nosym"
read -r TN_S TN_KB < <(t trawl_nosym "$TRAWL" ingest "$IN" -o "$W/cap-nosym" --no-symbolize)

printf '%-38s %8s %10s\n' "" "seconds" "peak MB"
printf '%-38s %8.2f %10.1f\n' "perf script > /dev/null" "$PS_S" "$(echo "$PS_KB/1024" | bc -l)"
printf '%-38s %8.2f %10.1f\n' "trawl ingest (with symbolization)" "$TR_S" "$(echo "$TR_KB/1024" | bc -l)"
printf '%-38s %8.2f %10.1f\n' "trawl ingest --no-symbolize" "$TN_S" "$(echo "$TN_KB/1024" | bc -l)"
echo "ratio perf script / trawl ingest:               $(echo "$PS_S/$TR_S" | bc -l | cut -c1-6)x"
echo "ratio perf script / trawl ingest --no-symbolize: $(echo "$PS_S/$TN_S" | bc -l | cut -c1-6)x"
echo "trawl samples: $("$TRAWL" sql "$W/cap" 'SELECT count(*) FROM perf_sample' --format csv | tail -1)"
