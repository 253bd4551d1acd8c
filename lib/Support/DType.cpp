//===- DType.cpp - Names and sizes of element types -----------------------===//

#include "te/Support/DType.h"

#include <cassert>
#include <iterator>
#include <string>

using namespace te::support;

namespace {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  size_t size;
  bool isFloat;
};
} // namespace

// In the order of the enum, which comes from the same table.
static constexpr DTypeInfo kDTypeInfos[] = {
#define TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                        \
  {DType::ENUM, NAME, BYTES, std::string_view(#KIND) == "FLOAT"},
#define TE_FILE_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)                          \
  TE_KERNEL_ELEMENT_TYPE(ENUM, NAME, BYTES, KIND)
#include "te/ABI/ElementTypes.def"
};

static const DTypeInfo &info(DType dtype) {
  size_t index = static_cast<size_t>(dtype);
  assert(index < std::size(kDTypeInfos) && "not a DType");
  return kDTypeInfos[index];
}

std::string_view te::support::dtypeName(DType dtype) {
  return info(dtype).name;
}

size_t te::support::dtypeSize(DType dtype) { return info(dtype).size; }

bool te::support::isFloat(DType dtype) { return info(dtype).isFloat; }

std::optional<DType> te::support::parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypeInfos)
    if (info.name == name)
      return info.dtype;
  return std::nullopt;
}

std::string_view te::support::dtypeNameList() {
  static const std::string list = [] {
    std::string joined;
    for (const DTypeInfo &info : kDTypeInfos)
      joined.append(joined.empty() ? "" : ", ").append(info.name);
    return joined;
  }();
  return list;
}
