//===- FP8CodecTest.cpp - JIT-compiled FP8 casts against a C++ reference --===//
//
// Compiles te.quantize / te.dequantize kernels for the host, runs them on
// every bf16 bit pattern (as f32), on edge cases and on every FP8 code, and
// compares each bit with a reference that shares no code with the lowering:
// it decodes all 256 codes by their definition and picks the nearest one.
//
//===----------------------------------------------------------------------===//

#include "te/InitAllDialects.h"
#include "te/JIT/KernelCompiler.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <random>
#include <unistd.h>
#include <vector>

using namespace mlir;

namespace {

struct Format {
  const char *mlirName;
  int mantissaBits;
  int bias;
  bool hasInfinity; // E5M2: exponent all ones is inf/NaN; E4M3FN: only 0x7F is
                    // NaN
};
constexpr Format kE4M3{"f8E4M3FN", 3, 7, false};
constexpr Format kE5M2{"f8E5M2", 2, 15, true};

/// The value of an FP8 code, straight from the format's definition.
double referenceDecode(const Format &f, uint8_t code) {
  int exponentBits = 7 - f.mantissaBits;
  int exponent = (code >> f.mantissaBits) & ((1 << exponentBits) - 1);
  int mantissa = code & ((1 << f.mantissaBits) - 1);
  double sign = (code & 0x80) ? -1.0 : 1.0;
  if (f.hasInfinity && exponent == (1 << exponentBits) - 1)
    return mantissa ? NAN : sign * INFINITY;
  if (!f.hasInfinity && (code & 0x7F) == 0x7F)
    return NAN;
  if (exponent == 0)
    return sign * std::ldexp(mantissa, 1 - f.bias - f.mantissaBits);
  return sign * std::ldexp(1.0 + std::ldexp(mantissa, -f.mantissaBits),
                           exponent - f.bias);
}

/// Nearest finite code, ties to the even code; beyond the largest finite
/// value (and for +-inf) saturate to it, as Transformer Engine does.
uint8_t referenceEncode(const Format &f, float x) {
  if (std::isnan(x))
    return 0x7F;
  double best = INFINITY;
  int bestCode = 0;
  double maxFinite = 0;
  int maxCode = 0;
  for (int code = 0; code < 256; ++code) {
    double v = referenceDecode(f, code);
    if (!std::isfinite(v))
      continue;
    if (v > maxFinite) {
      maxFinite = v;
      maxCode = code;
    }
    if ((code & 0x80) != (std::signbit(x) ? 0x80 : 0))
      continue;
    double err = std::fabs(v - double(x));
    if (err < best || (err == best && (code & 1) == 0)) {
      best = err;
      bestCode = code;
    }
  }
  if (std::fabs(double(x)) >= maxFinite)
    return maxCode | (std::signbit(x) ? 0x80 : 0);
  return bestCode;
}

float bitsToFloat(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class FP8CodecTest : public ::testing::Test {
public:
  FP8CodecTest() {
    DialectRegistry registry;
    te::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
  }
  ~FP8CodecTest() override {
    if (handle)
      dlclose(handle);
    if (!path.empty())
      llvm::sys::fs::remove(path);
  }

  using Kernel = void (*)(void **);

  /// Compiles `source` and returns its entry point `name`.
  Kernel compile(const std::string &source, const char *name) {
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(source, &ctx);
    EXPECT_TRUE(module);
    if (!module)
      return nullptr;
    int fd;
    EXPECT_FALSE(
        llvm::sys::fs::createTemporaryFile("te-codec", "so", fd, path));
    ::close(fd);
    te::KernelCompileOptions options;
    EXPECT_TRUE(succeeded(te::compileKernelLibrary(*module, options, path)));
    handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    EXPECT_TRUE(handle) << dlerror();
    if (!handle)
      return nullptr;
    return reinterpret_cast<Kernel>(
        dlsym(handle, (std::string(name) + "__te_packed").c_str()));
  }

  MLIRContext ctx;
  SmallString<128> path;
  void *handle = nullptr;
};

/// Inputs: every bf16 pattern as f32, plus ties, boundaries and random f32.
std::vector<float> makeInputs(const Format &f) {
  std::vector<float> inputs;
  for (uint32_t bits = 0; bits < 65536; ++bits)
    inputs.push_back(bitsToFloat(bits << 16));
  // Every midpoint between neighbouring codes (exact ties) and its
  // neighbours one f32 ulp away.
  for (int code = 0; code < 127; ++code) {
    double a = referenceDecode(f, code), b = referenceDecode(f, code + 1);
    if (!std::isfinite(a) || !std::isfinite(b))
      continue;
    float mid = float((a + b) / 2);
    for (float v :
         {mid, std::nextafter(mid, 0.0f), std::nextafter(mid, INFINITY)}) {
      inputs.push_back(v);
      inputs.push_back(-v);
    }
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<uint32_t> bits;
  for (int i = 0; i < 100000; ++i)
    inputs.push_back(bitsToFloat(bits(rng)));
  inputs.push_back(std::numeric_limits<float>::denorm_min());
  inputs.push_back(-0.0f);
  return inputs;
}

void checkQuantize(FP8CodecTest &test, const Format &f) {
  std::vector<float> inputs = makeInputs(f);
  std::string n = std::to_string(inputs.size());
  std::string tensor = "tensor<" + n + "xf32>";
  std::string fp8 = std::string("tensor<") + n + "x" + f.mlirName + ">";
  std::string source = "func.func @q(%x: " + tensor +
                       ", %s: tensor<f32>) -> (" + fp8 +
                       ", tensor<f32>, tensor<f32>) {\n"
                       "  %d, %si, %a = te.quantize %x scale(%s) mode "
                       "per_tensor : " +
                       tensor + ", tensor<f32> -> " + fp8 +
                       ", tensor<f32>, tensor<f32>\n"
                       "  return %d, %si, %a : " +
                       fp8 + ", tensor<f32>, tensor<f32>\n}\n";
  auto kernel = test.compile(source, "q");
  ASSERT_TRUE(kernel);
  float scale = 1.0f, scaleInv = 0, amax = 0;
  std::vector<uint8_t> out(inputs.size());
  void *args[] = {inputs.data(), &scale, out.data(), &scaleInv, &amax};
  kernel(args);
  size_t mismatches = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    uint8_t want = referenceEncode(f, inputs[i]);
    bool bothNaN = std::isnan(referenceDecode(f, want)) &&
                   std::isnan(referenceDecode(f, out[i]));
    if (out[i] != want && !bothNaN && ++mismatches <= 10)
      ADD_FAILURE() << f.mlirName << ": " << inputs[i] << " (0x" << std::hex
                    << *reinterpret_cast<uint32_t *>(&inputs[i]) << ") gave 0x"
                    << int(out[i]) << ", expected 0x" << int(want);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(scaleInv, 1.0f);
  // TE's amax (fmaxf from 0) skips the NaN inputs: the max over the others.
  float want = 0;
  for (float x : inputs)
    if (!std::isnan(x))
      want = std::max(want, std::fabs(x));
  EXPECT_FALSE(std::isnan(amax));
  EXPECT_EQ(amax, want);
}

void checkDequantize(FP8CodecTest &test, const Format &f) {
  std::string fp8 = std::string("tensor<256x") + f.mlirName + ">";
  std::string source = "func.func @dq(%d: " + fp8 +
                       ", %s: tensor<f32>) -> tensor<256xf32> {\n"
                       "  %x = te.dequantize %d, %s mode per_tensor : " +
                       fp8 +
                       ", tensor<f32> -> tensor<256xf32>\n"
                       "  return %x : tensor<256xf32>\n}\n";
  auto kernel = test.compile(source, "dq");
  ASSERT_TRUE(kernel);
  std::vector<uint8_t> codes(256);
  for (int i = 0; i < 256; ++i)
    codes[i] = i;
  float scaleInv = 1.0f;
  std::vector<float> out(256);
  void *args[] = {codes.data(), &scaleInv, out.data()};
  kernel(args);
  for (int code = 0; code < 256; ++code) {
    double want = referenceDecode(f, code);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[code])) << f.mlirName << " code " << code;
      continue;
    }
    EXPECT_EQ(double(out[code]), want) << f.mlirName << " code " << code;
    // -0.0 must stay negative.
    EXPECT_EQ(std::signbit(out[code]), bool(code & 0x80))
        << f.mlirName << " code " << code;
  }
}

TEST_F(FP8CodecTest, QuantizeE4M3IsBitExact) { checkQuantize(*this, kE4M3); }
TEST_F(FP8CodecTest, QuantizeE5M2IsBitExact) { checkQuantize(*this, kE5M2); }
TEST_F(FP8CodecTest, DequantizeE4M3IsExact) { checkDequantize(*this, kE4M3); }
TEST_F(FP8CodecTest, DequantizeE5M2IsExact) { checkDequantize(*this, kE5M2); }

} // namespace
