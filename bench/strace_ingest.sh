#!/usr/bin/env bash
# Whole-process comparison: `trawl ingest` of a large strace dump against a
# straightforward Python regex parser of the same lines (bench/strace_parse.py:
# prefix, call, return, duration, unfinished/resumed joining, -k frames),
# in the same run, printing seconds, peak RSS and ratios.
#
# The dump is generated, not committed: a parallel build (make -j2 of N
# small C files with gcc) traced with `strace -f -ttt -T -k -y`.
#
# Usage: bench/strace_ingest.sh [N_FILES]   (env BENCH_DIR, default /tmp/trawl-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-60}
W=${BENCH_DIR:-/tmp/trawl-bench}/strace
mkdir -p "$W/proj"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
DUMP="$W/build-$N.strace"

if [ ! -s "$DUMP" ]; then
  rm -f "$W"/proj/*
  for i in $(seq 1 "$N"); do
    sed "s/\bmain\b/main_$i/; s/\bspin_a\b/spin_a_$i/; s/\bspin_b\b/spin_b_$i/; s/\bfib\b/fib_$i/; s/\bwork\b/work_$i/; s/\blibc_work\b/libc_work_$i/; s/\bsink\b/sink_$i/" \
      fixtures/perf/src/hot.c > "$W/proj/f$i.c"
  done
  printf 'SRCS := $(wildcard f*.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tgcc -O1 -g -c $< -o $@\n' > "$W/proj/Makefile"
  strace -f -ttt -T -k -y -o "$DUMP" make -s -C "$W/proj" -j2 >/dev/null 2>&1
fi
SIZE=$(stat -c %s "$DUMP")
echo "input: $DUMP  $((SIZE / 1048576)) MB, $(wc -l < "$DUMP") lines"

source bench/lib.sh

# Both tools read a dump (and trawl a binary) already in the page cache;
# trawl's runs are short and the machine is noisy: the median of 3.
cat "$DUMP" "$TRAWL" > /dev/null
read -r PY_S PY_KB < <(t python python3 bench/strace_parse.py "$DUMP")
median3() { # label, command...: median "seconds maxrss_kb" of 3 runs
  local label=$1; shift
  for _ in 1 2 3; do rm -rf "$W/cap-$label"; t "$label" "$@" -o "$W/cap-$label"; done | sort -n | sed -n 2p
}
read -r TR_S TR_KB < <(median3 trawl "$TRAWL" ingest "$DUMP")
read -r TN_S TN_KB < <(median3 trawl_nosym "$TRAWL" ingest "$DUMP" --no-symbolize)

printf '%-40s %8s %10s\n' "" "seconds" "peak MB"   # trawl: median of 3
printf '%-40s %8.2f %10.1f\n' "python regex parser" "$PY_S" "$(mb "$PY_KB")"
printf '%-40s %8.2f %10.1f\n' "trawl ingest (with symbolization)" "$TR_S" "$(mb "$TR_KB")"
printf '%-40s %8.2f %10.1f\n' "trawl ingest --no-symbolize" "$TN_S" "$(mb "$TN_KB")"
echo "python: $(cat "$W/out.python")"
echo "trawl:  $(grep -o '[0-9]* system calls' "$W/err.trawl")"
echo "ratio python / trawl ingest:               $(ratio "$PY_S" "$TR_S")"
echo "ratio python / trawl ingest --no-symbolize: $(ratio "$PY_S" "$TN_S")"
