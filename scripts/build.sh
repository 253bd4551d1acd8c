#!/usr/bin/env bash
# Installs what is missing, then configures and builds te-mlir in build/.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake --preset default -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build
