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
# packages are installed while it compiles, and the end-to-end tests run
# while the unit tests compile. A closing summary gives each phase's time
# and the number of tests it ran; every phase runs even when an earlier
# one failed, and the run fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/ci
LOG=$PWD/target/ci
T0=$(date +%s)
FAILED=0
rm -f "$LOG/phases" "$LOG"/*.result

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

# quiet NAME CMD...: phase, its output kept in the log only (shown at the
# end): for a phase that runs beside others.
quiet() {
  local name=$1 t rc
  shift
  t=$(date +%s)
  echo "=== $name (beside the next phases; log: $LOG/$name.log): $*"
  "$@" >"$LOG/$name.log" 2>&1
  rc=$?
  record "$name" "$t" "$rc" "$(count_tests "$LOG/$name.log")"
}

# record NAME START RC TESTS [END]: END (default now) in seconds. A file
# per phase, so that a phase run in the background is counted too.
record() {
  local name=$1 t=$2 rc=$3 n=$4 s
  s=$((${5:-$(date +%s)} - t))
  printf '%-12s %4d min %02d s  %6s tests  %s\n' "$name" $((s / 60)) $((s % 60)) "$n" \
    "$([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)")" >"$LOG/$name.result"
  echo "$name" >>"$LOG/phases"
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
  local s=$(($(date +%s) - T0)) name failed=0 tests=0
  echo
  echo "=== summary (tests/run.sh; e2e ran beside unit-build .. python)"
  while read -r name; do
    cat "$LOG/$name.result"
    grep -q ' ok$' "$LOG/$name.result" || failed=1
    tests=$((tests + $(awk '{ print ($6 ~ /^[0-9]+$/) ? $6 : 0 }' "$LOG/$name.result")))
  done <"$LOG/phases"
  printf '%-12s %4d min %02d s  %6s tests\n' total $((s / 60)) $((s % 60)) "$tests"
  return $failed
}

# Every crate's unit tests (its library's and programs' test harnesses,
# where the manifest has them: `cargo test --lib` would compile those it
# turns off), each run from its package's directory as cargo runs it.
unit_tests() {
  local rc=0 n=0 dir exe
  while read -r dir exe; do
    n=$((n + 1))
    echo "     Running $exe"
    (cd "$dir" && "$exe") || rc=1
  done < <(cargo test "${WS[@]}" --no-run --message-format=json 2>/dev/null | python3 -c '
import json, os, sys
for line in sys.stdin:
    m = json.loads(line)
    if (m.get("reason") == "compiler-artifact" and m.get("executable")
            and m["profile"]["test"] and m["target"]["kind"][0] in ("lib", "bin")):
        print(os.path.dirname(m["manifest_path"]), m["executable"])')
  [ "$n" -gt 0 ] || { echo "no unit test found"; rc=1; }
  return $rc
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
  # tests; azure-storage-blob creates the Azure emulator's containers;
  # perfetto (its published trace schema, perfetto_trace_pb2) and protobuf
  # read the Perfetto traces trawl writes.
  python3 -c 'import pyarrow, polars, duckdb, pandas, pytest, jupytext, nbclient, ipykernel, jsonschema, moto.server, boto3, flask_cors, azure.storage.blob, perfetto.protos.perfetto.trace.perfetto_trace_pb2' >/dev/null 2>&1 ||
    python3 -m pip install --quiet --disable-pip-version-check pyarrow polars duckdb pandas pytest \
      jupytext nbclient ipykernel jsonschema 'moto[server]>=5.1,<6' boto3 'azure-storage-blob>=12.20,<13' \
      'perfetto>=0.50' protobuf
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

# Every cargo command names the same packages (the workspace but the
# Python module, which its install builds): another set unifies other
# features and compiles the dependencies again. The release profile is
# the one the install below compiles the same dependencies with.
WS=(--release --workspace --exclude trawl-python --no-fail-fast)

# First what the end-to-end tests and the install need: every library, the
# command, the end-to-end test binary and the examples (the Python tests
# run the energy simulator). The crates' unit-test harnesses (140 s of
# compiler time, trawl-query's alone 95 s) compile later, beside the
# end-to-end tests. --timings: target/cargo-timings/.
phase build cargo test "${WS[@]}" --no-run --timings --test e2e --bins --examples
# The end-to-end test binary, as cargo names it ("Executable ... (path)").
E2E=$(sed -n 's|^ *Executable .*tests/e2e/main.rs (\(.*\))$|\1|p' "$LOG/build.log" | tail -1)
case $E2E in /*) ;; *) E2E=$PWD/$E2E ;; esac

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

# Every end-to-end test (the fuzz corpora's replay among them) against the
# installed build, in the background: the tests wait on programs and
# servers for much of their time (about 1.2 of the 2 cores), and the unit
# tests compile meanwhile. Run as cargo runs it (from the package's
# directory), without cargo, whose lock the compile holds. The test of a
# store that never answers waits two minutes (the documented request
# timeout): it runs on its own from the start, beside the others.
SILENT=objects::a_store_that_never_answers_times_out_as_documented
e2e() {
  local rc slow
  "$E2E" --exact "$SILENT" >"$LOG/e2e-silent.log" 2>&1 &
  slow=$!
  "$E2E" --test-threads 3 --skip "$SILENT"
  rc=$?
  wait "$slow" || rc=1
  cat "$LOG/e2e-silent.log"
  return $rc
}
(cd cli && TRAWL_TEST_BIN="$TRAWL_INSTALLED" quiet e2e e2e) &
E2E_JOB=$!

# Every crate's unit tests and doc tests; what a user sees of the command
# itself (exit statuses, Ctrl-C, a closed pipe, colours, progress bar)
# against the binary `cargo install --path cli` builds (the release
# profile's); the notebook check and the Python package's tests (every
# analysis method against `trawl sql`, the example notebook) against the
# installed build; then the documented set-up in a fresh virtual
# environment.
phase unit-build cargo test "${WS[@]}" --no-run
phase unit unit_tests
phase doc cargo test "${WS[@]}" --doc
phase front sh -c "cd cli && exec '$E2E' front::"
phase notebook python3 tests/notebook_check.py "$TRAWL_INSTALLED"
TRAWL_BIN="$TRAWL_INSTALLED" phase python python3 -m pytest -q python/tests
# The documented set-up as a new user runs it: README's and python.md's
# install commands in a fresh virtual environment, exactly as written,
# python.md's Python blocks and the notebook from outside the checkout
# (the build above is reused: the install compiles only the module).
phase docs python3 tests/docs_check.py

echo "=== waiting for e2e"
wait "$E2E_JOB"
cat "$LOG/e2e.log"

summary || FAILED=1
exit $FAILED
