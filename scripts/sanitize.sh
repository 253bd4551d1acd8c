#!/usr/bin/env bash
# Builds te-mlir with AddressSanitizer and UndefinedBehaviorSanitizer (the
# `asan` preset, in build-asan/) and runs tests under them:
#   scripts/sanitize.sh          every test (long: the whole build twice over)
#   scripts/sanitize.sh --quick  the runtime's and .npy support's unit tests,
#                                which need no MLIR: what the test command runs
# Kernels the JIT compiles are not instrumented; te-mlir's own C and C++ is.
set -euo pipefail
cd "$(dirname "$0")/.."
quick=0
if [ "${1:-}" = "--quick" ]; then quick=1; elif [ $# -gt 0 ]; then
  echo "usage: scripts/sanitize.sh [--quick]" >&2
  exit 2
fi
scripts/bootstrap.sh >/dev/null
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
  cmake --build build-asan --target TERuntimeTests TESupportTests
  build-asan/bin/TERuntimeTests --gtest_brief=1
  build-asan/bin/TESupportTests --gtest_brief=1
else
  cmake --build build-asan
  LD_PRELOAD="$runtime" ctest --test-dir build-asan --output-on-failure -j "$(nproc)"
fi
