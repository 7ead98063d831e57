"""Independent per-page reference for the memory-log tests: reads a lackey
log (text) and prints, for pages of PAGE_SIZE bytes, the accesses per kind,
distinct bytes touched and the first/last instruction ordinal, with
trawl's documented semantics: an `I` record's ordinal is its 1-based index,
a load/store/modify's the number of `I` records before it; an access that
crosses a page boundary counts on both pages.

Then the page-reuse figures: pairs (a, b) with a.last < b.first, the most
pages live at one ordinal, and the pages live across another's whole
lifetime.

Usage: pages.py LOG PAGE_SIZE  → CSV on stdout, then `#reuse,...` lines."""
import sys

log, ps = sys.argv[1], int(sys.argv[2])
kinds = {"I": 0, "L": 1, "S": 2, "M": 3}
pages = {}
n = 0
with open(log, "rb") as f:
    for raw in f:
        line = raw.decode("latin-1")
        if line.startswith("I  "):
            n += 1
            k, rest = 0, line[3:]
        elif len(line) > 3 and line[0] == " " and line[1] in "LSM" and line[2] == " ":
            k, rest = kinds[line[1]], line[3:]
        else:
            continue
        a, s = rest.strip().split(",")
        a, s = int(a, 16), int(s)
        end, x = a + max(s, 1), a
        while True:
            p = x // ps
            e = min(end, (p + 1) * ps)
            st = pages.setdefault(p, [0, 0, 0, 0, n, n, set()])
            st[k] += 1
            st[4] = min(st[4], n)
            st[5] = max(st[5], n)
            st[6].update(range(x - p * ps, e - p * ps))
            if e >= end:
                break
            x = e
print("page,fetches,loads,stores,modifies,bytes_touched,first_ordinal,last_ordinal")
for p in sorted(pages):
    st = pages[p]
    print(f"{p * ps},{st[0]},{st[1]},{st[2]},{st[3]},{len(st[6])},{st[4]},{st[5]}")
lives = [(st[4], st[5]) for st in pages.values()]
pairs = sum(1 for a in lives for b in lives if a[1] < b[0])
events = sorted([(f, 0) for f, _ in lives] + [(l, 1) for _, l in lives])
live = best = 0
for _, kind in events:  # at one ordinal, starts come before ends: closed intervals
    live += 1 if kind == 0 else -1
    best = max(best, live)
spanning = sum(1 for p in lives if any(p[0] < q[0] and q[1] < p[1] for q in lives))
print(f"#reuse,{len(lives)},{best},{pairs},{spanning}")
