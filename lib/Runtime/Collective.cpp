//===- Collective.cpp - Collectives on the device's channels -------------===//
//
// The generic half of collectives: parsing a module's `call collective.*`
// lines, the channel of each process group (one per device and group,
// created at its first collective, destroyed with the device), and the
// size checks that keep an untrusted manifest from making a device read
// or write past an operand. What a collective does is the device's.
//
//===----------------------------------------------------------------------===//

#include "BufferImpl.h"
#include "CollectiveCall.h"
#include "CollectiveCommon.h"
#include "DeviceImpl.h"
#include "Error.h"
#include "LibraryCall.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>

using namespace te::runtime;

namespace {

/// The elements of `desc`'s input, or 0 when they overflow.
uint64_t countElements(const te_collective_desc &desc) {
  uint64_t count = 1;
  for (int d = 0; d < desc.rank; ++d)
    if (__builtin_mul_overflow(count, static_cast<uint64_t>(desc.dims[d]),
                               &count))
      return 0;
  return count;
}

} // namespace

bool te::runtime::isCollectiveFunction(const std::string &function) {
  return function.rfind(te::abi::CollectiveCall::kPrefix, 0) == 0;
}

static_assert(TE_COLLECTIVE_ALL_REDUCE ==
                      int(te::abi::CollectiveCall::Op::AllReduce) &&
                  TE_COLLECTIVE_ALL_GATHER ==
                      int(te::abi::CollectiveCall::Op::AllGather) &&
                  TE_COLLECTIVE_REDUCE_SCATTER ==
                      int(te::abi::CollectiveCall::Op::ReduceScatter) &&
                  TE_COLLECTIVE_ALL_TO_ALL ==
                      int(te::abi::CollectiveCall::Op::AllToAll) &&
                  TE_COLLECTIVE_PERMUTE ==
                      int(te::abi::CollectiveCall::Op::Permute),
              "te_collective_kind lists the ops in CollectiveCall's order");
static_assert(TE_REDUCE_SUM == int(te::abi::CollectiveCall::Reduce::Sum) &&
                  TE_REDUCE_MAX == int(te::abi::CollectiveCall::Reduce::Max) &&
                  TE_REDUCE_MIN == int(te::abi::CollectiveCall::Reduce::Min) &&
                  TE_REDUCE_AVG == int(te::abi::CollectiveCall::Reduce::Avg),
              "te_reduce_kind lists the reductions in CollectiveCall's order");

std::string te::runtime::parseCollectiveCall(const std::string &function,
                                             const std::string &parameters,
                                             CollectiveCall &call) {
  using Op = te::abi::CollectiveCall::Op;
  te::abi::CollectiveCall parsed;
  std::string error;
  if (!te::abi::CollectiveCall::decode(function, parameters, TE_MAX_RANK,
                                       parsed, error))
    return error;
  call.group = parsed.group;
  call.groupSize = static_cast<int>(parsed.size);
  call.ranks.assign(parsed.ranks.begin(), parsed.ranks.end());
  // The channel's key: the group's size and members, as encoded.
  std::string members = "blocks";
  if (!parsed.ranks.empty()) {
    members.clear();
    for (size_t i = 0; i < parsed.ranks.size(); ++i)
      members += (i ? "_" : "") + std::to_string(parsed.ranks[i]);
  }
  call.channelKey = std::to_string(parsed.size) + "/" + members;
  call.groupRank = parsed.op == Op::GroupRank;
  if (call.groupRank) {
    call.outputBytes = sizeof(int32_t);
    return "";
  }

  te_collective_desc &desc = call.desc;
  desc.struct_size = sizeof(te_collective_desc);
  // te_collective_kind and te_reduce_kind list the ops and reductions in
  // CollectiveCall's order.
  desc.kind = static_cast<te_collective_kind>(parsed.op);
  desc.reduce = static_cast<te_reduce_kind>(parsed.reduce);
  if (te_dtype_from_name(parsed.dtype.c_str(), &desc.dtype) != TE_OK)
    return "invalid dtype '" + parsed.dtype + "'";
  desc.rank = static_cast<int>(parsed.shape.size());
  for (int d = 0; d < desc.rank; ++d)
    desc.dims[d] = parsed.shape[d];
  uint64_t elements = countElements(desc);
  size_t element = te_dtype_size(desc.dtype);
  if (!elements || elements > SIZE_MAX / element / parsed.size) {
    std::string shape = "scalar";
    if (desc.rank) {
      shape.clear();
      for (int d = 0; d < desc.rank; ++d)
        shape += (d ? "x" : "") + std::to_string(desc.dims[d]);
    }
    return "shape '" + shape + "' is too large";
  }
  call.inputBytes = call.outputBytes = elements * element;
  desc.dim = static_cast<int>(parsed.dim);
  desc.concat_dim = static_cast<int>(parsed.concatDim);
  if (parsed.op == Op::AllGather)
    call.outputBytes *= parsed.size;
  if (parsed.op == Op::ReduceScatter)
    call.outputBytes /= parsed.size;
  if (parsed.op == Op::Permute) {
    if (parsed.shifted)
      desc.shift = parsed.shift;
    else
      call.pairs = parsed.pairs;
  }
  return "";
}

