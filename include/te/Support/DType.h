//===- DType.h - Element types of arrays te tools exchange ------*- C++ -*-===//
//
// The element types an array read from or written to disk can have: the
// types of te kernels' operands plus the unsigned and 16-bit integers that
// carry raw bf16/f16/fp8 bits through numpy, which has no such float types
// (te/ABI/ElementTypes.def, the one table). Names are MLIR's spellings so
// that messages read like the IR.
//
//===----------------------------------------------------------------------===//

#ifndef TE_SUPPORT_DTYPE_H
#define TE_SUPPORT_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace te::support {

/// Every element type of te/ABI/ElementTypes.def, in its order.
enum class DType {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) ENUM,
#define TE_FILE_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) ENUM,
#include "te/ABI/ElementTypes.def"
};

/// Every DType, in declaration order, for tests and diagnostics.
inline constexpr DType kAllDTypes[] = {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) DType::ENUM,
#define TE_FILE_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) DType::ENUM,
#include "te/ABI/ElementTypes.def"
};

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
