#!/usr/bin/env bash
# Exports against the tools people use to get the same file, same input,
# same run:
#
#  - folded stacks: `perf script | inferno-collapse-perf` (inferno, the
#    Rust port of flamegraph.pl's stackcollapse-perf.pl) against
#    `trawl export --to folded`;
#  - Firefox Profiler: `samply import FILE --save-only
#    --unstable-presymbolicate` (samply writes the profile and its symbol
#    sidecar; without presymbolication its profile is raw addresses)
#    against `trawl export --to firefox`;
#  - pprof and speedscope: trawl alone (nothing here turns a perf.data into
#    them: pprof's own converter, perf_data_converter, is not packaged).
#
# trawl starts from a capture: `trawl ingest` (symbolized) is timed once
# and printed apart, so both "export alone" and "ingest + export" can be
# read off. Sample totals of both folded outputs are printed (they must
# agree: both count every sample of the file).
#
# The input is bench/perf_ingest.sh's (recorded when missing). The peers
# are installed from crates.io into $PEERS (default $W/peers) when missing.
#
# Usage: bench/export.sh [N_PROCESSES]   (env BENCH_DIR, default /tmp/trawl-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-220}
W=${BENCH_DIR:-/tmp/trawl-bench}
PEERS=${PEERS:-$W/peers}
mkdir -p "$W"
cargo build --release -q -p trawl
TRAWL=$PWD/target/release/trawl
for tool in inferno-collapse-perf samply; do
  [ -x "$PEERS/bin/$tool" ] || cargo install -q --locked inferno samply --root "$PEERS"
done
COLLAPSE=$PEERS/bin/inferno-collapse-perf
SAMPLY=$PEERS/bin/samply

[ -s "$W/big-$N.data" ] || bench/perf_ingest.sh "$N" >/dev/null
IN="$W/big-$N.data"
echo "input: $IN  $(( $(stat -c %s "$IN") / 1048576 )) MB"

source bench/lib.sh
T_STDOUT=/dev/null
rm -rf "$W/cap-x"
read -r TI_S TI_KB < <(t ingest "$TRAWL" ingest "$IN" -o "$W/cap-x")

# Folded: the peer is a pipeline; time it as one command.
read -r PF_S PF_KB < <(t folded_peer bash -c "perf script -i '$IN' 2>/dev/null | '$COLLAPSE' > '$W/peer.folded'")
read -r TF_S TF_KB < <(t folded "$TRAWL" export "$W/cap-x" --to folded -o "$W/trawl.folded")
sum() { awk '{ n += $NF } END { printf "%.0f\n", n }' "$1"; }
echo "folded sample totals: peer $(sum "$W/peer.folded"), trawl $(sum "$W/trawl.folded")"

rm -f "$W/peer.json" "$W/peer.json.syms.json"
read -r PX_S PX_KB < <(t firefox_peer "$SAMPLY" import "$IN" --save-only --unstable-presymbolicate -o "$W/peer.json")
read -r TX_S TX_KB < <(t firefox "$TRAWL" export "$W/cap-x" --to firefox -o "$W/trawl.json")
read -r TP_S TP_KB < <(t pprof "$TRAWL" export "$W/cap-x" --to pprof -o "$W/trawl.pb.gz")
read -r TS_S TS_KB < <(t speedscope "$TRAWL" export "$W/cap-x" --to speedscope -o "$W/trawl.speedscope.json")

printf '%-58s %8s %10s %8s\n' "" "seconds" "peak MB" "MB out"
row() { printf '%-58s %8.2f %10.1f %8.1f\n' "$1" "$2" "$(mb "$3")" "$(echo "$(stat -c %s "$4")/1048576" | bc -l)"; }
printf '%-58s %8.2f %10.1f\n' "trawl ingest (symbolized; once for all exports)" "$TI_S" "$(mb "$TI_KB")"
row "perf script | inferno-collapse-perf" "$PF_S" "$PF_KB" "$W/peer.folded"
row "trawl export --to folded" "$TF_S" "$TF_KB" "$W/trawl.folded"
row "samply import --save-only --unstable-presymbolicate" "$PX_S" "$PX_KB" "$W/peer.json"
row "trawl export --to firefox" "$TX_S" "$TX_KB" "$W/trawl.json"
row "trawl export --to pprof" "$TP_S" "$TP_KB" "$W/trawl.pb.gz"
row "trawl export --to speedscope" "$TS_S" "$TS_KB" "$W/trawl.speedscope.json"
echo "folded:  peer / export $(ratio "$PF_S" "$TF_S"), peer / (ingest + export) $(ratio "$PF_S" "$TI_S + $TF_S")"
echo "firefox: peer / export $(ratio "$PX_S" "$TX_S"), peer / (ingest + export) $(ratio "$PX_S" "$TI_S + $TX_S")"
