//===- NCCL.cpp - The cuda device's collectives on NCCL -------------------===//
//
// Each collective first all-reduces its signature's hash (16 bytes) on the
// stream and waits for it, at most the channel's timeout (then the
// communicator is aborted and the call fails): that is where ranks that
// disagree, or do not come, are noticed. The data then moves with NCCL's
// collective on the stream, without waiting. Layouts NCCL does not produce
// (gathering along an inner dimension, all_to_all's parts) are packed and
// unpacked with 2-D copies through a scratch buffer on the GPU.
//
//===----------------------------------------------------------------------===//

#include "NCCL.h"

#include "CollectiveCommon.h"
#include "Error.h"
#include "ExitDeadline.h"
#include "MPILibrary.h"

#include <algorithm>
#include <arpa/inet.h>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <limits>
#include <mutex>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace te::runtime;
using namespace te::runtime::nccl;

namespace {

using Comm = void *;

/// NCCL's entry points, resolved once per process.
struct Library {
  std::string unavailable;
  int version = 0;
  Result (*ncclGetVersion)(int *) = nullptr;
  const char *(*ncclGetErrorString)(Result) = nullptr;
  Result (*ncclGetUniqueId)(UniqueId *) = nullptr;
  Result (*ncclCommInitRank)(Comm *, int, UniqueId, int) = nullptr;
  Result (*ncclCommSplit)(Comm, int, int, Comm *, void *) = nullptr;
  Result (*ncclCommDestroy)(Comm) = nullptr;
  Result (*ncclCommAbort)(Comm) = nullptr;
  Result (*ncclAllReduce)(const void *, void *, size_t, int, int, Comm,
                          void *) = nullptr;
  Result (*ncclAllGather)(const void *, void *, size_t, int, Comm,
                          void *) = nullptr;
  Result (*ncclReduceScatter)(const void *, void *, size_t, int, int, Comm,
                              void *) = nullptr;
  Result (*ncclSend)(const void *, size_t, int, int, Comm, void *) = nullptr;
  Result (*ncclRecv)(void *, size_t, int, int, Comm, void *) = nullptr;
  Result (*ncclGroupStart)() = nullptr;
  Result (*ncclGroupEnd)() = nullptr;

  std::string describe(Result result) const {
    const char *text = ncclGetErrorString ? ncclGetErrorString(result) : "";
    return std::string(text ? text : "") + " (ncclResult " +
           std::to_string(result) + ")";
  }
};

const Library &getLibrary() {
  static const Library *library = [] {
    auto *loaded = new Library();
    std::vector<std::string> candidates;
    if (const char *configured = std::getenv("TE_NCCL_LIBRARY");
        configured && *configured)
      candidates = {configured};
    else
      candidates = {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                    "/usr/local/cuda/lib/libnccl.so.2"};
    void *handle = nullptr;
    std::string why;
    for (const std::string &candidate : candidates) {
      handle = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (handle)
        break;
      const char *error = dlerror();
      why += (why.empty() ? "" : "; ") + std::string(error ? error : "");
    }
    if (!handle) {
      loaded->unavailable =
          "collectives on the cuda device need NCCL, which did not load (" +
          why +
          "); install NCCL 2.18 or later, or set TE_NCCL_LIBRARY to "
          "its libnccl.so.2";
      return loaded;
    }
    std::string missing;
    auto resolve = [&](const char *name, auto &entry) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
          dlsym(handle, name));
      if (!entry)
        missing += (missing.empty() ? "" : ", ") + std::string(name);
    };
    resolve("ncclGetVersion", loaded->ncclGetVersion);
    resolve("ncclGetErrorString", loaded->ncclGetErrorString);
    resolve("ncclGetUniqueId", loaded->ncclGetUniqueId);
    resolve("ncclCommInitRank", loaded->ncclCommInitRank);
    resolve("ncclCommSplit", loaded->ncclCommSplit);
    resolve("ncclCommDestroy", loaded->ncclCommDestroy);
    resolve("ncclCommAbort", loaded->ncclCommAbort);
    resolve("ncclAllReduce", loaded->ncclAllReduce);
    resolve("ncclAllGather", loaded->ncclAllGather);
    resolve("ncclReduceScatter", loaded->ncclReduceScatter);
    resolve("ncclSend", loaded->ncclSend);
    resolve("ncclRecv", loaded->ncclRecv);
    resolve("ncclGroupStart", loaded->ncclGroupStart);
    resolve("ncclGroupEnd", loaded->ncclGroupEnd);
    if (loaded->ncclGetVersion)
      loaded->ncclGetVersion(&loaded->version);
    if (!missing.empty() || loaded->version < kMinimumVersion)
      loaded->unavailable =
          "the NCCL library (version " + std::to_string(loaded->version) +
          ") is older than 2.18" +
          (missing.empty() ? "" : " (it lacks " + missing + ")") +
          "; install NCCL 2.18 or later, or set TE_NCCL_LIBRARY";
    return loaded;
  }();
  return *library;
}

