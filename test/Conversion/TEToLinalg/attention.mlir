// te.attention lowers to loops with an online softmax over the visible keys:
// no [s_q, s_kv] tensor is ever created.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize | FileCheck %s

// Without an arbitrary mask, bias tensor, dropout or thd: the blocked path.
// Q (scaled), K^T in chunks of 32 keys and V are copied to f32 first; then
// per (batch, head, tile of query rows) one pass over the key chunks, each
// applied to micro-blocks of 4 rows.
// CHECK-LABEL: func @causal_gqa
// CHECK-NOT: tensor<2x4x16x16xf32>
// The copies: scale * q as [b, h_q, s_q, d_qk], K^T as [b, h_kv, chunks,
// d_qk, 32], V as [b, h_kv, chunks * 32, d_v].
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x16x32xf32>)
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x32x32xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x32x16xf32>)
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %{{.*}} to %c2
// CHECK: scf.for %[[H:[a-z0-9_]+]] = %{{.*}} to %c4
// The key/value head of a query head: h / (H_q / H_kv).
// CHECK: %[[KVH:[a-z0-9_]+]] = arith.divui %[[H]], %c2
// One tile of all 16 rows (its single-trip loop folds away); the tile's key
// range first.
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args({{.*}}) -> (index, index)
// Key chunks, then micro-blocks of 4 rows, skipped when they see no key.
// CHECK: scf.for %[[KEY0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c32 iter_args({{.*}}) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<4x32xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK: scf.if
// Scores: outer products over the d_qk columns.
// CHECK: scf.for %[[T:[a-z0-9_]+]] = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<32xf32>, vector<32xf32>, vector<32xf32>, vector<32xf32>)
// CHECK: vector.transfer_read %{{.*}}[%[[B]], %[[KVH]], %{{.*}}, %[[T]], %c0]{{.*}} : tensor<2x2x1x32x32xf32>, vector<32xf32>
// CHECK: vector.fma %{{.*}} : vector<32xf32>
// The online softmax on vectors of 32 logits.
// CHECK: vector.reduction <maximumf>, %{{.*}} : vector<32xf32> into f32
// CHECK: math.exp %{{.*}} : vector<32xf32>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<32xf32> into f32
// V rows, 16 columns at a time.
// CHECK: vector.transfer_read %{{.*}}[%[[B]], %[[KVH]], %{{.*}}, %c0]{{.*}} : tensor<2x2x32x16xf32>, vector<16xf32>
// CHECK: vector.fma %{{.*}} : vector<16xf32>
// Then each row: O = acc / l in bf16, LSE.
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[B]], %{{.*}}, %[[H]], %{{.*}}]
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[B]], %[[H]], %{{.*}}, %{{.*}}] : tensor<2x4x16x1xf32>
func.func @causal_gqa(%q: tensor<2x16x4x32xbf16>, %k: tensor<2x16x2x32xbf16>, %v: tensor<2x16x2x16xbf16>)
    -> (tensor<2x16x4x16xbf16>, tensor<2x4x16x1xf32>) {
  %o, %lse = te.attention %q, %k, %v layout bshd mask causal {return_lse}
      : (tensor<2x16x4x32xbf16>, tensor<2x16x2x32xbf16>, tensor<2x16x2x16xbf16>)
      -> (tensor<2x16x4x16xbf16>, tensor<2x4x16x1xf32>)
  return %o, %lse : tensor<2x16x4x16xbf16>, tensor<2x4x16x1xf32>
}

// -----

// thd: each token row finds its sequence in cu_seqlens; the arbitrary mask
// is the only per-key test (scf.if).
// CHECK-LABEL: func @thd_arbitrary_free
// CHECK: scf.for {{.*}} -> (index, index, index, index, index)
// CHECK: tensor.extract %{{.*}} : tensor<4xi32>
// CHECK-NOT: scf.if
// CHECK: return
func.func @thd_arbitrary_free(%q: tensor<24x2x16xf32>, %cu: tensor<4xi32>) -> tensor<24x2x16xf32> {
  %o = te.attention %q, %q, %q layout thd mask padding cu_seqlens(%cu, %cu)
      : (tensor<24x2x16xf32>, tensor<24x2x16xf32>, tensor<24x2x16xf32>, tensor<4xi32>, tensor<4xi32>)
      -> tensor<24x2x16xf32>
  return %o : tensor<24x2x16xf32>
}

// -----

// CHECK-LABEL: func @arbitrary_mask
// CHECK: %[[EXCLUDED:[a-z0-9_]+]] = tensor.extract %{{.*}} : tensor<1x1x8x8xi1>
// CHECK: scf.if %[[EXCLUDED]]
func.func @arbitrary_mask(%q: tensor<1x8x2x16xf32>, %m: tensor<1x1x8x8xi1>) -> tensor<1x8x2x16xf32> {
  %o = te.attention %q, %q, %q layout bshd mask arbitrary mask_tensor(%m)
      : (tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x8x2x16xf32>, tensor<1x1x8x8xi1>)
      -> tensor<1x8x2x16xf32>
  return %o : tensor<1x8x2x16xf32>
}

// -----

// A bias tensor (like an arbitrary mask, dropout or thd) takes the per-row
// path: for each query row one pass over its visible keys, a dot product and
// two exp per key.
// CHECK-LABEL: func @bias_per_row
// CHECK-NOT: step %c32
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %{{.*}} to %c2
// CHECK: scf.for %[[H:[a-z0-9_]+]] = %{{.*}} to %c2
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %c8
// CHECK: %[[QROW:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%[[B]], %[[I]], %[[H]], %{{.*}}]{{.*}} : tensor<2x8x2x16xf32>, vector<16xf32>
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>)
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<16xf32> into f32
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %[[H]], %[[I]], %[[J]]] : tensor<1x2x8x8xf32>
// CHECK: math.exp
// CHECK: vector.fma
func.func @bias_per_row(%q: tensor<2x8x2x16xf32>, %bias: tensor<1x2x8x8xf32>) -> tensor<2x8x2x16xf32> {
  %o = te.attention %q, %q, %q layout bshd mask causal bias post_scale bias_tensor(%bias)
      : (tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<2x8x2x16xf32>, tensor<1x2x8x8xf32>)
      -> tensor<2x8x2x16xf32>
  return %o : tensor<2x8x2x16xf32>
}
