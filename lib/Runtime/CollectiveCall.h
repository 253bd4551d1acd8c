//===- CollectiveCall.h - Collectives as steps of a kernel ------*- C++ -*-===//
//
// A program's collective is a `call collective.<op>` line of its manifest
// (te/Runtime/Module.h). The module parses it at load into a
// te_collective_desc; a launch finds the group's channel on the device
// (creating it at first use) and calls the device's collective entry.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_COLLECTIVECALL_H
#define TE_LIB_RUNTIME_COLLECTIVECALL_H

#include "te/Runtime/Collective.h"
#include "te/Runtime/Device.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::runtime {

/// One `call collective.<op>` line, parsed.
struct CollectiveCall {
  te_collective_desc desc = {};
  /// The group's name, size and rank list (empty: consecutive blocks).
  std::string group;
  int groupSize = 0;
  std::vector<int> ranks;
  std::vector<int64_t> pairs;
  /// The bytes the input and the output operands need.
  size_t inputBytes = 0;
  size_t outputBytes = 0;
  /// The channel's key on its device: the size and the rank list.
  std::string channelKey;
  /// `collective.group_rank`: no data moves; the runtime writes this rank's
  /// position in the group (an i32) to the only operand. `desc` is unset.
  bool groupRank = false;
};

/// Whether a manifest's library function is a collective.
bool isCollectiveFunction(const std::string &function);

/// Parses `function` ("collective.all_reduce") and its parameters into
/// `call`; "" on success, else why not.
std::string parseCollectiveCall(const std::string &function,
                                const std::string &parameters,
                                CollectiveCall &call);

/// Runs `call` on `device` with its operands (the input, then the output;
/// a group_rank's output alone), whose byte sizes the manifest is not
/// trusted to match.
te_status runCollectiveCall(te_device *device, const CollectiveCall &call,
                            void *const *data, const size_t *sizes, int nargs,
                            const te_launch_config *config);

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_COLLECTIVECALL_H