void te::runtime::destroyChannels(te_device *device) {
  std::lock_guard<std::mutex> lock(device->channelMutex);
  for (auto &[key, channel] : device->channels)
    device->ops->channel_destroy(device->instance, channel);
  device->channels.clear();
}

namespace {

/// The spec of `call`'s group, pointing into `call`.
te_channel_spec makeSpec(const CollectiveCall &call) {
  te_channel_spec spec = {};
  spec.struct_size = sizeof(te_channel_spec);
  spec.group = call.group.c_str();
  spec.size = call.groupSize;
  spec.ranks = call.ranks.empty() ? nullptr : call.ranks.data();
  spec.num_ranks = static_cast<int>(call.ranks.size());
  spec.timeout_seconds = te_collective_timeout();
  return spec;
}

/// The channel of `call`'s group on `device`, created at first use.
te_status getChannel(te_device *device, const CollectiveCall &call,
                     void **channel) {
  std::lock_guard<std::mutex> lock(device->channelMutex);
  auto found = device->channels.find(call.channelKey);
  if (found != device->channels.end()) {
    *channel = found->second;
    return TE_OK;
  }
  te_channel_spec spec = makeSpec(call);
  if (te_status failed =
          device->ops->channel_create(device->instance, &spec, channel))
    return failed;
  device->channels.emplace(call.channelKey, *channel);
  return TE_OK;
}

/// Writes this rank's position in `call`'s group to `output` (an i32 on the
/// device). The group's place in the world is the channels' rule
/// (CollectiveCommon.h), so it needs the world but no channel.
te_status writeGroupRank(te_device *device, const CollectiveCall &call,
                         void *output) {
  int worldRank = 0, worldSize = 1;
  if (te_status failed =
          device->ops->world(device->instance, &worldRank, &worldSize))
    return failed;
  te_channel_spec spec = makeSpec(call);
  int position = 0;
  std::string why = placeInGroups(spec, worldRank, worldSize, position);
  if (!why.empty()) {
    setDeviceDetail("te.group_rank: %s", why.c_str());
    return TE_ERROR_INVALID_ARGUMENT;
  }
  int32_t rank = position % call.groupSize;
  return device->ops->copy_to_device(device->instance, output, &rank,
                                     sizeof(rank));
}

} // namespace

te_status te::runtime::runCollectiveCall(te_device *device,
                                         const CollectiveCall &call,
                                         void *const *data, const size_t *sizes,
                                         int nargs,
                                         const te_launch_config *config) {
  if (call.groupRank) {
    std::string why = checkOperands("", sizes, nargs, {call.outputBytes});
    if (!why.empty()) {
      setDeviceDetail("te.group_rank of group '%s': %s", call.group.c_str(),
                      why.c_str());
      return TE_ERROR_INVALID_ARGUMENT;
    }
    return writeGroupRank(device, call, data[0]);
  }
  std::string why =
      checkOperands("", sizes, nargs, {call.inputBytes, call.outputBytes});
  if (!why.empty()) {
    setDeviceDetail("collective over group '%s': %s", call.group.c_str(),
                    why.c_str());
    return TE_ERROR_INVALID_ARGUMENT;
  }
  // The manifest is untrusted: MPI and NCCL forbid overlapping send and
  // receive buffers.
  if (rangesOverlap(data[0], call.inputBytes, data[1], call.outputBytes)) {
    setDeviceDetail("collective over group '%s': its input and output "
                    "overlap",
                    call.group.c_str());
    return TE_ERROR_INVALID_ARGUMENT;
  }
  void *channel = nullptr;
  if (te_status failed = getChannel(device, call, &channel))
    return failed;
  te_collective_desc desc = call.desc;
  desc.pairs = call.pairs.empty() ? nullptr : call.pairs.data();
  desc.num_pairs = static_cast<int>(call.pairs.size() / 2);
  desc.group = call.group.c_str();
  return device->ops->collective(device->instance, channel, &desc, data[0],
                                 data[1], config);
}

extern "C" double te_collective_timeout(void) {
  if (const char *text = std::getenv("TE_COLLECTIVE_TIMEOUT")) {
    char *rest = nullptr;
    double seconds = std::strtod(text, &rest);
    // Bounded, so that deadlines in nanoseconds and poll's milliseconds
    // do not overflow.
    if (rest != text && !*rest && seconds > 0)
      return std::min(seconds, 1e6);
  }
  return 300.0;
}

extern "C" te_status te_device_world(te_device *device, int *rank, int *size) {
  const char *fn = "te_device_world";
  if (!device || !rank || !size)
    return fail(TE_ERROR_INVALID_ARGUMENT,
                "%s: device, rank and size must not be NULL", fn);
  return guard(fn, [&] {
    if (!device->ops->world)
      return fail(TE_ERROR_UNSUPPORTED,
                  "%s: device '%s' has no collectives; run collectives on a "
                  "device that has them (cpu, cuda)",
                  fn, device->name);
    takeDeviceDetail();
    if (te_status failed = device->ops->world(device->instance, rank, size)) {
      const char *detail = takeDeviceDetail();
      return fail(failed, "%s: device '%s': %s%s%s", fn, device->name,
                  te_status_string(failed), *detail ? ": " : "", detail);
    }
    return TE_OK;
  });
}