/// An environment variable as an integer in [low, high]; false when unset,
/// `error` when malformed.
bool readInteger(const char *name, int low, int high, int &value,
                 std::string &error) {
  const char *text = std::getenv(name);
  if (!text)
    return false;
  char *rest = nullptr;
  long parsed = std::strtol(text, &rest, 10);
  if (!*text || *rest || parsed < low || parsed > high) {
    error = std::string(name) + "='" + text + "' is not a number from " +
            std::to_string(low) + " to " + std::to_string(high);
    return false;
  }
  value = static_cast<int>(parsed);
  return true;
}

//===----------------------------------------------------------------------===//
// The world's id: over MPI, or a TCP rendezvous at rank 0
//===----------------------------------------------------------------------===//

bool sendAll(int fd, const char *data, size_t bytes) {
  while (bytes) {
    ssize_t sent = send(fd, data, bytes, MSG_NOSIGNAL);
    if (sent <= 0)
      return false;
    data += sent;
    bytes -= static_cast<size_t>(sent);
  }
  return true;
}

bool receiveAll(int fd, char *data, size_t bytes, int timeoutMs) {
  while (bytes) {
    pollfd event = {fd, POLLIN, 0};
    if (poll(&event, 1, timeoutMs) <= 0)
      return false;
    ssize_t got = recv(fd, data, bytes, 0);
    if (got <= 0)
      return false;
    data += got;
    bytes -= static_cast<size_t>(got);
  }
  return true;
}

/// What a rank sends rank 0 first: who it is.
struct Hello {
  char magic[16];
  int32_t rank;
  int32_t size;
};
constexpr char kHelloMagic[16] = "te-mlir nccl 1";
/// How long rank 0 waits for a connection to say who it is.
constexpr int kHelloMs = 2000;

} // namespace

