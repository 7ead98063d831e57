#!/usr/bin/env bash
# Whole-process comparison of symbolizers on the same addresses, in the same
# run: `trawl addr2line` against binutils `addr2line -f -i -C` and
# `llvm-symbolizer` (apt-get install llvm), printing times and ratios.
#
# Inputs: >= 100 k distinct addresses spread evenly over the .text of
#  1. a large binary with DWARF (trawl's own release build with line
#     tables, inline chains included: built here in a target directory of
#     its own, since the release profile keeps no debug information; a
#     full build the first time), and
#  2. libc (its DWARF in libc6-dbg's separate debug file, by build-id).
#
# Usage: bench/symbolize.sh [N_ADDRESSES]   (env BENCH_DIR, default /tmp/trawl-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
N=${1:-120000}
W=${BENCH_DIR:-/tmp/trawl-bench}
mkdir -p "$W"
cargo build --release -q
TRAWL=$PWD/target/release/trawl
[ -s "$W/big-binary" ] || {
  CARGO_PROFILE_RELEASE_DEBUG=line-tables-only CARGO_PROFILE_RELEASE_STRIP=false \
    CARGO_TARGET_DIR="$W/target-lines" cargo build --release -q --bin trawl
  cp "$W/target-lines/release/trawl" "$W/big-binary"
  rm -rf "$W/target-lines"
}
BIG=$W/big-binary
LIBC=$(readlink -f /lib/x86_64-linux-gnu/libc.so.6)
command -v llvm-symbolizer >/dev/null || { echo "llvm-symbolizer missing: apt-get install llvm" >&2; exit 1; }

addresses() { # FILE N -> N addresses in .text, one per line
  python3 - "$1" "$2" <<'PY'
import subprocess, sys
f, n = sys.argv[1], int(sys.argv[2])
for l in subprocess.run(["readelf", "-SW", f], capture_output=True, text=True).stdout.splitlines():
    p = l.replace("[ ", "[").split()
    if len(p) > 5 and p[1] == ".text":
        addr, size = int(p[3], 16), int(p[5], 16)
step = max(1, size // n)
for i in range(n):
    print(hex(addr + i * step))
PY
}

now() { date +%s.%N; }
run() { # NAME CMD... (stdin: addresses) -> seconds
  local t0 t1
  shift
  t0=$(now); "$@" > "$W/out.txt"; t1=$(now)
  python3 -c "print(f'{$t1 - $t0:.3f}')"
}

for target in "$BIG" "$LIBC"; do
  addresses "$target" "$N" > "$W/addrs.txt"
  n=$(sort -u "$W/addrs.txt" | wc -l)
  echo "== $(basename "$target"): $n distinct addresses"
  t_trawl=$(run trawl "$TRAWL" addr2line -e "$target" < "$W/addrs.txt")
  lines_trawl=$(wc -l < "$W/out.txt")
  t_gnu=$(run addr2line addr2line -f -i -C -e "$target" < "$W/addrs.txt")
  lines_gnu=$(wc -l < "$W/out.txt")
  t_llvm=$(run llvm llvm-symbolizer -f -i -C --obj="$target" < "$W/addrs.txt")
  printf '  trawl addr2line     %8ss  (%s lines)\n' "$t_trawl" "$lines_trawl"
  printf '  addr2line -f -i -C  %8ss  (%s lines)  ratio %.1fx\n' "$t_gnu" "$lines_gnu" "$(python3 -c "print($t_gnu / $t_trawl)")"
  printf '  llvm-symbolizer     %8ss               ratio %.1fx\n' "$t_llvm" "$(python3 -c "print($t_llvm / $t_trawl)")"
done
