#!/usr/bin/env bash
# Records short runs of everyday programs, as a team archives them: N run
# directories (default 100), each one perf.data of `perf record -g` (cpu-
# clock at 2 kHz) of one of: `ls -lR /usr/share/doc`, `gzip -c` of a
# 4 MB file, `sha256sum` of it, and a small C program (fixtures/perf/src/
# hot.c built with -O1 -g). About 300 samples each, in libc (Debian's
# libc6-dbg gives its lines), the kernel and the programs. Two at a time.
# SEED names a second batch of new runs of the same programs.
# Usage: bench/sysruns_workload.sh OUTDIR [N] [SEED]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
N=${2:-100}
SEED=${3:-0}
mkdir -p "$OUT"
BIN=$(dirname "$OUT")/sysruns-bin
mkdir -p "$BIN"
[ -x "$BIN/hot" ] || gcc -O1 -g -fno-omit-frame-pointer -o "$BIN/hot" fixtures/perf/src/hot.c
[ -s "$BIN/data" ] || head -c 4000000 /dev/urandom | base64 > "$BIN/data"
rec() {
  local i=$1 d=$OUT/run$(printf %04d "$1")
  [ -s "$d/perf.data" ] && return 0
  mkdir -p "$d"
  local progs=("ls -lR /usr/share/doc" "gzip -c $BIN/data" "sha256sum $BIN/data" "$BIN/hot 1")
  local p=${progs[$(( (i + SEED) % 4 ))]}
  perf record -q -e cpu-clock -F 2000 -g -o "$d/perf.data.tmp" -- $p >/dev/null 2>&1
  mv "$d/perf.data.tmp" "$d/perf.data"
}
export -f rec
export OUT BIN SEED
seq 1 "$N" | xargs -P 2 -I{} bash -c 'rec {}'
