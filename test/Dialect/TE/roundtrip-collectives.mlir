// Round-trips te.process_group and the collectives (all_reduce, all_gather, reduce_scatter, all_to_all, permute) and te.group_rank through the custom and generic forms with every reduction kind and attribute.
// RUN: te-opt %s -split-input-file | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file --mlir-print-op-generic | te-opt -split-input-file | FileCheck %s
// RUN: te-opt %s -split-input-file > %t.1 && te-opt %t.1 -split-input-file > %t.2 && diff %t.1 %t.2
// RUN: te-opt %s -split-input-file --mlir-print-op-generic > %t.g1 && te-opt %t.g1 -split-input-file --mlir-print-op-generic > %t.g2 && diff %t.g1 %t.g2

// CHECK-LABEL: module @groups
// CHECK-NEXT: te.process_group @tp size 8{{$}}
// CHECK-NEXT: te.process_group @dp size 1{{$}}
// CHECK-NEXT: te.process_group @cp size 4 {note = "context parallel"}{{$}}
// CHECK-NEXT: te.process_group @strided size 2 ranks [0, 2, 1, 3]{{$}}
// CHECK-NEXT: }
module @groups {
  te.process_group @tp size 8
  te.process_group @dp size 1
  te.process_group @cp size 4 {note = "context parallel"}
  te.process_group @strided size 2 ranks [0, 2, 1, 3]
}

// -----

// CHECK-LABEL: func @all_reduce
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<128x64xbf16>, %[[A:[a-zA-Z0-9_]+]]: tensor<f32>, %[[I:[a-zA-Z0-9_]+]]: tensor<16xi32>)
// CHECK: %[[R0:[a-zA-Z0-9_]+]] = te.all_reduce %[[X]] group @tp : tensor<128x64xbf16>
// CHECK: %[[R1:[a-zA-Z0-9_]+]] = te.all_reduce %[[X]] group @tp : tensor<128x64xbf16>
// CHECK: %[[R2:[a-zA-Z0-9_]+]] = te.all_reduce %[[A]] group @tp reduce{{ +}}max : tensor<f32>
// CHECK: %[[R3:[a-zA-Z0-9_]+]] = te.all_reduce %[[I]] group @tp reduce{{ +}}min : tensor<16xi32>
// CHECK: %[[R4:[a-zA-Z0-9_]+]] = te.all_reduce %[[X]] group @tp reduce{{ +}}avg : tensor<128x64xbf16>
// CHECK: %[[R5:[a-zA-Z0-9_]+]] = te.all_reduce %[[I]] group @tp : tensor<16xi32>
// CHECK: return %[[R0]], %[[R1]], %[[R2]], %[[R3]], %[[R4]], %[[R5]]
te.process_group @tp size 8
func.func @all_reduce(%x: tensor<128x64xbf16>, %amax: tensor<f32>, %i: tensor<16xi32>) -> (tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<f32>, tensor<16xi32>, tensor<128x64xbf16>, tensor<16xi32>) {
  %r0 = te.all_reduce %x group @tp : tensor<128x64xbf16>
  // reduce sum is the default and is elided.
  %r1 = te.all_reduce %x group @tp reduce sum : tensor<128x64xbf16>
  %r2 = te.all_reduce %amax group @tp reduce max : tensor<f32>
  %r3 = te.all_reduce %i group @tp reduce min : tensor<16xi32>
  %r4 = te.all_reduce %x group @tp reduce avg : tensor<128x64xbf16>
  %r5 = te.all_reduce %i group @tp reduce sum : tensor<16xi32>
  return %r0, %r1, %r2, %r3, %r4, %r5 : tensor<128x64xbf16>, tensor<128x64xbf16>, tensor<f32>, tensor<16xi32>, tensor<128x64xbf16>, tensor<16xi32>
}

// -----

// CHECK-LABEL: func @all_gather
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<128x64xbf16>, %[[F:[a-zA-Z0-9_]+]]: tensor<2x?x64xf8E4M3FN>)
// CHECK: %[[G0:[a-zA-Z0-9_]+]] = te.all_gather %[[X]] group @tp dim 0 : tensor<128x64xbf16> -> tensor<1024x64xbf16>
// CHECK: %[[G1:[a-zA-Z0-9_]+]] = te.all_gather %[[X]] group @tp dim 1 : tensor<128x64xbf16> -> tensor<128x512xbf16>
// CHECK: %[[G2:[a-zA-Z0-9_]+]] = te.all_gather %[[F]] group @tp dim 1 : tensor<2x?x64xf8E4M3FN> -> tensor<2x?x64xf8E4M3FN>
// CHECK: %[[G3:[a-zA-Z0-9_]+]] = te.all_gather %[[F]] group @tp dim 2 : tensor<2x?x64xf8E4M3FN> -> tensor<2x?x512xf8E4M3FN>
// CHECK: return %[[G0]], %[[G1]], %[[G2]], %[[G3]]
te.process_group @tp size 8
func.func @all_gather(%x: tensor<128x64xbf16>, %f: tensor<2x?x64xf8E4M3FN>) -> (tensor<1024x64xbf16>, tensor<128x512xbf16>, tensor<2x?x64xf8E4M3FN>, tensor<2x?x512xf8E4M3FN>) {
  %g0 = te.all_gather %x group @tp dim 0 : tensor<128x64xbf16> -> tensor<1024x64xbf16>
  %g1 = te.all_gather %x group @tp dim 1 : tensor<128x64xbf16> -> tensor<128x512xbf16>
  %g2 = te.all_gather %f group @tp dim 1 : tensor<2x?x64xf8E4M3FN> -> tensor<2x?x64xf8E4M3FN>
  %g3 = te.all_gather %f group @tp dim 2 : tensor<2x?x64xf8E4M3FN> -> tensor<2x?x512xf8E4M3FN>
  return %g0, %g1, %g2, %g3 : tensor<1024x64xbf16>, tensor<128x512xbf16>, tensor<2x?x64xf8E4M3FN>, tensor<2x?x512xf8E4M3FN>
}

