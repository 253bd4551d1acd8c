//===- CUBLASLtTest.cpp - The cuda device's cuBLASLt call ----------------===//

#include "CUBLASLt.h"
#include "Error.h"

#include <gtest/gtest.h>

#ifdef TE_HAVE_CUBLASLT_HEADER
#include <cublasLt.h>
#endif

using namespace te::runtime::cublaslt;

namespace {

#ifdef TE_HAVE_CUBLASLT_HEADER
// The runtime's copy of cuBLASLt's ABI is the toolkit's.
static_assert(kComputeF32 == CUBLAS_COMPUTE_32F);
static_assert(kDataF32 == CUDA_R_32F && kDataF16 == CUDA_R_16F &&
              kDataBF16 == CUDA_R_16BF && kDataE4M3 == CUDA_R_8F_E4M3 &&
              kDataE5M2 == CUDA_R_8F_E5M2);
static_assert(kOpN == CUBLAS_OP_N && kOpT == CUBLAS_OP_T);
static_assert(kDescTransA == CUBLASLT_MATMUL_DESC_TRANSA &&
              kDescTransB == CUBLASLT_MATMUL_DESC_TRANSB &&
              kDescEpilogue == CUBLASLT_MATMUL_DESC_EPILOGUE &&
              kDescBiasPointer == CUBLASLT_MATMUL_DESC_BIAS_POINTER &&
              kDescAScale == CUBLASLT_MATMUL_DESC_A_SCALE_POINTER &&
              kDescBScale == CUBLASLT_MATMUL_DESC_B_SCALE_POINTER &&
              kDescBiasType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE &&
              kDescAuxPointer == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER &&
              kDescAuxLd == CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD);
static_assert(kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS &&
              kEpilogueGeluAux == CUBLASLT_EPILOGUE_GELU_AUX &&
              kEpilogueGeluAuxBias == CUBLASLT_EPILOGUE_GELU_AUX_BIAS &&
              kEpilogueDGelu == CUBLASLT_EPILOGUE_DGELU &&
              kEpilogueDGeluBGrad == CUBLASLT_EPILOGUE_DGELU_BGRAD &&
              kEpilogueBGradB == CUBLASLT_EPILOGUE_BGRADB);
static_assert(
    kPrefMaxWorkspace == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES &&
    kPrefMinAlignmentA == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES &&
    kPrefMinAlignmentB == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES &&
    kPrefMinAlignmentC == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES &&
    kPrefMinAlignmentD == CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES);
static_assert(kSuccess == CUBLAS_STATUS_SUCCESS);
static_assert(sizeof(MatmulAlgo) == sizeof(cublasLtMatmulAlgo_t));
static_assert(sizeof(HeuristicResult) ==
              sizeof(cublasLtMatmulHeuristicResult_t));
static_assert(offsetof(HeuristicResult, workspaceSize) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, workspaceSize) &&
              offsetof(HeuristicResult, state) ==
                  offsetof(cublasLtMatmulHeuristicResult_t, state));
#endif

TEST(CUBLASLt, ParsesAMatmul) {
  MatmulConfig config;
  std::string error;
  ASSERT_TRUE(parseMatmulConfig("m=256,n=512,k=64,a=f8E4M3FN,b=f8E5M2,d=bf16,"
                                "bias=bf16,epilogue=gelu_bias",
                                config, error))
      << error;
  EXPECT_EQ(config.m, 256);
  EXPECT_EQ(config.n, 512);
  EXPECT_EQ(config.k, 64);
  EXPECT_EQ(config.a, kDataE4M3);
  EXPECT_EQ(config.b, kDataE5M2);
  EXPECT_EQ(config.d, kDataBF16);
  EXPECT_EQ(config.bias, kDataBF16);
  EXPECT_EQ(config.epilogue, kEpilogueGeluBias);
  EXPECT_TRUE(config.fp8);
  EXPECT_EQ(config.transA, kOpT);
  EXPECT_EQ(config.transB, kOpN);
  EXPECT_EQ(config.operands.count, 6);
  EXPECT_EQ(config.operands.bias, 4);
  EXPECT_EQ(config.operands.d, 5);
  ASSERT_TRUE(parseMatmulConfig("epilogue=none,bias=none,d=f32,b=f8E4M3FN,"
                                "a=f8E4M3FN,k=16,n=8,m=1",
                                config, error))
      << error;
  EXPECT_EQ(config.bias, -1);
  EXPECT_EQ(config.epilogue, kEpilogueDefault);
  EXPECT_EQ(config.operands.count, 5);
}

