#!/usr/bin/env bash
# The one prepared command for a machine with an NVIDIA GPU (no MLIR and no
# network there; the driver is). Here, build (scripts/build.sh) and compile
# the kernels ahead of time:
#
#   scripts/gpu-check.sh --prepare
#
# (into $TE_GPU_KERNELS, else $TE_BUILD_DIR/gpu-kernels: bench/gpu/*.mlir
# and every example whose ops all lower on the cuda target, each as
# NAME.fatbin for sm_90a, NAME-sm80.fatbin
# for sm_80, whose PTX the driver compiles for newer GPUs, NAME-cudnn and
# NAME-codegen for the strategies a program does not take by default
# (cuDNN attention, the generated GEMM), and NAME.so for
# the CPU, for x86-64-v3 (AVX2) or TE_GPU_CHECK_CPU_ARCH). Carry build/bin,
# build/lib and build/gpu-kernels to the GPU machine and run there:
#
#   scripts/gpu-check.sh [OUTPUT_DIR]
#
# It writes into OUTPUT_DIR ($OUT, else build/gpu-check; the build
# directory is $TE_BUILD_DIR, else build):
#   gpu-check.json   the cuda device's checks and copy bandwidths;
#   kernels.json     every prepared program, each in its own process, run on
#                    the GPU and the CPU on the same inputs, the GPU's outputs
#                    checked against the CPU's (within each type's tolerance;
#                    bit-exactness, which the FP8 kernels promise, is
#                    reported), again with NaNs, infinities and out-of-range
#                    values in the float inputs, each GPU entry timed
#                    (te-gpu-check --only);
#   torch-peers.json PyTorch on the same work, where it is
#                    (bench/gpu/torch_peers.py), the peer for the timings;
#   sanitizer.txt    compute-sanitizer memcheck and racecheck of every sm_90a
#                    program, where compute-sanitizer is.
# The programs (sm_90a builds first) and the sanitizer runs stop at a time
# bound, TE_GPU_CHECK_SECONDS (420 by default): what is left is reported
# as not run. TE_GPU_CHECK_PROGRAMS (names separated by spaces, e.g.
# "attention attention-cudnn attention-sm80") runs only those programs, and
# the sanitizer only on them, to spend little device time on a few kernels.
# Exits 1 when a check fails. Without a GPU it prints
# "SKIPPED: <why>" and exits 0. TE_GPU_CHECK_DEVICE=cpu runs the programs'
# checks on the CPU against itself (how its steps are tested without a
# GPU).
set -euo pipefail
cd "$(dirname "$0")/.."

