#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets/) for SECONDS each, one after
# the other, from its corpus (fuzz/corpus/TARGET, seeded by fuzz/seed.sh
# when empty), with libFuzzer's limits: 10 s per input (a hang), 2 GB
# RSS and 1 GB in one allocation (an allocation driven by a count read
# from the input). Built with release optimizations plus debug assertions
# (integer overflow is a panic, as in the debug builds CI tests) and
# AddressSanitizer. Prints, per target: executions, executions per second,
# coverage (libFuzzer's `cov`: edges reached) and features (`ft`), the
# corpus before and after, and findings (crash-/timeout-/oom-/leak- files
# under fuzz/artifacts/TARGET). Runs in libFuzzer's fork mode, so a finding
# does not end the run: every target gets its whole time. Afterwards `fuzz/cmin.sh` minimizes the
# corpora for committing.
#
# Usage: bench/fuzz.sh [SECONDS] [TARGET...]   (default 600, every target)
#        JOBS=2 runs two targets at once.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"
SECS=${1:-600}
shift || true
TARGETS=("$@")
if [ ${#TARGETS[@]} -eq 0 ]; then
  TARGETS=($(ls fuzz_targets | sed 's/\.rs$//'))
fi
if [ "${TABLE_ONLY:-0}" != 1 ]; then
  # The committed corpora hold inputs under 16 KB; the fixtures (larger)
  # are added back as seeds.
  ./seed.sh >/dev/null
  cargo +nightly fuzz build -O -a >/dev/null
fi
BIN=$PWD/target/x86_64-unknown-linux-gnu/release
LOGS=${BENCH_DIR:-/tmp/trawl-bench}/fuzz
mkdir -p "$LOGS"
run() {
  local t=$1
  local before
  before=$(ls corpus/$t | wc -l)
  mkdir -p artifacts/$t
  # The binary cargo fuzz built (run directly: sources edited meanwhile
  # do not trigger a rebuild in the middle of the runs).
  "$BIN/$t" -artifact_prefix=artifacts/$t/ corpus/$t \
    -max_total_time="$SECS" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -fork=1 -ignore_crashes=1 -ignore_timeouts=1 -ignore_ooms=1 \
    -close_fd_mask=3 > "$LOGS/$t.log" 2>&1 || true
  echo "$before" > "$LOGS/$t.before"
}
JOBS=${JOBS:-1}
# TABLE_ONLY=1: the table of the last runs' logs, nothing run.
[ "${TABLE_ONLY:-0}" = 1 ] && TARGETS_RUN=() || TARGETS_RUN=("${TARGETS[@]}")
for t in "${TARGETS_RUN[@]}"; do
  run "$t" &
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
done
wait
printf '%-14s %8s %12s %9s %7s %7s %15s %s\n' target seconds executions exec/s cov ft corpus findings
for t in "${TARGETS[@]}"; do
  L=$LOGS/$t.log
  last=$(grep -E '^#[0-9]+' "$L" | tail -1)
  execs=$(echo "$last" | grep -oE '^#[0-9]+' | tr -d '#' || echo 0)
  cov=$(echo "$last" | grep -o 'cov: [0-9]*' | grep -o '[0-9]*' || echo ?)
  ft=$(echo "$last" | grep -o 'ft: [0-9]*' | grep -o '[0-9]*' || echo ?)
  secs=$(echo "$last" | sed -nE 's/.* time: ([0-9]+)s.*/\1/p')
  secs=${secs:-$SECS}
  findings=$(ls artifacts/$t 2>/dev/null | grep -cE '^(crash|timeout|oom|leak|slow-unit)-' || true)
  printf '%-14s %8s %12s %9s %7s %7s %15s %s\n' "$t" "$secs" "$execs" "$((execs / (secs > 0 ? secs : 1)))" "$cov" "$ft" \
    "$(cat "$LOGS/$t.before") → $(ls corpus/$t | wc -l)" "$findings"
done
