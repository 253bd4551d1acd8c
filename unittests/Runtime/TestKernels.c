//===- TestKernels.c - A hand-written kernel library for runtime tests ----===//
//
// Stands in for what te-mlir's JIT emits: kernels with the host ABI
// `void symbol(void **args)` plus the manifest describing them. Written in C
// and including the runtime header, so it also proves the header is valid C.
//
//===----------------------------------------------------------------------===//

#include "te/Runtime/Runtime.h"

#include <stddef.h>

#if TE_KERNEL_ABI_VERSION < 4
#error "this manifest is written for kernel ABI version 4"
#endif

#define EXPORT __attribute__((visibility("default")))

EXPORT const char *te_kernel_manifest(void) {
  return "te-kernel-abi 4\n"
         "entry add te_test_add\n"
         "in f32 4\n"
         "in f32 4\n"
         "out f32 4\n"
         "end\n"
         "entry sum te_test_sum\n"
         "in f32 4\n"
         "out f32 scalar\n"
         "end\n"
         "entry split te_test_split\n"
         "in f32 4\n"
         "out f32 4\n"
         "out f32 4\n"
         "end\n"
         "entry attention_identity te_test_identity_bf16\n"
         "in bf16 2x128x16x64\n"
         "out bf16 2x128x16x64\n"
         "end\n"
         "entry sum16 te_test_sum16\n"
         "in i32 scalar\nin i32 scalar\nin i32 scalar\nin i32 scalar\n"
         "in i32 scalar\nin i32 scalar\nin i32 scalar\nin i32 scalar\n"
         "in i32 scalar\nin i32 scalar\nin i32 scalar\nin i32 scalar\n"
         "in i32 scalar\nin i32 scalar\nin i32 scalar\nin i32 scalar\n"
         "out i64 scalar\n"
         "end\n"
         "entry checked te_test_checked\n"
         "in f32 4\n"
         "out f32 4\n"
         "status i64 4\n"
         "check first: element {0} is {1}\n"
         "check element {0} is negative ({1}, {2} of them); 100% wrong {x}\n"
         "end\n"
         "entry threads te_test_threads\n"
         "out i32 scalar\n"
         "end\n"
         "entry square_plus_one program_function\n"
         "in f32 4\n"
         "out f32 4\n"
         "out f32 scalar\n"
         "temp 16\n"
         "temp 4\n"
         "step te_test_square 1 1 0 a0 t0\n"
         "step te_test_plus_one 4 32 0 t0 a1\n"
         "step te_test_sum 1 1 0 t0 t1\n"
         "step te_test_copy_scalar 1 1 0 t1 a2\n"
         "end\n"
         "entry temporary te_test_temporary\n"
         "in i64 scalar\n"
         "in i64 scalar\n"
         "out i64 scalar\n"
         "end";
}

EXPORT void te_test_add(void **args) {
  const float *lhs = (const float *)args[0];
  const float *rhs = (const float *)args[1];
  float *result = (float *)args[2];
  for (int i = 0; i < 4; ++i)
    result[i] = lhs[i] + rhs[i];
}

EXPORT void te_test_sum(void **args) {
  const float *input = (const float *)args[0];
  float *result = (float *)args[1];
  *result = input[0] + input[1] + input[2] + input[3];
}

EXPORT void te_test_split(void **args) {
  const float *input = (const float *)args[0];
  float *first = (float *)args[1];
  float *second = (float *)args[2];
  for (int i = 0; i < 4; ++i) {
    first[i] = input[i];
    second[i] = -input[i];
  }
}

EXPORT void te_test_identity_bf16(void **args) {
  const unsigned short *input = (const unsigned short *)args[0];
  unsigned short *result = (unsigned short *)args[1];
  for (long i = 0; i < 2L * 128 * 16 * 64; ++i)
    result[i] = input[i];
}

/* More arguments than the runtime passes without a heap allocation. */
EXPORT void te_test_sum16(void **args) {
  long long total = 0;
  for (int i = 0; i < 16; ++i)
    total += *(const int *)args[i];
  *(long long *)args[16] = total;
}

/* A kernel with run-time checks: check 1 fails for a NaN element, check 2
   (values: index, the value truncated, the count) for negative ones. The
   status is the argument after the outputs. */
EXPORT void te_test_checked(void **args) {
  const float *input = (const float *)args[0];
  float *result = (float *)args[1];
  long long *status = (long long *)args[2];
  long long negatives = 0, first = -1;
  status[0] = status[1] = status[2] = status[3] = 0;
  for (int i = 0; i < 4; ++i) {
    result[i] = 2 * input[i];
    if (input[i] != input[i] && status[0] == 0) {
      status[0] = 1;
      status[1] = i;
    }
    if (input[i] < 0 && ++negatives == 1)
      first = i;
  }
  if (status[0] == 0 && negatives > 0) {
    status[0] = 2;
    status[1] = first;
    status[2] = (long long)input[first];
    status[3] = negatives;
  }
}

// The steps of square_plus_one: out = in * in + 1 through a temporary, and
// the sum of the squares through a second one.
EXPORT void te_test_square(void **args) {
  const float *input = (const float *)args[0];
  float *squares = (float *)args[1];
  for (int i = 0; i < 4; ++i)
    squares[i] = input[i] * input[i];
}

EXPORT void te_test_plus_one(void **args) {
  const float *input = (const float *)args[0];
  float *result = (float *)args[1];
  for (int i = 0; i < 4; ++i)
    result[i] = input[i] + 1.0f;
}

EXPORT void te_test_copy_scalar(void **args) {
  *(float *)args[1] = *(const float *)args[0];
}

/* The thread count the host device passed before the last launch, as
   te-mlir's kernel libraries receive it for their OpenMP regions. */
static int threadCount = -1;

EXPORT void te_kernel_set_num_threads(int threads) { threadCount = threads; }

EXPORT void te_test_threads(void **args) { *(int *)args[0] = threadCount; }

/* The allocator the host device gives te-mlir's kernel libraries for their
   temporaries (te/Runtime/HostTemporaries.h). */
static void *(*allocateTemporary)(size_t, size_t);
static void (*releaseTemporary)(void *);

EXPORT void te_kernel_set_allocator(void *(*allocate)(size_t, size_t),
                                    void (*release)(void *)) {
  allocateTemporary = allocate;
  releaseTemporary = release;
}

/* Allocates a temporary of args[0] bytes aligned to args[1], fills it, frees
   it, and returns its address (0: none was given). */
EXPORT void te_test_temporary(void **args) {
  long long bytes = *(const long long *)args[0];
  long long alignment = *(const long long *)args[1];
  unsigned char *block =
      allocateTemporary
          ? (unsigned char *)allocateTemporary((size_t)bytes, (size_t)alignment)
          : 0;
  if (block) {
    for (long long i = 0; i < bytes; i += 4096)
      block[i] = (unsigned char)i;
    block[bytes - 1] = 1;
  }
  *(long long *)args[2] = (long long)block;
  releaseTemporary(block);
}
