//===- CUBLASLt.h - cuBLASLt's matmul as a library call ---------*- C++ -*-===//
//
// The cuda device's `cublaslt.matmul` library call (te/Runtime/Module.h,
// manifest version 5): te.scaled_matmul's FP8 GEMM on cuBLASLt. Nothing is
// linked: libcublasLt is opened with dlopen at the first call (TE_CUBLASLT,
// else libcublasLt.so.13 or .12 on the loader's path or under
// /usr/local/cuda/lib64), and cublasLt.h is not included (it is not there
// without the toolkit): the types and constants below are the subset this
// call needs, checked against the real header where the toolkit is
// (unittests/Runtime/CUBLASLtTest.cpp).
//
// Parameters and operands: te::abi::MatmulCall (te/ABI/LibraryCalls.h), in
// te's row-major terms: FP8 operands with per_tensor scales or f32, f16 and
// bf16 operands, TE's four layouts, accumulation into C and cuBLASLt's
// bias, GELU, dGELU and bias-gradient epilogues. Products are summed in
// f32 (CUBLAS_COMPUTE_32F: f32 operands are not rounded to TF32).
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CUBLASLT_H
#define TE_LIB_RUNTIME_CUBLASLT_H

#include "LibraryCall.h"

#include "te/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace te::runtime::cublaslt {

// cuBLASLt's ABI, as far as the matmul needs it.
using Status = int;
constexpr Status kSuccess = 0;
constexpr int kComputeF32 = 68;     // CUBLAS_COMPUTE_32F
constexpr int kDataF32 = 0;         // CUDA_R_32F
constexpr int kDataF16 = 2;         // CUDA_R_16F
constexpr int kDataBF16 = 14;       // CUDA_R_16BF
constexpr int kDataE4M3 = 28;       // CUDA_R_8F_E4M3
constexpr int kDataE5M2 = 29;       // CUDA_R_8F_E5M2
constexpr int kOpN = 0;             // CUBLAS_OP_N
constexpr int kOpT = 1;             // CUBLAS_OP_T
constexpr int kDescTransA = 3;      // CUBLASLT_MATMUL_DESC_TRANSA
constexpr int kDescTransB = 4;      // CUBLASLT_MATMUL_DESC_TRANSB
constexpr int kDescEpilogue = 7;    // CUBLASLT_MATMUL_DESC_EPILOGUE
constexpr int kDescBiasPointer = 8; // CUBLASLT_MATMUL_DESC_BIAS_POINTER
constexpr int kDescAuxPointer = 11; // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER
constexpr int kDescAuxLd = 12;      // CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD
constexpr int kDescAScale = 17;     // CUBLASLT_MATMUL_DESC_A_SCALE_POINTER
constexpr int kDescBScale = 18;     // CUBLASLT_MATMUL_DESC_B_SCALE_POINTER
constexpr int kDescBiasType = 26;   // CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE
constexpr int kEpilogueDefault = 1; // CUBLASLT_EPILOGUE_DEFAULT
constexpr int kEpilogueBias = 4;    // CUBLASLT_EPILOGUE_BIAS
constexpr int kEpilogueGelu = 32;   // CUBLASLT_EPILOGUE_GELU
constexpr int kEpilogueGeluBias = 36;     // CUBLASLT_EPILOGUE_GELU_BIAS
constexpr int kEpilogueGeluAux = 160;     // CUBLASLT_EPILOGUE_GELU_AUX
constexpr int kEpilogueGeluAuxBias = 164; // CUBLASLT_EPILOGUE_GELU_AUX_BIAS
constexpr int kEpilogueDGelu = 192;       // CUBLASLT_EPILOGUE_DGELU
constexpr int kEpilogueDGeluBGrad = 208;  // CUBLASLT_EPILOGUE_DGELU_BGRAD
constexpr int kEpilogueBGradB = 512;      // CUBLASLT_EPILOGUE_BGRADB
constexpr int kPrefMaxWorkspace = 1; // CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES
constexpr int kPrefMinAlignmentA = 5; // ..._PREF_MIN_ALIGNMENT_A_BYTES
constexpr int kPrefMinAlignmentB = 6; // ..._PREF_MIN_ALIGNMENT_B_BYTES
constexpr int kPrefMinAlignmentC = 7; // ..._PREF_MIN_ALIGNMENT_C_BYTES
constexpr int kPrefMinAlignmentD = 8; // ..._PREF_MIN_ALIGNMENT_D_BYTES

struct MatmulAlgo {
  uint64_t data[8];
};
struct HeuristicResult {
  MatmulAlgo algo;
  size_t workspaceSize;
  Status state;
  float wavesCount;
  int reserved[4];
};

/// A matmul's configuration, parsed from its parameters, in cuBLASLt's
/// terms (its A is te's b, its B te's a).
struct MatmulConfig {
  int64_t m = 0, n = 0, k = 0;
  int a = -1, b = -1, d = -1;
  /// The bias vector's type (a bias or its gradient); -1 without one.
  int bias = -1;
  int epilogue = kEpilogueDefault;
  /// cuBLASLt's transposes of its A (te's b) and B (te's a).
  int transA = kOpT, transB = kOpN;
  bool fp8 = false, accumulate = false;
  /// The bias gradient's length (n or m); 0 without one.
  int64_t biasGradLength = 0;

  /// Each operand's index, -1 where the configuration has none, and their
  /// number: a, b, [a_scale_inv, b_scale_inv], [bias], [aux input], [c],
  /// d, [aux output], [bias gradient].
  struct Operands {
    int aScale = -1, bScale = -1, bias = -1, auxIn = -1, c = -1, d = -1,
        auxOut = -1, biasGrad = -1, count = 0;
  };
  Operands operands;
};

/// Parses `parameters`; on failure returns false with `error` saying which
/// parameter is wrong and what is expected.
bool parseMatmulConfig(const char *parameters, MatmulConfig &config,
                       std::string &error);

/// What one stream's calls keep between calls: the library handle, the
/// plans of the configurations seen, the workspace. Created lazily.
struct Context;

/// `memory` gives the workspace, from the device that owns the context.
Context *createContext(DeviceMemory memory);
void destroyContext(Context *context);

/// The byte sizes `config`'s operands need, in operand order.
std::vector<size_t> operandBytes(const MatmulConfig &config);

/// Runs `cublaslt.matmul` with `parameters` on `stream` (a CUstream) with
/// operand addresses `args` of `sizes` bytes (each must hold what the
/// parameters say); errors set the runtime's device detail.
te_status runMatmul(Context &context, const char *parameters, void **args,
                    const size_t *sizes, int nargs, void *stream);

} // namespace te::runtime::cublaslt

#endif // TE_LIB_RUNTIME_CUBLASLT_H
