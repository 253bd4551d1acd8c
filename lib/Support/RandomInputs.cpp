//===- RandomInputs.cpp - Inputs by role from a documented generator ------===//
//
// The definition (docs/Runtime.md, "Random inputs", has the numpy version):
//   bits(s, a, i) = mix(s + 0x9E3779B97F4A7C15 * (a * 2^40 + i + 1))
//   mix           = splitmix64's finalizer; arithmetic modulo 2^64
//   u(s, a, i)    = (bits >> 40) * 2^-24                    in [0, 1)
//   normal(s,a,i) = sum over j < 12 of u(s, a, 12 i + j) - 6  (Irwin-Hall)
// for seed s, input a (its position among the kernel's inputs) and element
// i. Every value is computed exactly in double precision before it is
// rounded (to nearest even) to the input's type.
//
//===----------------------------------------------------------------------===//

#include "te/Support/RandomInputs.h"

#include "te/Support/DType.h"
#include "te/Support/FloatConversion.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <sstream>

using namespace te::support;

namespace {

uint64_t mix(uint64_t z) {
  z ^= z >> 30;
  z *= 0xBF58476D1CE4E5B9ull;
  z ^= z >> 27;
  z *= 0x94D049BB133111EBull;
  z ^= z >> 31;
  return z;
}

double normal(uint64_t seed, uint64_t argument, uint64_t index) {
  double sum = 0;
  for (uint64_t j = 0; j < 12; ++j)
    sum += randomUniform(seed, argument, 12 * index + j);
  return sum - 6.0;
}

/// floor(u * n) for an integer n >= 1: a uniform integer in [0, n).
int64_t below(double u, int64_t n) {
  return static_cast<int64_t>(std::floor(u * static_cast<double>(n)));
}

/// A role token `name:n1:n2...` split at ':'.
std::vector<std::string> splitRole(const std::string &role) {
  std::vector<std::string> parts;
  std::stringstream stream(role);
  std::string part;
  while (std::getline(stream, part, ':'))
    parts.push_back(part);
  return parts;
}

bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  char *end = nullptr;
  value = std::strtoll(text.c_str(), &end, 10);
  return *end == '\0';
}

/// The ragged layout of `count` sequences in `tokens` tokens that the
/// cu_seqlens input `argument` describes: lengths in [cap - cap/2, cap]
/// with cap = tokens / count (tokens / (2 count) with seq_offsets, which
/// put a gap in [0, cap] before each sequence). Returns cu_seqlens, or the
/// seq_offsets when `offsets`.
std::vector<int64_t> raggedLayout(uint64_t seed, uint64_t argument,
                                  int64_t count, int64_t tokens,
                                  bool withOffsets, bool offsets) {
  int64_t cap = tokens / (withOffsets ? 2 * count : count);
  std::vector<int64_t> cu = {0}, starts;
  int64_t start = 0, previousEnd = 0;
  for (int64_t n = 0; n < count; ++n) {
    int64_t length = cap - below(randomUniform(seed, argument, n), cap / 2 + 1);
    int64_t gap = withOffsets
                      ? below(randomUniform(seed, argument, count + n), cap + 1)
                      : 0;
    start = previousEnd + gap;
    starts.push_back(start);
    previousEnd = start + length;
    cu.push_back(cu.back() + length);
  }
  starts.push_back(previousEnd);
  return offsets ? starts : cu;
}

void store(NpyArray &array, int64_t index, double value) {
  size_t size = dtypeSize(array.dtype);
  uint8_t *out = array.data.data() + index * size;
  switch (array.dtype) {
  case DType::F64:
    std::memcpy(out, &value, 8);
    return;
  case DType::F32:
  case DType::F16:
  case DType::BF16:
  case DType::F8E4M3FN:
  case DType::F8E5M2: {
    uint32_t bits = roundToFloatBits(value, array.dtype);
    std::memcpy(out, &bits, size);
    return;
  }
  default: {
    int64_t integer = static_cast<int64_t>(value);
    std::memcpy(out, &integer, size); // little-endian: the low bytes
    return;
  }
  }
}

} // namespace

double te::support::randomUniform(uint64_t seed, uint64_t argument,
                                  uint64_t index) {
  uint64_t counter = (argument << 40) + index + 1;
  return static_cast<double>(mix(seed + 0x9E3779B97F4A7C15ull * counter) >>
                             40) *
         0x1p-24;
}