// -----

// CHECK-LABEL: func @reduce_scatter
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<1024x64xf32>, %[[I:[a-zA-Z0-9_]+]]: tensor<8x?xi32>)
// CHECK: %[[S0:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[X]] group @tp dim 0 : tensor<1024x64xf32> -> tensor<128x64xf32>
// CHECK: %[[S1:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[X]] group @tp dim 0 : tensor<1024x64xf32> -> tensor<128x64xf32>
// CHECK: %[[S2:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[X]] group @tp dim 1 reduce{{ +}}max : tensor<1024x64xf32> -> tensor<1024x8xf32>
// CHECK: %[[S3:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[I]] group @tp dim 0 reduce{{ +}}min : tensor<8x?xi32> -> tensor<1x?xi32>
// CHECK: %[[S4:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[X]] group @tp dim 0 reduce{{ +}}avg : tensor<1024x64xf32> -> tensor<128x64xf32>
// CHECK: %[[S5:[a-zA-Z0-9_]+]] = te.reduce_scatter %[[I]] group @tp dim 1 : tensor<8x?xi32> -> tensor<8x?xi32>
// CHECK: return %[[S0]], %[[S1]], %[[S2]], %[[S3]], %[[S4]], %[[S5]]
te.process_group @tp size 8
func.func @reduce_scatter(%x: tensor<1024x64xf32>, %i: tensor<8x?xi32>) -> (tensor<128x64xf32>, tensor<128x64xf32>, tensor<1024x8xf32>, tensor<1x?xi32>, tensor<128x64xf32>, tensor<8x?xi32>) {
  %s0 = te.reduce_scatter %x group @tp dim 0 : tensor<1024x64xf32> -> tensor<128x64xf32>
  %s1 = te.reduce_scatter %x group @tp dim 0 reduce sum : tensor<1024x64xf32> -> tensor<128x64xf32>
  %s2 = te.reduce_scatter %x group @tp dim 1 reduce max : tensor<1024x64xf32> -> tensor<1024x8xf32>
  %s3 = te.reduce_scatter %i group @tp dim 0 reduce min : tensor<8x?xi32> -> tensor<1x?xi32>
  %s4 = te.reduce_scatter %x group @tp dim 0 reduce avg : tensor<1024x64xf32> -> tensor<128x64xf32>
  %s5 = te.reduce_scatter %i group @tp dim 1 reduce sum : tensor<8x?xi32> -> tensor<8x?xi32>
  return %s0, %s1, %s2, %s3, %s4, %s5 : tensor<128x64xf32>, tensor<128x64xf32>, tensor<1024x8xf32>, tensor<1x?xi32>, tensor<128x64xf32>, tensor<8x?xi32>
}

// -----

// CHECK-LABEL: func @all_to_all
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x512x16x64xbf16>)
// CHECK: %[[T0:[a-zA-Z0-9_]+]] = te.all_to_all %[[X]] group @cp split_dim 2 concat_dim 1 : tensor<2x512x16x64xbf16> -> tensor<2x2048x4x64xbf16>
// CHECK: %[[T1:[a-zA-Z0-9_]+]] = te.all_to_all %[[T0]] group @cp split_dim 1 concat_dim 2 : tensor<2x2048x4x64xbf16> -> tensor<2x512x16x64xbf16>
// CHECK: %[[T2:[a-zA-Z0-9_]+]] = te.all_to_all %[[X]] group @cp split_dim 1 concat_dim 1 : tensor<2x512x16x64xbf16> -> tensor<2x512x16x64xbf16>
// CHECK: %[[T3:[a-zA-Z0-9_]+]] = te.all_to_all %[[X]] group @cp split_dim 3 concat_dim 0 : tensor<2x512x16x64xbf16> -> tensor<8x512x16x16xbf16>
// CHECK: return %[[T1]], %[[T2]], %[[T3]]
te.process_group @cp size 4
func.func @all_to_all(%x: tensor<2x512x16x64xbf16>) -> (tensor<2x512x16x64xbf16>, tensor<2x512x16x64xbf16>, tensor<8x512x16x16xbf16>) {
  // Ulysses: scatter heads, gather the sequence, and back.
  %t0 = te.all_to_all %x group @cp split_dim 2 concat_dim 1 : tensor<2x512x16x64xbf16> -> tensor<2x2048x4x64xbf16>
  %t1 = te.all_to_all %t0 group @cp split_dim 1 concat_dim 2 : tensor<2x2048x4x64xbf16> -> tensor<2x512x16x64xbf16>
  // split_dim == concat_dim keeps the shape.
  %t2 = te.all_to_all %x group @cp split_dim 1 concat_dim 1 : tensor<2x512x16x64xbf16> -> tensor<2x512x16x64xbf16>
  %t3 = te.all_to_all %x group @cp split_dim 3 concat_dim 0 : tensor<2x512x16x64xbf16> -> tensor<8x512x16x16xbf16>
  return %t1, %t2, %t3 : tensor<2x512x16x64xbf16>, tensor<2x512x16x64xbf16>, tensor<8x512x16x16xbf16>
}

