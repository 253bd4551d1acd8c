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

constexpr const char *kPrefix = "collective.";
constexpr const char *kGroupRank = "group_rank";

struct Operation {
  const char *name;
  te_collective_kind kind;
  /// The parameters besides group, size, ranks, dtype and shape.
  std::vector<std::string> extra;
};

const std::vector<Operation> &getOperations() {
  static const std::vector<Operation> operations = {
      {"all_reduce", TE_COLLECTIVE_ALL_REDUCE, {"reduce"}},
      {"all_gather", TE_COLLECTIVE_ALL_GATHER, {"dim"}},
      {"reduce_scatter", TE_COLLECTIVE_REDUCE_SCATTER, {"dim", "reduce"}},
      {"all_to_all", TE_COLLECTIVE_ALL_TO_ALL, {"split_dim", "concat_dim"}},
      {"permute", TE_COLLECTIVE_PERMUTE, {"route"}},
  };
  return operations;
}

/// "a_b_c" as integers in [low, high]; false on anything else.
bool parseList(const std::string &text, int64_t low, int64_t high,
               std::vector<int64_t> &values) {
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('_', start);
    if (end == std::string::npos)
      end = text.size();
    int64_t value;
    if (!parseInteger(text.substr(start, end - start), low, high, value))
      return false;
    values.push_back(value);
    start = end + 1;
  }
  return true;
}

/// "scalar" or "4x8x2" into the desc's rank and dims.
bool parseShape(const std::string &text, te_collective_desc &desc) {
  desc.rank = 0;
  if (text == "scalar")
    return true;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('x', start);
    if (end == std::string::npos)
      end = text.size();
    int64_t dim;
    if (desc.rank == TE_MAX_RANK ||
        !parseInteger(text.substr(start, end - start), 1, INT64_MAX / 2, dim))
      return false;
    desc.dims[desc.rank++] = dim;
    start = end + 1;
  }
  return true;
}

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
  return function.rfind(kPrefix, 0) == 0;
}

