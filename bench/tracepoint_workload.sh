#!/usr/bin/env bash
# A tracepoint-heavy recording: system-wide scheduler, allocation, block
# and read/write system call tracepoints with call graphs, every event
# sampled (-c 1), while gcc compiles a few files and dd copies 150,000
# 4 KB blocks (each block a read and a write: 600,000 enter/exit samples).
#
# Usage: bench/tracepoint_workload.sh OUT.data
set -euo pipefail
OUT=$1
D=$(mktemp -d)
trap 'rm -rf "$D"' EXIT
cp "$(dirname "$0")/../fixtures/perf/src/hot.c" "$D/hot.c"
EV=sched:sched_switch,sched:sched_wakeup,sched:sched_waking,sched:sched_process_fork,sched:sched_process_exec
EV=$EV,kmem:kmalloc,kmem:kfree,block:block_rq_issue,block:block_rq_complete
EV=$EV,syscalls:sys_enter_read,syscalls:sys_exit_read,syscalls:sys_enter_write,syscalls:sys_exit_write
perf record -q -a -g -c 1 -m 8M -e "$EV" -o "$OUT" -- sh -c "
  for i in 1 2 3 4; do gcc -O1 -c '$D/hot.c' -o '$D/hot.o'; done
  dd if=/dev/zero of=/dev/null bs=4k count=150000 2>/dev/null
  dd if=/dev/zero of='$D/f' bs=64k count=64 oflag=direct 2>/dev/null" > /dev/null 2>&1
