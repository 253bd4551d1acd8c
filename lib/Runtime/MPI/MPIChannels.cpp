//===- MPIChannels.cpp - The cpu device's collectives on MPI --------------===//
//
// Each channel is an MPI communicator split from MPI_COMM_WORLD. Every
// collective first checks, with one small all-reduce, that every rank of
// the group runs the same collective on the same dtype and shapes (MPI
// would garble data whose sizes disagree), then runs MPI's collective. A
// watchdog thread ends the rank when a call waits longer than the
// channel's timeout, since MPI's calls cannot be cancelled. (Non-blocking
// calls polled against a deadline could return an error instead, but
// their algorithms are slower, and a pending one slows the next large
// collective by 10 to 15%.) Layouts MPI does not produce directly
// (gathering along an inner dimension, all_to_all's split and
// concatenation) are packed into or out of a contiguous scratch buffer;
// sums of the narrow float types (bf16, f16, FP8), of i8 and of i1 use MPI
// reduction ops of their own.
//
//===----------------------------------------------------------------------===//

#include "MPIChannels.h"

#include "../CollectiveCommon.h"
#include "../ExitDeadline.h"

#include "te/Support/DType.h"
#include "te/Support/FloatConversion.h"

#include <mpi.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <climits>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

/// MPI calls are serialized: the library may not give MPI_THREAD_MULTIPLE,
/// and channel creation must be in the same order on every rank.
std::mutex &mpiMutex() {
  static std::mutex mutex;
  return mutex;
}

struct Channel {
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0;
  int size = 1;
  std::string group;
  double timeout = 300;
  /// Why an MPI call on the channel failed: the group's state is unknown.
  std::string broken;
  std::vector<char> scratch[2];
};

struct World {
  bool started = false;
  /// Whether MPI was initialized here (and is finalized at exit).
  bool owned = false;
  /// Whether an MPI call failed: finalizing could wait forever.
  bool broken = false;
  int rank = 0;
  int size = 1;
  std::vector<Channel *> channels;
};

World &getWorld() {
  static World world;
  return world;
}

void report(char *error, size_t errorSize, const char *format, ...)
    __attribute__((format(printf, 3, 4)));

void report(char *error, size_t errorSize, const char *format, ...) {
  if (!error || !errorSize)
    return;
  va_list args;
  va_start(args, format);
  std::vsnprintf(error, errorSize, format, args);
  va_end(args);
}

std::string mpiErrorString(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  if (MPI_Error_string(code, text, &length) != MPI_SUCCESS)
    return "MPI error " + std::to_string(code);
  return std::string(text, length);
}

/// Ends the process when a collective waits longer than its channel's
/// timeout for the group's other ranks. MPI's calls block until every rank
/// arrives and cannot be cancelled, so a thread watches the one call in
/// flight (calls are serialized): a rank that never comes would otherwise
/// keep every other rank waiting forever. Ending the rank (exit status 2)
/// makes mpirun end the job. Arming costs three atomic stores and wakes
/// nothing: the thread looks every 100 ms.
struct Watchdog {
  /// steady_clock nanoseconds; 0 while no call is in flight.
  std::atomic<int64_t> deadline{0};
  std::atomic<const char *> what{nullptr};
  std::atomic<const Channel *> channel{nullptr};
};

Watchdog &getWatchdog() {
  // Never destroyed: the thread may look at it while the process exits.
  static Watchdog *watchdog = new Watchdog;
  return *watchdog;
}

int64_t nowNanoseconds() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void startWatchdog() {
  std::thread([] {
    Watchdog &watchdog = getWatchdog();
    for (;;) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      int64_t deadline = watchdog.deadline.load();
      if (!deadline || nowNanoseconds() < deadline)
        continue;
      const char *what = watchdog.what.load();
      const Channel *channel = watchdog.channel.load();
      if (watchdog.deadline.load() != deadline || !what || !channel)
        continue;
      std::fprintf(stderr,
                   "te-mlir: error: %s over group '%s': rank %d of the group "
                   "waited %g s (TE_COLLECTIVE_TIMEOUT) for the group's "
                   "other %d ranks, and not all of them arrived: one died, "
                   "hangs, or runs another program; ending this rank (exit "
                   "status 2)\n",
                   what, channel->group.c_str(), channel->rank,
                   channel->timeout, channel->size - 1);
      std::fflush(nullptr);
      std::_Exit(2);
    }
  }).detach();
}

