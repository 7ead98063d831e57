"""Independent reference for "functions of a library never executed"
(Mibu et al., memory access analysis for memory saving): from a lackey
log (text), the saved /proc/PID/maps and the object's ELF files read with
binutils' readelf, counts the object's functions (STT_FUNC and
STT_GNU_IFUNC symbols defined in a section, distinct by address and name,
from the symbol table file) and those that contain at least one
instruction fetch (an `I` record inside the object's mappings, placed at
its link-time address through the program headers). A function covers
[value, value + max(size, 1)).

Usage: symbols.py LOG MAPS OBJECT_SUBSTRING BINARY SYMFILE
  → `functions,executed,never` on stdout."""
import bisect
import subprocess
import sys

log, maps, which, binary, symfile = sys.argv[1:6]


def readelf(*args):
    return subprocess.run(["readelf", "-W", *args], check=True, capture_output=True, text=True).stdout


# LOAD segments: (offset, vaddr, filesz).
segs = []
for l in readelf("-l", binary).splitlines():
    f = l.split()
    if f and f[0] == "LOAD":
        segs.append((int(f[1], 16), int(f[2], 16), int(f[4], 16)))


def vaddr_of(off):
    for o, v, s in segs:
        if o <= off < o + max(s, 1):
            return v + off - o
    return None


# The object's mappings: (start, end, bias) with run-time = link-time + bias.
maps_of = []
for l in open(maps):
    f = l.split()
    if len(f) >= 6 and which in f[5]:
        a, b = (int(x, 16) for x in f[0].split("-"))
        v = vaddr_of(int(f[2], 16))
        if v is not None:
            maps_of.append((a, b, a - v))

# Functions of the symbol table.
funcs = set()
for l in readelf("-s", symfile).splitlines():
    f = l.split()
    if len(f) < 8 or not f[0].endswith(":") or f[3] not in ("FUNC", "IFUNC"):
        continue
    if f[6] in ("UND", "ABS", "COM"):
        continue
    funcs.add((int(f[1], 16), max(int(f[2], 0), 1), f[7]))

# Distinct fetch addresses inside the object, at link-time addresses.
fetch = set()
with open(log, "rb") as fh:
    for raw in fh:
        if not raw.startswith(b"I  "):
            continue
        a = int(raw[3:].split(b",")[0], 16)
        for s, e, bias in maps_of:
            if s <= a < e:
                fetch.add(a - bias)
                break
fetch = sorted(fetch)
used = 0
for v, size, _ in funcs:
    i = bisect.bisect_left(fetch, v)
    if i < len(fetch) and fetch[i] < v + size:
        used += 1
print(f"{len(funcs)},{used},{len(funcs) - used}")
