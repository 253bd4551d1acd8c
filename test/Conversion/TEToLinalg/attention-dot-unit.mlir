// With a bf16 dot-product unit (dot-unit=avx512-bf16, which the cpu target
// sets on hosts with AVX512-BF16), the scores of bf16 attention are pair
// dot products: K (and, backward, V) in chunks of 32 keys as column pairs,
// the rows of Q (dO) read in place two columns at a time and broadcast as
// one i32, four 16-lane dot products per pair of columns and row.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg="dot-unit=avx512-bf16" --canonicalize | FileCheck %s
// Without the option nothing changes: f32 FMAs.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize | FileCheck %s --check-prefix=FMA
// A unit nobody knows: an error that names the known ones.
// RUN: not te-opt %s -split-input-file --convert-te-to-linalg="dot-unit=amx9" 2>&1 | FileCheck %s --check-prefix=BAD

// BAD: error: convert-te-to-linalg: unknown dot-unit 'amx9'; known units: avx512-bf16, or empty for none

// CHECK-LABEL: func @forward
// No scaled f32 copy of Q, no f32 K^T: K as [b, h_kv, chunks, d / 2, 64].
// CHECK-NOT: tensor<1x2x40x16xf32>
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x1x8x128xbf16>)
// CHECK: scf.for %[[T:[a-z0-9_]+]] = %c0 to %c8 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: %[[K0:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %[[T]], %c0]{{.*}} : tensor<1x2x1x8x128xbf16>, vector<32xbf16>
// CHECK: %[[K1:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %[[T]], %c32]{{.*}} : tensor<1x2x1x8x128xbf16>, vector<32xbf16>
// CHECK: %[[K2:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %[[T]], %c64]{{.*}} : tensor<1x2x1x8x128xbf16>, vector<32xbf16>
// CHECK: %[[K3:.*]] = vector.transfer_read %{{.*}}[%c0, %{{.*}}, %{{.*}}, %[[T]], %c96]{{.*}} : tensor<1x2x1x8x128xbf16>, vector<32xbf16>
// CHECK: %[[TWO:.*]] = vector.transfer_read %arg0[{{.*}}], {{.*}} : tensor<1x40x2x16xbf16>, vector<2xbf16>
// CHECK: %[[WORD:.*]] = vector.bitcast %[[TWO]] : vector<2xbf16> to vector<1xi32>
// CHECK: %[[WORDS:.*]] = vector.broadcast %[[WORD]] : vector<1xi32> to vector<16xi32>
// CHECK: %[[ROW:.*]] = vector.bitcast %[[WORDS]] : vector<16xi32> to vector<32xbf16>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[K0]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[K1]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[K2]] : vector<32xbf16> -> vector<16xf32>
// CHECK: x86vector.avx512.dot %{{.*}}, %[[ROW]], %[[K3]] : vector<32xbf16> -> vector<16xf32>
// The parts joined, then scaled (1/sqrt(16)).
// CHECK-COUNT-4: vector.insert_strided_slice %{{.*}} : vector<16xf32> into vector<64xf32>
// CHECK: arith.mulf %{{.*}}, %cst{{.*}} : vector<64xf32>
// FMA-LABEL: func @forward
// FMA-NOT: x86vector
// FMA: vector.fma %{{.*}} : vector<64xf32>
func.func @forward(%q: tensor<1x40x2x16xbf16>, %k: tensor<1x40x2x16xbf16>,
                   %v: tensor<1x40x2x16xbf16>) -> tensor<1x40x2x16xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>)
      -> tensor<1x40x2x16xbf16>
  return %o : tensor<1x40x2x16xbf16>
}

// -----

// The backward: S = q k^T and dP = dO v^T both on the unit (K and V paired);
// with d_v = 8 (no whole 16-float piece) the gradient sums stay f32 FMAs.
// CHECK-LABEL: func @backward
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x1x8x128xbf16>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x1x4x128xbf16>)
// CHECK: scf.for {{.*}} to %c8 step %c1 {{.*}} -> (vector<16xf32>,
// CHECK-COUNT-16: x86vector.avx512.dot
// CHECK: scf.for {{.*}} to %c4 step %c1 {{.*}} -> (vector<16xf32>,
// CHECK-COUNT-16: x86vector.avx512.dot
// CHECK: vector.fma
// FMA-LABEL: func @backward
// FMA-NOT: x86vector
func.func @backward(%q: tensor<1x40x2x16xbf16>, %k: tensor<1x40x2x16xbf16>,
                    %v: tensor<1x40x2x8xbf16>, %o: tensor<1x40x2x8xbf16>,
                    %do: tensor<1x40x2x8xbf16>, %lse: tensor<1x2x40x1xf32>)
    -> (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x8xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal
      : (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x8xbf16>,
         tensor<1x40x2x8xbf16>, tensor<1x40x2x8xbf16>, tensor<1x2x40x1xf32>)
      -> (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x8xbf16>)
  return %dq, %dk, %dv : tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x8xbf16>
}

