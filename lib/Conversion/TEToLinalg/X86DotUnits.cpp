//===- X86DotUnits.cpp - x86's bf16 dot-product units ---------------------===//
//
// The x86 instructions behind BF16PairDotUnit, as x86vector ops (lowered by
// convert-vector-to-llvm with its x86vector option). The cpu target chooses
// one from the host's features; nothing else in the lowering knows them.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "mlir/Dialect/X86Vector/X86VectorDialect.h"

using namespace mlir;
using namespace mlir::te;

namespace {

/// vdpbf16ps on 512-bit registers. Like every AVX512-BF16 instruction it
/// treats bf16 subnormal inputs as zero and flushes subnormal results,
/// whatever MXCSR says.
class AVX512BF16DotUnit : public BF16PairDotUnit {
public:
  StringRef getName() const override { return "avx512-bf16"; }
  Value emitDot(OpBuilder &b, Location loc, Value acc, Value lhs,
                Value rhs) const override {
    return x86vector::DotBF16Op::create(b, loc, acc.getType(), acc, lhs, rhs);
  }
};

} // namespace

const BF16PairDotUnit &mlir::te::getAVX512BF16DotUnit() {
  static const AVX512BF16DotUnit unit;
  return unit;
}
