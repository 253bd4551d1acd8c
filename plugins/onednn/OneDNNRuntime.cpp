//===- OneDNNRuntime.cpp - Functions te kernels call into oneDNN ----------===//
//
// Attention is three oneDNN primitives per (batch, head): a matmul for the
// scores with the scale and the causal mask as post-ops, a softmax over the
// keys, and a matmul with V. The primitives are created once per call (the
// shapes are the same for every head) and run on each head's slices. The
// [seq_q, seq_kv] score matrix is one scratch buffer reused across heads.
// LayerNorm is oneDNN's layer normalization primitive in training mode,
// for the statistics, with rsigma computed from its variance.
//
//===----------------------------------------------------------------------===//

#include "OneDNNRuntime.h"

#include <dnnl.hpp>

#include <cmath>
#include <exception>
#include <limits>
#include <unordered_map>
#include <vector>

namespace {

using dims = dnnl::memory::dims;
using tag = dnnl::memory::format_tag;
using dt = dnnl::memory::data_type;

dnnl::engine &cpuEngine() {
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  return engine;
}

void fillNaN(float *data, int64_t count) {
  for (int64_t i = 0; i < count; ++i)
    data[i] = std::numeric_limits<float>::quiet_NaN();
}

/// The failure code of a call: oneDNN's dnnl_status_t for its errors, -1
/// for any other exception. The kernel's check turns it into the launch's
/// error message.
int32_t report(const std::exception &e, float *output, int64_t count) {
  fillNaN(output, count);
  if (auto *error = dynamic_cast<const dnnl::error *>(&e))
    return error->status != dnnl_success ? static_cast<int32_t>(error->status)
                                         : -1;
  return -1;
}

} // namespace

int32_t te_onednn_attention_f32(const float *q, const float *k, const float *v,
                                float *o, int64_t batch, int64_t heads_q,
                                int64_t heads_kv, int64_t seq_q, int64_t seq_kv,
                                int64_t d_qk, int64_t d_v, float scale,
                                int64_t mask_kind) {
  try {
    dnnl::engine &engine = cpuEngine();
    dnnl::stream stream(engine);
    dnnl::memory::desc qDesc({seq_q, d_qk}, dt::f32, tag::ab);
    // K^T as a strided view of K's [seq_kv, d_qk] rows.
    dnnl::memory::desc kDesc({d_qk, seq_kv}, dt::f32, tag::ba);
    dnnl::memory::desc sDesc({seq_q, seq_kv}, dt::f32, tag::ab);
    dnnl::memory::desc vDesc({seq_kv, d_v}, dt::f32, tag::ab);
    dnnl::memory::desc oDesc({seq_q, d_v}, dt::f32, tag::ab);

    // Scores: scale * q k^T, plus the mask (0 or -inf) when causal.
    dnnl::post_ops scorePostOps;
    scorePostOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, scale,
                                0.0f);
    std::vector<float> mask;
    if (mask_kind != TE_ONEDNN_MASK_NONE) {
      int64_t shift =
          mask_kind == TE_ONEDNN_MASK_CAUSAL_BOTTOM_RIGHT ? seq_kv - seq_q : 0;
      mask.resize(seq_q * seq_kv);
      for (int64_t i = 0; i < seq_q; ++i)
        for (int64_t j = 0; j < seq_kv; ++j)
          mask[i * seq_kv + j] =
              j <= i + shift ? 0.0f : -std::numeric_limits<float>::infinity();
      scorePostOps.append_binary(dnnl::algorithm::binary_add, sDesc);
    }
    dnnl::primitive_attr scoreAttr;
    scoreAttr.set_post_ops(scorePostOps);
    dnnl::matmul scores(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(qDesc, kDesc, sDesc), scoreAttr, engine));
    dnnl::softmax_forward softmax(dnnl::softmax_forward::primitive_desc(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, sDesc,
                                    1),
        engine));
    dnnl::matmul weighted(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(sDesc, vDesc, oDesc), engine));

    std::vector<float> s(seq_q * seq_kv);
    dnnl::memory sMemory(sDesc, engine, s.data());
    dnnl::memory maskMemory(sDesc, engine,
                            mask.empty() ? nullptr : mask.data());
    int64_t group = heads_q / heads_kv;
    for (int64_t n = 0; n < batch; ++n)
      for (int64_t h = 0; h < heads_q; ++h) {
        int64_t kvHead = n * heads_kv + h / group;
        float *qHead =
            const_cast<float *>(q) + (n * heads_q + h) * seq_q * d_qk;
        float *kHead = const_cast<float *>(k) + kvHead * seq_kv * d_qk;
        float *vHead = const_cast<float *>(v) + kvHead * seq_kv * d_v;
        float *oHead = o + (n * heads_q + h) * seq_q * d_v;
        dnnl::memory qMemory(qDesc, engine, qHead),
            kMemory(kDesc, engine, kHead), vMemory(vDesc, engine, vHead),
            oMemory(oDesc, engine, oHead);
        std::unordered_map<int, dnnl::memory> scoreArgs = {
            {DNNL_ARG_SRC, qMemory},
            {DNNL_ARG_WEIGHTS, kMemory},
            {DNNL_ARG_DST, sMemory}};
        if (!mask.empty())
          scoreArgs[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] =
              maskMemory;
        scores.execute(stream, scoreArgs);
        softmax.execute(stream,
                        {{DNNL_ARG_SRC, sMemory}, {DNNL_ARG_DST, sMemory}});
        weighted.execute(stream, {{DNNL_ARG_SRC, sMemory},
                                  {DNNL_ARG_WEIGHTS, vMemory},
                                  {DNNL_ARG_DST, oMemory}});
      }
    stream.wait();
    return 0;
  } catch (const std::exception &e) {
    return report(e, o, batch * heads_q * seq_q * d_v);
  }
}

