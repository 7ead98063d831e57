#!/usr/bin/env bash
# The install's figures (docs/guide/install.md): what README's one command
# builds and installs, and how fast the installed command starts.
#
#  - with BUILD=1: the wall time of `pip install ./python` from a fresh
#    clone of this checkout (an empty target directory; the crates.io
#    downloads are cached as on any machine that built Rust before);
#  - the size of the extension module (the installed command's code), of
#    the wheel, and of the Rust binary (target/release/trawl, if built);
#  - start-up: `trawl --version` and `trawl sql` of one count on a small
#    capture, median of 21 runs each, run in turn, for the installed
#    command, `python -m trawl`, the Rust binary and OLD (an earlier
#    trawl binary to compare with).
#
# Usage: bench/install.sh   (env BUILD=1, OLD=path, BENCH_DIR, default
#        /tmp/trawl-bench)
set -euo pipefail
cd "$(dirname "$0")/.."
W=${BENCH_DIR:-/tmp/trawl-bench}/install
mkdir -p "$W"

if [ "${BUILD:-}" = 1 ]; then
  rm -rf "$W/clone"
  git clone -q "$PWD" "$W/clone"
  start=$(date +%s)
  (cd "$W/clone" && python3 -m pip install --quiet --disable-pip-version-check ./python)
  echo "pip install ./python from a fresh clone: $(( $(date +%s) - start )) s"
  (cd "$W/clone" && python3 -m pip wheel --quiet --no-deps -w "$W/wheel" ./python)
  rm -rf "$W/clone"
fi

SCRIPTS=$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
INSTALLED=$SCRIPTS/trawl
EXT=$(python3 -c 'import importlib.util as u; print(u.find_spec("trawl._trawl").origin)')
mb() { python3 -c "import os,sys; print(f'{os.path.getsize(sys.argv[1]) / 1e6:.1f} MB')" "$1"; }
echo "extension module: $(mb "$EXT")  ($EXT)"
for whl in "$W"/wheel/trawl-*.whl; do [ -f "$whl" ] && echo "wheel: $(mb "$whl")"; done
[ -x target/release/trawl ] && echo "Rust binary: $(mb target/release/trawl)"

CAP=$W/cap
[ -d "$CAP" ] || "$INSTALLED" ingest fixtures/perf/hot-fp.data -o "$CAP" --no-symbolize 2>/dev/null
export XDG_CACHE_HOME=$W/xdg
python3 - "$CAP" "$INSTALLED" "${OLD:-}" <<'EOF'
import os, statistics, subprocess, sys, time
cap, installed, old = sys.argv[1:4]
fronts = [("installed command", [installed]), ("python -m trawl", [sys.executable, "-m", "trawl"])]
if os.path.exists("target/release/trawl"):
    fronts.append(("Rust binary", ["target/release/trawl"]))
if old:
    fronts.append(("OLD", [old]))
jobs = [("--version", ["--version"]),
        ("sql count", ["sql", cap, "SELECT count(*) FROM perf_sample", "--format", "csv"])]
for what, args in jobs:
    times = {name: [] for name, _ in fronts}
    for _ in range(21):
        for name, cmd in fronts:
            t = time.perf_counter()
            subprocess.run(cmd + args, check=True, stdout=subprocess.DEVNULL)
            times[name].append(time.perf_counter() - t)
    print(f"{what}: " + ", ".join(f"{n} {statistics.median(v) * 1e3:.0f} ms" for n, v in times.items()))
EOF
