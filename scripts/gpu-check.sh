#!/usr/bin/env bash
# The one prepared command for a machine with an NVIDIA GPU (no MLIR and no
# network there; the driver is). Build here first (scripts/build.sh), carry
# build/bin and build/lib, then run:
#
#   scripts/gpu-check.sh [OUTPUT_DIR]
#
# It writes OUTPUT_DIR/gpu-check.json ($OUT, else build/gpu-check; the build
# directory is $TE_BUILD_DIR, else build): today the
# cuda device's checks and copy bandwidths (te-gpu-check); the code-generated
# and library kernels join as the cuda target lands. Without a GPU it prints
# "SKIPPED: <why>" and exits 0. Bounded to 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${TE_BUILD_DIR:-build}"
out="${1:-${OUT:-$build/gpu-check}}"
runner="$build/bin/te-gpu-check"
if [[ ! -x "$runner" ]]; then
  echo "gpu-check: $runner is missing; run scripts/build.sh first (and carry build/bin and build/lib to the GPU machine)" >&2
  exit 1
fi
mkdir -p "$out"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    > "$out/nvidia-smi.txt" 2>&1 || true
fi
timeout 480 "$runner" --json "$out/gpu-check.json"