int32_t te_onednn_matmul_f32(const float *a, const float *b, const float *bias,
                             float *d, int64_t m, int64_t n, int64_t k,
                             float alpha, int64_t gelu) {
  try {
    dnnl::engine &engine = cpuEngine();
    dnnl::stream stream(engine);
    dnnl::memory::desc aDesc({m, k}, dt::f32, tag::ab);
    dnnl::memory::desc bDesc({k, n}, dt::f32, tag::ab);
    dnnl::memory::desc dDesc({m, n}, dt::f32, tag::ab);
    dnnl::memory::desc biasDesc({1, n}, dt::f32, tag::ab);
    // Post-ops in the order of te.scaled_matmul's epilogue: scale, bias,
    // GELU.
    dnnl::post_ops postOps;
    postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_linear, alpha, 0.0f);
    if (bias)
      postOps.append_binary(dnnl::algorithm::binary_add, biasDesc);
    if (gelu)
      postOps.append_eltwise(1.0f, dnnl::algorithm::eltwise_gelu_tanh, 0.0f,
                             0.0f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(postOps);
    dnnl::matmul matmul(dnnl::matmul::primitive_desc(
        dnnl::matmul::desc(aDesc, bDesc, dDesc), attr, engine));
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(aDesc, engine, const_cast<float *>(a))},
        {DNNL_ARG_WEIGHTS, dnnl::memory(bDesc, engine, const_cast<float *>(b))},
        {DNNL_ARG_DST, dnnl::memory(dDesc, engine, d)}};
    if (bias)
      args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] =
          dnnl::memory(biasDesc, engine, const_cast<float *>(bias));
    matmul.execute(stream, args);
    stream.wait();
    return 0;
  } catch (const std::exception &e) {
    return report(e, d, m * n);
  }
}

int32_t te_onednn_layer_norm_f32(const float *x, const float *gamma,
                                 const float *beta, float *z, float *mean,
                                 float *rsigma, int64_t rows, int64_t hidden,
                                 float epsilon) {
  std::vector<float> variance(rows);
  try {
    dnnl::engine &engine = cpuEngine();
    dnnl::stream stream(engine);
    dnnl::memory::desc dataDesc({rows, hidden}, dt::f32, tag::ab);
    dnnl::memory::desc statDesc({rows}, dt::f32, tag::a);
    dnnl::memory::desc weightDesc({hidden}, dt::f32, tag::a);
    auto flags = dnnl::normalization_flags::use_scale;
    if (beta)
      flags |= dnnl::normalization_flags::use_shift;
    dnnl::layer_normalization_forward norm(
        dnnl::layer_normalization_forward::primitive_desc(
            dnnl::layer_normalization_forward::desc(
                dnnl::prop_kind::forward_training, dataDesc, statDesc, epsilon,
                flags),
            engine));
    std::unordered_map<int, dnnl::memory> args = {
        {DNNL_ARG_SRC, dnnl::memory(dataDesc, engine, const_cast<float *>(x))},
        {DNNL_ARG_DST, dnnl::memory(dataDesc, engine, z)},
        {DNNL_ARG_MEAN, dnnl::memory(statDesc, engine, mean)},
        {DNNL_ARG_VARIANCE, dnnl::memory(statDesc, engine, variance.data())},
        {DNNL_ARG_SCALE,
         dnnl::memory(weightDesc, engine, const_cast<float *>(gamma))}};
    if (beta)
      args[DNNL_ARG_SHIFT] =
          dnnl::memory(weightDesc, engine, const_cast<float *>(beta));
    norm.execute(stream, args);
    stream.wait();
    for (int64_t row = 0; row < rows; ++row)
      rsigma[row] = 1.0f / std::sqrt(variance[row] + epsilon);
    return 0;
  } catch (const std::exception &e) {
    fillNaN(mean, rows);
    fillNaN(rsigma, rows);
    return report(e, z, rows * hidden);
  }
}
