// Block scaling lowers to a per-block amax, per-block scales and a cast.
// Blocks of one row that tile the rows in whole vectors of 16 (MXFP8's
// row-wise 1x32, 1x128) take one pass over the input; other blocks a
// reduction over the matrix reshaped into blocks, then a cast that reads
// each element's block scale through a floordiv map.
// RUN: te-opt %s -split-input-file --convert-te-to-linalg --canonicalize | FileCheck %s

// CHECK-LABEL: func @mxfp8_rowwise
// The rows in parallel; per block two vectors of 16, read once.
// CHECK: scf.forall (%[[R:.*]]) in (64) shared_outs({{.*}}) -> (tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>)
// CHECK: scf.for %[[B:.*]] = %c0 to %c2 step %c1 iter_args({{.*}}) -> (tensor<64xf8E4M3FN>, tensor<2xf8E8M0FNU>)
// CHECK: %[[X0:.*]] = vector.transfer_read %{{.*}}[%[[R]], %{{.*}}]{{.*}} : tensor<64x64xf32>, vector<16xf32>
// CHECK: %[[X1:.*]] = vector.transfer_read %{{.*}}[%[[R]], %{{.*}}]{{.*}} : tensor<64x64xf32>, vector<16xf32>
// CHECK: arith.maxui %{{.*}} : vector<16xi32>
// CHECK: vector.reduction <maxui>, %{{.*}} : vector<16xi32> into i32
// E8M0: the exponent of amax / 448, rounded up.
// CHECK: arith.shrui %{{.*}}, %c23_i32
// CHECK: arith.trunci %{{.*}} : i32 to i8
// CHECK: arith.bitcast %{{.*}} : i8 to f8E8M0FNU
// CHECK: tensor.insert %{{.*}}[%[[B]]] : tensor<2xf8E8M0FNU>
// The same vectors times 2^-e, cast.
// CHECK: arith.mulf %[[X0]], %{{.*}} : vector<16xf32>
// CHECK: arith.bitcast %{{.*}} : vector<16xi8> to vector<16xf8E4M3FN>
// CHECK: vector.transfer_write
// CHECK: arith.mulf %[[X1]], %{{.*}} : vector<16xf32>
// CHECK: vector.transfer_write
// CHECK: scf.forall.in_parallel
func.func @mxfp8_rowwise(%x: tensor<64x64xf32>) -> (tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>) {
  %d, %s = te.quantize %x mode mxfp8_1x32 : tensor<64x64xf32> -> tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
  return %d, %s : tensor<64x64xf8E4M3FN>, tensor<64x2xf8E8M0FNU>
}

// -----

// Partial 128x128 blocks: the matrix is padded with zeros (by a gather, so
// no strided copy is left for the runtime) before the block reduction.
// CHECK-LABEL: func @block_128x128_partial
// CHECK: linalg.index 0
// CHECK: arith.minui
// CHECK: tensor.extract
// CHECK: tensor.expand_shape {{.*}} : tensor<256x256xbf16> into tensor<2x128x2x128xbf16>
func.func @block_128x128_partial(%x: tensor<200x130xbf16>) -> (tensor<200x130xf8E4M3FN>, tensor<2x2xf32>) {
  %d, %s = te.quantize %x mode block_128x128 : tensor<200x130xbf16> -> tensor<200x130xf8E4M3FN>, tensor<2x2xf32>
  return %d, %s : tensor<200x130xf8E4M3FN>, tensor<2x2xf32>
}
