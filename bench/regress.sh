#!/usr/bin/env bash
# The performance guard: every headline comparison of
# docs/guide/performance.md against its peer, in one invocation, on the
# same files, printing one table of seconds, peak memory and ratios to
# paste into the guide (and into the note of any change to ingest,
# symbolize, enrich or query). Ratios are peer / trawl: above 1, trawl is
# faster (or smaller).
#
#  multi.data  bench/query_workload.sh: gcc compiles, ~200 short processes,
#              qsort programs; perf record -e cpu-clock -c 20000 -g
#  sysruns     bench/sysruns_workload.sh: 100 short runs of ls -lR, gzip,
#              sha256sum and a C program (perf record -g), and a second
#              batch of 100 new runs of the same programs; the first 100
#              linked 20 times into an archive of 2,000 captures
#  strace      a make -j2 of 60 C files under strace -f -ttt -T -k -y
#  lackey      valgrind --tool=lackey of ls -lR /usr/share/zoneinfo
#  dwarf.data  gcc compiles and qsort runs, perf record --call-graph dwarf
#  system.data bench/system_workload.sh: perf record -a -g of a busy mixed
#              load (compiles, file walks, gzip, fsync, process starts)
#  tracepoints.data  bench/tracepoint_workload.sh: system-wide scheduler,
#              kmalloc, block and read/write syscall tracepoints, -g -c 1
#
# Symbol store: each "cold" row starts from an empty store
# ($XDG_CACHE_HOME pointed at a fresh directory), "warm" rows reuse it.
# Short commands are the median of 3 runs. The machine is noisy: compare
# ratios, not seconds, between runs.
#
# Usage: bench/regress.sh   (env BENCH_DIR, default /tmp/trawl-bench;
#        RUNS1000=1 also ingests 1,000 runs; TRAWL=path to skip the build)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/regress
mkdir -p "$W"
if [ -z "${TRAWL:-}" ]; then
  cargo build --release -q --bin trawl
  TRAWL=$PWD/target/release/trawl
fi
export TRAWL
source bench/lib.sh
T_STDOUT=/dev/null
python3 -c 'import duckdb' 2>/dev/null || pip install -q duckdb

# A fresh, empty symbol store for the next trawl command(s).
cold() { rm -rf "$W/xdg"; mkdir -p "$W/xdg"; }
export XDG_CACHE_HOME=$W/xdg
median3() { # label, command...: median "seconds maxrss_kb" of 3 runs
  local label=$1; shift
  for _ in 1 2 3; do t "$label" "$@"; done | sort -n | sed -n 2p
}
ROWS=$W/rows
: > "$ROWS"
# row WORK PEER PEER_S PEER_KB TRAWL_S TRAWL_KB GOAL
row() {
  printf '| %s | %s | %.2f s, %.0f MB | %.2f s, %.0f MB | %s | %s |\n' "$1" "$2" "$3" "$(mb "$4")" \
    "$5" "$(mb "$6")" "$(ratio "$3" "$5")" "$7" >> "$ROWS"
  tail -1 "$ROWS"
}

