// te-decompose-reference: te.attention_backward as the dense chain rule on
// the materialized [b, h_q, s_q, s_kv] tensors, from the given o, d_o and
// lse: P = exp(x - LSE), D = dO . O, dP = dO V^T, dS = P (dP - D), dQ, dK, dV
// as contractions (dK, dV over the query heads of each kv head), dbias and
// d_softmax_offset as reductions.
// RUN: te-opt %s -split-input-file --te-decompose-reference | FileCheck %s

// GQA (4 query heads, 2 kv heads), causal, pre_scale bias broadcast over
// the batch, learnable softmax.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-DAG: #[[LSE:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, 0)>
// CHECK-DAG: #[[ROWS:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
// CHECK-DAG: #[[IN_LAYOUT:.*]] = affine_map<(d0, d1, d2, d3) -> (d0, d2, d1, d3)>
// CHECK-DAG: #[[BY_KV_HEAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d2, d5, d3)>
// CHECK-DAG: #[[QUERY_HEAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d5, d1 * 2 + d2, d4)>
// CHECK-DAG: #[[KV_GRAD:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d3, d4)>
// CHECK-DAG: #[[BIAS_KEPT:.*]] = affine_map<(d0, d1, d2, d3) -> (d1, d2, d3)>
// CHECK-DAG: #[[ALPHA:.*]] = affine_map<(d0, d1, d2) -> (0, d1, 0, 0)>
// CHECK-DAG: #[[HEAD:.*]] = affine_map<(d0, d1, d2) -> (d1)>
// CHECK-LABEL: func @gqa_bias_learnable
// CHECK-SAME: (%[[QV:[^:]*]]: tensor<2x6x4x8xf32>, %[[KV:[^:]*]]: tensor<2x5x2x8xf32>, %[[VV:[^:]*]]: tensor<2x5x2x4xf32>, %[[O:[^:]*]]: tensor<2x6x4x4xf32>, %[[DO:[^:]*]]: tensor<2x6x4x4xf32>, %[[LSEV:[^:]*]]: tensor<2x4x6x1xf32>, %[[BIAS:[^:]*]]: tensor<1x4x6x5xf32>, %[[ALPHAV:[^:]*]]: tensor<1x4x1x1xf32>)
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}]{{.*}} ins(%[[QV]], %[[KV]] :
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[S]], %[[BIAS]] :
// CHECK: arith.cmpi sle
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[LSE]], {{.*}}]{{.*}} ins(%[[X]], %[[LSEV]] :
// CHECK: math.exp
// CHECK: %[[D:.*]] = linalg.generic {indexing_maps = [#[[IN_LAYOUT]], #[[IN_LAYOUT]], #[[ROWS]]], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%[[DO]], %[[O]] :
// CHECK: %[[DP:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}]{{.*}} ins(%[[DO]], %[[VV]] :
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[DP]], %[[D]] :
// CHECK: arith.subf
// CHECK: arith.mulf
// CHECK: %[[DQ:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[DS]], %[[KV]] :
// CHECK: %[[DQOUT:.*]] = linalg.generic {{.*}} ins(%[[DQ]] : tensor<2x4x6x8xf32>) outs(%{{.*}} : tensor<2x6x4x8xf32>)
// CHECK: arith.mulf
// CHECK: %[[DS5:.*]] = tensor.expand_shape %[[DS]] {{\[}}[0], [1, 2], [3], [4]] output_shape [2, 2, 2, 6, 5]
// CHECK: %[[DK:.*]] = linalg.generic {indexing_maps = [#[[BY_KV_HEAD]], #[[QUERY_HEAD]], #[[KV_GRAD]]], iterator_types = ["parallel", "parallel", "reduction", "parallel", "parallel", "reduction"]} ins(%[[DS5]], %[[QV]] :
// CHECK: %[[DKOUT:.*]] = linalg.generic {{.*}} ins(%[[DK]] : tensor<2x2x5x8xf32>) outs(%{{.*}} : tensor<2x5x2x8xf32>)
// CHECK: %[[P5:.*]] = tensor.expand_shape %[[P]] {{\[}}[0], [1, 2], [3], [4]]
// CHECK: %[[DV:.*]] = linalg.generic {indexing_maps = [#[[BY_KV_HEAD]], #[[QUERY_HEAD]], #[[KV_GRAD]]], {{.*}} ins(%[[P5]], %[[DO]] :
// CHECK: %[[DVOUT:.*]] = linalg.generic {{.*}} ins(%[[DV]] : tensor<2x2x5x4xf32>) outs(%{{.*}} : tensor<2x5x2x4xf32>)
// CHECK: %[[DB:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[BIAS_KEPT]]], iterator_types = ["reduction", "parallel", "parallel", "parallel"]} ins(%[[DS]] : tensor<2x4x6x5xf32>) outs(%{{.*}} : tensor<4x6x5xf32>)
// CHECK: %[[DBOUT:.*]] = linalg.generic {indexing_maps = [#[[BIAS_KEPT]], {{.*}}]{{.*}} ins(%[[DB]] : tensor<4x6x5xf32>) outs(%{{.*}} : tensor<1x4x6x5xf32>)
// CHECK: arith.mulf
// CHECK: %[[DA:.*]] = linalg.generic {indexing_maps = [#[[ALPHA]], {{.*}}, {{.*}}, #[[HEAD]]], iterator_types = ["reduction", "parallel", "reduction"]} ins(%[[ALPHAV]], %[[LSEV]], %[[D]] :
// CHECK: arith.cmpf ogt
// CHECK: math.exp
// CHECK: arith.select
// CHECK: %[[DAOUT:.*]] = linalg.generic {{.*}} ins(%[[DA]] : tensor<4xf32>) outs(%{{.*}} : tensor<1x4x1x1xf32>)
// CHECK-NOT: te.attention_backward
// CHECK: return %[[DQOUT]], %[[DKOUT]], %[[DVOUT]], %[[DBOUT]], %[[DAOUT]]
func.func @gqa_bias_learnable(
    %q: tensor<2x6x4x8xf32>, %k: tensor<2x5x2x8xf32>, %v: tensor<2x5x2x4xf32>,
    %o: tensor<2x6x4x4xf32>, %do: tensor<2x6x4x4xf32>, %lse: tensor<2x4x6x1xf32>,
    %bias: tensor<1x4x6x5xf32>, %alpha: tensor<1x4x1x1xf32>)
    -> (tensor<2x6x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32>,
        tensor<1x4x6x5xf32>, tensor<1x4x1x1xf32>) {
  %dq, %dk, %dv, %dbias, %dalpha = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal bias pre_scale softmax learnable
      bias_tensor(%bias) softmax_offset(%alpha)
      : (tensor<2x6x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32>,
         tensor<2x6x4x4xf32>, tensor<2x6x4x4xf32>, tensor<2x4x6x1xf32>,
         tensor<1x4x6x5xf32>, tensor<1x4x1x1xf32>)
      -> (tensor<2x6x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32>,
          tensor<1x4x6x5xf32>, tensor<1x4x1x1xf32>)
  return %dq, %dk, %dv, %dbias, %dalpha
      : tensor<2x6x4x8xf32>, tensor<2x5x2x8xf32>, tensor<2x5x2x4xf32>,
        tensor<1x4x6x5xf32>, tensor<1x4x1x1xf32>
}

