//===- ConvertArray.cpp - te-run's rule for typing input arrays -----------===//

#include "te/Support/ConvertArray.h"
#include "te/Support/FloatConversion.h"

#include <cstring>
#include <string>

using namespace te::support;

/// Applies `convert` to every element, reading `Source` and writing `Target`
/// values through memcpy (the data has no alignment guarantee).
template <typename Source, typename Target, typename Convert>
static std::vector<uint8_t> mapElements(const std::vector<uint8_t> &data,
                                        Convert convert) {
  size_t count = data.size() / sizeof(Source);
  std::vector<uint8_t> result(count * sizeof(Target));
  for (size_t i = 0; i < count; ++i) {
    Source value;
    std::memcpy(&value, data.data() + i * sizeof(Source), sizeof(Source));
    Target converted = convert(value);
    std::memcpy(result.data() + i * sizeof(Target), &converted, sizeof(Target));
  }
  return result;
}

/// Rounds f32 or f64 elements (`Source`) to `target`.
template <typename Source>
static std::vector<uint8_t> roundElements(const std::vector<uint8_t> &data,
                                          DType target) {
  switch (target) {
  case DType::F64:
    return mapElements<Source, double>(
        data, [](Source value) { return static_cast<double>(value); });
  case DType::F32:
    return mapElements<Source, float>(
        data, [](Source value) { return f64ToF32(value); });
  case DType::BF16:
  case DType::F16:
    return mapElements<Source, uint16_t>(data, [target](Source value) {
      return static_cast<uint16_t>(roundToFloatBits(value, target));
    });
  default:
    return mapElements<Source, uint8_t>(data, [target](Source value) {
      return static_cast<uint8_t>(roundToFloatBits(value, target));
    });
  }
}

/// What the user can give for a `target` operand, for error messages.
static std::string accepted(DType target) {
  switch (target) {
  case DType::F32:
  case DType::F64:
    return "an f32 or f64 array (np.float32, np.float64)";
  case DType::BF16:
  case DType::F16:
    return "an f32 or f64 array, which is rounded to nearest even, or its raw "
           "bits as ui16 (a.view(np.uint16))";
  case DType::F8E4M3FN:
  case DType::F8E5M2:
    return "an f32 or f64 array, which is rounded to nearest even with "
           "saturation, or its raw bits as ui8 (a.view(np.uint8))";
  case DType::F8E8M0FNU:
    // Rounding to a power of two has no agreed rule (Transformer Engine
    // rounds scales up, ml_dtypes rounds ties away), so te-run takes none.
    return "its raw bits as ui8 (the biased exponents, a.view(np.uint8)); "
           "values are not rounded to this type";
  default:
    return "an array of exactly that type (numpy dtype '" +
           std::string(npyDescr(target)) + "')";
  }
}

Expected<NpyArray> te::support::convertArray(const NpyArray &src, DType target,
                                             std::string_view context) {
  NpyArray result;
  result.dtype = target;
  result.shape = src.shape;
  bool fromFloat = src.dtype == DType::F32 || src.dtype == DType::F64;
  bool rawBits =
      (src.dtype == DType::U16 && dtypeSize(target) == 2 && isFloat(target)) ||
      (src.dtype == DType::U8 && dtypeSize(target) == 1 && isFloat(target));

  if (src.dtype == target || rawBits) {
    result.data = src.data;
    return result;
  }
  if (fromFloat && (target == DType::F64 || isRoundingTarget(target))) {
    result.data = src.dtype == DType::F32
                      ? roundElements<float>(src.data, target)
                      : roundElements<double>(src.data, target);
    return result;
  }
  return Status::error(std::string(context) + ": cannot use " +
                       std::string(dtypeName(src.dtype)) + " data as " +
                       std::string(dtypeName(target)) + "; expected " +
                       accepted(target));
}