/// Watches the blocking MPI calls made while it lives.
class Watched {
public:
  Watched(const Channel &channel, const char *what) {
    Watchdog &watchdog = getWatchdog();
    watchdog.what = what;
    watchdog.channel = &channel;
    watchdog.deadline =
        nowNanoseconds() + static_cast<int64_t>(channel.timeout * 1e9);
  }
  ~Watched() { getWatchdog().deadline = 0; }
};

/// Turns an MPI error code into a failure of the channel.
te_status checkCode(Channel &channel, int code, const char *what, char *error,
                    size_t errorSize) {
  if (code == MPI_SUCCESS)
    return TE_OK;
  channel.broken = mpiErrorString(code);
  getWorld().broken = true;
  report(error, errorSize, "%s over group '%s' failed in MPI: %s", what,
         channel.group.c_str(), channel.broken.c_str());
  return TE_ERROR_KERNEL_FAILED;
}

/// At exit: the communicators, then MPI itself, if it was started here. A
/// rank whose MPI call failed aborts the job instead: finalizing could wait
/// for ranks in an unknown state.
void finishMPI() {
  std::lock_guard<std::mutex> lock(mpiMutex());
  World &world = getWorld();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized)
    return;
  if (world.broken) {
    std::fflush(nullptr);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  for (Channel *channel : world.channels)
    if (channel->comm != MPI_COMM_NULL)
      MPI_Comm_free(&channel->comm);
  if (world.owned)
    MPI_Finalize();
}

/// The launcher's name for this rank and the job's size, read before MPI
/// starts (Open MPI's, then MPICH's and Slurm's; PMIx gives no size).
std::string describeLaunchedRank() {
  const char *rank = nullptr, *size = nullptr;
  for (auto [rankName, sizeName] :
       {std::pair{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
        std::pair{"PMI_RANK", "PMI_SIZE"}, std::pair{"PMIX_RANK", ""}}) {
    rank = std::getenv(rankName);
    size = *sizeName ? std::getenv(sizeName) : nullptr;
    if (rank)
      break;
  }
  std::string text = "rank " + std::string(rank ? rank : "?");
  return size ? text + " of " + size : text;
}

/// Why MPI_Init did not return within `seconds`: it waits until every rank
/// of the job has started MPI, and a rank that exited without a collective
/// (a program without any, or one that failed before its first) never does.
std::string describeInitTimeout(double seconds) {
  char waited[32];
  std::snprintf(waited, sizeof(waited), "%g", seconds);
  return "starting MPI: " + describeLaunchedRank() + " waited " + waited +
         " s (TE_COLLECTIVE_TIMEOUT) for the job's other ranks to start MPI, "
         "and not all of them joined: a rank likely exited before its first "
         "collective (it ran a program without collectives, or failed "
         "first), or hangs; run a program with the same collectives on "
         "every rank of the job, or raise TE_COLLECTIVE_TIMEOUT when ranks "
         "start far apart; ending this rank (exit status 2)";
}

te_status startMPI(char *error, size_t errorSize) {
  World &world = getWorld();
  if (world.started)
    return TE_OK;
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int code;
    {
      // MPI_Init waits for every rank of the job (Open MPI's PMIx fence)
      // and cannot be abandoned: bounded like the collectives' waits.
      double seconds = te_collective_timeout();
      te::runtime::ExitDeadline deadline(seconds, describeInitTimeout(seconds));
      code =
          MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided);
    }
    if (code != MPI_SUCCESS) {
      report(error, errorSize, "MPI_Init_thread failed: %s",
             mpiErrorString(code).c_str());
      return TE_ERROR_UNSUPPORTED;
    }
    world.owned = true;
    std::atexit(finishMPI);
  }
  // Launches may come from any thread (one at a time: mpiMutex).
  int level = MPI_THREAD_SINGLE;
  MPI_Query_thread(&level);
  if (level < MPI_THREAD_SERIALIZED) {
    report(error, errorSize,
           "MPI runs at thread level %d, below MPI_THREAD_SERIALIZED, which "
           "collectives called from any thread need; initialize MPI with "
           "MPI_Init_thread(MPI_THREAD_SERIALIZED) or higher, or let "
           "te-mlir initialize it",
           level);
    return TE_ERROR_UNSUPPORTED;
  }
  startWatchdog();
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  world.started = true;
  return TE_OK;
}