std::string nccl::rendezvous(const World &world, UniqueId &id, double timeout) {
  const char *host = std::getenv("TE_MASTER_ADDR");
  const char *port = std::getenv("TE_MASTER_PORT");
  if (!host || !*host || !port || !*port)
    return "a job of " + std::to_string(world.size) +
           " ranks outside mpirun needs TE_MASTER_ADDR and TE_MASTER_PORT "
           "(rank 0's address and a free port) for the ranks to meet";
  addrinfo hints = {};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = world.rank == 0 ? AI_PASSIVE : 0;
  addrinfo *addresses = nullptr;
  if (int code = getaddrinfo(world.rank == 0 ? nullptr : host, port, &hints,
                             &addresses))
    return std::string("TE_MASTER_ADDR:TE_MASTER_PORT (") + host + ":" + port +
           "): " + gai_strerror(code);
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(timeout));
  auto remainingMs = [&] {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    return static_cast<int>(
        std::clamp<int64_t>(left.count(), 0, std::numeric_limits<int>::max()));
  };
  std::string error;
  if (world.rank == 0) {
    int listener = socket(addresses->ai_family, SOCK_STREAM, 0);
    int yes = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
    if (listener < 0 ||
        bind(listener, addresses->ai_addr, addresses->ai_addrlen) != 0 ||
        listen(listener, world.size) != 0) {
      error = std::string("rank 0 cannot listen on port ") + port + ": " +
              std::strerror(errno);
    }
    std::vector<char> joined(world.size, 0);
    int count = 1;
    while (error.empty() && count < world.size) {
      pollfd event = {listener, POLLIN, 0};
      if (poll(&event, 1, remainingMs()) <= 0) {
        error = "only " + std::to_string(count) + " of " +
                std::to_string(world.size) + " ranks came to port " + port +
                " within TE_COLLECTIVE_TIMEOUT";
        break;
      }
      int peer = accept(listener, nullptr, nullptr);
      if (peer < 0)
        continue;
      // Only another rank of this job counts: a stray connection to the
      // port (a scanner, another job) is closed.
      Hello hello = {};
      bool valid =
          receiveAll(peer, reinterpret_cast<char *>(&hello), sizeof(hello),
                     std::min(kHelloMs, remainingMs())) &&
          std::memcmp(hello.magic, kHelloMagic, sizeof(kHelloMagic)) == 0 &&
          hello.size == world.size && hello.rank > 0 &&
          hello.rank < world.size && !joined[hello.rank];
      if (valid) {
        if (!sendAll(peer, reinterpret_cast<const char *>(&id), sizeof(id)))
          error = std::string("sending the NCCL id to rank ") +
                  std::to_string(hello.rank) +
                  " failed: " + std::strerror(errno);
        joined[hello.rank] = 1;
        ++count;
      }
      close(peer);
    }
    if (listener >= 0)
      close(listener);
  } else {
    int fd = -1;
    while (fd < 0 && remainingMs() > 0) {
      // Every address the name has (IPv6 and IPv4), until rank 0 listens.
      for (addrinfo *a = addresses; a && fd < 0; a = a->ai_next) {
        fd = socket(a->ai_family, SOCK_STREAM, 0);
        if (fd >= 0 && connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
          close(fd);
          fd = -1;
        }
      }
      if (fd < 0)
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    Hello hello = {};
    std::memcpy(hello.magic, kHelloMagic, sizeof(kHelloMagic));
    hello.rank = world.rank;
    hello.size = world.size;
    if (fd < 0 ||
        !sendAll(fd, reinterpret_cast<const char *>(&hello), sizeof(hello)) ||
        !receiveAll(fd, reinterpret_cast<char *>(&id), sizeof(id),
                    remainingMs()))
      error = std::string("rank ") + std::to_string(world.rank) +
              " could not get the NCCL id from rank 0 at " + host + ":" + port +
              " within TE_COLLECTIVE_TIMEOUT";
    if (fd >= 0)
      close(fd);
  }
  freeaddrinfo(addresses);
  return error;
}

namespace {

/// The world's communicator, made once per process.
struct WorldComm {
  std::mutex mutex;
  Comm comm = nullptr;
  World world;
};

WorldComm &getWorldComm() {
  static WorldComm *comm = new WorldComm;
  return *comm;
}

te_status failWith(const std::string &message, te_status status) {
  setDeviceDetail("%s", message.c_str());
  return status;
}

struct Channel {
  Comm comm = nullptr;
  int rank = 0;
  int size = 1;
  std::string group;
  double timeout = 300;
  Gpu gpu = {};
  /// Device scratch: [0] packing, [1] unpacking.
  void *scratch[2] = {nullptr, nullptr};
  size_t scratchBytes[2] = {0, 0};
  /// Device memory for the agreement check: this rank's signature, then
  /// every rank's.
  void *signatures = nullptr;
  /// NCCL takes one call at a time per communicator, and the scratch is
  /// the channel's: collectives on one channel are serialized, and one on
  /// another stream than the last waits for that stream first (its work may
  /// still read the scratch).
  std::mutex mutex;
  void *lastStream = nullptr;
  bool used = false;
  std::string broken;
};

te_status scratch(Channel &channel, int which, size_t bytes, void **out) {
  if (channel.scratchBytes[which] < bytes) {
    if (channel.scratch[which])
      channel.gpu.free(channel.gpu.owner, channel.scratch[which]);
    channel.scratch[which] = nullptr;
    channel.scratchBytes[which] = 0;
    if (te_status failed = channel.gpu.allocate(channel.gpu.owner, bytes,
                                                &channel.scratch[which]))
      return failed;
    channel.scratchBytes[which] = bytes;
  }
  *out = channel.scratch[which];
  return TE_OK;
}

te_status checkResult(Channel &channel, Result result, const char *what) {
  if (result == kSuccess || result == kInProgress)
    return TE_OK;
  channel.broken = getLibrary().describe(result);
  return failWith(std::string(what) + " over group '" + channel.group +
                      "' failed in NCCL: " + channel.broken,
                  TE_ERROR_KERNEL_FAILED);
}

/// "300", "2.5": seconds for messages.
std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", seconds);
  return text;
}

