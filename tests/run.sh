#!/usr/bin/env bash
# Runs every test of trawl on a fresh machine: installs what the tests need
# when it is missing (perf, binutils, llvm, libc6-dbg, valgrind, sysstat from Debian;
# pyarrow, polars, duckdb, pandas, pytest and Jupyter from PyPI; speedscope,
# the Firefox Profiler's CLI and Azurite from npm), builds trawl once, and
# runs the Rust unit tests, the end-to-end tests (against perf), the fuzz
# corpora's replay, the notebook check and the Python package's tests.
#
# One build: the unit tests, the end-to-end tests and README's set-up
# (`pip install ./python`) share the release profile, so every dependency
# is compiled once (docs/guide/performance.md, "The test run"). The
# packages are installed while it compiles. A closing summary gives each
# phase's time and the number of tests it ran; every phase runs even when
# an earlier one failed, and the run fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/ci
LOG=target/ci
T0=$(date +%s)
SUMMARY=()
FAILED=0

# phase NAME CMD...: runs CMD with its output shown and kept in
# target/ci/NAME.log; records its time, the tests it ran (cargo's and
# pytest's result lines) and whether it failed.
phase() {
  local name=$1 t rc n
  shift
  t=$(date +%s)
  echo "=== $name: $*"
  "$@" 2>&1 | tee "$LOG/$name.log"
  rc=${PIPESTATUS[0]}
  n=$(count_tests "$LOG/$name.log")
  record "$name" "$t" "$rc" "$n"
}

# record NAME START RC TESTS [END]: END (default now) in seconds.
record() {
  local name=$1 t=$2 rc=$3 n=$4 s
  s=$((${5:-$(date +%s)} - t))
  SUMMARY+=("$(printf '%-12s %4d min %02d s  %6s tests  %s' "$name" $((s / 60)) $((s % 60)) "$n" \
    "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")")")
  [ "$rc" = 0 ] || FAILED=1
}

# Tests run (passed + failed, and pytest's errors) by the result lines of
# cargo test, pytest and the notebook check.
count_tests() {
  awk '/^test result: / { for (i = 2; i <= NF; i++) if ($i ~ /^(passed|failed);$/) n += $(i - 1) }
       /^[= ]*[0-9]+ (passed|failed|errors?)/ && !/^test result/ {
         for (i = 2; i <= NF; i++) if ($i ~ /^(passed|failed|errors?),?$/ && $(i - 1) ~ /^[0-9]+$/) n += $(i - 1) }
       END { print n + 0 }' "$1"
}

summary() {
  local s=$(($(date +%s) - T0))
  echo
  echo "=== summary (tests/run.sh)"
  printf '%s\n' "${SUMMARY[@]}"
  printf '%-12s %4d min %02d s\n' total $((s / 60)) $((s % 60))
}

