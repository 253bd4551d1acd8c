#!/usr/bin/env bash
# Installs what is missing, then configures and builds te-mlir in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
# Paths relative to the checkout in ccache's keys: a fresh clone (CI's)
# reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
cmake --preset default -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build