// -----

// thd with dropout: the LSE is read as [t_q, h_q, 1]; the keep factors
// scale both dP and the weights of dV.
// CHECK-DAG: #[[LSE:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1, 0)>
// CHECK-LABEL: func @thd_dropout
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %{{.*}}#0, %{{.*}}#1, %{{.*}}#2, %{{.*}}#3, %{{.*}}#0, %{{.*}}#1 :
// CHECK: %[[P:.*]] = linalg.generic {indexing_maps = [{{.*}}, #[[LSE]], {{.*}}]{{.*}} ins(%[[X]], %{{.*}} : tensor<1x2x10x10xf32>, tensor<10x2x1xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x10xf32>)
// CHECK: %[[DP:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<1x2x10x10xf32>)
// CHECK: %[[F:.*]] = linalg.generic {indexing_maps = [#{{[^,]*}}], {{.*}} outs(%{{.*}} : tensor<1x2x10x10xf32>)
// CHECK: arith.cmpi uge
// CHECK: %[[W:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[F]] :
// CHECK: %[[DPF:.*]] = linalg.generic {{.*}} ins(%[[DP]], %[[F]] :
// CHECK: %[[DS:.*]] = linalg.generic {{.*}} ins(%[[P]], %[[DPF]], %{{.*}} :
// CHECK: tensor.expand_shape %[[DS]]
// CHECK: tensor.expand_shape %[[W]]
// CHECK-NOT: te.attention_backward
// CHECK: return
func.func @thd_dropout(%q: tensor<10x2x8xbf16>, %o: tensor<10x2x8xbf16>,
                       %lse: tensor<10x2x1xf32>, %cu: tensor<4xi32>,
                       %rng: tensor<2xi64>)
    -> (tensor<10x2x8xbf16>, tensor<10x2x8xbf16>, tensor<10x2x8xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %q, %q, %o, %o, %lse
      layout thd mask padding_causal dropout 0.5 cu_seqlens(%cu, %cu) rng_state(%rng)
      : (tensor<10x2x8xbf16>, tensor<10x2x8xbf16>, tensor<10x2x8xbf16>,
         tensor<10x2x8xbf16>, tensor<10x2x8xbf16>, tensor<10x2x1xf32>,
         tensor<4xi32>, tensor<4xi32>, tensor<2xi64>)
      -> (tensor<10x2x8xbf16>, tensor<10x2x8xbf16>, tensor<10x2x8xbf16>)
  return %dq, %dk, %dv : tensor<10x2x8xbf16>, tensor<10x2x8xbf16>, tensor<10x2x8xbf16>
}