# 1. The multi-process capture.
IN=$W/multi.data
[ -s "$IN" ] || bench/query_workload.sh "$IN"
cat "$IN" "$TRAWL" > /dev/null
read -r PS_S PS_KB < <(t perf_script perf script -i "$IN")
read -r PR_S PR_KB < <(t perf_report perf report -i "$IN" --stdio --no-children --sort dso,sym)
# perf report computing what report hotspots prints: each function's self
# and total (children) cost, no call graph text.
read -r PC_S PC_KB < <(t perf_report_children perf report -i "$IN" --stdio --children -g none --sort dso,sym)
rm -rf "$W/cap"; cold
read -r IC_S IC_KB < <(t ingest_cold "$TRAWL" ingest "$IN" -o "$W/cap")
read -r IW_S IW_KB < <(median3 ingest_warm bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0"' "$W/cap" "$IN")
read -r IN_S IN_KB < <(median3 ingest_nosym bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0" --no-symbolize' "$W/capn" "$IN")
read -r HS_S HS_KB < <(median3 hotspots "$TRAWL" report hotspots "$W/cap")
read -r DD_S DD_KB < <(median3 duckdb python3 bench/hotspots_duckdb.py "$W/cap")
read -r HN_S HN_KB < <(median3 hotspots_noinline "$TRAWL" report hotspots "$W/cap" --no-inline)
SAMPLES=$("$TRAWL" sql "$W/cap" "SELECT count(*) FROM perf_sample" --format csv | tail -1)
STACKS=$("$TRAWL" sql "$W/cap" "SELECT count(DISTINCT stack_id) FROM perf_sample" --format csv | tail -1)
echo "multi.data: $(( $(stat -c %s "$IN") / 1048576 )) MB, $SAMPLES samples, $STACKS distinct stacks"
# The CPU each ingest needs: on 2 cores its wall time is at least half.
echo "multi.data CPU seconds (user + system, last run): perf script $(cpu perf_script); ingest empty store $(cpu ingest_cold), warm $(cpu ingest_warm), --no-symbolize $(cpu ingest_nosym)"
row "multi.data: ingest, empty store" "perf script" "$PS_S" "$PS_KB" "$IC_S" "$IC_KB" "≥ 8×"
row "multi.data: ingest, warm store" "perf script" "$PS_S" "$PS_KB" "$IW_S" "$IW_KB" "≥ 8×"
row "multi.data: ingest --no-symbolize" "perf script" "$PS_S" "$PS_KB" "$IN_S" "$IN_KB" "≥ 10×"
row "multi.data: ingest (empty store) + report hotspots" "perf report --stdio" "$PR_S" "$PR_KB" \
  "$(python3 -c "print($IC_S + $HS_S)")" "$(( IC_KB > HS_KB ? IC_KB : HS_KB ))" "≥ 4×, memory ≤ perf report's"
row "multi.data: ingest (empty store) + report hotspots" "perf report --children -g none (self and total)" "$PC_S" "$PC_KB" \
  "$(python3 -c "print($IC_S + $HS_S)")" "$(( IC_KB > HS_KB ? IC_KB : HS_KB ))" ""
row "multi.data: report hotspots --no-inline" "DuckDB, same Parquet" "$DD_S" "$DD_KB" "$HN_S" "$HN_KB" ""
# One core against one core (taskset -c 0), and the floor: reading the
# file (cat, page cache) plus encoding the rows ingest wrote to Parquet
# alone (bench/encode_floor.py: DuckDB, its threads, from memory).
read -r PS1_S PS1_KB < <(t perf_script_1c taskset -c 0 perf script -i "$IN")
read -r IW1_S IW1_KB < <(median3 ingest_warm_1c bash -c 'rm -rf "$0" && taskset -c 0 "$TRAWL" ingest "$1" -o "$0"' "$W/cap1" "$IN")
read -r IN1_S IN1_KB < <(median3 ingest_nosym_1c bash -c 'rm -rf "$0" && taskset -c 0 "$TRAWL" ingest "$1" -o "$0" --no-symbolize' "$W/capn1" "$IN")
read -r CAT_S CAT_KB < <(t cat_floor bash -c 'cat "$0" > /dev/null' "$IN")
read -r ENC_S ENC_KB < <(python3 bench/encode_floor.py "$W/capn")
row "multi.data: ingest, warm store, 1 core" "perf script, 1 core" "$PS1_S" "$PS1_KB" "$IW1_S" "$IW1_KB" ""
row "multi.data: ingest --no-symbolize, 1 core" "perf script, 1 core" "$PS1_S" "$PS1_KB" "$IN1_S" "$IN1_KB" ""
row "multi.data: ingest --no-symbolize" "floor: cat + Parquet encoding of its rows" \
  "$(python3 -c "print($CAT_S + $ENC_S)")" "$ENC_KB" "$IN_S" "$IN_KB" ""
rm -rf "$W/cap1" "$W/capn1"

# 1b. A system-wide recording (bench/system_workload.sh: perf record -a -g
# of a busy mixed load, deep kernel stacks, many processes).
SYS=$W/system.data
[ -s "$SYS" ] || bench/system_workload.sh "$SYS"
cat "$SYS" > /dev/null
read -r SPS_S SPS_KB < <(t sys_perf_script perf script -i "$SYS")
read -r SPR_S SPR_KB < <(t sys_perf_report perf report -i "$SYS" --stdio --no-children --sort dso,sym)
read -r SPC_S SPC_KB < <(t sys_perf_report_children perf report -i "$SYS" --stdio --children -g none --sort dso,sym)
read -r SPS1_S SPS1_KB < <(t sys_perf_script_1c taskset -c 0 perf script -i "$SYS")
rm -rf "$W/syscap"; cold
read -r SIC_S SIC_KB < <(t sys_ingest_cold "$TRAWL" ingest "$SYS" -o "$W/syscap")
read -r SIW_S SIW_KB < <(median3 sys_ingest_warm bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0"' "$W/syscap" "$SYS")
read -r SIW1_S SIW1_KB < <(median3 sys_ingest_warm_1c bash -c 'rm -rf "$0" && taskset -c 0 "$TRAWL" ingest "$1" -o "$0"' "$W/syscap1" "$SYS")
read -r SIN_S SIN_KB < <(median3 sys_ingest_nosym bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0" --no-symbolize' "$W/syscapn" "$SYS")
read -r SHS_S SHS_KB < <(median3 sys_hotspots "$TRAWL" report hotspots "$W/syscap")
read -r SDD_S SDD_KB < <(median3 sys_duckdb python3 bench/hotspots_duckdb.py "$W/syscap")
read -r SHN_S SHN_KB < <(median3 sys_hotspots_noinline "$TRAWL" report hotspots "$W/syscap" --no-inline)
echo "system.data: $(( $(stat -c %s "$SYS") / 1048576 )) MB, $("$TRAWL" sql "$W/syscap" "SELECT count(*) FROM perf_sample" --format csv | tail -1) samples, $("$TRAWL" sql "$W/syscap" "SELECT count(DISTINCT stack_id) FROM perf_sample" --format csv | tail -1) distinct stacks, $("$TRAWL" sql "$W/syscap" "SELECT count(DISTINCT pid) FROM perf_sample" --format csv | tail -1) processes"
echo "system.data CPU seconds (user + system, last run): perf script $(cpu sys_perf_script); ingest empty store $(cpu sys_ingest_cold), warm $(cpu sys_ingest_warm), --no-symbolize $(cpu sys_ingest_nosym)"
row "system.data: ingest, empty store" "perf script" "$SPS_S" "$SPS_KB" "$SIC_S" "$SIC_KB" "≥ 5×, ≤ 500 MB"
row "system.data: ingest, warm store" "perf script" "$SPS_S" "$SPS_KB" "$SIW_S" "$SIW_KB" ""
row "system.data: ingest, warm store, 1 core" "perf script, 1 core" "$SPS1_S" "$SPS1_KB" "$SIW1_S" "$SIW1_KB" ""
row "system.data: ingest --no-symbolize" "perf script" "$SPS_S" "$SPS_KB" "$SIN_S" "$SIN_KB" ""
row "system.data: ingest (empty store) + report hotspots" "perf report --stdio" "$SPR_S" "$SPR_KB" \
  "$(python3 -c "print($SIC_S + $SHS_S)")" "$(( SIC_KB > SHS_KB ? SIC_KB : SHS_KB ))" "≥ 4×, memory ≤ perf report's"
row "system.data: ingest (empty store) + report hotspots" "perf report --children -g none (self and total)" "$SPC_S" "$SPC_KB" \
  "$(python3 -c "print($SIC_S + $SHS_S)")" "$(( SIC_KB > SHS_KB ? SIC_KB : SHS_KB ))" ""
row "system.data: report hotspots --no-inline" "DuckDB, same Parquet" "$SDD_S" "$SDD_KB" "$SHN_S" "$SHN_KB" ""
rm -rf "$W/syscap1" "$W/syscapn"
# Hotspot's parser (Debian's hotspot package keeps it out of PATH).
PERFPARSER=$(command -v hotspot-perfparser || ls /usr/lib/*/libexec/hotspot-perfparser 2>/dev/null | head -1 || true)
if [ -z "$PERFPARSER" ]; then
  sudo -n apt-get install -y -q hotspot > /dev/null 2>&1 || apt-get install -y -q hotspot > /dev/null 2>&1 || true
  PERFPARSER=$(ls /usr/lib/*/libexec/hotspot-perfparser 2>/dev/null | head -1 || true)
fi
if [ -n "$PERFPARSER" ]; then
  read -r HP_S HP_KB < <(t perfparser "$PERFPARSER" --input "$IN" --output "$W/perfparser.out")
  row "multi.data: ingest, warm store" "hotspot-perfparser" "$HP_S" "$HP_KB" "$IW_S" "$IW_KB" ""
  rm -f "$W/perfparser.out"
else
  echo "hotspot-perfparser not found (Debian package hotspot): its row is left out" >&2
fi
# Exports from the capture against the tools that write the same file from
# the perf.data (installed from crates.io into $PEERS when missing, as
# bench/export.sh does).
PEERS=${PEERS:-${BENCH_DIR:-/tmp/trawl-bench}/peers}
for tool in inferno-collapse-perf samply; do
  [ -x "$PEERS/bin/$tool" ] || cargo install -q --locked inferno samply --root "$PEERS"
done
read -r PF_S PF_KB < <(t folded_peer bash -c 'perf script -i "$0" 2>/dev/null | "$1" > "$2"' "$IN" "$PEERS/bin/inferno-collapse-perf" "$W/peer.folded")
read -r TF_S TF_KB < <(t folded "$TRAWL" export "$W/cap" --to folded -o "$W/trawl.folded")
row "multi.data: export --to folded" "perf script \| inferno-collapse-perf" "$PF_S" "$PF_KB" "$TF_S" "$TF_KB" ""
read -r PX_S PX_KB < <(t firefox_peer "$PEERS/bin/samply" import "$IN" --save-only --unstable-presymbolicate -o "$W/peer.json")
read -r TX_S TX_KB < <(t firefox "$TRAWL" export "$W/cap" --to firefox -o "$W/trawl.json")
row "multi.data: export --to firefox" "samply import --save-only" "$PX_S" "$PX_KB" "$TX_S" "$TX_KB" "≥ 2×, memory ≤ samply's"
# A Perfetto trace of the capture: against trawl's own ingest of the same
# file (the goal: no longer than it, ≤ 500 MB, a file ≤ 1/3 of perf.data).
read -r TP_S TP_KB < <(t perfetto "$TRAWL" export "$W/cap" --to perfetto -o "$W/trawl.pftrace")
row "multi.data: export --to perfetto ($(( $(stat -c %s "$W/trawl.pftrace") * 100 / $(stat -c %s "$IN") )) % of perf.data's size)" \
  "trawl ingest, warm store" "$IW_S" "$IW_KB" "$TP_S" "$TP_KB" "≥ 1×, ≤ 500 MB, ≤ 33 %"
rm -f "$W/peer.folded" "$W/trawl.folded" "$W"/peer.json* "$W/trawl.json" "$W/trawl.pftrace"
# annotate: the libc function with most self samples, first call with an
# empty store (the capture does not hold its code yet).
FN=$("$TRAWL" sql "$W/cap" "SELECT function FROM hotspots('function', 'inline', false) WHERE module LIKE '%libc.so%' ORDER BY self_samples DESC LIMIT 1" --format csv | tail -1)
read -r PA_S PA_KB < <(t perf_annotate perf annotate -i "$IN" --stdio -s "$FN")
cold
read -r TA_S TA_KB < <(t annotate "$TRAWL" report annotate "$FN" "$W/cap")
row "multi.data: annotate $FN, first call, empty store" "perf annotate --stdio" "$PA_S" "$PA_KB" "$TA_S" "$TA_KB" "≤ 1 s"
# The same function in another capture of the same binaries: its code and
# lines come from the store.
rm -rf "$W/cap2"; "$TRAWL" ingest "$IN" -o "$W/cap2" 2>/dev/null
read -r TB_S TB_KB < <(t annotate_warm "$TRAWL" report annotate "$FN" "$W/cap2")
row "multi.data: annotate $FN, another capture, warm store" "perf annotate --stdio" "$PA_S" "$PA_KB" "$TB_S" "$TB_KB" ""
rm -rf "$W/cap2"

# DWARF stacks: gcc compiles and qsort programs with --call-graph dwarf
# (perf script unwinds them with libdw, trawl with framehop and the CFI
# the store keeps).
DW=$W/dwarf.data
if [ ! -s "$DW" ]; then
  mkdir -p "$W/dw"
  cat > "$W/dw/t.c" <<'C'
#include <stdlib.h>
static int cmp(const void *a, const void *b) { return (*(int *)a > *(int *)b) - (*(int *)a < *(int *)b); }
int main(void) {
  for (int r = 0; r < 30; r++) {
    int n = 200000, *v = malloc(n * sizeof(int));
    for (int i = 0; i < n; i++) v[i] = rand();
    qsort(v, n, sizeof(int), cmp);
    free(v);
  }
  return 0;
}
C
  gcc -O2 -o "$W/dw/t" "$W/dw/t.c"
  (cd "$W/dw" && perf record -q -e cpu-clock -F 2000 --call-graph dwarf,8192 -o "$DW" -- \
    sh -c 'gcc -O2 -c t.c -o /dev/null; gcc -O2 -c t.c -o /dev/null; ./t; ./t') > /dev/null 2>&1
fi
read -r DS_S DS_KB < <(t perf_script_dwarf perf script -i "$DW")
rm -rf "$W/capd"; cold
read -r DC_S DC_KB < <(t ingest_dwarf_cold "$TRAWL" ingest "$DW" -o "$W/capd")
read -r DWW_S DWW_KB < <(median3 ingest_dwarf_warm bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0"' "$W/capd" "$DW")
row "dwarf.data ($(( $(stat -c %s "$DW") / 1048576 )) MB, DWARF stacks): ingest, empty store" "perf script" "$DS_S" "$DS_KB" "$DC_S" "$DC_KB" ""
row "dwarf.data: ingest, warm store" "perf script" "$DS_S" "$DS_KB" "$DWW_S" "$DWW_KB" ""
rm -rf "$W/capd"

# 2. Archives of short runs.
bench/sysruns_workload.sh "$W/sysruns/a" 100 0
bench/sysruns_workload.sh "$W/sysruns/b" 100 1
each_script() { for f in "$1"/*/perf.data; do perf script -i "$f" > /dev/null 2>&1; done; }
export -f each_script
read -r SA_S SA_KB < <(t script_a bash -c 'each_script "$0"' "$W/sysruns/a")
read -r SB_S SB_KB < <(t script_b bash -c 'each_script "$0"' "$W/sysruns/b")
rm -rf "$W/arch_a" "$W/arch_b"; cold
read -r AA_S AA_KB < <(t archive_a "$TRAWL" archive ingest "$W/sysruns/a" -o "$W/arch_a" -j 2)
read -r AB_S AB_KB < <(t archive_b "$TRAWL" archive ingest "$W/sysruns/b" -o "$W/arch_b" -j 2)
row "100 runs: archive ingest, empty store" "perf script on each" "$SA_S" "$SA_KB" "$AA_S" "$AA_KB" "≥ 5×"
row "100 new runs: archive ingest, warm store" "perf script on each" "$SB_S" "$SB_KB" "$AB_S" "$AB_KB" "≥ 20×"
# An archive of 2,000 captures (the 100 runs linked 20 times under new
# names; bench/archive_many.sh measures 10,000 and 100,000): questions
# over every capture against DuckDB reading the same segments with the
# documented glob.
rm -rf "$W/many-src" "$W/many"
python3 - "$W/sysruns/a" "$W/many-src" <<'PY'
import os, sys
runs = sorted(os.listdir(sys.argv[1]))
for i in range(2000):
    d = f"{sys.argv[2]}/c{i:05d}"
    os.makedirs(d)
    os.link(f"{sys.argv[1]}/{runs[i % len(runs)]}/perf.data", f"{d}/perf.data")
PY
"$TRAWL" archive ingest "$W/many-src" -o "$W/many" -j 2 >/dev/null 2>&1
G="$W/many/segment=*/perf_sample.parquet"
DUCKQ="import duckdb, sys; duckdb.sql(sys.argv[1].replace('FROM perf_sample', \"FROM read_parquet('$G', hive_partitioning = true)\")).fetchall()"
QC="SELECT count(*) FROM perf_sample"
QG="SELECT comm, count(*) AS n FROM perf_sample GROUP BY comm ORDER BY n DESC"
read -r MC_S MC_KB < <(median3 many_count "$TRAWL" sql "$W/many" "$QC")
read -r MCD_S MCD_KB < <(median3 many_count_duckdb python3 -c "$DUCKQ" "$QC")
read -r MG_S MG_KB < <(median3 many_comm "$TRAWL" sql "$W/many" "$QG")
read -r MGD_S MGD_KB < <(median3 many_comm_duckdb python3 -c "$DUCKQ" "$QG")
read -r MH_S MH_KB < <(median3 many_hot "$TRAWL" report hotspots "$W/many" --no-inline)
read -r MHD_S MHD_KB < <(median3 many_hot_duckdb python3 bench/hotspots_duckdb_archive.py "$W/many")
row "2,000 captures: count(*)" "DuckDB, same segments" "$MCD_S" "$MCD_KB" "$MC_S" "$MC_KB" "≤ 0.2 s"
row "2,000 captures: GROUP BY comm" "DuckDB, same segments" "$MGD_S" "$MGD_KB" "$MG_S" "$MG_KB" "≥ 1×"
row "2,000 captures: report hotspots --no-inline" "DuckDB, same segments" "$MHD_S" "$MHD_KB" "$MH_S" "$MH_KB" "≤ 500 MB"
rm -rf "$W/many-src" "$W/many"
if [ "${RUNS1000:-0}" = 1 ]; then
  bench/sysruns_workload.sh "$W/sysruns/k" 1000 2
  rm -rf "$W/arch_k"; cold
  read -r AK_S AK_KB < <(t archive_k "$TRAWL" archive ingest "$W/sysruns/k" -o "$W/arch_k" -j 2)
  printf '| 1,000 runs: archive ingest, empty store | (goal ≤ 30 s) | | %.2f s, %.0f MB | | ≤ 30 s |\n' \
    "$AK_S" "$(mb "$AK_KB")" | tee -a "$ROWS"
fi

# 3. A strace dump (bench/strace_ingest.sh's recipe, 60 files).
DUMP=$W/build.strace
if [ ! -s "$DUMP" ]; then
  mkdir -p "$W/proj"; rm -f "$W"/proj/*
  for i in $(seq 1 60); do
    sed "s/\bmain\b/main_$i/; s/\bspin_a\b/spin_a_$i/; s/\bspin_b\b/spin_b_$i/; s/\bfib\b/fib_$i/; s/\bwork\b/work_$i/; s/\blibc_work\b/libc_work_$i/; s/\bsink\b/sink_$i/" \
      fixtures/perf/src/hot.c > "$W/proj/f$i.c"
  done
  printf 'SRCS := $(wildcard f*.c)\nall: $(SRCS:.c=.o)\n%%.o: %%.c\n\tgcc -O1 -g -c $< -o $@\n' > "$W/proj/Makefile"
  strace -f -ttt -T -k -y -o "$DUMP" make -s -C "$W/proj" -j2 >/dev/null 2>&1
fi
cat "$DUMP" > /dev/null
read -r PY_S PY_KB < <(t strace_python python3 bench/strace_parse.py "$DUMP")
read -r ST_S ST_KB < <(median3 strace_trawl bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0"' "$W/cap-strace" "$DUMP")
row "strace dump ($(( $(stat -c %s "$DUMP") / 1048576 )) MB): ingest, warm store" "Python regex parser" "$PY_S" "$PY_KB" "$ST_S" "$ST_KB" ""

# 4. A lackey log.
LOG=$W/zoneinfo.lackey
[ -s "$LOG" ] || valgrind --tool=lackey --trace-mem=yes --log-file="$LOG" ls -lR /usr/share/zoneinfo > /dev/null 2>&1
cat "$LOG" > /dev/null
rm -f "$W/duck.parquet"
read -r LD_S LD_KB < <(t lackey_duckdb python3 bench/lackey_duckdb.py "$LOG" "$W/duck.parquet")
read -r LT_S LT_KB < <(median3 lackey_trawl bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0" --no-symbolize' "$W/cap-lackey" "$LOG")
row "lackey log ($(( $(stat -c %s "$LOG") / 1048576 )) MB): ingest" "DuckDB CSV → Parquet" "$LD_S" "$LD_KB" "$LT_S" "$LT_KB" ""

# 5. A tracepoint-heavy recording (bench/tracepoint_workload.sh: ~1 M
# samples of scheduler, allocation, block and read/write syscall
# tracepoints with call graphs).
TP=$W/tracepoints.data
[ -s "$TP" ] || bench/tracepoint_workload.sh "$TP"
cat "$TP" > /dev/null
read -r TS_S TS_KB < <(t perf_script_tp perf script -i "$TP")
read -r TI_S TI_KB < <(median3 ingest_tp bash -c 'rm -rf "$0" && "$TRAWL" ingest "$1" -o "$0"' "$W/cap-tp" "$TP")
row "tracepoints.data ($(( $(stat -c %s "$TP") / 1048576 )) MB, $("$TRAWL" sql "$W/cap-tp" "SELECT count(*) FROM perf_sample" --format csv | tail -1) tracepoint samples): ingest, warm store" \
  "perf script" "$TS_S" "$TS_KB" "$TI_S" "$TI_KB" "≥ 4×"
read -r TL_S TL_KB < <(t latency_peer bash -c 'perf script -i "$0" --ns -F tid,time,event 2>/dev/null | python3 bench/latency_perf_script.py syscalls:sys_enter_write syscalls:sys_exit_write' "$TP")
read -r TR_S TR_KB < <(median3 latency "$TRAWL" report latency "$W/cap-tp" --start syscalls:sys_enter_write --end syscalls:sys_exit_write --key common_pid)
row "tracepoints.data: write latency histogram (enter → exit by thread)" "perf script \| Python pairing" "$TL_S" "$TL_KB" "$TR_S" "$TR_KB" ""
rm -rf "$W/cap-tp"

echo
echo "| work | peer | peer | trawl | peer / trawl | goal |"
echo "|---|---|---|---|---|---|"
cat "$ROWS"
