// te.attention lowers to loops over (batch, head, query row) with an online
// softmax over the visible keys: no [s_q, s_kv] tensor is ever created.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize | FileCheck %s

// CHECK-LABEL: func @causal_gqa
// CHECK-NOT: tensor<2x4x16x16xf32>
// CHECK: scf.for %[[B:[a-z0-9_]+]] = %{{.*}} to %c2
// CHECK: scf.for %[[H:[a-z0-9_]+]] = %{{.*}} to %c4
// The key/value head of a query head: h / (H_q / H_kv).
// CHECK: %[[KVH:[a-z0-9_]+]] = arith.divui %[[H]], %c2
// CHECK: scf.for %[[I:[a-z0-9_]+]] = %{{.*}} to %c16
// Causal: the key loop stops after the diagonal.
// CHECK: %[[NEXT:[a-z0-9_]+]] = arith.addi %[[I]], %c1
// CHECK: arith.minsi %[[NEXT]], %c16
// CHECK: %[[QROW:[a-z0-9_]+]] = vector.transfer_read %{{.*}}[%[[B]], %[[I]], %[[H]], %{{.*}}]{{.*}} : tensor<2x16x4x32xbf16>, vector<32xbf16>
// CHECK: arith.extf %[[QROW]] : vector<32xbf16> to vector<32xf32>
// CHECK: scf.for %[[J:[a-z0-9_]+]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args({{.*}}) -> (f32, f32, vector<16xf32>)
// CHECK: vector.transfer_read %{{.*}}[%[[B]], %[[J]], %[[KVH]], %{{.*}}]{{.*}} : tensor<2x16x2x32xbf16>
// CHECK: vector.reduction <add>, %{{.*}} fastmath<reassoc> : vector<32xf32> into f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: vector.fma
// CHECK: math.log
// CHECK: arith.truncf %{{.*}} : vector<16xf32> to vector<16xbf16>
// CHECK: vector.transfer_write %{{.*}}, %{{.*}}[%[[B]], %[[I]], %[[H]], %{{.*}}]
// CHECK: tensor.insert %{{.*}} into %{{.*}}[%[[B]], %[[H]], %[[I]], %{{.*}}] : tensor<2x4x16x1xf32>
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
