//===- DType.cpp - Element type names, sizes and tensor shapes ------------===//

#include "Error.h"
#include "Shape.h"

using namespace te::runtime;

namespace {
struct DTypeInfo {
  te_dtype dtype;
  const char *name;
  size_t size;
};

// Indexed by te_dtype value: the kernel types of te/ABI/ElementTypes.def,
// the one table, in its order (checked below against te/Runtime/DType.h).
constexpr DTypeInfo kDTypes[] = {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                        \
  {TE_DTYPE_##ENUM, NAME, BYTES},
#include "te/ABI/ElementTypes.def"
};
constexpr int kNumDTypes = sizeof(kDTypes) / sizeof(kDTypes[0]);

constexpr bool tableMatchesEnum() {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kDTypes[i].dtype != i)
      return false;
  return true;
}
static_assert(tableMatchesEnum(), "kDTypes must be indexed by te_dtype");
static_assert(kDTypes[kNumDTypes - 1].dtype == TE_DTYPE_I64,
              "a te_dtype is missing from kDTypes");
} // namespace

bool te::runtime::isValidDType(te_dtype dtype) {
  return dtype >= 0 && dtype < kNumDTypes;
}

bool te::runtime::lookupDType(std::string_view name, te_dtype &dtype) {
  for (const DTypeInfo &info : kDTypes) {
    if (name == info.name) {
      dtype = info.dtype;
      return true;
    }
  }
  return false;
}

const char *te::runtime::dtypeNameList() {
  static const std::string list = [] {
    std::string names;
    for (const DTypeInfo &info : kDTypes)
      names += std::string(names.empty() ? "" : ", ") + info.name;
    return names;
  }();
  return list.c_str();
}

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
  return isValidDType(dtype) ? kDTypes[dtype].size : 0;
}

extern "C" const char *te_dtype_name(te_dtype dtype) {
  return isValidDType(dtype) ? kDTypes[dtype].name : nullptr;
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
