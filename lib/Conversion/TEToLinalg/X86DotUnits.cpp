//===- X86DotUnits.cpp - x86's bf16 dot-product and tile units ------------===//
//
// The x86 instructions behind BF16PairDotUnit, as x86vector ops, and behind
// BF16TileUnit, as amx ops (both lowered by convert-vector-to-llvm with its
// x86vector and amx options). The cpu target chooses them from the host's
// features; nothing else in the lowering knows them.
//
//===----------------------------------------------------------------------===//

#include "TEToLinalgInternal.h"

#include "mlir/Dialect/AMX/AMXDialect.h"
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

/// AMX-BF16: tdpbf16ps on tiles of 16 rows of 64 bytes (16x32 bf16 A and
/// B tiles, 16x16 f32 C tiles), loaded and stored by tileloadd and
/// tilestored. LLVM configures the tiles (ldtilecfg) from the shapes. Like
/// AVX512-BF16, tdpbf16ps treats bf16 subnormal inputs as zero and flushes
/// subnormal results. A process must have the OS's permission before its
/// first tile instruction (te/ABI/HostTiles.h).
class AMXBF16TileUnit : public BF16TileUnit {
public:
  StringRef getName() const override { return "amx-bf16"; }
  int64_t getRows() const override { return 16; }
  int64_t getColumns() const override { return 16; }
  int64_t getK() const override { return 32; }

  Value emitZero(OpBuilder &b, Location loc) const override {
    return amx::TileZeroOp::create(b, loc, getTileType(b, b.getF32Type()));
  }
  Value emitLoadA(OpBuilder &b, Location loc, Value buffer,
                  ValueRange indices) const override {
    return amx::TileLoadOp::create(b, loc, getTileType(b, b.getBF16Type()),
                                   buffer, indices);
  }
  Value emitLoadB(OpBuilder &b, Location loc, Value buffer,
                  ValueRange indices) const override {
    // The pairs layout is the one tdpbf16ps reads B in: a row of the tile
    // is 16 columns' pairs.
    return emitLoadA(b, loc, buffer, indices);
  }
  Value emitMultiply(OpBuilder &b, Location loc, Value acc, Value a,
                     Value bTile) const override {
    return amx::TileMulFOp::create(b, loc, acc.getType(), a, bTile, acc);
  }
  void emitStore(OpBuilder &b, Location loc, Value acc, Value buffer,
                 ValueRange indices) const override {
    amx::TileStoreOp::create(b, loc, buffer, indices, acc);
  }

private:
  Type getTileType(OpBuilder &b, Type element) const {
    int64_t columns = element.isF32() ? getColumns() : getK();
    return amx::TileType::get({getRows(), columns}, element);
  }
};

} // namespace

const BF16TileUnit &mlir::te::getAMXBF16TileUnit() {
  static const AMXBF16TileUnit unit;
  return unit;
}

const BF16PairDotUnit &mlir::te::getAVX512BF16DotUnit() {
  static const AVX512BF16DotUnit unit;
  return unit;
}