build="${TE_BUILD_DIR:-build}"
kernels="${TE_GPU_KERNELS:-$build/gpu-kernels}"
if [[ "${1:-}" == "--prepare" ]]; then
  mkdir -p "$kernels"
  # bench/gpu's programs must compile; each example joins when all its ops
  # lower on the cuda target (the others are listed with the reason).
  for program in bench/gpu/*.mlir examples/*.mlir; do
    name="$(basename "$program" .mlir)"
    # The checks run each program in one process: collectives over groups
    # of several ranks need a job (mpirun), bench/gpu/collectives.mlir is
    # the NCCL smoke of one rank.
    if [[ "$program" == examples/* ]] &&
        grep -Eq 'te\.process_group @[A-Za-z0-9_]+ size ([2-9]|[1-9][0-9])' "$program"; then
      echo "gpu-check: not in one process: $program (collectives over several ranks run under mpirun)"
      continue
    fi
    if ! TE_CUDA_ARCH=sm_90a "$build/bin/te-run" "$program" --backend cuda \
        --emit=module -o "$kernels/$name.fatbin" 2> "$kernels/$name.log"; then
      if [[ "$program" == bench/* ]]; then
        cat "$kernels/$name.log" >&2
        exit 1
      fi
      echo "gpu-check: not on the GPU yet: $program ($(grep -m1 error: "$kernels/$name.log" || true))"
      rm -f "$kernels/$name.log" "$kernels/$name.fatbin"
      continue
    fi
    rm -f "$kernels/$name.log"
    TE_CUDA_ARCH=sm_80 "$build/bin/te-run" "$program" --backend cuda \
      --emit=module -o "$kernels/$name-sm80.fatbin"
    # For any x86-64 CPU of the last decade: the GPU machine's CPU is not
    # this one.
    TE_CPU_ARCH="${TE_GPU_CHECK_CPU_ARCH:-x86-64-v3}" "$build/bin/te-run" \
      "$program" --emit=module -o "$kernels/$name.so"
    cp "$kernels/$name.so" "$kernels/$name-sm80.so"
  done
  # The strategies a program does not take by default, for sm_90a: the
  # generated GEMM where cuBLASLt takes it, cuDNN's attention forward and
  # backward.
  for variant in attention:TE_CUDA_ATTENTION=cudnn:attention-cudnn \
      attention_backward:TE_CUDA_ATTENTION=cudnn:attention_backward-cudnn \
      gemm:TE_CUDA_GEMM=codegen:gemm-codegen \
      gemm_modes:TE_CUDA_GEMM=codegen:gemm_modes-codegen; do
    IFS=: read -r program setting name <<< "$variant"
    env "$setting" TE_CUDA_ARCH=sm_90a "$build/bin/te-run" \
      "bench/gpu/$program.mlir" --backend cuda --emit=module \
      -o "$kernels/$name.fatbin"
    cp "$kernels/$program.so" "$kernels/$name.so"
  done
  echo "gpu-check: kernels compiled into $kernels"
  exit 0
fi
out="${1:-${OUT:-$build/gpu-check}}"
runner="$build/bin/te-gpu-check"
# The device the programs run on: cuda, or cpu (which checks the CPU
# against itself, so this script's own steps are tested without a GPU).
device="${TE_GPU_CHECK_DEVICE:-cuda}"
suffix=.fatbin
[[ "$device" == cuda ]] || suffix=.so
if [[ ! -x "$runner" ]]; then
  echo "gpu-check: $runner is missing; run scripts/build.sh first (and carry build/bin and build/lib to the GPU machine)" >&2
  exit 1
fi
mkdir -p "$out"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader \
    > "$out/nvidia-smi.txt" 2>&1 || true
fi
# The host CPU of the GPU machine and its matrix and dot-product units
# (AMX, AVX512-BF16), which the CPU backend's bf16 paths depend on.
if [[ -r /proc/cpuinfo ]]; then
  {
    grep -m1 '^model name' /proc/cpuinfo || true
    grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' |
      grep -E '^(avx512f|avx512_bf16|amx_bf16|amx_tile|avx512_fp16)$' |
      tr '\n' ' ' || true
    echo
  } > "$out/host-cpu.txt"
fi
# 1. The device itself: copies and their bandwidths (gpu-check.json).
status=0
timeout 120 "$runner" --device "$device" --json "$out/gpu-check.json" || status=$?
if grep -q '"status": "skipped"' "$out/gpu-check.json" 2> /dev/null; then
  exit 0
fi
if [[ ! -d "$kernels" ]]; then
  echo "gpu-check: no $kernels (run scripts/gpu-check.sh --prepare where MLIR is); checked the device only" >&2
  exit "$status"
fi
# 2. Each prepared program in its own process (kernels.json: a list of
# te-gpu-check reports, or what became of a program that crashed or ran
# past its time), so a kernel that faults or hangs costs only its own
# figures.
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
programs=()
sm80=()
for file in "$kernels"/*"$suffix"; do
  [[ -e "$file" ]] || continue
  name="$(basename "$file" "$suffix")"
  if [[ -n "${TE_GPU_CHECK_PROGRAMS:-}" &&
    " $TE_GPU_CHECK_PROGRAMS " != *" $name "* ]]; then
    continue
  fi
  if [[ "$name" == *-sm80 ]]; then
    [[ "$suffix" == .so ]] || sm80+=("$name")
    continue
  fi
  programs+=("$name")
done
# The sm_80 builds last: if the time bound cuts the list, it cuts those.
programs+=("${sm80[@]}")
{
  printf '['
  separator=""
  for name in "${programs[@]}"; do
    printf '%s\n' "$separator"
    separator=","
    # The whole check stays within its time bound: programs past it are
    # reported as not run.
    if ((SECONDS > ${TE_GPU_CHECK_SECONDS:-420})); then
      printf '{"program": "%s", "status": "not run", "reason": "past the time bound (TE_GPU_CHECK_SECONDS)"}' "$name"
      echo "gpu-check: $name not run: past the time bound" >&2
      continue
    fi
    code=0
    timeout 120 "$runner" --device "$device" --megabytes 1 \
      --kernels "$kernels" --only "$name" --json "$work/$name.json" \
      > "$work/$name.log" 2>&1 || code=$?
    cat "$work/$name.log" >&2
    if [[ ( $code == 0 || $code == 1 ) && -s "$work/$name.json" ]]; then
      cat "$work/$name.json"
    else
      printf '{"program": "%s", "status": "crashed", "exit_code": %d}' \
        "$name" "$code"
      echo "gpu-check: $name exited with $code" >&2
    fi
    [[ $code == 0 ]] || status=1
  done
  printf ']\n'
} > "$out/kernels.json"
# 3. PyTorch on the same work, where it is (torch-peers.json).
if [[ "$device" == cuda ]] && python3 -c "import torch" 2> /dev/null; then
  timeout 150 python3 bench/gpu/torch_peers.py --json "$out/torch-peers.json" ||
    echo "gpu-check: bench/gpu/torch_peers.py exited with $?" >&2
fi
# 4. Memory and shared-memory race checks of every program's launches
# (sanitizer.txt), where NVIDIA's compute-sanitizer is, while the time
# bound (TE_GPU_CHECK_SECONDS, 420 by default) lasts.
sanitizer="$(PATH="$PATH:/usr/local/cuda/bin" command -v compute-sanitizer ||
  true)"
if [[ "$device" == cuda && -n "$sanitizer" ]]; then
  for tool in memcheck racecheck; do
    for name in "${programs[@]}"; do
      [[ "$name" == *-sm80 ]] && continue
      if ((SECONDS > ${TE_GPU_CHECK_SECONDS:-420})); then
        echo "== $tool $name: not run, past the time bound" >> "$out/sanitizer.txt"
        continue
      fi
      echo "== $tool $name" >> "$out/sanitizer.txt"
      timeout 60 "$sanitizer" --tool "$tool" --error-exitcode 3 \
        "$runner" --megabytes 1 --repeats 1 --rounds 1 \
        --kernels "$kernels" --only "$name" >> "$out/sanitizer.txt" 2>&1 || {
        code=$?
        echo "== $tool $name: exit $code" >> "$out/sanitizer.txt"
        status=1
      }
    done
  done
fi
exit "$status"