using te::runtime::around;
using te::runtime::Around;
using te::runtime::describeDisagreement;
using te::runtime::hashSignature;
using te::runtime::makeSignature;
using te::runtime::opName;
using te::runtime::permutePeers;
using te::runtime::placeInGroups;
using te::runtime::Signature;

/// Checks that every rank of the channel runs `desc`; on disagreement,
/// fails on every rank with each rank's signature.
te_status checkAgreement(Channel &channel, const te_collective_desc &desc,
                         char *error, size_t errorSize) {
  if (channel.size == 1)
    return TE_OK;
  Signature mine = makeSignature(desc);
  uint64_t hash = hashSignature(mine);
  // Equal everywhere iff max(h) == h and max(~h) == ~h on every rank.
  uint64_t local[2] = {hash, ~hash}, maxima[2];
  const char *what = opName(desc.kind);
  if (te_status failed = checkCode(
          channel,
          MPI_Allreduce(local, maxima, 2, MPI_UINT64_T, MPI_MAX, channel.comm),
          what, error, errorSize))
    return failed;
  if (maxima[0] == local[0] && maxima[1] == local[1])
    return TE_OK;
  std::vector<Signature> all(channel.size);
  if (te_status failed = checkCode(
          channel,
          MPI_Allgather(&mine, sizeof(Signature), MPI_BYTE, all.data(),
                        sizeof(Signature), MPI_BYTE, channel.comm),
          what, error, errorSize))
    return failed;
  report(error, errorSize, "%s",
         describeDisagreement(all.data(), channel.size, channel.rank, what,
                              channel.group)
             .c_str());
  return TE_ERROR_SHAPE_MISMATCH;
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

te::support::DType toSupport(te_dtype dtype) {
  switch (dtype) {
  case TE_DTYPE_F16:
    return te::support::DType::F16;
  case TE_DTYPE_BF16:
    return te::support::DType::BF16;
  case TE_DTYPE_F8E4M3FN:
    return te::support::DType::F8E4M3FN;
  default:
    return te::support::DType::F8E5M2;
  }
}

template <typename Bits, te_dtype Type> float widen(Bits bits) {
  if constexpr (Type == TE_DTYPE_BF16) {
    uint32_t word = static_cast<uint32_t>(bits) << 16;
    float value;
    std::memcpy(&value, &word, 4);
    return value;
  } else {
    return te::support::floatBitsToF32(bits, toSupport(Type));
  }
}

template <typename Bits, te_dtype Type> Bits narrow(float value) {
  return static_cast<Bits>(
      te::support::roundToFloatBits(value, toSupport(Type)));
}

float combine(float a, float b, te_reduce_kind kind) {
  switch (kind) {
  case TE_REDUCE_MAX:
    return a != a ? a : std::max(a, b);
  case TE_REDUCE_MIN:
    return a != a ? a : std::min(a, b);
  default:
    return a + b;
  }
}

/// MPI_User_function for a narrow float type and reduction: each pair is
/// combined in f32 and rounded back, as a GPU library reduces bf16.
template <typename Bits, te_dtype Type, te_reduce_kind Kind>
void reduceNarrow(void *in, void *inout, int *length, MPI_Datatype *) {
  const Bits *a = static_cast<const Bits *>(in);
  Bits *b = static_cast<Bits *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = narrow<Bits, Type>(
        combine(widen<Bits, Type>(a[i]), widen<Bits, Type>(b[i]), Kind));
}

/// i8 sums wrap around, as integer arithmetic does in te kernels (Open
/// MPI's AVX reduction of MPI_INT8_T saturates instead).
void sumWrapping(void *in, void *inout, int *length, MPI_Datatype *) {
  const uint8_t *a = static_cast<const uint8_t *>(in);
  uint8_t *b = static_cast<uint8_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = static_cast<uint8_t>(a[i] + b[i]);
}

/// i1 (one byte, 0 or 1): sum modulo 2, max as or, min as and, as MLIR's
/// i1 arithmetic has them.
template <te_reduce_kind Kind>
void reduceBool(void *in, void *inout, int *length, MPI_Datatype *) {
  const uint8_t *a = static_cast<const uint8_t *>(in);
  uint8_t *b = static_cast<uint8_t *>(inout);
  for (int i = 0; i < *length; ++i)
    b[i] = Kind == TE_REDUCE_MAX   ? (a[i] | b[i])
           : Kind == TE_REDUCE_MIN ? (a[i] & b[i])
                                   : ((a[i] + b[i]) & 1);
}

template <typename Bits, te_dtype Type>
MPI_User_function *narrowFunction(te_reduce_kind kind) {
  switch (kind) {
  case TE_REDUCE_MAX:
    return reduceNarrow<Bits, Type, TE_REDUCE_MAX>;
  case TE_REDUCE_MIN:
    return reduceNarrow<Bits, Type, TE_REDUCE_MIN>;
  default:
    return reduceNarrow<Bits, Type, TE_REDUCE_SUM>;
  }
}

MPI_User_function *userFunction(te_dtype dtype, te_reduce_kind kind) {
  switch (dtype) {
  case TE_DTYPE_BF16:
    return narrowFunction<uint16_t, TE_DTYPE_BF16>(kind);
  case TE_DTYPE_F16:
    return narrowFunction<uint16_t, TE_DTYPE_F16>(kind);
  case TE_DTYPE_F8E4M3FN:
    return narrowFunction<uint8_t, TE_DTYPE_F8E4M3FN>(kind);
  case TE_DTYPE_F8E5M2:
    return narrowFunction<uint8_t, TE_DTYPE_F8E5M2>(kind);
  case TE_DTYPE_I8:
    return sumWrapping;
  case TE_DTYPE_I1:
    return kind == TE_REDUCE_MAX   ? reduceBool<TE_REDUCE_MAX>
           : kind == TE_REDUCE_MIN ? reduceBool<TE_REDUCE_MIN>
                                   : reduceBool<TE_REDUCE_SUM>;
  default:
    return nullptr;
  }
}

/// The MPI datatype and op of a reduction. Ops of narrow types are created
/// once and kept (they are few).
struct Reduction {
  MPI_Datatype type;
  MPI_Op op;
};

Reduction getReduction(te_dtype dtype, te_reduce_kind kind) {
  te_reduce_kind combineKind = kind == TE_REDUCE_AVG ? TE_REDUCE_SUM : kind;
  MPI_Op builtin = combineKind == TE_REDUCE_MAX   ? MPI_MAX
                   : combineKind == TE_REDUCE_MIN ? MPI_MIN
                                                  : MPI_SUM;
  switch (dtype) {
  case TE_DTYPE_F32:
    return {MPI_FLOAT, builtin};
  case TE_DTYPE_F64:
    return {MPI_DOUBLE, builtin};
  case TE_DTYPE_I8:
    if (combineKind != TE_REDUCE_SUM)
      return {MPI_INT8_T, builtin};
    break;
  case TE_DTYPE_I32:
    return {MPI_INT32_T, builtin};
  case TE_DTYPE_I64:
    return {MPI_INT64_T, builtin};
  default:
    break;
  }
  static MPI_Op ops[16][3];
  static bool made[16][3];
  int d = static_cast<int>(dtype), k = static_cast<int>(combineKind);
  if (!made[d][k]) {
    MPI_Op_create(userFunction(dtype, combineKind), /*commute=*/1, &ops[d][k]);
    made[d][k] = true;
  }
  return {te_dtype_size(dtype) == 2 ? MPI_UINT16_T : MPI_UINT8_T, ops[d][k]};
}

/// Divides the `count` elements at `data` by `size` (reduce avg).
void divide(void *data, size_t count, te_dtype dtype, int size) {
  switch (dtype) {
  case TE_DTYPE_F32:
    for (size_t i = 0; i < count; ++i)
      static_cast<float *>(data)[i] /= static_cast<float>(size);
    return;
  case TE_DTYPE_F64:
    for (size_t i = 0; i < count; ++i)
      static_cast<double *>(data)[i] /= size;
    return;
  case TE_DTYPE_BF16:
  case TE_DTYPE_F16: {
    auto *bits = static_cast<uint16_t *>(data);
    te::support::DType type = toSupport(dtype);
    for (size_t i = 0; i < count; ++i)
      bits[i] = static_cast<uint16_t>(te::support::roundToFloatBits(
          te::support::floatBitsToF32(bits[i], type) / size, type));
    return;
  }
  default: {
    auto *bits = static_cast<uint8_t *>(data);
    te::support::DType type = toSupport(dtype);
    for (size_t i = 0; i < count; ++i)
      bits[i] = static_cast<uint8_t>(te::support::roundToFloatBits(
          te::support::floatBitsToF32(bits[i], type) / size, type));
    return;
  }
  }
}

//===----------------------------------------------------------------------===//
// Layouts
//===----------------------------------------------------------------------===//

/// [outer][n*m][inner] -> [n][outer][m][inner]: part j of each outer row
/// goes to block j (what MPI sends to rank j).
void pack(const char *source, char *target, const Around &view, size_t parts,
          size_t element) {
  size_t run = view.dim / parts * view.inner * element;
  for (size_t j = 0; j < parts; ++j)
    for (size_t o = 0; o < view.outer; ++o)
      std::memcpy(target + (j * view.outer + o) * run,
                  source + (o * parts + j) * run, run);
}

/// [n][outer][m][inner] -> [outer][n*m][inner]: the inverse of pack, block
/// j (what came from rank j) becoming part j along the dimension.
void unpack(const char *source, char *target, const Around &view, size_t parts,
            size_t element) {
  size_t run = view.dim / parts * view.inner * element;
  for (size_t j = 0; j < parts; ++j)
    for (size_t o = 0; o < view.outer; ++o)
      std::memcpy(target + (o * parts + j) * run,
                  source + (j * view.outer + o) * run, run);
}

char *scratch(Channel &channel, int which, size_t bytes) {
  std::vector<char> &buffer = channel.scratch[which];
  if (buffer.size() < bytes)
    buffer.resize(bytes);
  return buffer.data();
}

//===----------------------------------------------------------------------===//
// The collectives
//===----------------------------------------------------------------------===//

te_status run(Channel &channel, const te_collective_desc &desc,
              const void *input, void *output, char *error, size_t errorSize) {
  const char *what = opName(desc.kind);
  size_t element = te_dtype_size(desc.dtype);
  size_t count = 1;
  for (int d = 0; d < desc.rank; ++d)
    count *= static_cast<size_t>(desc.dims[d]);
  size_t bytes = count * element;
  size_t n = static_cast<size_t>(channel.size);
  if (bytes * n > static_cast<size_t>(INT_MAX)) {
    report(error, errorSize,
           "%s over group '%s': %zu bytes per rank are more than one MPI "
           "call moves (2 GiB for the whole group); split the tensor",
           what, channel.group.c_str(), bytes);
    return TE_ERROR_UNSUPPORTED;
  }
  int intBytes = static_cast<int>(bytes);
  const char *in = static_cast<const char *>(input);
  char *out = static_cast<char *>(output);
  int code = MPI_SUCCESS;
  // After the exchange: the layout of the result, the average's division.
  const char *unpackFrom = nullptr;
  Around unpackView;

  switch (desc.kind) {
  case TE_COLLECTIVE_ALL_REDUCE: {
    Reduction reduction = getReduction(desc.dtype, desc.reduce);
    code = MPI_Allreduce(input, output, static_cast<int>(count), reduction.type,
                         reduction.op, channel.comm);
    break;
  }
  case TE_COLLECTIVE_REDUCE_SCATTER: {
    Around view = around(desc.dims, desc.rank, desc.dim);
    const char *source = in;
    if (view.outer > 1) {
      char *packed = scratch(channel, 0, bytes);
      pack(in, packed, view, n, element);
      source = packed;
    }
    Reduction reduction = getReduction(desc.dtype, desc.reduce);
    code = MPI_Reduce_scatter_block(source, output, static_cast<int>(count / n),
                                    reduction.type, reduction.op, channel.comm);
    break;
  }
  case TE_COLLECTIVE_ALL_GATHER: {
    Around view = around(desc.dims, desc.rank, desc.dim);
    char *target = out;
    if (view.outer > 1) {
      target = scratch(channel, 1, bytes * n);
      unpackFrom = target;
      unpackView = view;
      unpackView.dim *= n;
    }
    code = MPI_Allgather(input, intBytes, MPI_BYTE, target, intBytes, MPI_BYTE,
                         channel.comm);
    break;
  }
  case TE_COLLECTIVE_ALL_TO_ALL: {
    Around split = around(desc.dims, desc.rank, desc.dim);
    const char *source = in;
    if (split.outer > 1) {
      char *packed = scratch(channel, 0, bytes);
      pack(in, packed, split, n, element);
      source = packed;
    }
    // Each received part has the input's shape with split_dim divided; the
    // parts are concatenated along concat_dim.
    int64_t part[TE_MAX_RANK];
    std::copy(desc.dims, desc.dims + desc.rank, part);
    part[desc.dim] /= static_cast<int64_t>(n);
    Around concat = around(part, desc.rank, desc.concat_dim);
    char *target = out;
    if (concat.outer > 1) {
      target = scratch(channel, 1, bytes);
      unpackFrom = target;
      unpackView = concat;
      unpackView.dim *= n;
    }
    int partBytes = intBytes / static_cast<int>(n);
    code = MPI_Alltoall(source, partBytes, MPI_BYTE, target, partBytes,
                        MPI_BYTE, channel.comm);
    break;
  }
  case TE_COLLECTIVE_PERMUTE: {
    int rank = channel.rank, to, from;
    permutePeers(desc, rank, channel.size, to, from);
    if (from < 0)
      std::memset(output, 0, bytes);
    if (to == rank && from == rank) {
      std::memcpy(output, input, bytes);
      return TE_OK;
    }
    constexpr int kTag = 7321;
    code = MPI_Sendrecv(input, intBytes, MPI_BYTE, to < 0 ? MPI_PROC_NULL : to,
                        kTag, output, intBytes, MPI_BYTE,
                        from < 0 ? MPI_PROC_NULL : from, kTag, channel.comm,
                        MPI_STATUS_IGNORE);
    break;
  }
  }
  if (te_status failed = checkCode(channel, code, what, error, errorSize))
    return failed;
  if (unpackFrom)
    unpack(unpackFrom, out, unpackView, n, element);
  if ((desc.kind == TE_COLLECTIVE_ALL_REDUCE ||
       desc.kind == TE_COLLECTIVE_REDUCE_SCATTER) &&
      desc.reduce == TE_REDUCE_AVG)
    divide(output, desc.kind == TE_COLLECTIVE_ALL_REDUCE ? count : count / n,
           desc.dtype, channel.size);
  return TE_OK;
}

} // namespace

