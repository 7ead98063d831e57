#!/usr/bin/env bash
# Runs every test of trawl on a fresh machine: installs what the tests need
# when it is missing (perf from Debian's linux-perf; pyarrow, polars and
# duckdb from PyPI), then the Rust tests (unit + end-to-end against perf)
# and the notebook check.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v perf >/dev/null 2>&1; then
  apt-get update -qq && apt-get install -y -qq linux-perf
fi
if ! python3 -c 'import pyarrow, polars, duckdb' >/dev/null 2>&1; then
  python3 -m pip install --quiet --disable-pip-version-check pyarrow polars duckdb
fi

cargo test --workspace --no-fail-fast
python3 tests/notebook_check.py target/debug/trawl
