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
              kDescBiasType == CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE);
static_assert(kEpilogueDefault == CUBLASLT_EPILOGUE_DEFAULT &&
              kEpilogueBias == CUBLASLT_EPILOGUE_BIAS &&
              kEpilogueGelu == CUBLASLT_EPILOGUE_GELU &&
              kEpilogueGeluBias == CUBLASLT_EPILOGUE_GELU_BIAS);
static_assert(kPrefMaxWorkspace == CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES);
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
  EXPECT_EQ(config.operands(), 6);
  ASSERT_TRUE(parseMatmulConfig("epilogue=none,bias=none,d=f32,b=f8E4M3FN,"
                                "a=f8E4M3FN,k=16,n=8,m=1",
                                config, error))
      << error;
  EXPECT_EQ(config.bias, -1);
  EXPECT_EQ(config.epilogue, kEpilogueDefault);
  EXPECT_EQ(config.operands(), 5);
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
       "invalid type a=bf16; expected f8E4M3FN or f8E5M2"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=f8E4M3FN,bias=none,epilogue=none",
       "invalid type d=f8E4M3FN; expected f32, f16 or bf16"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=relu",
       "invalid epilogue 'relu'"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=bf16,epilogue=gelu",
       "the epilogue and the bias disagree"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=bias",
       "the epilogue and the bias disagree"},
      {"m=1,n=1,k=1,a=f8E4M3FN,b=f8E4M3FN,d=bf16,bias=none,epilogue=none,x=1",
       "invalid parameter 'x=1'"}};
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
