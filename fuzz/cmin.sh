#!/usr/bin/env bash
# Minimizes every fuzz corpus in place (libFuzzer -merge: the smallest set
# of inputs reaching the same coverage), for committing after a run of
# bench/fuzz.sh. Usage: fuzz/cmin.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")"
TARGETS=("$@")
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=($(ls fuzz_targets | sed 's/\.rs$//'))
for t in "${TARGETS[@]}"; do
  cargo +nightly fuzz cmin -O -a "$t" corpus/$t -- -timeout=10 -rss_limit_mb=2048 >/dev/null 2>&1
  echo "$t: $(ls corpus/$t | wc -l) inputs, $(du -sh corpus/$t | cut -f1)"
done
