// te-decompose-reference: te.attention as dense linalg math on the
// materialized [b, h_q, s_q, s_kv] score tensor, visibility from
// linalg.index; other te ops are left to the normal lowering.
// RUN: te-opt %s -split-input-file --te-decompose-reference | FileCheck %s

// GQA (4 query heads, 2 kv heads), bshd, causal bottom-right with a window,
// d_qk = 16 != d_v = 8, with LSE.
// CHECK-DAG: #[[Q:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d2, d1, d4)>
// CHECK-DAG: #[[K:.*]] = affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d1 floordiv 2, d4)>
// CHECK-LABEL: func @causal_gqa
// CHECK: %[[S:.*]] = linalg.generic {indexing_maps = [#[[Q]], #[[K]], {{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
// CHECK-SAME: outs(%{{.*}} : tensor<2x4x6x8xf32>)
// CHECK: %[[X:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<2x4x6x8xf32>)
// CHECK: %[[I:.*]] = linalg.index 2 : index
// CHECK: %[[J:.*]] = linalg.index 3 : index
// CHECK: arith.cmpi sle
// CHECK: arith.cmpi sge
// CHECK: arith.select %{{.*}}, %{{.*}}, %cst{{.*}} : f32
// CHECK: -> tensor<2x4x6x8xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]{{.*}} ins(%[[X]] : tensor<2x4x6x8xf32>)
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: -> tensor<2x4x6x8xf32>
// CHECK: math.log
// CHECK-NOT: te.attention
// CHECK: return
func.func @causal_gqa(%q: tensor<2x6x4x16xbf16>, %k: tensor<2x8x2x16xbf16>, %v: tensor<2x8x2x8xbf16>)
    -> (tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal_bottom_right window [2, 0] {return_lse}
      : (tensor<2x6x4x16xbf16>, tensor<2x8x2x16xbf16>, tensor<2x8x2x8xbf16>)
      -> (tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>)
  return %o, %lse : tensor<2x6x4x8xbf16>, tensor<2x4x6x1xf32>
}

// -----

// Padding: the lengths are read per batch entry; the bias broadcasts over
// its size-1 dimensions.
// CHECK-DAG: #[[B:.*]] = affine_map<(d0, d1, d2, d3) -> (0, d1, d2, d3)>
// CHECK-DAG: #[[LEN:.*]] = affine_map<(d0, d1, d2, d3) -> (d0)>
// CHECK-LABEL: func @padding_bias
// CHECK: linalg.generic {indexing_maps = [{{.*}}, #[[B]], #[[LEN]], #[[LEN]], {{.*}}]
// CHECK-SAME: ins(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x2x4x4xf32>, tensor<1x2x4x4xf32>, tensor<2xi32>, tensor<2xi32>)
// CHECK: linalg.index 2
// CHECK: linalg.index 3
// CHECK: arith.extsi
// CHECK: arith.cmpi slt
// CHECK: arith.cmpi slt
func.func @padding_bias(%q: tensor<2x2x4x8xf32>, %bias: tensor<1x2x4x4xf32>,
                        %lq: tensor<2xi32>, %lkv: tensor<2xi32>) -> tensor<2x2x4x8xf32> {
  %o = te.attention %q, %q, %q layout bhsd mask padding bias post_scale seqlens(%lq, %lkv) bias_tensor(%bias)
      : (tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2x2x4x8xf32>, tensor<2xi32>, tensor<2xi32>, tensor<1x2x4x4xf32>)
      -> tensor<2x2x4x8xf32>
  return %o : tensor<2x2x4x8xf32>
}

// -----

// Other te ops are the normal lowering's.
// CHECK-LABEL: func @amax
// CHECK: te.amax
func.func @amax(%x: tensor<4x8xbf16>) -> tensor<f32> {
  %a = te.amax %x : tensor<4x8xbf16> -> tensor<f32>
  return %a : tensor<f32>
}
