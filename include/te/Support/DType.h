//===- DType.h - Element types of arrays te tools exchange ------*- C++ -*-===//
//
// The element types an array read from or written to disk can have: the
// types of te kernels' operands plus the unsigned and 16-bit integers that
// carry raw bf16/f16/fp8 bits through numpy, which has no such float types.
// Names are MLIR's spellings so that messages read like the IR.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_DTYPE_H
#define TE_SUPPORT_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace te::support {

enum class DType {
  F32,
  F64,
  F16,
  BF16,
  F8E4M3FN,
  F8E5M2,
  F8E8M0FNU,
  /// A boolean, stored as one byte holding 0 or 1 (numpy's bool layout).
  I1,
  I8,
  U8,
  I16,
  U16,
  I32,
  I64,
};

/// Every DType, in declaration order, for tests and diagnostics.
inline constexpr DType kAllDTypes[] = {
    DType::F32,    DType::F64,       DType::F16, DType::BF16, DType::F8E4M3FN,
    DType::F8E5M2, DType::F8E8M0FNU, DType::I1,  DType::I8,   DType::U8,
    DType::I16,    DType::U16,       DType::I32, DType::I64};

/// MLIR's spelling: "f32", "bf16", "f8E4M3FN", "i1", "ui8", ...
std::string_view dtypeName(DType dtype);

/// Bytes per element (1 for i1).
size_t dtypeSize(DType dtype);

/// True for the floating-point types, narrow ones included.
bool isFloat(DType dtype);

/// Parses MLIR's spelling (case sensitive); std::nullopt for anything else.
std::optional<DType> parseDType(std::string_view name);

/// The supported spellings, comma separated, for "expected one of" messages.
std::string_view dtypeNameList();

} // namespace te::support

#endif // TE_SUPPORT_DTYPE_H
