#!/usr/bin/env bash
# Runs a program under the trawlmem tool (building it first if needed).
# Usage: tools/trawlmem/run.sh [--out=FILE] [--kinds=LSM] [--range=LO-HI] -- PROG ARGS...
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${TRAWLMEM_DIR:-$here/../../target/trawlmem}
if [ ! -x "$dir/trawlmem-amd64-linux" ] || [ "$here/trawlmem.c" -nt "$dir/trawlmem-amd64-linux" ]; then
  "$here/build.sh" "$dir" >/dev/null
fi
opts=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do opts+=("$1"); shift; done
[ "${1:-}" = "--" ] && shift
VALGRIND_LIB=$dir exec valgrind --tool=trawlmem "${opts[@]}" "$@"