Expected<NpyArray> te::support::generateInput(DType dtype,
                                              const std::vector<int64_t> &shape,
                                              const std::string &role,
                                              uint64_t seed,
                                              uint64_t argument) {
  NpyArray array;
  array.dtype = dtype;
  array.shape = shape;
  int64_t count = array.numElements();
  array.data.resize(count * dtypeSize(dtype));
  std::vector<std::string> parts = splitRole(role);
  std::string name = parts.empty() ? "" : parts[0];
  auto bad = [&](const std::string &why) {
    return Status::error("input " + std::to_string(argument) + ": role '" +
                         role + "' " + why);
  };
  auto u = [&](int64_t i) { return randomUniform(seed, argument, i); };
  bool integer = dtype == DType::I32 || dtype == DType::I64;

  if (name == "cu_seqlens" || name == "seq_offsets") {
    // cu_seqlens:<tokens>:<seq_offsets input or -1>,
    // seq_offsets:<tokens>:<its cu_seqlens input>.
    int64_t tokens, other;
    if (parts.size() != 3 || !parseCount(parts[1], tokens) ||
        !parseCount(parts[2], other) || tokens < 0 ||
        (name == "seq_offsets" && other < 0))
      return bad("is malformed; expected " + name + ":<tokens>:<input>");
    if (dtype != DType::I32 || shape.size() != 1 || shape[0] < 2)
      return bad("needs an i32 vector of batch + 1 >= 2 entries");
    bool offsets = name == "seq_offsets";
    uint64_t stream = offsets ? static_cast<uint64_t>(other) : argument;
    bool withOffsets = offsets || other >= 0;
    std::vector<int64_t> values =
        raggedLayout(seed, stream, shape[0] - 1, tokens, withOffsets, offsets);
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(values[i]));
    return array;
  }
  if (name == "seqlens") {
    int64_t size;
    if (parts.size() != 2 || !parseCount(parts[1], size) || size < 0)
      return bad("is malformed; expected seqlens:<max>");
    if (dtype != DType::I32)
      return bad("needs i32");
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(size - below(u(i), size / 2 + 1)));
    return array;
  }
  if (name == "classes") {
    // classes:<count>: class indices in [0, count).
    int64_t classes;
    if (parts.size() != 2 || !parseCount(parts[1], classes) || classes < 1)
      return bad("is malformed; expected classes:<count>");
    if (!integer)
      return bad("needs i32 or i64");
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(below(u(i), classes)));
    return array;
  }
  if (name == "positions") {
    // positions:<max>: start positions in [0, max].
    int64_t max;
    if (parts.size() != 2 || !parseCount(parts[1], max) || max < 0)
      return bad("is malformed; expected positions:<max>");
    if (dtype != DType::I32)
      return bad("needs i32");
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(below(u(i), max + 1)));
    return array;
  }
  if (name == "splits") {
    // Group sizes that sum to <total>: the gaps between G - 1 cut points
    // drawn in [0, total] and sorted (so some groups may be empty).
    int64_t total;
    if (parts.size() != 2 || !parseCount(parts[1], total) || total < 0)
      return bad("is malformed; expected splits:<total>");
    if (dtype != DType::I64 || shape.size() != 1 || shape[0] < 1)
      return bad("needs an i64 vector of one or more entries");
    std::vector<int64_t> cuts = {0};
    for (int64_t i = 0; i + 1 < count; ++i)
      cuts.push_back(below(u(i), total + 1));
    std::sort(cuts.begin(), cuts.end());
    cuts.push_back(total);
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(cuts[i + 1] - cuts[i]));
    return array;
  }
  if (!parts.empty() && parts.size() != 1)
    return bad("is not a role te-mlir knows");
  if (name == "rng_state") {
    if (dtype != DType::I64)
      return bad("needs i64");
    for (int64_t i = 0; i < count; ++i)
      store(array, i, static_cast<double>(below(u(i), 1 << 24)));
    return array;
  }
  if (name == "positive" || name == "nonnegative" || name == "alibi_slopes") {
    if (!isFloat(dtype) || dtype == DType::F8E8M0FNU)
      return bad("needs a float type");
    for (int64_t i = 0; i < count; ++i) {
      double value;
      if (name == "positive") // (0.5 + u) * 2^k, k in [-2, 2]
        value = (0.5 + u(2 * i)) *
                std::ldexp(1.0, static_cast<int>(below(u(2 * i + 1), 5)) - 2);
      else if (name == "nonnegative")
        value = std::fabs(normal(seed, argument, i));
      else // ALiBi slopes, as TE's are, in (0, 1)
        value = 0.0625 + 0.875 * u(i);
      store(array, i, value);
    }
    return array;
  }
  if (!name.empty())
    return bad("is not a role te-mlir knows");

  // No role: N(0, 1)-like floats, E8M0 scales near 1, fair booleans and
  // small integers.
  for (int64_t i = 0; i < count; ++i) {
    if (dtype == DType::F8E8M0FNU)
      array.data[i] = static_cast<uint8_t>(124 + below(u(i), 7));
    else if (dtype == DType::I1)
      array.data[i] = static_cast<uint8_t>(below(u(i), 2));
    else if (isFloat(dtype))
      store(array, i, normal(seed, argument, i));
    else if (integer || dtype == DType::I8 || dtype == DType::U8 ||
             dtype == DType::I16 || dtype == DType::U16)
      store(array, i, static_cast<double>(below(u(i), 10)));
    else
      return bad("cannot fill this type");
  }
  return array;
}
