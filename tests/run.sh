#!/usr/bin/env bash
# Runs every test of trawl on a fresh machine: installs what the tests need
# when it is missing (perf, binutils, llvm, libc6-dbg, valgrind from Debian;
# pyarrow, polars, duckdb, pandas, pytest and Jupyter from PyPI), then the
# Rust unit tests, installs trawl as README says (`pip install ./python`)
# and runs the end-to-end tests (against perf), the notebook check and the
# Python package's tests against the installed `trawl`.
set -euo pipefail
cd "$(dirname "$0")/.."

# perf (linux-perf), binutils (addr2line, nm, readelf), llvm-addr2line
# (llvm) and libc's separate debug file (libc6-dbg) are the reference tools
# and inputs of the end-to-end tests.
missing=()
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
# The consumers of `trawl export`: go tool pprof (golang-go), npm for
# speedscope's file-format schema and the Firefox Profiler's CLI.
command -v go >/dev/null 2>&1 || missing+=(golang-go)
command -v npm >/dev/null 2>&1 || missing+=(npm)
# A real debuginfod server (and curl to wait for it) for the symbolizer's
# --debuginfod tests.
command -v debuginfod >/dev/null 2>&1 || missing+=(debuginfod)
command -v curl >/dev/null 2>&1 || missing+=(curl)
if [ ${#missing[@]} -gt 0 ]; then
  apt-get update -qq && apt-get install -y -qq "${missing[@]}"
fi
# pyarrow, Polars, DuckDB and pandas read the tables and results; pytest,
# Jupytext, nbclient and ipykernel run the Python tests and the example
# notebook.
if ! python3 -c 'import pyarrow, polars, duckdb, pandas, pytest, jupytext, nbclient, ipykernel' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check pyarrow polars duckdb pandas pytest jupytext nbclient ipykernel
fi

# speedscope's published file-format schema (the npm package ships it).
[ -f target/npm/node_modules/speedscope/dist/release/file-format-schema.json ] ||
  npm install --silent --no-audit --no-fund --prefix target/npm speedscope@1.25.0 >/dev/null
# The Firefox Profiler's own loader (its published CLI bundles the web app's
# profile upgraders and processing) for tests/e2e/firefox_check.
grep -qs '"version": "0.10.0"' target/npm/node_modules/@firefox-devtools/profiler-cli/package.json ||
  npm install --silent --no-audit --no-fund --save-exact --prefix target/npm @firefox-devtools/profiler-cli@0.10.0 >/dev/null
python3 -c 'import jsonschema' >/dev/null 2>&1 ||
  python3 -m pip install --quiet --disable-pip-version-check jsonschema
# A local S3 server for the object-store tests (tests/s3/server.py): moto,
# which authenticates requests as AWS does and runs in-process from PyPI
# (no container, no service); boto3 sets it up.
python3 -c 'import moto.server, boto3, flask_cors' >/dev/null 2>&1 ||
  python3 -m pip install --quiet --disable-pip-version-check 'moto[server]>=5.1,<6' boto3
# Azure Blob Storage's emulator, Azurite (Microsoft's, from npm), for the
# Azure URLs; azure-storage-blob creates its containers.
[ -x target/npm/node_modules/.bin/azurite-blob ] ||
  npm install --silent --no-audit --no-fund --save-exact --prefix target/npm azurite@3.35.0 >/dev/null
python3 -c 'import azure.storage.blob' >/dev/null 2>&1 ||
  python3 -m pip install --quiet --disable-pip-version-check 'azure-storage-blob>=12.20,<13'

# No incremental build state: a clean checkout builds once, and the target
# directory stays small on a machine with little free disk.
export CARGO_INCREMENTAL=0
# The symbol store of every trawl the tests run (where a test does not
# give one of its own): fresh, not the user's.
XDG_CACHE_HOME=$(mktemp -d)
export XDG_CACHE_HOME
trap 'rm -rf "$XDG_CACHE_HOME"' EXIT
df -h . | tail -1
# Every crate's unit tests; what a user sees of the command itself (exit
# statuses, Ctrl-C, a closed pipe, colours, progress bar) against this
# build's binary, as `cargo install --path cli` builds it.
cargo test --workspace --exclude trawl --no-fail-fast
cargo test -p trawl --lib --bins --no-fail-fast
cargo test -p trawl --test e2e --no-fail-fast front::
# Every fuzz target's corpus and regression inputs through its reader, on
# the stable toolchain (the fuzzing itself: bench/fuzz.sh).
CARGO_TARGET_DIR=target cargo test --manifest-path fuzz/Cargo.toml --no-default-features
# README's set-up, as a user runs it: one release build gives the `trawl`
# command and the Python package. Every end-to-end test, the notebook
# check and the Python package's tests (every analysis method against
# `trawl sql`, the example notebook) run against that one installed build.
python3 -m pip install --quiet --disable-pip-version-check ./python
TRAWL_INSTALLED="$(python3 -c 'import sysconfig; print(sysconfig.get_path("scripts"))')/trawl"
TRAWL_TEST_BIN="$TRAWL_INSTALLED" cargo test -p trawl --test e2e --no-fail-fast
python3 tests/notebook_check.py "$TRAWL_INSTALLED"
TRAWL_BIN="$TRAWL_INSTALLED" python3 -m pytest -q python/tests
