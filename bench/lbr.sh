#!/usr/bin/env bash
# Whole-process comparison on a perf.data with 16-entry branch stacks
# (written by fixtures/synth/examples/lbr_synth.rs around fixtures/perf/bin/lbr:
# this machine cannot record LBR), in the same run: `perf script -F
# ip,sym,brstacksym` (perf's own way to read the stacks) against `trawl
# ingest` (branch rows, frames, rebuilt stacks, symbolization) and
# `trawl report lbr` (pseudo-samples by method 3, per function; the
# transitions). Prints seconds, peak RSS and ratios.
#
# Usage: bench/lbr.sh [SAMPLES]   (default 200000; env BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-200000}
W=${BENCH_DIR:-/tmp/trawl-bench}/lbr
mkdir -p "$W"
cargo build --release -q
cargo build --release -q --example lbr_synth -p trawl-synth
TRAWL=$PWD/target/release/trawl
BIN=$PWD/fixtures/perf/bin/lbr
DATA=$W/lbr.data
./target/release/examples/lbr_synth "$DATA" "$N" "$BIN"
echo "input: $DATA  $(( $(stat -c %s "$DATA") / 1048576 )) MB, $N samples x 16 entries"
source bench/lib.sh
cat "$DATA" > /dev/null
T_STDOUT=/dev/null
read -r PS_S PS_KB < <(t perf_script perf script -F ip,sym,brstacksym -i "$DATA")
rm -rf "$W/cap"
read -r IN_S IN_KB < <(t ingest "$TRAWL" ingest "$DATA" -o "$W/cap")
read -r RF_S RF_KB < <(t report_fn "$TRAWL" report lbr "$W/cap" --method 3 --format csv)
read -r RT_S RT_KB < <(t report_tr "$TRAWL" report lbr "$W/cap" --view transitions --format csv)
printf '%-52s %8s %9s\n' "" "seconds" "peak MB"
row() { printf '%-52s %8.2f %9.1f\n' "$1" "$2" "$(mb "$3")"; }
row "perf script -F ip,sym,brstacksym" "$PS_S" "$PS_KB"
row "trawl ingest (incl. symbolization)" "$IN_S" "$IN_KB"
row "trawl report lbr --method 3 (functions)" "$RF_S" "$RF_KB"
row "trawl report lbr --view transitions" "$RT_S" "$RT_KB"
echo "ratio perf script / trawl ingest:                $(ratio "$PS_S" "$IN_S")"
echo "ratio perf script / (ingest + report method 3):  $(python3 -c "print(f'{$PS_S / ($IN_S + $RF_S):.1f}x')")"
