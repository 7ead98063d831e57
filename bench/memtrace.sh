#!/usr/bin/env bash
# Table 2 of Mibu, Takahashi and Sugawara, "Proposal and Implementation of
# Memory Access Analysis Method for Memory Saving" (IPSJ SIG Technical
# Report), here: the cost of logging memory accesses while tracing, in
# one run on the same program and input (`wc` on a text file, the paper's
# wc case, which counted a 3 MB file): natively, under valgrind's
# --tool=none (nullgrind: emulation only), lackey --trace-mem=yes (text,
# every instruction and access), and trawl's trawlmem tool (binary
# records as they happen, data accesses only: the paper's
# data-binary writer; then with --range limiting the log to the stack).
# Each figure is the median of 3 runs (lackey: one run, it writes
# about 1.2 GB of text per MB of input); slowdowns are against nullgrind,
# as the paper gives them. Then trawl ingests both logs.
#
# Usage: bench/memtrace.sh [MB]   (default 1; env BENCH_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-1}
W=${BENCH_DIR:-/tmp/trawl-bench}/memtrace
mkdir -p "$W"
tools/trawlmem/build.sh "$W/vglib" > /dev/null
cargo build --release -q
TRAWL=$PWD/target/release/trawl
IN=$W/input.txt
python3 -c "
import random
random.seed(1)
w = ['alpha','beta','gamma','delta','trawl','perf','memory','page','load','store']
with open('$IN','w') as f:
    n = 0
    while n < $MB * 1048576:
        l = ' '.join(random.choice(w) for _ in range(random.randint(3, 14))) + '\n'
        f.write(l); n += len(l)
"
source bench/lib.sh
E=(env -i PATH=/usr/bin:/bin VALGRIND_LIB="$W/vglib")
# median of three: "seconds maxrss_kb"
med() {
  local label=$1; shift
  for k in 1 2 3; do t "$label" "$@"; done | sort -n | sed -n 2p
}
T_STDOUT=/dev/null
read -r NAT_S _ < <(med native /usr/bin/wc "$IN")
read -r NONE_S _ < <(med none "${E[@]}" valgrind -q --tool=none /usr/bin/wc "$IN")
read -r LK_S _ < <(t lackey "${E[@]}" valgrind -q --tool=lackey --trace-mem=yes --log-file="$W/wc.lackey" /usr/bin/wc "$IN")
read -r TM_S _ < <(med trawlmem "${E[@]}" valgrind -q --tool=trawlmem --out="$W/wc.tmem" /usr/bin/wc "$IN")
read -r TMLS_S _ < <(med trawlmem_ls "${E[@]}" valgrind -q --tool=trawlmem --kinds=LS --out="$W/wc-ls.tmem" /usr/bin/wc "$IN")
LK_B=$(stat -c %s "$W/wc.lackey"); TM_B=$(stat -c %s "$W/wc.tmem")
printf '%-34s %9s %12s %10s\n' "" seconds "vs nullgrind" "log MB"
printf '%-34s %9.2f %12s %10s\n' "native wc ($MB MB)" "$NAT_S" - -
printf '%-34s %9.2f %12s %10s\n' "nullgrind (--tool=none)" "$NONE_S" 1.0x -
printf '%-34s %9.2f %12s %10.1f\n' "lackey --trace-mem=yes (text)" "$LK_S" "$(ratio "$LK_S" "$NONE_S")" "$(mb $((LK_B / 1024)))"
printf '%-34s %9.2f %12s %10.1f\n' "trawlmem (binary, L S M)" "$TM_S" "$(ratio "$TM_S" "$NONE_S")" "$(mb $((TM_B / 1024)))"
printf '%-34s %9.2f %12s %10s\n' "trawlmem --kinds=LS (paper's)" "$TMLS_S" "$(ratio "$TMLS_S" "$NONE_S")" -
echo "Mibu et al., Table 2 (wc, 3 MB): lackey 423x, data-binary-shm 2.20x nullgrind"
rm -rf "$W/cap-lk" "$W/cap-tm"
read -r IL_S IL_KB < <(t ingest_lackey "$TRAWL" ingest "$W/wc.lackey" -o "$W/cap-lk" --no-symbolize)
read -r IT_S IT_KB < <(t ingest_tmem "$TRAWL" ingest "$W/wc.tmem" -o "$W/cap-tm" --no-symbolize)
printf 'trawl ingest: lackey log %.2f s / %.0f MB, trawlmem log %.2f s / %.0f MB\n' "$IL_S" "$(mb "$IL_KB")" "$IT_S" "$(mb "$IT_KB")"
rm -rf "$W/wc.lackey" "$W/wc.tmem" "$W/wc-ls.tmem" "$W/input.txt" "$W/cap-lk" "$W/cap-tm"
