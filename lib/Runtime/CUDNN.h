//===- CUDNN.h - cuDNN's fused attention as a library call ------*- C++ -*-===//
//
// The cuda device's `cudnn.sdpa_forward` library call (te/Runtime/Module.h,
// manifest version 5): te.attention's forward on cuDNN 9's SDPA graph,
// built with the cudnn_frontend headers (PyPI nvidia-cudnn-frontend) in
// their dynamic-loading mode: libcudnn is opened at the first call
// (TE_CUDNN, else libcudnn.so.9; the frontend itself opens libcudart),
// nothing is linked. A build without the
// frontend's or cuDNN's headers has the call, which then fails saying so.
//
// Parameters (what lib/Target/CUDA lowers the op to):
//   b=<B>,hq=<H_q>,hkv=<H_kv>,sq=<S_q>,skv=<S_kv>,d=<D>,dtype=<bf16|f16>,
//   layout=<bshd|sbhd|bhsd>,scale=<f32 bits in hex>,
//   align=<top_left|bottom_right>,left=<L|-1>,right=<R|-1>,stats=<0|1>
// with te's window semantics: a query at diagonal position i sees keys
// [i - L, i + R] (-1: unbounded), causal masks being R = 0. Operands q, k,
// v, o, then the f32 log-sum-exp [b, h_q, s_q, 1] with stats=1.
//
// `cudnn.sdpa_backward` takes the same parameters (stats=1) and operands
// q, k, v, o, dO, lse (the forward's, natural-log LSE), then dq, dk, dv,
// dk and dv summed over each GQA group as te.attention_backward returns
// them.
//
//===----------------------------------------------------------------------===//

#ifndef TE_LIB_RUNTIME_CUDNN_H
#define TE_LIB_RUNTIME_CUDNN_H

#include "LibraryCall.h"

#include "te/Runtime/Status.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace te::runtime::cudnn {

/// An attention's configuration: its call's parameters (te/ABI's
/// SdpaCall), decoded, and what the runtime adds.
struct SdpaConfig : te::abi::SdpaCall {
  /// dtype is f16 (else bf16).
  bool f16 = false;
  /// Set by the caller: cudnn.sdpa_backward rather than the forward.
  bool backward = false;
  /// q, k, v, o, [lse]; the backward's q, k, v, o, dO, lse, dq, dk, dv.
  int operands() const { return backward ? 9 : stats ? 5 : 4; }
};

/// Parses `parameters`; on failure returns false with `error` saying which
/// parameter is wrong and what is expected.
bool parseSdpaConfig(const char *parameters, SdpaConfig &config,
                     std::string &error);

/// The strides, in elements, of the [b, h, s, d] view of a tensor stored in
/// `layout` (as parseSdpaConfig accepts it) with those extents.
std::array<int64_t, 4> strides(const std::string &layout, int64_t b, int64_t h,
                               int64_t s, int64_t d);

/// What one stream's calls keep: the cuDNN handle, the built graph of each
/// configuration seen, the workspace. Created lazily.
struct Context;
Context *createContext(DeviceMemory memory);
void destroyContext(Context *context);

/// The byte sizes `config`'s operands need, in operand order.
std::vector<size_t> operandBytes(const SdpaConfig &config);

/// Runs `cudnn.sdpa_forward` (or with `backward`, `cudnn.sdpa_backward`)
/// with `parameters` on `stream` (a CUstream) with operand addresses `args`
/// of `sizes` bytes (each must hold what the parameters say); errors set
/// the runtime's device detail.
te_status runSdpa(Context &context, bool backward, const char *parameters,
                  void **args, const size_t *sizes, int nargs, void *stream);

/// Builds `config`'s graph (the forward's, or with config.backward the
/// backward's) and checks it with the frontend's validation,
/// which needs no GPU (what a machine without one can check of the call);
/// on failure returns false with `error`.
bool validateSdpa(const SdpaConfig &config, std::string &error);

/// Whether this build has the cuDNN call (the headers were found), and if
/// not, why.
bool isBuiltIn(std::string *why);

} // namespace te::runtime::cudnn

#endif // TE_LIB_RUNTIME_CUDNN_H
