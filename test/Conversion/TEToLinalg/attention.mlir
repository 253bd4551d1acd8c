// te.attention lowers to loops with an online softmax over the visible keys:
// no [s_q, s_kv] tensor is ever created.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize | FileCheck %s

// Without an arbitrary mask, bias tensor, dropout or thd: the blocked path.
// Q (scaled), K^T in chunks of 64 keys and V are copied to f32 first; then
// per (batch, head, tile of query rows) one pass over the key chunks, each
// applied to micro-blocks of 4 rows.
// CHECK-LABEL: func @causal_gqa
// CHECK-NOT: tensor<2x4x16x16xf32>
// The copies: scale * q as [b, h_q, s_q, d_qk], K^T as [b, h_kv, chunks,
// d_qk, 64], V as [b, h_kv, chunks * 64, d_v].
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x16x32xf32>)
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : f32
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x32x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x64x16xf32>)
// The tiles of all (batch, head) in parallel (one tile of all 16 rows here,
// so the tile dimension folds away); each iteration writes its rows into
// slices of O and LSE.
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]]) in (2, 4) shared_outs(%[[O:[a-z0-9_]+]] = %{{.*}}, %[[LSE:[a-z0-9_]+]] = %{{.*}})
// The key/value head of a query head: h / (H_q / H_kv).
// CHECK: %[[KVH:[a-z0-9_]+]] = arith.divui %[[H]], %c2
// CHECK: tensor.extract_slice %[[O]][%[[B]], 0, %[[H]], 0] [1, 16, 1, 16] [1, 1, 1, 1] : tensor<2x16x4x16xbf16> to tensor<16x16xbf16>
// CHECK: tensor.extract_slice %[[LSE]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 1] [1, 1, 1, 1] : tensor<2x4x16x1xf32> to tensor<16xf32>
// The tile's key range first.
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c1 iter_args({{.*}}) -> (index, index)
// Key chunks, then micro-blocks of 4 rows, skipped when they see no key.
// CHECK: scf.for %[[KEY0:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %c64 iter_args({{.*}}) -> (tensor<16xf32>, tensor<16xf32>, tensor<16x16xf32>, tensor<4x64xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c16 step %c4
// CHECK: scf.if
// Scores: outer products over the d_qk columns.
// CHECK: scf.for %[[T:[a-z0-9_]+]] = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
// CHECK: vector.transfer_read %{{.*}}[%[[B]], %[[KVH]], %{{.*}}, %[[T]], %c0]{{.*}} : tensor<2x2x1x32x64xf32>, vector<64xf32>
// CHECK: vector.fma %{{.*}} : vector<64xf32>
// The online softmax on vectors of 64 logits.
// CHECK: vector.reduction <maximumf>, %{{.*}} : vector<64xf32> into f32
// CHECK: math.exp %{{.*}} : vector<64xf32>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<64xf32> into f32
// V rows, 16 columns at a time.
// CHECK: vector.transfer_read %{{.*}}[%[[B]], %[[KVH]], %{{.*}}, %c0]{{.*}} : tensor<2x2x64x16xf32>, vector<16xf32>
// CHECK: vector.fma %{{.*}} : vector<16xf32>
// Then each row: O = acc / l in bf16, LSE.
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%{{.*}}, %c0] {{.*}} : vector<16xbf16>, tensor<16x16xbf16>
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%{{.*}}] : tensor<16xf32>
// CHECK: scf.forall.in_parallel
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[O]][%[[B]], 0, %[[H]], 0] [1, 16, 1, 16]
// CHECK: tensor.parallel_insert_slice %{{.*}} into %[[LSE]][%[[B]], %[[H]], 0, 0] [1, 1, 16, 1]
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
// CHECK: scf.forall (%[[B:[a-z0-9_]+]], %[[H:[a-z0-9_]+]]) in (2, 2)
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

// -----