/// Waits for `stream` at most the channel's timeout; then aborts the
/// communicator, which NCCL cannot otherwise get out of the wait.
te_status waitFor(Channel &channel, void *stream, const char *what) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::duration_cast<std::chrono::nanoseconds>(
                      std::chrono::duration<double>(channel.timeout));
  for (;;) {
    int done = channel.gpu.query(channel.gpu.owner, stream);
    if (done > 0)
      return TE_OK;
    if (done < 0)
      return failWith(std::string(what) + " over group '" + channel.group +
                          "': the stream failed",
                      TE_ERROR_KERNEL_FAILED);
    if (std::chrono::steady_clock::now() > deadline)
      break;
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
  getLibrary().ncclCommAbort(channel.comm);
  channel.comm = nullptr;
  channel.broken = "a collective timed out";
  return failWith(
      std::string(what) + " over group '" + channel.group + "': rank " +
          std::to_string(channel.rank) + " of the group waited " +
          formatSeconds(channel.timeout) +
          " s (TE_COLLECTIVE_TIMEOUT) for the group's other " +
          std::to_string(channel.size - 1) +
          " ranks, and not all of them arrived: one died, hangs, or "
          "runs another program; the group's communicator is "
          "aborted",
      TE_ERROR_KERNEL_FAILED);
}

/// Gathers every rank's signature (a few hundred bytes) and compares them
/// on the host: one collective, which also names each rank's signature
/// when they differ.
te_status checkAgreement(Channel &channel, const te_collective_desc &desc,
                         void *stream) {
  if (channel.size == 1)
    return TE_OK;
  const char *what = opName(desc.kind);
  Signature mine = makeSignature(desc);
  char *signatures = static_cast<char *>(channel.signatures);
  if (te_status failed = channel.gpu.write(channel.gpu.owner, signatures, &mine,
                                           sizeof(Signature)))
    return failed;
  size_t gathered = sizeof(Signature) * channel.size;
  if (te_status failed =
          checkResult(channel,
                      getLibrary().ncclAllGather(
                          signatures, signatures + sizeof(Signature),
                          sizeof(Signature), kUint8, channel.comm, stream),
                      what))
    return failed;
  if (te_status failed = waitFor(channel, stream, what))
    return failed;
  std::vector<Signature> all(channel.size);
  if (te_status failed =
          channel.gpu.read(channel.gpu.owner, all.data(),
                           signatures + sizeof(Signature), gathered))
    return failed;
  uint64_t hash = hashSignature(mine);
  for (const Signature &other : all)
    if (hashSignature(other) != hash)
      return failWith(describeDisagreement(all.data(), channel.size,
                                           channel.rank, what, channel.group),
                      TE_ERROR_SHAPE_MISMATCH);
  return TE_OK;
}

/// [outer][parts*m][inner] <-> [parts][outer][m][inner] with one 2-D copy
/// per part (`run` bytes per row of a part).
te_status copyParts(Channel &channel, char *target, const char *source,
                    size_t outer, size_t parts, size_t run, bool pack,
                    void *stream) {
  for (size_t j = 0; j < parts; ++j) {
    char *dst = pack ? target + j * outer * run : target + j * run;
    const char *src = pack ? source + j * run : source + j * outer * run;
    if (te_status failed = channel.gpu.copy2D(
            channel.gpu.owner, dst, pack ? run : parts * run, src,
            pack ? parts * run : run, run, outer, stream))
      return failed;
  }
  return TE_OK;
}

int ncclOp(te_reduce_kind kind) {
  return kind == TE_REDUCE_MAX   ? kMax
         : kind == TE_REDUCE_MIN ? kMin
         : kind == TE_REDUCE_AVG ? kAvg
                                 : kSum;
}

} // namespace

