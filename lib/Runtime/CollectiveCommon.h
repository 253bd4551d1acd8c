//===- CollectiveCommon.h - What collective libraries share -----*- C++ -*-===//
//
// What the devices' collective libraries (MPI's in lib/Runtime/MPI, NCCL's
// for the cuda device) share. Before a collective moves data, each checks
// that every rank of the group runs the same one: it compares a hash of
// its signature (the op, reduction, dtype, shape and attributes) and, when
// the hashes differ, gathers the signatures to name every rank's in the
// error. Both place ranks in groups, route permutes and cut tensors into
// parts the same way. Header-only, since libTEMPI and libTERuntime each
// compile it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_COLLECTIVECOMMON_H
#define TE_LIB_RUNTIME_COLLECTIVECOMMON_H

#include "te/Runtime/Collective.h"

#include <cstdint>
#include <string>
#include <vector>

namespace te::runtime {

/// "te.all_reduce", ... for messages.
inline const char *opName(te_collective_kind kind) {
  switch (kind) {
  case TE_COLLECTIVE_ALL_REDUCE:
    return "te.all_reduce";
  case TE_COLLECTIVE_ALL_GATHER:
    return "te.all_gather";
  case TE_COLLECTIVE_REDUCE_SCATTER:
    return "te.reduce_scatter";
  case TE_COLLECTIVE_ALL_TO_ALL:
    return "te.all_to_all";
  case TE_COLLECTIVE_PERMUTE:
    return "te.permute";
  }
  return "a collective";
}

/// What the ranks compare, as fixed-size integers.
struct Signature {
  int64_t kind, reduce, dtype, rank, dim, concatDim, shift, numPairs;
  int64_t dims[TE_MAX_RANK];
  uint64_t pairsHash;
};

inline Signature makeSignature(const te_collective_desc &desc) {
  Signature signature = {};
  signature.kind = desc.kind;
  signature.reduce = desc.reduce;
  signature.dtype = desc.dtype;
  signature.rank = desc.rank;
  signature.dim = desc.dim;
  signature.concatDim = desc.concat_dim;
  signature.shift = desc.pairs ? 0 : desc.shift;
  signature.numPairs = desc.pairs ? desc.num_pairs : -1;
  for (int d = 0; d < desc.rank; ++d)
    signature.dims[d] = desc.dims[d];
  uint64_t hash = 1469598103934665603ull;
  for (int i = 0; desc.pairs && i < 2 * desc.num_pairs; ++i)
    hash = (hash ^ static_cast<uint64_t>(desc.pairs[i])) * 1099511628211ull;
  signature.pairsHash = hash;
  return signature;
}

inline uint64_t hashSignature(const Signature &signature) {
  uint64_t hash = 1469598103934665603ull;
  const auto *bytes = reinterpret_cast<const unsigned char *>(&signature);
  for (size_t i = 0; i < sizeof(Signature); ++i)
    hash = (hash ^ bytes[i]) * 1099511628211ull;
  return hash;
}

/// "f32 4x8 dim 0" (what a rank's signature says, for messages).
inline std::string describe(const Signature &signature) {
  std::string text = te_dtype_name(static_cast<te_dtype>(signature.dtype))
                         ? te_dtype_name(static_cast<te_dtype>(signature.dtype))
                         : "?";
  text += " ";
  if (signature.rank == 0)
    text += "scalar";
  for (int d = 0; d < signature.rank && d < TE_MAX_RANK; ++d)
    text += (d ? "x" : "") + std::to_string(signature.dims[d]);
  switch (static_cast<te_collective_kind>(signature.kind)) {
  case TE_COLLECTIVE_ALL_GATHER:
  case TE_COLLECTIVE_REDUCE_SCATTER:
    text += " dim " + std::to_string(signature.dim);
    break;
  case TE_COLLECTIVE_ALL_TO_ALL:
    text += " split_dim " + std::to_string(signature.dim) + " concat_dim " +
            std::to_string(signature.concatDim);
    break;
  case TE_COLLECTIVE_PERMUTE:
    text += signature.numPairs < 0
                ? " shift " + std::to_string(signature.shift)
                : " with " + std::to_string(signature.numPairs) + " pairs";
    break;
  default:
    break;
  }
  if (signature.kind == TE_COLLECTIVE_ALL_REDUCE ||
      signature.kind == TE_COLLECTIVE_REDUCE_SCATTER) {
    static const char *const reduces[] = {"sum", "max", "min", "avg"};
    if (signature.reduce >= 0 && signature.reduce < 4)
      text += std::string(" reduce ") + reduces[signature.reduce];
  }
  return std::string(opName(static_cast<te_collective_kind>(signature.kind))) +
         " on " + text;
}

/// The error of a group whose ranks disagree: every rank's signature.
inline std::string describeDisagreement(const Signature *all, int size, int me,
                                        const char *what,
                                        const std::string &group) {
  std::string ranks;
  for (int r = 0; r < size; ++r)
    ranks += (r ? "; rank " : "rank ") + std::to_string(r) +
             (r == me ? " (this one)" : "") + ": " + describe(all[r]);
  return std::string(what) + " over group '" + group +
         "': the group's ranks disagree on what they run (" + ranks +
         "); every rank must run the same collective on the same shapes "
         "and dtype";
}

/// Where `worldRank` sits among the groups of `spec` in a world of
/// `worldSize` ranks: its position in the group-major list (its group is
/// position / size, its rank in the group position % size). "" on success,
/// else why the groups do not fit the world.
inline std::string placeInGroups(const te_channel_spec &spec, int worldRank,
                                 int worldSize, int &position) {
  std::string group = spec.group ? spec.group : "?";
  if (spec.size <= 0 || worldSize % spec.size != 0)
    return "process group '" + group + "' has " + std::to_string(spec.size) +
           " ranks, which do not divide the world's " +
           std::to_string(worldSize) + " (mpirun -np " +
           std::to_string(worldSize) + "); start the job with a multiple of " +
           std::to_string(spec.size) + " processes";
  position = worldRank;
  if (!spec.ranks)
    return "";
  std::vector<char> seen(worldSize, 0);
  bool valid = spec.num_ranks == worldSize;
  position = -1;
  for (int i = 0; valid && i < spec.num_ranks; ++i) {
    int rank = spec.ranks[i];
    valid = rank >= 0 && rank < worldSize && !seen[rank]++;
    if (valid && rank == worldRank)
      position = i;
  }
  if (valid && position >= 0)
    return "";
  return "process group '" + group + "' lists " +
         std::to_string(spec.num_ranks) + " ranks, but the world has " +
         std::to_string(worldSize) + ": its rank list must hold every rank " +
         "from 0 to " + std::to_string(worldSize - 1) + " once";
}

/// The group ranks a permute on rank `rank` of `size` sends to and
/// receives from (-1: none; a rank no pair targets receives zeros).
inline void permutePeers(const te_collective_desc &desc, int rank, int size,
                         int &to, int &from) {
  to = from = -1;
  if (desc.pairs) {
    for (int p = 0; p < desc.num_pairs; ++p) {
      if (desc.pairs[2 * p] == rank)
        to = static_cast<int>(desc.pairs[2 * p + 1]);
      if (desc.pairs[2 * p + 1] == rank)
        from = static_cast<int>(desc.pairs[2 * p]);
    }
    return;
  }
  int64_t shift = ((desc.shift % size) + size) % size;
  to = static_cast<int>((rank + shift) % size);
  from = static_cast<int>((rank - shift + size) % size);
}

/// A shape seen around one dimension: [outer][dim][inner] elements (how
/// the gathers, scatters and all_to_all cut a tensor into parts).
struct Around {
  size_t outer = 1, dim = 1, inner = 1;
};

inline Around around(const int64_t *dims, int rank, int dim) {
  Around view;
  for (int d = 0; d < rank; ++d) {
    size_t size = static_cast<size_t>(dims[d]);
    if (d < dim)
      view.outer *= size;
    else if (d == dim)
      view.dim = size;
    else
      view.inner *= size;
  }
  return view;
}

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_COLLECTIVECOMMON_H