// -----

// CHECK-LABEL: func @all_to_all_dynamic
// CHECK: te.all_to_all %{{.*}} group @cp split_dim 0 concat_dim 1 : tensor<?x?x8xf16> -> tensor<?x?x8xf16>
te.process_group @cp size 4
func.func @all_to_all_dynamic(%x: tensor<?x?x8xf16>) -> tensor<?x?x8xf16> {
  %t = te.all_to_all %x group @cp split_dim 0 concat_dim 1 : tensor<?x?x8xf16> -> tensor<?x?x8xf16>
  return %t : tensor<?x?x8xf16>
}

// -----

// CHECK-LABEL: func @permute
// CHECK-SAME: (%[[X:[a-zA-Z0-9_]+]]: tensor<2x512x4x64xbf16>)
// CHECK: %[[P0:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift 1 : tensor<2x512x4x64xbf16>
// CHECK: %[[P1:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift -1 : tensor<2x512x4x64xbf16>
// CHECK: %[[P2:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift 0 : tensor<2x512x4x64xbf16>
// CHECK: %[[P3:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp shift 4 : tensor<2x512x4x64xbf16>
// CHECK: %[[P4:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp pairs [0, 1, 1, 2, 2, 3, 3, 0] : tensor<2x512x4x64xbf16>
// CHECK: %[[P5:[a-zA-Z0-9_]+]] = te.permute %[[X]] group @cp pairs [3, 0] : tensor<2x512x4x64xbf16>
// CHECK: return %[[P0]], %[[P1]], %[[P2]], %[[P3]], %[[P4]], %[[P5]]
te.process_group @cp size 4
func.func @permute(%kv: tensor<2x512x4x64xbf16>) -> (tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>) {
  %p0 = te.permute %kv group @cp shift 1 : tensor<2x512x4x64xbf16>
  %p1 = te.permute %kv group @cp shift -1 : tensor<2x512x4x64xbf16>
  %p2 = te.permute %kv group @cp shift 0 : tensor<2x512x4x64xbf16>
  %p3 = te.permute %kv group @cp shift 4 : tensor<2x512x4x64xbf16>
  %p4 = te.permute %kv group @cp pairs [0, 1, 1, 2, 2, 3, 3, 0] : tensor<2x512x4x64xbf16>
  // Rank 3 sends to rank 0; the other ranks receive zeros.
  %p5 = te.permute %kv group @cp pairs [3, 0] : tensor<2x512x4x64xbf16>
  return %p0, %p1, %p2, %p3, %p4, %p5 : tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>, tensor<2x512x4x64xbf16>
}

// -----

// Collectives resolve the nearest process group, also in a nested module,
// and several groups can be used side by side.
// CHECK-LABEL: module @outer
// CHECK: te.process_group @tp size 2
// CHECK: module @inner
// CHECK: te.process_group @tp size 4
// CHECK-LABEL: func @nested
// CHECK: te.all_gather %{{.*}} group @tp dim 0 : tensor<16x8xf32> -> tensor<64x8xf32>
// CHECK: te.all_reduce %{{.*}} group @dp reduce{{ +}}avg : tensor<64x8xf32>
module @outer {
  te.process_group @tp size 2
  module @inner {
    te.process_group @tp size 4
    te.process_group @dp size 2
    func.func @nested(%x: tensor<16x8xf32>) -> tensor<64x8xf32> {
      %g = te.all_gather %x group @tp dim 0 : tensor<16x8xf32> -> tensor<64x8xf32>
      %r = te.all_reduce %g group @dp reduce avg : tensor<64x8xf32>
      return %r : tensor<64x8xf32>
    }
  }
}

// -----

// CHECK-LABEL: func @rank
// CHECK: te.group_rank group @cp : tensor<i32>
te.process_group @cp size 4
func.func @rank() -> tensor<i32> {
  %r = te.group_rank group @cp : tensor<i32>
  return %r : tensor<i32>
}
