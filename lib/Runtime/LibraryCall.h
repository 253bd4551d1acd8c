//===- LibraryCall.h - What the cuda device's library calls share -*- C++
//-*-===//
//
// The library calls of lib/Runtime/CUBLASLt.h and CUDNN.h: how their state
// asks the device that owns it for workspace memory, how they read their
// parameters (a manifest's key=value list) and how they check their
// untrusted operands.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_LIBRARYCALL_H
#define TE_LIB_RUNTIME_LIBRARYCALL_H

#include "te/Runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

namespace te::runtime {

struct DeviceMemory {
  void *owner;
  te_status (*allocate)(void *owner, size_t bytes, void **pointer);
  void (*free)(void *owner, void *pointer);
};

/// `text`'s comma-separated key=value pairs into `pairs`; false (with
/// `error` naming the pair and `expected`, what the call takes) on a
/// malformed or repeated pair, or a key not among `keys`.
inline bool splitParameters(const std::string &text,
                            const std::vector<std::string> &keys,
                            const std::string &expected,
                            std::map<std::string, std::string> &pairs,
                            std::string &error) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos)
      end = text.size();
    std::string pair = text.substr(start, end - start);
    start = end + 1;
    size_t equals = pair.find('=');
    std::string key = pair.substr(0, equals);
    bool known = false;
    for (const std::string &candidate : keys)
      known |= key == candidate;
    if (equals == std::string::npos || equals + 1 == pair.size() || !known ||
        !pairs.emplace(key, pair.substr(equals + 1)).second) {
      error = "invalid parameter '" + pair + "'; expected " + expected;
      return false;
    }
  }
  for (const std::string &key : keys)
    if (!pairs.count(key)) {
      error = "parameter '" + key + "' is missing";
      return false;
    }
  return true;
}

/// The index of `pairs[key]` among `choices`, or -1 with `error` ("invalid
/// KEY 'value'; expected a, b or c").
inline int parseChoice(std::map<std::string, std::string> &pairs,
                       const std::string &key,
                       const std::vector<std::string> &choices,
                       std::string &error) {
  const std::string &value = pairs[key];
  for (size_t i = 0; i < choices.size(); ++i)
    if (value == choices[i])
      return static_cast<int>(i);
  error = "invalid " + key + " '" + value + "'; expected ";
  for (size_t i = 0; i < choices.size(); ++i)
    error += (i == 0                    ? ""
              : i + 1 == choices.size() ? " or "
                                        : ", ") +
             choices[i];
  return -1;
}

/// `text` as a decimal integer in [low, high]; false otherwise.
inline bool parseInteger(const std::string &text, int64_t low, int64_t high,
                         int64_t &value) {
  char *rest = nullptr;
  long long parsed = std::strtoll(text.c_str(), &rest, 10);
  if (text.empty() || *rest || parsed < low || parsed > high)
    return false;
  value = parsed;
  return true;
}

/// Why `nargs` operands of `sizes` bytes cannot serve a call with
/// `parameters` whose operands need `needed` bytes, or "": the manifest is
/// untrusted, so every operand must hold what the library would read or
/// write.
inline std::string checkOperands(const char *parameters, const size_t *sizes,
                                 int nargs, const std::vector<size_t> &needed) {
  if (nargs != static_cast<int>(needed.size()))
    return "expected " + std::to_string(needed.size()) + " operands, got " +
           std::to_string(nargs);
  for (int i = 0; i < nargs; ++i)
    if (sizes[i] < needed[i])
      return "operand " + std::to_string(i) + " has " +
             std::to_string(sizes[i]) + " bytes, but '" + parameters +
             "' needs " + std::to_string(needed[i]);
  return "";
}

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_LIBRARYCALL_H
