//===- DType.cpp - Element type names, sizes and tensor shapes ------------===//

#include "Error.h"
#include "Shape.h"

#include "te/ABI/Manifest.h"

using namespace te::runtime;
using te::abi::ElementType;

// A te_dtype is a te::abi::ElementType: both number the kernel types of
// te/ABI/ElementTypes.def, the one table, in its order. The names and sizes
// come from te/ABI.
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                        \
  static_assert(static_cast<int>(ElementType::ENUM) == TE_DTYPE_##ENUM,        \
                "te_dtype and te::abi::ElementType disagree on " NAME);
#include "te/ABI/ElementTypes.def"
constexpr int kKernelElementTypes = 0
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND) +1
#include "te/ABI/ElementTypes.def"
    ;
static_assert(TE_DTYPE_I64 == kKernelElementTypes - 1,
              "te_dtype has a value te/ABI/ElementTypes.def does not list");

bool te::runtime::isValidDType(te_dtype dtype) {
  return te::abi::getElementTypeName(static_cast<ElementType>(dtype)) !=
         nullptr;
}

bool te::runtime::lookupDType(std::string_view name, te_dtype &dtype) {
  std::optional<ElementType> type = te::abi::lookUpElementType(name);
  if (!type)
    return false;
  dtype = static_cast<te_dtype>(*type);
  return true;
}

const char *te::runtime::dtypeNameList() { return te::abi::listElementTypes(); }

bool te::runtime::computeByteSize(te_dtype dtype, int rank, const int64_t *dims,
                                  size_t &bytes) {
  size_t total = te_dtype_size(dtype);
  for (int i = 0; i < rank; ++i) {
    if (static_cast<uint64_t>(dims[i]) > SIZE_MAX ||
        __builtin_mul_overflow(total, static_cast<size_t>(dims[i]), &total))
      return false;
  }
  bytes = total;
  return true;
}

std::string te::runtime::formatDims(int rank, const int64_t *dims) {
  if (rank == 0)
    return "scalar";
  std::string text;
  for (int i = 0; i < rank; ++i) {
    if (i)
      text += 'x';
    text += std::to_string(dims[i]);
  }
  return text;
}

std::string te::runtime::formatTensorType(te_dtype dtype, int rank,
                                          const int64_t *dims) {
  const char *name = te_dtype_name(dtype);
  return std::string(name ? name : "<invalid dtype>") + " " +
         formatDims(rank, dims);
}

extern "C" size_t te_dtype_size(te_dtype dtype) {
  return te::abi::getElementTypeBytes(static_cast<ElementType>(dtype));
}

extern "C" const char *te_dtype_name(te_dtype dtype) {
  return te::abi::getElementTypeName(static_cast<ElementType>(dtype));
}

extern "C" te_status te_dtype_from_name(const char *name, te_dtype *out) {
  if (!name || !out)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "te_dtype_from_name: %s must not be NULL",
                !name ? "name" : "out");
  return guard("te_dtype_from_name", [&] {
    if (lookupDType(name, *out))
      return TE_OK;
    return fail(TE_ERROR_NOT_FOUND,
                "te_dtype_from_name: unknown element type '%.64s'; expected "
                "one of %s (spelled as in MLIR, case sensitive)",
                name, dtypeNameList());
  });
}