# --- Packages, installed in the background while trawl compiles ----------
setup() {
  set -e
  # perf (linux-perf), binutils (addr2line, nm, readelf), llvm-addr2line
  # (llvm) and libc's separate debug file (libc6-dbg) are the reference
  # tools and inputs of the end-to-end tests.
  local missing=()
  command -v perf >/dev/null 2>&1 || missing+=(linux-perf)
  command -v addr2line >/dev/null 2>&1 || missing+=(binutils)
  command -v llvm-addr2line >/dev/null 2>&1 || missing+=(llvm)
  [ -d /usr/lib/debug/.build-id ] || missing+=(libc6-dbg)
  # A TrueType font for the text of plots (report timeline/exhaustion --plot).
  [ -f /usr/share/fonts/truetype/dejavu/DejaVuSans.ttf ] || missing+=(fonts-dejavu-core)
  # zstd and gzip unpack and repack the memory-log fixtures.
  command -v zstd >/dev/null 2>&1 || missing+=(zstd)
  command -v gzip >/dev/null 2>&1 || missing+=(gzip)
  # valgrind (lackey and the headers and static libraries tools/trawlmem is
  # built against) and gcc to build it.
  command -v valgrind >/dev/null 2>&1 && [ -f /usr/include/valgrind/pub_tool_basics.h ] || missing+=(valgrind)
  command -v gcc >/dev/null 2>&1 || missing+=(gcc)
  # GNU time: peak memory of a run (bad-input bounds); strace traces the
  # files trawl opens (--sysroot confinement); unshare (util-linux) mounts
  # a small tmpfs in a private namespace (full-disk test).
  [ -x /usr/bin/time ] || missing+=(time)
  command -v strace >/dev/null 2>&1 || missing+=(strace)
  command -v unshare >/dev/null 2>&1 || missing+=(util-linux)
  # sysstat's sadf reads sysstat's own test file (USB devices, -d and -j).
  command -v sadf >/dev/null 2>&1 || missing+=(sysstat)
  # The consumers of `trawl export`: go tool pprof (golang-go), npm for
  # speedscope's file-format schema and the Firefox Profiler's CLI.
  command -v go >/dev/null 2>&1 || missing+=(golang-go)
  command -v npm >/dev/null 2>&1 || missing+=(npm)
  # A real debuginfod server (and curl to wait for it) for the symbolizer's
  # --debuginfod tests.
  command -v debuginfod >/dev/null 2>&1 || missing+=(debuginfod)
  command -v curl >/dev/null 2>&1 || missing+=(curl)
  if [ ${#missing[@]} -gt 0 ]; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
  fi
  # pyarrow, Polars, DuckDB and pandas read the tables and results; pytest,
  # Jupytext, nbclient and ipykernel run the Python tests and the example
  # notebook; jsonschema checks speedscope files against its schema; moto
  # (a local S3 server that authenticates requests as AWS does, in-process,
  # no container: tests/s3/server.py) and boto3 for the object-store
  # tests; azure-storage-blob creates the Azure emulator's containers.
  python3 -c 'import pyarrow, polars, duckdb, pandas, pytest, jupytext, nbclient, ipykernel, jsonschema, moto.server, boto3, flask_cors, azure.storage.blob' >/dev/null 2>&1 ||
    python3 -m pip install --quiet --disable-pip-version-check pyarrow polars duckdb pandas pytest \
      jupytext nbclient ipykernel jsonschema 'moto[server]>=5.1,<6' boto3 'azure-storage-blob>=12.20,<13'
  # speedscope's published file-format schema (the npm package ships it);
  # the Firefox Profiler's own loader (its published CLI bundles the web
  # app's profile upgraders and processing) for tests/e2e/firefox_check;
  # Azure Blob Storage's emulator, Azurite (Microsoft's).
  local npm=()
  [ -f target/npm/node_modules/speedscope/dist/release/file-format-schema.json ] || npm+=(speedscope@1.25.0)
  grep -qs '"version": "0.10.0"' target/npm/node_modules/@firefox-devtools/profiler-cli/package.json ||
    npm+=(@firefox-devtools/profiler-cli@0.10.0)
  [ -x target/npm/node_modules/.bin/azurite-blob ] || npm+=(azurite@3.35.0)
  if [ ${#npm[@]} -gt 0 ]; then
    npm install --silent --no-audit --no-fund --save-exact --prefix target/npm "${npm[@]}" >/dev/null
  fi
}

# No incremental build state: a clean checkout builds once, and the target
# directory stays small on a machine with little free disk.
export CARGO_INCREMENTAL=0
# The symbol store of every trawl the tests run (where a test does not
# give one of its own): fresh, not the user's.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
df -h . | tail -1

t=$(date +%s)
(setup; rc=$?; date +%s >"$LOG/setup.end"; exit $rc) >"$LOG/setup.log" 2>&1 &
SETUP=$!

# Every test target of the workspace (the Python module aside, which is
# built by its install), in the release profile that the install below
# compiles the same dependencies with; --timings: target/cargo-timings/.
phase build cargo test --release --workspace --exclude trawl-python --no-run --timings

wait "$SETUP"
rc=$?
cat "$LOG/setup.log"
# Its own time (it ran beside the build).
record setup "$t" "$rc" "-" "$(cat "$LOG/setup.end" 2>/dev/null || date +%s)"

# README's set-up, as a user runs it: the `trawl` command and the Python
# package from one release build, over the dependencies compiled above.
phase install python3 -m pip install --quiet --disable-pip-version-check ./python
TRAWL_INSTALLED="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/trawl"
# The installed command is the build just made, not an older one earlier on
# the PATH or in the user's site-packages: its build id (a hash of the
# sources it was compiled from) is this tree's.
echo "built: $(target/release/trawl --version); installed: $("$TRAWL_INSTALLED" --version)"
if [ "$(target/release/trawl --version)" != "$("$TRAWL_INSTALLED" --version)" ]; then
  echo "$TRAWL_INSTALLED is not the build of this tree"
  FAILED=1
fi
TRAWL_BUILD="$(target/release/trawl --version)"
export TRAWL_BUILD

# Every cargo command names the same packages as the build (the workspace
# but the Python module): another set unifies other features and compiles
# the dependencies again. Every crate's unit tests and doc tests; what a
# user sees of the command itself (exit statuses, Ctrl-C, a closed pipe,
# colours, progress bar) against the binary `cargo install --path cli`
# builds (the release profile's).
WS=(--release --workspace --exclude trawl-python --no-fail-fast)
phase unit cargo test "${WS[@]}" --lib --bins
phase doc cargo test "${WS[@]}" --doc
phase front cargo test "${WS[@]}" --test e2e front::
# Every end-to-end test (the fuzz corpora's replay among them), the
# notebook check and the Python package's tests (every analysis method
# against `trawl sql`, the example notebook) against the installed build.
TRAWL_TEST_BIN="$TRAWL_INSTALLED" phase e2e cargo test "${WS[@]}" --test e2e
phase notebook python3 tests/notebook_check.py "$TRAWL_INSTALLED"
TRAWL_BIN="$TRAWL_INSTALLED" phase python python3 -m pytest -q python/tests

summary
exit $FAILED