// High-precision operands: no scales; te's layout letters become
// cuBLASLt's transposes (its A is te's b); the epilogues' inputs and
// outputs take their places in the operand list, with their sizes.
TEST(CUBLASLt, ParsesEveryEpilogueAndLayout) {
  MatmulConfig config;
  std::string error;
  ASSERT_TRUE(parseMatmulConfig("m=40,n=24,k=64,a=f16,b=f16,d=f16,bias=f16,"
                                "epilogue=dgelu_bgrad,layout=NT,accumulate=1",
                                config, error))
      << error;
  EXPECT_FALSE(config.fp8);
  EXPECT_EQ(config.transA, kOpN);
  EXPECT_EQ(config.transB, kOpT);
  EXPECT_EQ(config.epilogue, kEpilogueDGeluBGrad);
  EXPECT_TRUE(config.accumulate);
  // a, b, gelu input, c, d, bias gradient.
  EXPECT_EQ(config.operands.aScale, -1);
  EXPECT_EQ(config.operands.auxIn, 2);
  EXPECT_EQ(config.operands.c, 3);
  EXPECT_EQ(config.operands.d, 4);
  EXPECT_EQ(config.operands.biasGrad, 5);
  EXPECT_EQ(config.operands.count, 6);
  EXPECT_EQ(operandBytes(config),
            (std::vector<size_t>{40 * 64 * 2, 24 * 64 * 2, 40 * 24 * 2,
                                 40 * 24 * 2, 40 * 24 * 2, 24 * 2}));

  ASSERT_TRUE(parseMatmulConfig("m=40,n=24,k=64,a=bf16,b=bf16,d=f32,bias=f32,"
                                "epilogue=bgradb,layout=NN,accumulate=0",
                                config, error))
      << error;
  EXPECT_EQ(config.epilogue, kEpilogueBGradB);
  // BGRADB sums op(A)'s rows: m of them.
  EXPECT_EQ(operandBytes(config), (std::vector<size_t>{40 * 64 * 2, 24 * 64 * 2,
                                                       40 * 24 * 4, 40 * 4}));

  ASSERT_TRUE(parseMatmulConfig("m=40,n=24,k=64,a=f32,b=f32,d=f32,bias=f32,"
                                "epilogue=gelu_aux_bias,layout=TT",
                                config, error))
      << error;
  EXPECT_EQ(config.transA, kOpT);
  EXPECT_EQ(config.transB, kOpT);
  EXPECT_EQ(config.epilogue, kEpilogueGeluAuxBias);
  // a, b, bias, d, pre-GELU values.
  EXPECT_EQ(config.operands.bias, 2);
  EXPECT_EQ(config.operands.d, 3);
  EXPECT_EQ(config.operands.auxOut, 4);
  EXPECT_EQ(operandBytes(config),
            (std::vector<size_t>{40 * 64 * 4, 24 * 64 * 4, 24 * 4, 40 * 24 * 4,
                                 40 * 24 * 4}));
}

TEST(CUBLASLt, RefusesBadParameters) {
  const std::pair<const char *, const char *> cases[] = {
      {"", "invalid parameter ''"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none",
       "parameter 'epilogue' is missing"},
      {"m=0,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=none",
       "invalid size m=0"},
      {"m=1,m=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=none",
       "invalid parameter 'm=1'"},
      {"m=1,n=1,k=1,a=bf16,b=f8E4M3FN,d=bf16,bias=none,epilogue=none",
       "invalid types a=bf16, b=f8E4M3FN; expected both FP8"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=f8E4M3FN,bias=none,epilogue=none",
       "invalid type d=f8E4M3FN; expected f32, f16 or bf16"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=relu",
       "invalid epilogue 'relu'"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=bf16,epilogue=gelu",
       "the epilogue and the bias disagree"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=bias",
       "the epilogue and the bias disagree"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=none,x=1",
       "invalid parameter 'x=1'"},
      {"m=1,n=1,k=1,a=bf16,b=bf16,d=f16,bias=none,epilogue=none",
       "invalid type d=f16 with bf16 operands"}};
  for (const auto &[parameters, expected] : cases) {
    MatmulConfig config;
    std::string error;
    EXPECT_FALSE(parseMatmulConfig(parameters, config, error)) << parameters;
    EXPECT_NE(error.find(expected), std::string::npos)
        << parameters << ": " << error;
  }
}

// The manifest is untrusted: operands smaller than the parameters say are
// refused before the library is even opened.
TEST(CUBLASLt, RefusesOperandsSmallerThanTheParameters) {
  te::runtime::DeviceMemory memory = {
      nullptr, [](void *, size_t, void **) { return TE_ERROR_INTERNAL; },
      [](void *, void *) {}};
  Context *context = createContext(memory);
  const char *parameters = "m=64,n=32,k=16,a=f8E4M3FN,b=f8E4M3FN,d=bf16,"
                           "bias=bf16,epilogue=bias";
  MatmulConfig config;
  std::string error;
  ASSERT_TRUE(parseMatmulConfig(parameters, config, error));
  EXPECT_EQ(operandBytes(config),
            (std::vector<size_t>{64 * 16, 32 * 16, 4, 4, 32 * 2, 64 * 32 * 2}));
  void *args[6] = {};
  size_t sizes[6] = {64 * 16, 32 * 16, 4, 4, 32 * 2, 64 * 32 * 2 - 1};
  EXPECT_EQ(runMatmul(*context, parameters, args, sizes, 6, nullptr),
            TE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(te::runtime::takeDeviceDetail())
                .find("operand 5 has 4095 bytes, but"),
            std::string::npos);
  EXPECT_EQ(runMatmul(*context, parameters, args, sizes, 5, nullptr),
            TE_ERROR_UNSUPPORTED);
  EXPECT_NE(std::string(te::runtime::takeDeviceDetail())
                .find("expected 6 operands, got 5"),
            std::string::npos);
  destroyContext(context);
}

} // namespace
