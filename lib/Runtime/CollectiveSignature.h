//===- CollectiveSignature.h - What a group's ranks compare ------*- C++
//-*-===//
//
// Before a collective moves data, the devices' collective libraries (MPI's
// in lib/Runtime/MPI, NCCL's for the cuda device) check that every rank of
// the group runs the same one: each reduces a hash of its signature (the
// op, reduction, dtype, shape and attributes) and, when the hashes differ,
// gathers the signatures to name every rank's in the error. Header-only,
// since libTEMPI and libTERuntime each compile it.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_COLLECTIVESIGNATURE_H
#define TE_LIB_RUNTIME_COLLECTIVESIGNATURE_H

#include "te/Runtime/Collective.h"

#include <cstdint>
#include <string>

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

} // namespace te::runtime

#endif // TE_LIB_RUNTIME_COLLECTIVESIGNATURE_H