World nccl::findWorld() {
  World world;
  std::string error;
  if (readInteger("TE_WORLD_SIZE", 1, TE_MAX_WORLD_SIZE, world.size, error)) {
    if (!readInteger("TE_RANK", 0, world.size - 1, world.rank, error) &&
        error.empty())
      error = "TE_WORLD_SIZE is set but TE_RANK is not";
  } else if (error.empty() &&
             (readInteger("OMPI_COMM_WORLD_SIZE", 1, TE_MAX_WORLD_SIZE,
                          world.size, error) ||
              readInteger("PMI_SIZE", 1, TE_MAX_WORLD_SIZE, world.size,
                          error))) {
    world.mpi = true;
    if (!readInteger("OMPI_COMM_WORLD_RANK", 0, world.size - 1, world.rank,
                     error) &&
        !readInteger("PMI_RANK", 0, world.size - 1, world.rank, error) &&
        error.empty())
      error = "mpirun gave the job's size but not this process's rank";
  }
  world.error = error;
  return world;
}

int nccl::reductionType(te_dtype dtype, te_reduce_kind reduce, int version,
                        std::string &why) {
  switch (dtype) {
  case TE_DTYPE_F32:
    return kFloat32;
  case TE_DTYPE_F64:
    return kFloat64;
  case TE_DTYPE_F16:
    return kFloat16;
  case TE_DTYPE_BF16:
    return kBfloat16;
  case TE_DTYPE_F8E4M3FN:
  case TE_DTYPE_F8E5M2:
    if (version < kFP8Version) {
      why = "NCCL " + std::to_string(version) +
            " cannot reduce FP8 values (NCCL 2.24 can, on sm_90 and later)";
      return -1;
    }
    return dtype == TE_DTYPE_F8E4M3FN ? kFloat8e4m3 : kFloat8e5m2;
  case TE_DTYPE_I8:
    return kInt8;
  case TE_DTYPE_I32:
    return kInt32;
  case TE_DTYPE_I64:
    return kInt64;
  case TE_DTYPE_I1:
    // 0/1 bytes: max is or, min is and; a sum modulo 2 NCCL has not.
    if (reduce == TE_REDUCE_MAX || reduce == TE_REDUCE_MIN)
      return kUint8;
    why = "NCCL cannot sum i1 values modulo 2; reduce them with max (or) "
          "or min (and), or sum them as i8";
    return -1;
  default:
    why = std::string(te_dtype_name(dtype) ? te_dtype_name(dtype) : "?") +
          " values cannot be reduced";
    return -1;
  }
}

namespace {

/// Why a rank ends itself when a communicator is not made in time.
std::string describeCreationTimeout(const std::string &what, int rank, int size,
                                    double seconds) {
  return "creating " + what + ": rank " + std::to_string(rank) + " of " +
         std::to_string(size) + " waited " + formatSeconds(seconds) +
         " s (TE_COLLECTIVE_TIMEOUT) for the other ranks, and not all of "
         "them arrived: one died, hangs, or runs another program; ending "
         "this rank (exit status 2)";
}

} // namespace