extern "C" int te_mpi_channels_version(void) { return TE_MPI_CHANNELS_VERSION; }

extern "C" te_status te_mpi_world(int *rank, int *size, char *error,
                                  size_t errorSize) {
  std::lock_guard<std::mutex> lock(mpiMutex());
  if (te_status failed = startMPI(error, errorSize))
    return failed;
  *rank = getWorld().rank;
  *size = getWorld().size;
  return TE_OK;
}

extern "C" te_status te_mpi_channel_create(const te_channel_spec *spec,
                                           void **out, char *error,
                                           size_t errorSize) {
  std::lock_guard<std::mutex> lock(mpiMutex());
  if (te_status failed = startMPI(error, errorSize))
    return failed;
  World &world = getWorld();
  const char *group = spec->group ? spec->group : "?";
  int position = 0;
  std::string misfit = placeInGroups(*spec, world.rank, world.size, position);
  if (!misfit.empty()) {
    report(error, errorSize, "%s", misfit.c_str());
    return TE_ERROR_INVALID_ARGUMENT;
  }
  auto channel = std::make_unique<Channel>();
  channel->group = group;
  channel->timeout = spec->timeout_seconds > 0 ? spec->timeout_seconds : 300;
  channel->size = spec->size;
  // MPI_Comm_split blocks until every rank of the world calls it.
  Channel worldChannel;
  worldChannel.rank = world.rank;
  worldChannel.size = world.size;
  worldChannel.group = group;
  worldChannel.timeout = channel->timeout;
  int code;
  {
    Watched watched(worldChannel, "creating the communicator");
    code = MPI_Comm_split(MPI_COMM_WORLD, position / spec->size,
                          position % spec->size, &channel->comm);
  }
  if (code != MPI_SUCCESS) {
    report(error, errorSize, "MPI_Comm_split for group '%s' failed: %s", group,
           mpiErrorString(code).c_str());
    return TE_ERROR_KERNEL_FAILED;
  }
  MPI_Comm_set_errhandler(channel->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(channel->comm, &channel->rank);
  world.channels.push_back(channel.get());
  *out = channel.release();
  return TE_OK;
}

extern "C" void te_mpi_channel_destroy(void *opaque) {
  std::lock_guard<std::mutex> lock(mpiMutex());
  auto *channel = static_cast<Channel *>(opaque);
  std::vector<Channel *> &channels = getWorld().channels;
  channels.erase(std::remove(channels.begin(), channels.end(), channel),
                 channels.end());
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && channel->broken.empty() && channel->comm != MPI_COMM_NULL)
    MPI_Comm_free(&channel->comm);
  delete channel;
}