std::string te::runtime::parseCollectiveCall(const std::string &function,
                                             const std::string &parameters,
                                             CollectiveCall &call) {
  std::string name = function.substr(std::string(kPrefix).size());
  const Operation *operation = nullptr;
  for (const Operation &candidate : getOperations())
    if (name == candidate.name)
      operation = &candidate;
  call.groupRank = name == kGroupRank;
  if (!operation && !call.groupRank) {
    std::string known;
    for (const Operation &candidate : getOperations())
      known +=
          (known.empty() ? "" : ", ") + std::string(kPrefix) + candidate.name;
    return "unknown collective '" + function + "'; the runtime knows " + known +
           ", " + kPrefix + kGroupRank;
  }
  std::vector<std::string> keys = {"group", "size", "ranks"};
  if (operation) {
    keys.insert(keys.end(), {"dtype", "shape"});
    keys.insert(keys.end(), operation->extra.begin(), operation->extra.end());
  }
  std::string expected;
  for (const std::string &key : keys)
    expected += (expected.empty() ? "" : ",") + key + "=...";
  std::map<std::string, std::string> pairs;
  std::string error;
  if (!splitParameters(parameters, keys, expected, pairs, error))
    return error;

  te_collective_desc &desc = call.desc;
  call.group = pairs["group"];
  int64_t size;
  if (!parseInteger(pairs["size"], 1, TE_MAX_WORLD_SIZE, size))
    return "invalid size '" + pairs["size"] +
           "'; expected a positive integer of at most " +
           std::to_string(TE_MAX_WORLD_SIZE);
  call.groupSize = static_cast<int>(size);
  if (pairs["ranks"] != "blocks") {
    std::vector<int64_t> ranks;
    if (!parseList(pairs["ranks"], 0, TE_MAX_WORLD_SIZE - 1, ranks) ||
        ranks.size() % size != 0)
      return "invalid ranks '" + pairs["ranks"] +
             "'; expected 'blocks' or world ranks a_b_..., a multiple of "
             "size=" +
             pairs["size"] + " of them";
    call.ranks.assign(ranks.begin(), ranks.end());
  }
  call.channelKey = pairs["size"] + "/" + pairs["ranks"];
  if (call.groupRank) {
    call.outputBytes = sizeof(int32_t);
    return "";
  }
  desc.struct_size = sizeof(te_collective_desc);
  desc.kind = operation->kind;
  if (te_dtype_from_name(pairs["dtype"].c_str(), &desc.dtype) != TE_OK)
    return "invalid dtype '" + pairs["dtype"] + "'";
  if (!parseShape(pairs["shape"], desc))
    return "invalid shape '" + pairs["shape"] +
           "'; expected 'scalar' or positive sizes such as 4x8";
  uint64_t elements = countElements(desc);
  size_t element = te_dtype_size(desc.dtype);
  if (!elements || elements > SIZE_MAX / element / size)
    return "shape '" + pairs["shape"] + "' is too large";
  call.inputBytes = call.outputBytes = elements * element;

  auto parseDim = [&](const std::string &key, int &dim) -> std::string {
    int64_t value;
    if (!parseInteger(pairs[key], 0, desc.rank - 1, value))
      return "invalid " + key + " '" + pairs[key] + "' for an input of rank " +
             std::to_string(desc.rank);
    dim = static_cast<int>(value);
    return "";
  };
  auto parseReduce = [&]() -> std::string {
    int reduce =
        parseChoice(pairs, "reduce", {"sum", "max", "min", "avg"}, error);
    if (reduce < 0)
      return error;
    desc.reduce = static_cast<te_reduce_kind>(reduce);
    return "";
  };
  auto divisible = [&](int dim, const char *key) -> std::string {
    if (desc.dims[dim] % size)
      return std::string(key) + " " + std::to_string(dim) + " has size " +
             std::to_string(desc.dims[dim]) + ", which the group size " +
             pairs["size"] + " does not divide";
    return "";
  };
  std::string why;
  switch (desc.kind) {
  case TE_COLLECTIVE_ALL_REDUCE:
    why = parseReduce();
    break;
  case TE_COLLECTIVE_ALL_GATHER:
    if ((why = parseDim("dim", desc.dim)).empty())
      call.outputBytes *= size;
    break;
  case TE_COLLECTIVE_REDUCE_SCATTER:
    if ((why = parseDim("dim", desc.dim)).empty() &&
        (why = divisible(desc.dim, "dim")).empty() &&
        (why = parseReduce()).empty())
      call.outputBytes /= size;
    break;
  case TE_COLLECTIVE_ALL_TO_ALL:
    if ((why = parseDim("split_dim", desc.dim)).empty() &&
        (why = parseDim("concat_dim", desc.concat_dim)).empty())
      why = divisible(desc.dim, "split_dim");
    break;
  case TE_COLLECTIVE_PERMUTE: {
    const std::string &route = pairs["route"];
    std::vector<int64_t> values;
    if (route.rfind("shift_", 0) == 0 &&
        parseList(route.substr(6), INT64_MIN / 2, INT64_MAX / 2, values) &&
        values.size() == 1) {
      desc.shift = values[0];
    } else if (route.rfind("pairs_", 0) == 0 &&
               parseList(route.substr(6), 0, size - 1, values) &&
               values.size() % 2 == 0) {
      // Each rank at most once a source and once a target, as the op's
      // verifier requires: a second send to one rank would never be
      // received.
      std::vector<int> sources(size, 0), targets(size, 0);
      for (size_t i = 0; i < values.size(); i += 2)
        if (sources[values[i]]++ || targets[values[i + 1]]++)
          why = "route '" + route + "' names rank " +
                std::to_string(sources[values[i]] > 1 ? values[i]
                                                      : values[i + 1]) +
                " twice as a " + (sources[values[i]] > 1 ? "source" : "target");
      call.pairs = values;
    } else {
      why = "invalid route '" + route +
            "'; expected shift_<k> or pairs_<source>_<target>_... with "
            "ranks below size=" +
            pairs["size"];
    }
    break;
  }
  }
  if (!why.empty())
    return why;
  if (desc.kind == TE_COLLECTIVE_REDUCE_SCATTER ||
      desc.kind == TE_COLLECTIVE_ALL_REDUCE) {
    bool floating = desc.dtype == TE_DTYPE_F32 || desc.dtype == TE_DTYPE_F64 ||
                    desc.dtype == TE_DTYPE_F16 || desc.dtype == TE_DTYPE_BF16 ||
                    desc.dtype == TE_DTYPE_F8E4M3FN ||
                    desc.dtype == TE_DTYPE_F8E5M2;
    if (desc.reduce == TE_REDUCE_AVG && !floating)
      return "reduce avg needs a floating-point dtype, got " + pairs["dtype"];
    if (desc.dtype == TE_DTYPE_F8E8M0FNU)
      return "f8E8M0FNU values (scales) cannot be reduced; gather them";
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
