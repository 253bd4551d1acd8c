#!/usr/bin/env bash
# Builds te-mlir with AddressSanitizer and UndefinedBehaviorSanitizer (the
# `asan` preset, in build-asan/) and runs tests under them:
#   scripts/sanitize.sh          every test (long: the whole build twice over)
#   scripts/sanitize.sh --quick  the runtime's and .npy support's unit tests,
#                                and the compiler: te-opt's CPU lowering and
#                                te-run's cuda compile (sm_80 and sm_90a) of
#                                every example: what the test command runs
# Kernels the JIT compiles are not instrumented; te-mlir's own C and C++ is.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; elif [ $# -gt 0 ]; then
  echo "usage: scripts/sanitize.sh [--quick]" >&2
  exit 2
fi
scripts/bootstrap.sh >/dev/null
# Paths relative to the checkout in ccache's keys: a fresh clone (CI's)
# reuses what an earlier build compiled.
export CCACHE_BASEDIR="$PWD"
cmake --preset asan -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null

# Any report fails the process. Leaks are not checked: MLIR and LLVM keep
# process-lifetime registries on purpose. User poisoning is off: LLVM's
# BumpPtrAllocator poisons its free space from inline header code, which is
# instrumented in te-mlir's objects but not inside Debian's libMLIR, so
# memory libMLIR hands out legitimately reads as "use-after-poison".
export ASAN_OPTIONS=detect_leaks=0:halt_on_error=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=1:allow_user_poisoning=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Processes that are not instrumented themselves (python loading the
# instrumented te_mlir extension) need the sanitizer runtime first.
runtime="$(clang++-22 -print-file-name=libclang_rt.asan-x86_64.so)"

if [ "$quick" = 1 ]; then
  cmake --build build-asan --target TERuntimeTests TESupportTests te-opt te-run
  build-asan/bin/TERuntimeTests --gtest_brief=1
  build-asan/bin/TESupportTests --gtest_brief=1
  # The compiler on every example. Some examples have no cuda lowering yet
  # and end with a clean error: any exit status passes but a signal or a
  # sanitizer report (its own status, 86, so that it cannot pass for an
  # error). libMLIR itself is not instrumented: a stale op handle that it
  # reads (the kernel deduplication once) needs MALLOC_PERTURB_ to show.
  export ASAN_OPTIONS="$ASAN_OPTIONS:exitcode=86"
  export UBSAN_OPTIONS="$UBSAN_OPTIONS:exitcode=86"
  scratch="$(mktemp -d)"
  trap 'rm -rf "$scratch"' EXIT
  failures=0
  runs=0
  compile() {
    local status=0
    MALLOC_PERTURB_=165 TE_CACHE_DISABLE=1 "$@" >/dev/null 2>"$scratch/err" || status=$?
    runs=$((runs + 1))
    if [ "$status" -ge 86 ] || grep -q "Sanitizer\|runtime error:" "$scratch/err"; then
      echo "sanitize: $* ended with status $status:" >&2
      tail -n 40 "$scratch/err" >&2
      failures=$((failures + 1))
    fi
  }
  for example in examples/*.mlir; do
    compile build-asan/bin/te-opt "$example" --te-lower-cpu
    if [ -x "${TE_CUDA_PATH:-/usr/local/cuda}/bin/ptxas" ]; then
      for arch in sm_80 sm_90a; do
        compile env TE_CUDA_ARCH=$arch build-asan/bin/te-run "$example" \
          --backend cuda --emit=cubin -o "$scratch/kernel.cubin"
      done
    fi
  done
  echo "sanitize: $runs compiler runs, $failures with a signal or a report"
  [ "$failures" = 0 ]
else
  cmake --build build-asan
  LD_PRELOAD="$runtime" ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
fi