te_status nccl::createChannel(const Gpu &gpu, const te_channel_spec *spec,
                              void **out) {
  const Library &nccl = getLibrary();
  if (!nccl.unavailable.empty())
    return failWith(nccl.unavailable, TE_ERROR_UNSUPPORTED);
  double timeout = spec->timeout_seconds > 0 ? spec->timeout_seconds : 300;
  WorldComm &worldComm = getWorldComm();
  std::lock_guard<std::mutex> lock(worldComm.mutex);
  if (!worldComm.comm) {
    World world = findWorld();
    if (!world.error.empty())
      return failWith(world.error, TE_ERROR_INVALID_ARGUMENT);
    UniqueId id = {};
    if (world.rank == 0)
      if (Result result = nccl.ncclGetUniqueId(&id))
        return failWith("ncclGetUniqueId failed: " + nccl.describe(result),
                        TE_ERROR_KERNEL_FAILED);
    if (world.size > 1 && world.mpi) {
      const MPILibrary *mpi = requireMPILibrary();
      if (!mpi)
        return TE_ERROR_UNSUPPORTED;
      char error[1024] = "";
      if (te_status failed =
              mpi->broadcast(&id, sizeof(id), 0, error, sizeof(error)))
        return failWith(error, failed);
    } else if (world.size > 1) {
      std::string error = rendezvous(world, id, timeout);
      if (!error.empty())
        return failWith(error, TE_ERROR_KERNEL_FAILED);
    }
    Result result;
    {
      // Every rank of the job must come; NCCL waits for them unbounded.
      ExitDeadline deadline(
          timeout, describeCreationTimeout("the job's NCCL communicator",
                                           world.rank, world.size, timeout));
      result =
          nccl.ncclCommInitRank(&worldComm.comm, world.size, id, world.rank);
    }
    if (result)
      return failWith("ncclCommInitRank failed: " + nccl.describe(result),
                      TE_ERROR_KERNEL_FAILED);
    worldComm.world = world;
  }
  const World &world = worldComm.world;
  const char *group = spec->group ? spec->group : "?";
  int position = 0;
  std::string misfit = placeInGroups(*spec, world.rank, world.size, position);
  if (!misfit.empty())
    return failWith(misfit, TE_ERROR_INVALID_ARGUMENT);
  auto channel = std::make_unique<Channel>();
  channel->group = group;
  channel->size = spec->size;
  channel->rank = position % spec->size;
  channel->timeout = timeout;
  channel->gpu = gpu;
  Result split;
  {
    // A split, too, waits for every rank of the world.
    ExitDeadline deadline(
        channel->timeout,
        describeCreationTimeout("the NCCL communicator of group '" +
                                    channel->group + "'",
                                world.rank, world.size, channel->timeout));
    split = nccl.ncclCommSplit(worldComm.comm, position / spec->size,
                               position % spec->size, &channel->comm, nullptr);
  }
  if (Result result = split)
    return failWith("ncclCommSplit for group '" + channel->group +
                        "' failed: " + nccl.describe(result),
                    TE_ERROR_KERNEL_FAILED);
  // After the split, which every rank must reach: a rank short of memory
  // here fails alone, instead of leaving the others in the split.
  if (te_status failed =
          gpu.allocate(gpu.owner, sizeof(Signature) * (spec->size + 1),
                       &channel->signatures)) {
    nccl.ncclCommAbort(channel->comm);
    return failed;
  }
  *out = channel.release();
  return TE_OK;
}

void nccl::destroyChannel(void *opaque) {
  auto *channel = static_cast<Channel *>(opaque);
  // A failed communicator may have work that never completes: abort it.
  if (channel->comm && channel->broken.empty())
    getLibrary().ncclCommDestroy(channel->comm);
  else if (channel->comm)
    getLibrary().ncclCommAbort(channel->comm);
  for (void *pointer : channel->scratch)
    if (pointer)
      channel->gpu.free(channel->gpu.owner, pointer);
  if (channel->signatures)
    channel->gpu.free(channel->gpu.owner, channel->signatures);
  delete channel;
}

