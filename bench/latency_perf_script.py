"""The peer of `trawl report latency`: perf script's listing of a start and
an end event piped in, paired by thread (a dict from tid to the start time,
as biolatency/runqlat pair them), a log2 histogram of whole microseconds.

Usage: perf script -i FILE --ns -F tid,time,event | python3 latency_perf_script.py START END
"""
import sys
from collections import Counter

start, end = sys.argv[1], sys.argv[2]
open_at = {}
hist = Counter()
for line in sys.stdin:
    f = line.split()
    if len(f) < 3:
        continue
    ev = f[2].rstrip(":")
    if ev != start and ev != end:
        continue
    s, ns = f[1].rstrip(":").split(".")
    t = int(s) * 1_000_000_000 + int(ns)
    if ev == start:
        open_at[f[0]] = t
    else:
        t0 = open_at.pop(f[0], None)
        if t0 is not None:
            us = (t - t0) // 1000
            hist[0 if us < 2 else us.bit_length() - 1] += 1
for b in sorted(hist):
    lo = 0 if b == 0 else 1 << b
    print(f"{lo} -> {(1 << (b + 1)) - 1}: {hist[b]}")
