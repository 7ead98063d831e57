#!/usr/bin/env bash
# Builds the trawlmem valgrind tool out of tree, against the headers and
# static libraries Debian's `valgrind` package ships (/usr/include/valgrind,
# /usr/lib/x86_64-linux-gnu/valgrind), linked like valgrind's own tools
# (Makefile.tool.am: static, no libc, loaded at 0x58000000), and lays out
# a valgrind library directory with it beside valgrind's own files.
#
# Usage: tools/trawlmem/build.sh [OUTDIR]   (default: target/trawlmem)
# Then:  VALGRIND_LIB=OUTDIR valgrind --tool=trawlmem --out=x.tmem PROG ...
#        (or tools/trawlmem/run.sh, which does this).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-$here/../../target/trawlmem}
mkdir -p "$out"
inc=/usr/include/valgrind
lib=/usr/lib/x86_64-linux-gnu/valgrind
libexec=/usr/libexec/valgrind
for f in "$inc/pub_tool_basics.h" "$lib/libcoregrind-amd64-linux.a" "$lib/libvex-amd64-linux.a"; do
  [ -e "$f" ] || { echo "build.sh: $f missing: apt-get install valgrind" >&2; exit 1; }
done
cc=${CC:-gcc}
$cc -c -o "$out/trawlmem.o" "$here/trawlmem.c" \
  -I"$inc" -m64 -O2 -g -std=gnu99 -Wall -Wno-unused-parameter \
  -fno-strict-aliasing -fno-builtin -fno-stack-protector -fno-pie \
  -DVGA_amd64=1 -DVGO_linux=1 -DVGP_amd64_linux=1 -DVGPV_amd64_linux_vanilla=1
$cc -o "$out/trawlmem-amd64-linux" "$out/trawlmem.o" \
  -m64 -static -nodefaultlibs -nostartfiles -u _start -Wl,--build-id=none \
  -Wl,-Ttext-segment=0x58000000 \
  "$lib/libcoregrind-amd64-linux.a" "$lib/libvex-amd64-linux.a" -lgcc \
  "$lib/libgcc-sup-amd64-linux.a"
# valgrind finds tools and its preload libraries in VALGRIND_LIB.
for f in "$libexec"/*; do
  ln -sf "$f" "$out/$(basename "$f")"
done
echo "$out/trawlmem-amd64-linux"