// -----

// With head dimensions of whole 16-float pieces, dV, dK and dQ are sums on
// the unit too: P and scale * dS rounded to bf16 once, stored as i32 pairs
// of two rows (for dV and dK: a key at a time against the rows' pieces
// interleaved) and of two keys (for dQ: against K in key pairs,
// [b, h_kv, keys / 2, 2 d]).
// CHECK-LABEL: func @backward_sums
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x40xf32>)
// CHECK: linalg.generic {{.*}} outs(%{{.*}} : tensor<1x2x32x32xbf16>)
// CHECK: scf.for {{.*}} -> (tensor<1x40x16xf32>, tensor<64x16xf32>, tensor<64x16xf32>, tensor<2x64xi32>, tensor<2x64xi32>, tensor<4x32xi32>)
// CHECK-COUNT-8: arith.truncf %{{.*}} : vector<64xf32> to vector<64xbf16>
// CHECK: vector.interleave %{{.*}}, %{{.*}} : vector<64xbf16> -> vector<128xbf16>
// dV, then dK: per key, one dot per row pair.
// CHECK: %[[ROWS:.*]] = vector.interleave %{{.*}}, %{{.*}} : vector<16xbf16> -> vector<32xbf16>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (tensor<64x16xf32>)
// CHECK: x86vector.avx512.dot %{{.*}}, %{{.*}}, %[[ROWS]] : vector<32xbf16> -> vector<16xf32>
// CHECK: scf.for %{{.*}} = %c0 to %c64 step %c1 iter_args(%{{.*}}) -> (tensor<64x16xf32>)
// CHECK: x86vector.avx512.dot
// dQ: per pair of keys, one dot per row.
// CHECK: scf.for %{{.*}} = %c0 to %c32 step %c1 iter_args({{.*}}) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK: vector.transfer_read {{.*}} : tensor<1x2x32x32xbf16>, vector<32xbf16>
// CHECK-COUNT-4: x86vector.avx512.dot
// FMA-LABEL: func @backward_sums
// FMA-NOT: x86vector
func.func @backward_sums(%q: tensor<1x40x2x16xbf16>, %k: tensor<1x40x2x16xbf16>,
                         %v: tensor<1x40x2x16xbf16>, %o: tensor<1x40x2x16xbf16>,
                         %do: tensor<1x40x2x16xbf16>, %lse: tensor<1x2x40x1xf32>)
    -> (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>) {
  %dq, %dk, %dv = te.attention_backward %q, %k, %v, %o, %do, %lse layout bshd mask causal
      : (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>,
         tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x2x40x1xf32>)
      -> (tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>)
  return %dq, %dk, %dv : tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>, tensor<1x40x2x16xbf16>
}

// -----

// f32 inputs and odd head dimensions have no bf16 pairs: f32 FMAs.
// CHECK-LABEL: func @f32_inputs
// CHECK-NOT: x86vector
// CHECK: vector.fma
func.func @f32_inputs(%q: tensor<1x40x2x16xf32>, %k: tensor<1x40x2x16xf32>,
                      %v: tensor<1x40x2x16xf32>) -> tensor<1x40x2x16xf32> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x40x2x16xf32>, tensor<1x40x2x16xf32>, tensor<1x40x2x16xf32>)
      -> tensor<1x40x2x16xf32>
  return %o : tensor<1x40x2x16xf32>
}

// -----

// CHECK-LABEL: func @odd_head_dim
// CHECK-NOT: x86vector
// CHECK: vector.fma
func.func @odd_head_dim(%q: tensor<1x40x2x7xbf16>, %k: tensor<1x40x2x7xbf16>,
                        %v: tensor<1x40x2x7xbf16>) -> tensor<1x40x2x7xbf16> {
  %o = te.attention %q, %k, %v layout bshd mask causal
      : (tensor<1x40x2x7xbf16>, tensor<1x40x2x7xbf16>, tensor<1x40x2x7xbf16>)
      -> tensor<1x40x2x7xbf16>
  return %o : tensor<1x40x2x7xbf16>
}