extern "C" te_status te_mpi_collective(void *opaque,
                                       const te_collective_desc *desc,
                                       const void *input, void *output,
                                       char *error, size_t errorSize) {
  std::lock_guard<std::mutex> lock(mpiMutex());
  auto &channel = *static_cast<Channel *>(opaque);
  if (!channel.broken.empty()) {
    report(error, errorSize,
           "%s over group '%s': the group failed before (%s) and cannot run "
           "collectives any more",
           opName(desc->kind), channel.group.c_str(), channel.broken.c_str());
    return TE_ERROR_KERNEL_FAILED;
  }
  Watched watched(channel, opName(desc->kind));
  if (te_status failed = checkAgreement(channel, *desc, error, errorSize))
    return failed;
  return run(channel, *desc, input, output, error, errorSize);
}

extern "C" te_status te_mpi_broadcast(void *data, size_t bytes, int root,
                                      char *error, size_t errorSize) {
  std::lock_guard<std::mutex> lock(mpiMutex());
  if (te_status failed = startMPI(error, errorSize))
    return failed;
  World &world = getWorld();
  Channel worldChannel;
  worldChannel.rank = world.rank;
  worldChannel.size = world.size;
  worldChannel.group = "world";
  worldChannel.timeout = te_collective_timeout();
  Watched watched(worldChannel, "broadcasting the NCCL id");
  return checkCode(
      worldChannel,
      MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD),
      "broadcasting the NCCL id", error, errorSize);
}
