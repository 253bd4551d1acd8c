//===- LibraryCall.h - What the cuda device's library calls share -*- C++
//-*-===//
//
// The library calls of lib/Runtime/CUBLASLt.h and CUDNN.h: how their state
// asks the device that owns it for workspace memory, how they read their
// parameters (a manifest's key=value list) and how they check their
// untrusted operands. The parameters themselves are te/ABI/LibraryCalls.h's
// structs.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_LIBRARYCALL_H
#define TE_LIB_RUNTIME_LIBRARYCALL_H

#include "te/ABI/LibraryCalls.h"
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

// The wire format of the parameters (key=value pairs) and its parsers
// are te/ABI's, shared with the compiler that writes them.
using te::abi::parseChoice;
using te::abi::parseInteger;
using te::abi::splitParameters;

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
