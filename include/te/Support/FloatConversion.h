//===- FloatConversion.h - Bit-exact narrow float conversions ---*- C++ -*-===//
//
// Conversions between f32/f64 and the narrow float formats of Transformer
// Engine, on bit patterns, so that te tools produce exactly the bits a GPU
// kernel (and numpy/ml_dtypes) would. Narrowing rounds to nearest, ties to
// even, once (f64 -> bf16 never goes through f32, which could round twice).
//
// Out of range values: f32, f16 and bf16 follow IEEE 754 and overflow to
// +-inf. The fp8 formats saturate instead, as Transformer Engine's casts do:
// finite values beyond the largest finite value and +-inf become +-max (448
// for f8E4M3FN, 57344 for f8E5M2). NaN stays NaN in every format: the sign
// and the leading payload bits are kept and the quiet bit is set (f8E4M3FN
// has a single NaN per sign, 0x7f/0xff).
//
// Widening to f32 is exact for every format, subnormals included.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_FLOATCONVERSION_H
#define TE_SUPPORT_FLOATCONVERSION_H

#include "te/Support/DType.h"

#include <cstdint>

namespace te::support {

/// True for the formats roundToFloatBits produces: f32, f16, bf16, f8E4M3FN
/// and f8E5M2.
bool isRoundingTarget(DType dtype);

/// Rounds `value` to `target` (one of isRoundingTarget) and returns the bit
/// pattern in the low bits. f32 values convert exactly to double first, so
/// this serves f32 and f64 sources alike.
uint32_t roundToFloatBits(double value, DType target);

/// Widens a bit pattern of the float type `source` (f32, f16, bf16 or any
/// fp8) to f32, exactly. NaN payloads are kept where f32 can hold them.
float floatBitsToF32(uint32_t bits, DType source);

inline uint16_t f32ToBF16(float value) {
  return static_cast<uint16_t>(roundToFloatBits(value, DType::BF16));
}
inline uint16_t f32ToF16(float value) {
  return static_cast<uint16_t>(roundToFloatBits(value, DType::F16));
}
inline uint8_t f32ToF8E4M3FN(float value) {
  return static_cast<uint8_t>(roundToFloatBits(value, DType::F8E4M3FN));
}
inline uint8_t f32ToF8E5M2(float value) {
  return static_cast<uint8_t>(roundToFloatBits(value, DType::F8E5M2));
}
/// f64 -> f32, round to nearest even, overflow to +-inf.
float f64ToF32(double value);

inline float bf16ToF32(uint16_t bits) {
  return floatBitsToF32(bits, DType::BF16);
}
inline float f16ToF32(uint16_t bits) {
  return floatBitsToF32(bits, DType::F16);
}
inline float f8E4M3FNToF32(uint8_t bits) {
  return floatBitsToF32(bits, DType::F8E4M3FN);
}
inline float f8E5M2ToF32(uint8_t bits) {
  return floatBitsToF32(bits, DType::F8E5M2);
}
/// 2^(bits - 127); 0xff is NaN. The format has no sign, zero or infinity.
inline float f8E8M0FNUToF32(uint8_t bits) {
  return floatBitsToF32(bits, DType::F8E8M0FNU);
}

} // namespace te::support

#endif // TE_SUPPORT_FLOATCONVERSION_H
