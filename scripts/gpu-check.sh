#!/usr/bin/env bash
# The one prepared command for a machine with an NVIDIA GPU (no MLIR and no
# network there; the driver is). Here, build (scripts/build.sh) and compile
# the kernels ahead of time:
#
#   scripts/gpu-check.sh --prepare
#
# (into $TE_GPU_KERNELS, else $TE_BUILD_DIR/gpu-kernels: bench/gpu/*.mlir
# and the FP8 examples, each as NAME.fatbin for sm_90a, NAME-sm80.fatbin
# for sm_80, whose PTX the driver compiles for newer GPUs, and NAME.so for
# the CPU). Carry build/bin,
# build/lib and build/gpu-kernels to the GPU machine and run there:
#
#   scripts/gpu-check.sh [OUTPUT_DIR]
#
# It writes OUTPUT_DIR/gpu-check.json ($OUT, else build/gpu-check; the build
# directory is $TE_BUILD_DIR, else build): the cuda device's checks and copy
# bandwidths, then every prepared program run on the GPU and the CPU on the
# same inputs, the GPU's outputs checked against the CPU's (within each
# type's tolerance; bit-exactness, which the FP8 kernels promise, is
# reported), again with NaNs, infinities and out-of-range values in the
# float inputs, and each GPU entry timed (te-gpu-check). Without a GPU it prints
# "SKIPPED: <why>" and exits 0. Bounded to 8 minutes.
set -euo pipefail
cd "$(dirname "$0")/.."

build="${TE_BUILD_DIR:-build}"
kernels="${TE_GPU_KERNELS:-$build/gpu-kernels}"
if [[ "${1:-}" == "--prepare" ]]; then
  mkdir -p "$kernels"
  for program in bench/gpu/*.mlir examples/fp8_current_scaling.mlir \
      examples/mxfp8_quantize.mlir; do
    name="$(basename "$program" .mlir)"
    TE_CUDA_ARCH=sm_90a "$build/bin/te-run" "$program" --backend cuda \
      --emit=module -o "$kernels/$name.fatbin"
    TE_CUDA_ARCH=sm_80 "$build/bin/te-run" "$program" --backend cuda \
      --emit=module -o "$kernels/$name-sm80.fatbin"
    "$build/bin/te-run" "$program" --emit=module -o "$kernels/$name.so"
    cp "$kernels/$name.so" "$kernels/$name-sm80.so"
  done
  echo "gpu-check: kernels compiled into $kernels"
  exit 0
fi
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
args=(--json "$out/gpu-check.json")
if [[ -d "$kernels" ]]; then
  args+=(--kernels "$kernels")
else
  echo "gpu-check: no $kernels (run scripts/gpu-check.sh --prepare where MLIR is); checking the device only" >&2
fi
timeout 480 "$runner" "${args[@]}"
