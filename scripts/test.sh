#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (GoogleTest unit tests and the lit/FileCheck suite) through ctest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
