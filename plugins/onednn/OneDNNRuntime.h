//===- OneDNNRuntime.h - Functions te kernels call into oneDNN -----*- C
//-*-===//
//
// The run-time half of the oneDNN plugin: plain C functions that kernels
// lowered by the plugin call, each doing its op's heavy part with oneDNN
// primitives on f32 data in a fixed layout (the plugin's lowering converts
// to and from the op's own types and layouts around the call). The library
// links oneDNN, never MLIR.
//
// Every function returns 0 on success; on failure it fills the output with
// NaN (so that the failure cannot pass for a result) and returns oneDNN's
// dnnl_status_t (1 out of memory, 2 invalid arguments, 3 unimplemented,
// 5 runtime error, ...) or -1 for any other error. The plugin's lowering
// checks the result (te.check), so the kernel's launch fails with the op,
// its location and this code.
//
//===----------------------------------------------------------------------===//

#ifndef TE_PLUGINS_ONEDNN_ONEDNNRUNTIME_H
#define TE_PLUGINS_ONEDNN_ONEDNNRUNTIME_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TE_ONEDNN_EXPORT __attribute__((visibility("default")))

/// Mask kinds of te_onednn_attention_f32.
enum {
  TE_ONEDNN_MASK_NONE = 0,
  /// Key j visible from query i when j <= i.
  TE_ONEDNN_MASK_CAUSAL = 1,
  /// Key j visible from query i when j <= i + (seq_kv - seq_q).
  TE_ONEDNN_MASK_CAUSAL_BOTTOM_RIGHT = 2,
};

/// o = softmax(scale * q k^T + mask) v for each (batch, query head), the key
/// and value head being head / (heads_q / heads_kv). Row-major f32 arrays:
/// q [batch, heads_q, seq_q, d_qk], k [batch, heads_kv, seq_kv, d_qk],
/// v [batch, heads_kv, seq_kv, d_v], o [batch, heads_q, seq_q, d_v]. Every
/// query row must see at least one key.
TE_ONEDNN_EXPORT int32_t te_onednn_attention_f32(
    const float *q, const float *k, const float *v, float *o, int64_t batch,
    int64_t heads_q, int64_t heads_kv, int64_t seq_q, int64_t seq_kv,
    int64_t d_qk, int64_t d_v, float scale, int64_t mask_kind);

/// d = epilogue(alpha * (a b) + bias) with a [m, k], b [k, n], d [m, n]
/// row-major f32, bias [n] f32 or NULL, and the epilogue the tanh GELU when
/// `gelu` is non-zero, identity otherwise.
TE_ONEDNN_EXPORT int32_t te_onednn_matmul_f32(const float *a, const float *b,
                                              const float *bias, float *d,
                                              int64_t m, int64_t n, int64_t k,
                                              float alpha, int64_t gelu);

/// LayerNorm over the last dimension of x [rows, hidden] (row-major f32):
/// z = gamma * (x - mean) / sqrt(variance + epsilon) + beta, with beta
/// NULL for none, and each row's mean and rsigma = 1 / sqrt(variance +
/// epsilon) (f32) for the backward.
TE_ONEDNN_EXPORT int32_t te_onednn_layer_norm_f32(
    const float *x, const float *gamma, const float *beta, float *z,
    float *mean, float *rsigma, int64_t rows, int64_t hidden, float epsilon);

#ifdef __cplusplus
}
#endif

#endif // TE_PLUGINS_ONEDNN_ONEDNNRUNTIME_H