// The backward runs in parallel over (batch, key/value head): an iteration
// owns dK and dV of its key/value head and dQ of the query heads sharing it
// (two here). dbias [1, h, s_q, s_kv] is a sum over the batch, so the batch
// runs inside each iteration: 1 x 2 iterations.
// CHECK-LABEL: func @backward_gqa_dbias
// CHECK: scf.forall (%[[KV:[a-z0-9_]+]]) in (2) shared_outs(%[[DQ:[a-z0-9_]+]] = %{{.*}}, %[[DK:[a-z0-9_]+]] = %{{.*}}, %[[DV:[a-z0-9_]+]] = %{{.*}}, %[[DB:[a-z0-9_]+]] = %{{.*}})
// CHECK: %[[H0:[a-z0-9_]+]] = arith.muli %[[KV]], %c2
// CHECK: tensor.extract_slice %[[DQ]][0, 0, %[[H0]], 0] [3, 6, 2, 8] [1, 1, 1, 1] : tensor<3x6x4x8xf32> to tensor<3x6x2x8xf32>
// CHECK: tensor.extract_slice %[[DK]][0, 0, %[[KV]], 0] [3, 5, 1, 8] [1, 1, 1, 1] : tensor<3x5x2x8xf32> to tensor<3x5x1x8xf32>
// CHECK: tensor.extract_slice %[[DV]][0, 0, %[[KV]], 0] [3, 5, 1, 8]
// CHECK: tensor.extract_slice %[[DB]][0, %[[H0]], 0, 0] [1, 2, 6, 5] [1, 1, 1, 1] : tensor<1x4x6x5xf32> to tensor<1x2x6x5xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c3
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-4: tensor.parallel_insert_slice
func.func @backward_gqa_dbias(%q: tensor<3x6x4x8xf32>, %k: tensor<3x5x2x8xf32>,
                              %v: tensor<3x5x2x8xf32>, %o: tensor<3x6x4x8xf32>,
                              %do: tensor<3x6x4x8xf32>, %lse: tensor<3x4x6x1xf32>,
                              %bias: tensor<1x4x6x5xf32>)
    -> (tensor<3x6x4x8xf32>, tensor<3x5x2x8xf32>, tensor<3x5x2x8xf32>, tensor<1x4x6x5xf32>) {
  %dq, %dk, %dv, %dbias = te.attention_backward %q, %k, %v, %o, %do, %lse
      layout bshd mask causal bias pre_scale bias_tensor(%bias)
      : (tensor<3x6x4x8xf32>, tensor<3x5x2x8xf32>, tensor<3x5x2x8xf32>,
         tensor<3x6x4x8xf32>, tensor<3x6x4x8xf32>, tensor<3x4x6x1xf32>,
         tensor<1x4x6x5xf32>)
      -> (tensor<3x6x4x8xf32>, tensor<3x5x2x8xf32>, tensor<3x5x2x8xf32>, tensor<1x4x6x5xf32>)
  return %dq, %dk, %dv, %dbias
      : tensor<3x6x4x8xf32>, tensor<3x5x2x8xf32>, tensor<3x5x2x8xf32>, tensor<1x4x6x5xf32>
}

// -----

// Without a bias tensor, mask tensor, dropout, thd or d_softmax_offset the
// backward is blocked like the forward: f32 copies (K^T and V^T in chunks
// of 64 keys, D = dO . O of every row, scale * q, K rows, dO), then per
// (batch, key/value head) the key chunks (one here: the loop folds away),
// the group's query heads and micro-blocks of 4 rows.
// CHECK-LABEL: func @backward_blocked
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x16x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x1x16x64xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x40xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x40x16xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x2x64x16xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<2x4x40x16xf32>)
// CHECK: scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// The accumulators: dQ of the group [2, s_q, d], dK and dV of the padded
// keys, and the micro-block's P and dS.
// CHECK: scf.for %{{.*}} = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<2x40x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<4x64xf32>, tensor<4x64xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c40 step %c4
// CHECK: scf.if
// S and dP as outer products over the head dimension.
// CHECK: scf.for {{.*}} -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
// CHECK: scf.for {{.*}} -> (vector<64xf32>, vector<64xf32>, vector<64xf32>, vector<64xf32>)
// CHECK-COUNT-4: math.exp %{{.*}} : vector<64xf32>
// dV and dK key by key, then dQ in registers.
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (tensor<64x16xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (tensor<64x16xf32>)
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: scf.forall.in_parallel
// CHECK-COUNT-3: tensor.parallel_insert_slice
func.func @backward_blocked(%q: tensor<2x40x4x16xbf16>, %k: tensor<2x40x2x16xbf16>,
                            %v: tensor<2x40x2x16xbf16>, %o: tensor<2x40x4x16xbf16>,
                            %do: tensor<2x40x4x16xbf16>, %lse: tensor<2x4x40x1xf32>)
    -> (tensor<2x40x4x16xbf16>, tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal
      : (tensor<2x40x4x16xbf16>, tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>,
         tensor<2x40x4x16xbf16>, tensor<2x40x4x16xbf16>, tensor<2x4x40x1xf32>)
      -> (tensor<2x40x4x16xbf16>, tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>)
  return %dq, %dk, %dv : tensor<2x40x4x16xbf16>, tensor<2x40x2x16xbf16>, tensor<2x40x2x16xbf16>
}
