#!/usr/bin/env bash
# A system-wide recording of a busy machine, as `perf record -a -g` is used
# most: every CPU sampled (cpu-clock, 10 kHz per CPU) with frame-pointer
# call graphs through the kernel, while a mixed load runs two jobs at a
# time for SECONDS (default 25): gcc compiling generated C (cc1: long,
# varied user stacks), a tree walk with stat of every file (find -ls:
# VFS and dentry stacks), gzip of a tar of /usr/lib (pipe and page-cache
# stacks), small files written, fsynced and deleted (ext4/journal
# stacks), processes started by the hundred (fork/exec/mmap/exit stacks)
# and python3 running a short script. Whatever else the machine runs is in
# it too. About 0.5 M samples, deep kernel stacks, many processes.
#
# Usage: bench/system_workload.sh OUT.data [SECONDS]
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$1
SECS=${2:-25}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
python3 - "$W" <<'EOF'
import random, sys
random.seed(11)
d = sys.argv[1]
for u in range(3):
    with open(f"{d}/unit{u}.c", "w") as f:
        for i in range(120):
            f.write(f"long f{u}_{i}(long *v, int n) {{ long a = 0; for (int k = 0; k < n; k++) "
                    f"a += (v[k] * {random.randint(2, 99)}) ^ (a >> {random.randint(1, 9)}); return a; }}\n")
EOF
cat >"$W/load.sh" <<EOF
set +e
end=\$((SECONDS + $SECS))
job() {
  case \$1 in
    0) gcc -O2 -c $W/unit\$((RANDOM % 3)).c -o $W/u\$\$.o ;;
    1) find /usr -xdev -ls >/dev/null 2>&1 ;;
    2) tar cf - /usr/lib/python3* 2>/dev/null | gzip -1 >/dev/null ;;
    3) for i in \$(seq 200); do head -c 8192 /dev/urandom >$W/f\$\$.\$i; done; sync; rm -f $W/f\$\$.* ;;
    4) for i in \$(seq 300); do /bin/true; done ;;
    5) python3 -c 'import json, re, sqlite3; c = sqlite3.connect(":memory:"); c.execute("create table t(x)"); c.executemany("insert into t values (?)", [(i,) for i in range(200000)]); print(c.execute("select sum(x) from t").fetchone())' >/dev/null ;;
  esac
}
i=0
while [ \$SECONDS -lt \$end ]; do
  job \$((i % 6)) & job \$(((i + 3) % 6)); wait
  i=\$((i + 1))
done
EOF
perf record -q -a -g -e cpu-clock -F 10000 -o "$OUT" -- bash "$W/load.sh" >/dev/null 2>&1
