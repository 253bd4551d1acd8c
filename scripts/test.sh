#!/usr/bin/env bash
# The test command: installs what is missing, builds, and runs every test
# (GoogleTest unit tests, the lit/FileCheck suite, pytest suites and the
# dependency check) through ctest, then the runtime's unit tests and the
# compiler on every example under AddressSanitizer and UBSan
# (scripts/sanitize.sh --quick; without --quick it runs every test under
# them).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
ctest --test-dir build --output-on-failure -j "$(nproc)"
scripts/sanitize.sh --quick
