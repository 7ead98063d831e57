#!/usr/bin/env bash
# Seeds each fuzz target's corpus (fuzz/corpus/TARGET/) from the committed
# fixtures: small perf.data files whole, larger ones cut to their first
# 64 KB, every strace dump and monitoring log, the lackey log's first 64 KB
# and its binary form, the maps and JIT map files, the fixtures' programs
# (ELF with DWARF), and the energy formats as the tests write them.
# Existing corpus files are kept. Needs a built trawl (TRAWL=path, default
# target/release/trawl) for the binary memory log.
set -euo pipefail
cd "$(dirname "$0")/.."
TRAWL=${TRAWL:-target/release/trawl}
C=fuzz/corpus
mkdir -p $C/{perf_file,perf_pipe,strace,metrics,energy,lackey,memlog_binary,proc_maps,jit_map,kallsyms,elf}
put() { # put TARGET NAME < bytes
  cat > "$C/$1/seed-$2"
}
for f in fixtures/perf/*.data; do
  n=$(basename "$f")
  if [ "$(head -c 16 "$f" | tail -c 8 | od -An -tu8 | tr -d ' ')" = 16 ]; then t=perf_pipe; else t=perf_file; fi
  if [ "$(stat -c %s "$f")" -le 150000 ]; then put $t "$n" < "$f"; else head -c 65536 "$f" | put $t "$n-64k"; fi
done
for f in fixtures/strace/*.strace fixtures/strace/ff/*; do put strace "$(basename "$f")" < "$f"; done
for f in fixtures/metrics/*; do
  case "$f" in *.md) ;; *) put metrics "$(basename "$f")" < "$f";; esac
done
{ zstd -q -d -c fixtures/memlog/pages.lackey.zst || true; } | head -c 65536 > /tmp/trawl-seed.lackey
sed -i '$ d' /tmp/trawl-seed.lackey   # whole lines
put lackey pages.lackey < /tmp/trawl-seed.lackey
"$TRAWL" convert lackey /tmp/trawl-seed.lackey -o /tmp/trawl-seed.tmem >/dev/null
put memlog_binary pages.tmem < /tmp/trawl-seed.tmem
rm -f /tmp/trawl-seed.lackey /tmp/trawl-seed.tmem
put proc_maps pages.maps < fixtures/memlog/pages.maps
for f in fixtures/perf/jit/*.map; do put jit_map "$(basename "$f")" < "$f"; done
# kallsyms: the running kernel's first symbols and some of its modules'
# (as root; otherwise the addresses read as zero, which the reader skips).
head -n 300 /proc/kallsyms | put kallsyms head
grep -m 100 '\[' /proc/kallsyms | put kallsyms modules || true
for f in fixtures/perf/bin/* fixtures/memlog/bin/* fixtures/phases/bin/*; do put elf "$(basename "$f")" < "$f"; done
put energy powercap.csv <<'X'
time,zone,name,energy_uj,max_energy_range_uj
1700000000.000000000,intel-rapl:0,package-0,1000000,262143328850
1700000000.000000000,intel-rapl:0:0,core,5000000,262143328850
1700000000.000000000,intel-rapl:0:2,dram,7000000,65712999613
1700000001.000000000,intel-rapl:0,package-0,31000000,262143328850
1700000001.000000000,intel-rapl:0:0,core,25000000,262143328850
1700000001.000000000,intel-rapl:0:2,dram,17000000,65712999613
X
put energy perf-stat.csv <<'X'
     1.001175893,2.47,Joules,power/energy-pkg/,1001153609,100.00,,
     1.001175893,0.61,Joules,power/energy-ram/,1001153609,100.00,,
     2.002410520,2.51,Joules,power/energy-pkg/,1001200392,100.00,,
     2.002410520,0.60,Joules,power/energy-ram/,1001200392,100.00,,
X
printf 'Time_Of_Day_Seconds\tPackage\tCore\tCPU\tPkgWatt\tCorWatt\tRAMWatt
1700000000.000100\t-\t-\t-\t40.00\t20.00\t6.00
1700000000.000100\t0\t0\t0\t25.00\t12.00\t4.00
1700000000.000110\t0\t1\t1
Time_Of_Day_Seconds\tPackage\tCore\tCPU\tPkgWatt\tCorWatt\tRAMWatt
1700000001.000100\t-\t-\t-\t41.00\t21.00\t6.00
1700000001.000100\t0\t0\t0\t26.00\t13.00\t4.00
1700000001.000110\t0\t1\t1
' | put energy turbostat.tsv
for t in $C/*; do echo "$(basename "$t"): $(ls "$t" | wc -l) inputs, $(du -sh "$t" | cut -f1)"; done
