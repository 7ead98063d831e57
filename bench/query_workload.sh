#!/usr/bin/env bash
# Records the multi-process perf.data the query benchmark (bench/query.sh)
# reads: gcc compiling two generated 70-function translation units at -O2
# (cc1 has no frame pointers, so its call chains are long and varied: a few
# hundred thousand distinct stacks), 40 small compile-and-link runs of the
# fixture programs (gcc, cc1, as, collect2, ld: ~200 short processes) and
# 13 runs of fixtures/perf/src/hot.c (qsort, memcpy, recursion), two jobs
# at a time, sampled with call graphs at a 20 µs cpu-clock period:
# about 1.5 M samples.
#
# Usage: bench/query_workload.sh OUT.data
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
SRC=$PWD/fixtures/perf/src
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 - "$W" <<'EOF'
import random, sys
random.seed(7)
d = sys.argv[1]
for u in range(2):
    with open(f"{d}/unit{u}.c", "w") as f:
        f.write("#include <stdlib.h>\n#include <string.h>\n")
        for i in range(70):
            op = random.choice(["+", "-", "*", "^", "|"])
            f.write(f"""
struct s{u}_{i} {{ int a[{random.randint(2, 9)}]; double d; long l; }};
static int helper{u}_{i}(int x, int y) {{ return (x {op} y) % {random.randint(3, 97)} + {i}; }}
long fn{u}_{i}(int *v, int n, struct s{u}_{i} *p) {{
  long acc = 0;
  for (int k = 0; k < n; k++) {{
    if (v[k] % {random.randint(2, 9)} == 0) acc += helper{u}_{i}(v[k], k);
    else if (v[k] > {random.randint(10, 1000)}) acc -= v[k] * {random.randint(2, 50)};
    else acc ^= (long)(p->d * k) + p->a[k % {random.randint(1, 2)}];
    switch (k & 7) {{ case 0: acc += 3; break; case 1: acc *= 5; break; case 2: acc -= p->l; break; default: acc += k; }}
  }}
  char buf[64]; memset(buf, {i % 200}, sizeof buf); acc += buf[n & 63];
  return acc;
}}
""")
EOF
gcc -O1 -g -fno-omit-frame-pointer -o "$W/hot" "$SRC/hot.c"
{
  for u in 0 1; do echo "gcc -O2 -c $W/unit$u.c -o $W/unit$u.o"; done
  for i in $(seq 1 40); do
    p=$(ls "$SRC"/{calls,hot,inl,procs,vdso}.c | sed -n "$(( i % 5 + 1 ))p")
    echo "gcc -O1 -o $W/prog$i $p"
    if (( i % 3 == 0 )); then echo "$W/hot 1"; fi
  done
} >"$W/jobs"
perf record -q -e cpu-clock -c 20000 -g -o "$OUT" -- \
  bash -c "xargs -P 2 -I{} sh -c '{} >/dev/null' <'$W/jobs'" >/dev/null 2>&1
