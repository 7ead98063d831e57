#!/usr/bin/env python3
"""Writes a lackey log of at least SIZE bytes from the fixture's real one
(fixtures/memlog/pages.lackey.zst, 2.8 MB): its valgrind preamble, then its
records again and again, each repetition's data addresses moved by k MiB
(k = 0..63, round robin: 64 times the fixture's pages), then its trailer.

Usage: bench/gen_lackey.py OUT SIZE_BYTES
"""
import os
import subprocess
import sys

out, size = sys.argv[1], int(sys.argv[2])
root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
text = subprocess.run(
    ["zstd", "-q", "-d", "-c", os.path.join(root, "fixtures/memlog/pages.lackey.zst")],
    check=True, capture_output=True,
).stdout
lines = text.splitlines(keepends=True)
i = 0
while i < len(lines) and lines[i].startswith(b"=="):
    i += 1
j = len(lines)
while j > i and lines[j - 1].startswith(b"=="):
    j -= 1
pre, body, post = lines[:i], lines[i:j], lines[j:]


def moved(k):
    if k == 0:
        return b"".join(body)
    parts = []
    for l in body:
        if l[:1] == b" " and l[1:2] in (b"L", b"S", b"M"):
            a, rest = l[3:].split(b",", 1)
            a2 = format(int(a, 16) + (k << 20), "x").zfill(len(a)).encode()
            parts.append(l[:3] + a2 + b"," + rest)
        else:
            parts.append(l)
    return b"".join(parts)


variants = [moved(k) for k in range(64)]
n = 0
with open(out, "wb", buffering=1 << 22) as f:
    n += f.write(b"".join(pre))
    k = 0
    while n < size:
        n += f.write(variants[k % 64])
        k += 1
    n += f.write(b"".join(post))
print(f"{out}: {n} bytes, {k} repetitions of {len(body)} records")