te_status nccl::runCollective(void *opaque, const te_collective_desc *desc,
                              const void *input, void *output, void *stream) {
  auto &channel = *static_cast<Channel *>(opaque);
  const Library &nccl = getLibrary();
  const char *what = opName(desc->kind);
  std::lock_guard<std::mutex> lock(channel.mutex);
  if (channel.used && channel.lastStream != stream && channel.comm)
    if (te_status failed = waitFor(channel, channel.lastStream, what))
      return failed;
  channel.used = true;
  channel.lastStream = stream;
  if (!channel.broken.empty())
    return failWith(std::string(what) + " over group '" + channel.group +
                        "': the group failed before (" + channel.broken +
                        ") and cannot run collectives any more",
                    TE_ERROR_KERNEL_FAILED);
  if (te_status failed = checkAgreement(channel, *desc, stream))
    return failed;
  size_t element = te_dtype_size(desc->dtype);
  size_t count = 1;
  for (int d = 0; d < desc->rank; ++d)
    count *= static_cast<size_t>(desc->dims[d]);
  size_t bytes = count * element;
  size_t n = static_cast<size_t>(channel.size);
  const char *in = static_cast<const char *>(input);
  char *out = static_cast<char *>(output);
  Comm comm = channel.comm;
  std::string why;
  switch (desc->kind) {
  case TE_COLLECTIVE_ALL_REDUCE: {
    int type = reductionType(desc->dtype, desc->reduce, nccl.version, why);
    if (type < 0)
      return failWith(std::string(what) + ": " + why, TE_ERROR_UNSUPPORTED);
    return checkResult(channel,
                       nccl.ncclAllReduce(input, output, count, type,
                                          ncclOp(desc->reduce), comm, stream),
                       what);
  }
  case TE_COLLECTIVE_REDUCE_SCATTER: {
    int type = reductionType(desc->dtype, desc->reduce, nccl.version, why);
    if (type < 0)
      return failWith(std::string(what) + ": " + why, TE_ERROR_UNSUPPORTED);
    Around view = around(desc->dims, desc->rank, desc->dim);
    const void *source = input;
    if (view.outer > 1) {
      void *packed = nullptr;
      if (te_status failed = scratch(channel, 0, bytes, &packed))
        return failed;
      if (te_status failed =
              copyParts(channel, static_cast<char *>(packed), in, view.outer, n,
                        view.dim / n * view.inner * element, true, stream))
        return failed;
      source = packed;
    }
    return checkResult(channel,
                       nccl.ncclReduceScatter(source, output, count / n, type,
                                              ncclOp(desc->reduce), comm,
                                              stream),
                       what);
  }
  case TE_COLLECTIVE_ALL_GATHER: {
    Around view = around(desc->dims, desc->rank, desc->dim);
    if (view.outer == 1)
      return checkResult(
          channel,
          nccl.ncclAllGather(input, output, bytes, kUint8, comm, stream), what);
    void *gathered = nullptr;
    if (te_status failed = scratch(channel, 1, bytes * n, &gathered))
      return failed;
    if (te_status failed = checkResult(
            channel,
            nccl.ncclAllGather(input, gathered, bytes, kUint8, comm, stream),
            what))
      return failed;
    return copyParts(channel, out, static_cast<const char *>(gathered),
                     view.outer, n, view.dim * view.inner * element, false,
                     stream);
  }
  case TE_COLLECTIVE_ALL_TO_ALL: {
    Around split = around(desc->dims, desc->rank, desc->dim);
    const char *source = in;
    if (split.outer > 1) {
      void *packed = nullptr;
      if (te_status failed = scratch(channel, 0, bytes, &packed))
        return failed;
      if (te_status failed =
              copyParts(channel, static_cast<char *>(packed), in, split.outer,
                        n, split.dim / n * split.inner * element, true, stream))
        return failed;
      source = static_cast<const char *>(packed);
    }
    int64_t part[TE_MAX_RANK];
    std::copy(desc->dims, desc->dims + desc->rank, part);
    part[desc->dim] /= static_cast<int64_t>(n);
    Around concat = around(part, desc->rank, desc->concat_dim);
    char *target = out;
    if (concat.outer > 1) {
      void *received = nullptr;
      if (te_status failed = scratch(channel, 1, bytes, &received))
        return failed;
      target = static_cast<char *>(received);
    }
    size_t partBytes = bytes / n;
    nccl.ncclGroupStart();
    Result result = kSuccess;
    for (size_t j = 0; j < n && result == kSuccess; ++j) {
      result = nccl.ncclSend(source + j * partBytes, partBytes, kUint8,
                             static_cast<int>(j), comm, stream);
      if (result == kSuccess)
        result = nccl.ncclRecv(target + j * partBytes, partBytes, kUint8,
                               static_cast<int>(j), comm, stream);
    }
    Result ended = nccl.ncclGroupEnd();
    if (te_status failed = checkResult(channel, result ? result : ended, what))
      return failed;
    if (concat.outer == 1)
      return TE_OK;
    return copyParts(channel, out, target, concat.outer, n,
                     concat.dim * concat.inner * element, false, stream);
  }
  case TE_COLLECTIVE_PERMUTE: {
    int to, from;
    permutePeers(*desc, channel.rank, channel.size, to, from);
    if (from < 0)
      if (te_status failed =
              channel.gpu.zero(channel.gpu.owner, output, bytes, stream))
        return failed;
    nccl.ncclGroupStart();
    Result result = kSuccess;
    if (to >= 0)
      result = nccl.ncclSend(input, bytes, kUint8, to, comm, stream);
    if (from >= 0 && result == kSuccess)
      result = nccl.ncclRecv(output, bytes, kUint8, from, comm, stream);
    Result ended = nccl.ncclGroupEnd();
    return checkResult(channel, result ? result : ended, what);
  }
  }
  return failWith("unknown collective", TE_ERROR_INVALID_ARGUMENT);
}
