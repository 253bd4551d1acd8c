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
};
} // namespace

// Indexed by the enum's value; checked below so the two cannot drift apart.
static constexpr DTypeInfo kDTypeInfos[] = {
    {DType::F32, "f32", 4},
    {DType::F64, "f64", 8},
    {DType::F16, "f16", 2},
    {DType::BF16, "bf16", 2},
    {DType::F8E4M3FN, "f8E4M3FN", 1},
    {DType::F8E5M2, "f8E5M2", 1},
    {DType::F8E8M0FNU, "f8E8M0FNU", 1},
    {DType::I1, "i1", 1},
    {DType::I8, "i8", 1},
    {DType::U8, "ui8", 1},
    {DType::I16, "i16", 2},
    {DType::U16, "ui16", 2},
    {DType::I32, "i32", 4},
    {DType::I64, "i64", 8},
};

static constexpr bool infosMatchEnum() {
  size_t i = 0;
  for (const DTypeInfo &info : kDTypeInfos)
    if (static_cast<size_t>(info.dtype) != i++ ||
        info.dtype != kAllDTypes[i - 1])
      return false;
  return i == std::size(kAllDTypes);
}
static_assert(infosMatchEnum(), "kDTypeInfos must list every DType in order");

static const DTypeInfo &info(DType dtype) {
  size_t index = static_cast<size_t>(dtype);
  assert(index < std::size(kDTypeInfos) && "not a DType");
  return kDTypeInfos[index];
}

std::string_view te::support::dtypeName(DType dtype) {
  return info(dtype).name;
}

size_t te::support::dtypeSize(DType dtype) { return info(dtype).size; }

bool te::support::isFloat(DType dtype) {
  switch (dtype) {
  case DType::F32:
  case DType::F64:
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E5M2:
  case DType::F8E8M0FNU:
    return true;
  case DType::I1:
  case DType::I8:
  case DType::U8:
  case DType::I16:
  case DType::U16:
  case DType::I32:
  case DType::I64:
    return false;
  }
  assert(false && "not a DType");
  return false;
}

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
