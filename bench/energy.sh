#!/usr/bin/env bash
# Whole-process comparison on the RAPL simulator's output (this machine
# has no RAPL: fixtures/synth/examples/rapl_sim.rs writes a perf.data whose
# cpu-clock group reads four counters and power/energy-cores/ every 1 ms,
# plus each counter sampled with its own power counter), in the same run:
# `perf report --group` (perf's per-symbol share of each group member,
# the power column included: the Fig. 1 profile of Ono et al. 2015,
# sampling-based power measurement) against
# `trawl ingest` + `trawl report energy` (the same split, in joules), and
# trawl's power model fit and power samples, which perf does not have.
# Prints seconds, peak RSS and ratios.
#
# Usage: bench/energy.sh [SECONDS]   (simulated run length, default 300;
# env BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
S=${1:-300}
W=${BENCH_DIR:-/tmp/trawl-bench}/energy
mkdir -p "$W"
cargo build --release -q
cargo build --release -q --example rapl_sim -p trawl-synth
TRAWL=$PWD/target/release/trawl
./target/release/examples/rapl_sim "$W" fixtures/perf/bin/lbr "$S"
DATA=$W/sim.data
SAMPLES=$(python3 -c "import json; print(sum(json.load(open('$W/sim-truth.json'))['samples']))")
echo "input: $DATA  $(( $(stat -c %s "$DATA") / 1048576 )) MB, $SAMPLES samples, $S s simulated"
source bench/lib.sh
export HOME=$W/home
mkdir -p "$HOME"
perf buildid-cache -a fixtures/perf/bin/lbr
cat "$DATA" > /dev/null
T_STDOUT=/dev/null
read -r PR_S PR_KB < <(t perf_report perf report -i "$DATA" --stdio --group -F overhead,sym -g none)
rm -rf "$W/cap"
read -r IN_S IN_KB < <(t ingest "$TRAWL" ingest "$DATA" -o "$W/cap" --debug-dir fixtures/perf/bin)
read -r RE_S RE_KB < <(t report_energy "$TRAWL" report energy "$W/cap" --format csv)
read -r PM_S PM_KB < <(t power_model "$TRAWL" report power-model "$W/cap" --format csv)
read -r PS_S PS_KB < <(t power_samples "$TRAWL" report power-samples "$W/cap" --format csv)
printf '%-52s %8s %9s\n' "" "seconds" "peak MB"
row() { printf '%-52s %8.2f %9.1f\n' "$1" "$2" "$(mb "$3")"; }
row "perf report --group (all groups)" "$PR_S" "$PR_KB"
row "trawl ingest (incl. symbolization)" "$IN_S" "$IN_KB"
row "trawl report energy" "$RE_S" "$RE_KB"
row "trawl report power-model" "$PM_S" "$PM_KB"
row "trawl report power-samples (15 subsets)" "$PS_S" "$PS_KB"
echo "ratio perf report / (trawl ingest + report energy): $(python3 -c "print(f'{$PR_S / ($IN_S + $RE_S):.1f}x')")"
echo "ratio perf report / trawl report energy (capture ingested once): $(ratio "$PR_S" "$RE_S")"
