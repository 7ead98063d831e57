#!/usr/bin/env bash
# Records the runs bench/archive.sh ingests: N run directories (default
# 1000), each a perf.data of one of the fixture programs (hot with scale
# 1-2, threads, inl, calls, procs) at a sampling frequency between 500 and
# 4000 Hz, with call graphs; every fifth run also has an strace dump of a
# short program (hot 0). Two recordings at a time.
# Usage: bench/archive_workload.sh OUTDIR [N]
set -euo pipefail
cd "$(dirname "$0")/../fixtures/perf"
OUT=$1
N=${2:-1000}
mkdir -p "$OUT"
rec() {
  local i=$1 d=$OUT/run$(printf %04d "$1")
  [ -s "$d/perf.data" ] && return 0
  mkdir -p "$d"
  local progs=("./bin/hot 1" "./bin/hot 2" "./bin/threads" "./bin/inl 5000000" "./bin/calls recurse 25" "./bin/procs ./bin/hot")
  local p=${progs[$((i % ${#progs[@]}))]}
  local f=$(( 500 + (i * 37) % 3500 ))
  perf record -q -e cpu-clock -F "$f" -g -o "$d/perf.data.tmp" $p >/dev/null 2>&1
  mv "$d/perf.data.tmp" "$d/perf.data"
  if [ $((i % 5)) -eq 0 ]; then
    strace -f -ttt -T -o "$d/calls.strace" ./bin/hot 0 >/dev/null 2>&1 || true
  fi
}
export -f rec
export OUT
seq 1 "$N" | xargs -P 2 -I{} bash -c 'rec {}'
